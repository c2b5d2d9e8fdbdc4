"""Trusted workers and machinery: code that never runs a line of the candidate's code.

Trust rule: modules here run in the judge's parent process, in the reference worker (a process that
loads the task's `Model`, never `model_new.py` or `cuda_extension`) or in compiler children that read the
candidate's source as data. What they establish is believed: the reference outputs and their comparison
with the handed-over bytes (`reference_worker`, `compare`, `layout`, `precision`, `audit`), the baselines
(timed here with the candidate's process tree frozen, `freeze`; cached only under an HMAC whose key the
candidate never sees, `baselines`, `authkey`), the built binary's own kernels (`build`, `device_code`),
and the isolation of the candidate's worker (`sandbox`, `pool`, `gpumem`).

The candidate reaches this code only through bytes: tensor files and shared buffers it writes
(bounds-checked by `common/tensorfile.py` as untrusted) and the JSON replies of its worker, which the
parent reads as claims. Modules here may use `candidate/` code (the input draw, the sampler) in their
own trusted process, and `common/` plumbing.
"""
