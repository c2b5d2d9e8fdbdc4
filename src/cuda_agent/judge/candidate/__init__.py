"""Code loaded into the candidate's own process: the untrusted side of the trust boundary.

Trust rule: everything in this subpackage is the candidate's to read and change once its worker has
loaded `model_new.py` and `cuda_extension` (Python objects, `__dict__`, stack frames, the CUDA context,
the torch RNG; a C++ static initialiser runs before any of it can react). So no fact the reward depends
on is *established* here. What the candidate worker reports (outputs, samples, traced kernels, op-gate
findings, aliasing) reaches the parent as a claim: the outputs are compared by the reference worker, the
samples are bounded by the parent's clock, the kernels must be the extension's own device code, and the
op gate is defence in depth that gives readable reasons.

Some modules here are also run by trusted workers on trusted code (the reference worker draws inputs
with `inputs.py`, times baselines with `sampler.py`, lists the reference's ops with `opgate.py`): the
code is the same, and only where it runs decides whether its result is a fact.

Import rule: modules here import only `candidate/`, `common/`, `cuda_agent.task`, torch and the standard
library -- never `trusted/` or `decide/` -- so the candidate's process holds none of the judge's decision
code (tests/judge/test_layout_boundary.py checks the closure in a fresh interpreter).
"""
