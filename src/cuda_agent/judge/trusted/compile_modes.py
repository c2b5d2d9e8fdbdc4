"""The torch.compile modes the compile baseline may be built with, and why the others are refused.

KernelBench users compare against torch.compile in its `default` mode and in
`max-autotune-no-cudagraphs`; the judge builds its compile baseline in one of them (`TimingConfig.compile_mode`),
caches it per mode (trusted/baselines.py: cache_key) and names the mode in every verdict's timing policy.

Only modes without CUDA graphs are accepted. The timing protocol (candidate/sampler.py) draws every call's
inputs inside the round into fresh memory and keeps every call's outputs until the round's checks are
chosen; a CUDA-graph build replays into static output buffers, so each call would overwrite the outputs
kept from the one before (and copy its inputs into static ones first). What CUDA graphs buy -- no host
launch overhead -- is already hidden from every contender by the pad, and a candidate's own graphs may
replay only its own kernels (SKILL.md), so a graph baseline would be a different measure, not a stronger one.
"""

from __future__ import annotations

DEFAULT = "default"

# mode -> what it is (the judge's choices: its table in docs/design/timing.md says the same).
COMPILE_MODES: dict[str, str] = {
    DEFAULT: "inductor's default: fused Triton kernels, library calls for matrix products and convolutions",
    "max-autotune-no-cudagraphs": "inductor autotunes Triton templates against the libraries for matrix "
    "products and convolutions, and tunes kernel launch parameters (coordinate descent); no CUDA graphs",
}

# mode -> why the judge refuses it (modes torch.compile accepts, or accepted in some version).
REFUSED: dict[str, str] = {
    "reduce-overhead": "it replays CUDA graphs, whose static output buffers each call overwrites while the "
    "judge keeps every timed call's outputs; the pad already hides the launch overhead it removes",
    "max-autotune": "it replays CUDA graphs, whose static output buffers each call overwrites while the judge "
    "keeps every timed call's outputs; 'max-autotune-no-cudagraphs' is the same autotuning without them",
    "lite": "it falls back to eager kernels by default: a second eager baseline, not torch.compile's",
}


class CompileModeError(ValueError):
    """A compile mode the judge does not build its baseline with; the message is one line naming the choices."""


def check_compile_mode(mode: str) -> str:
    """`mode` if the compile baseline may be built with it; otherwise CompileModeError saying why, in one line."""
    if isinstance(mode, str) and mode in COMPILE_MODES:
        return mode
    choices = ", ".join(repr(m) for m in COMPILE_MODES)
    if isinstance(mode, str) and mode in REFUSED:
        raise CompileModeError(
            f"torch.compile mode {mode!r} is not used for the baseline: {REFUSED[mode]} (choose {choices})"
        )
    raise CompileModeError(f"unknown torch.compile mode {mode!r} (choose {choices})")
