"""The precision audit's default bound k (trusted/precision.py), in a module without torch.

JudgeConfig carries it, and the judge's parent (decide/, the service, the CLI) imports JudgeConfig without
importing torch (3 s and 0.4 GB of host memory it does not need); the reference worker, the KernelBench
degeneracy audit and eval's records that did not state their k use the same number.
"""

# The bound on the audit's statistic: honest orderings emulated reach about 1 (docs/design/precision.md).
DEFAULT_K = 3.0
