"""What decides the verdict: the parent's story of a judgment, from the facts to the reward.

Trust rule: modules here run only in the judge's parent process (never in a worker) and decide only from
facts established by this process (its seeds, its clock, its choice of checked calls) or by `trusted/`
code (reference outputs and comparisons, baselines, the built binary). Whatever a candidate worker
reports is weighed as a claim: bounded, cross-checked, and failing closed when malformed. A judge error
is never a reward (`runtime_error`).

`judgment.py` holds the order of the stages; each stage has its own module (`build_stage`,
`reference_stage`, `verify_stage`, `timed_checks`, `timing_stage`, `coverage_stage`, `calls` for worker
trouble); `coverage`, `stats`, `reward` and `verdict` are the rules and the answer; `service` and
`cpu_checks` run judgments (many, or the CPU part alone); `entry.judge()` is the one-call entry point.
"""
