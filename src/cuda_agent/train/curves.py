"""Loss curves from a trainer's `state.log_history`, as a list of points and as a PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def loss_points(log_history: list[dict[str, Any]], key: str = "loss") -> list[tuple[int, float]]:
    """(step, value) for every log entry holding `key`."""
    return [(int(e.get("step", i)), float(e[key])) for i, e in enumerate(log_history) if key in e]


def stderr_logging(trainer: Any, label: str) -> None:
    """Replace the trainer's stdout printer (stdout is for `--json`) with one line per log on stderr."""
    import sys

    from transformers import PrinterCallback, TrainerCallback

    class StderrLogger(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any) -> None:
            if state.is_world_process_zero and logs:
                shown = ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in logs.items())
                print(f"[{label}] step {state.global_step}/{state.max_steps}: {shown}", file=sys.stderr, flush=True)

    trainer.remove_callback(PrinterCallback)
    trainer.add_callback(StderrLogger())


def plot_loss(points: list[tuple[int, float]], path: Path, title: str, extra: dict[str, list] | None = None) -> Path:
    """Write the curve (and any `extra` named curves of (step, value)) to `path`; matplotlib without a display."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    if points:
        ax.plot([s for s, _ in points], [v for _, v in points], label="train loss")
    for name, curve in (extra or {}).items():
        ax.plot([s for s, _ in curve], [v for _, v in curve], "o-", label=name)
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(title)
    if points and min(v for _, v in points) > 0:
        ax.set_yscale("log")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return Path(path)


def plot_panels(
    panels: list[tuple[str, dict[str, list[tuple[int, float]]]]],
    path: Path,
    title: str,
    bands: dict[str, list[tuple[int, float]]] | None = None,
) -> Path:
    """Stacked panels sharing the step axis, one per (y-label, named curves), so figures of different units
    (a loss near 0, a reward in [-1, 3], calls per rollout) are not read off one axis. `bands` gives a
    curve (by name) a +/- spread, drawn as a shaded band (a group's reward std)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(len(panels), 1, figsize=(6, 2.4 * len(panels) + 0.6), dpi=120, sharex=True)
    axes = [axes] if len(panels) == 1 else list(axes)
    for ax, (ylabel, curves) in zip(axes, panels, strict=True):
        for name, curve in curves.items():
            steps, values = [s for s, _ in curve], [v for _, v in curve]
            (line,) = ax.plot(steps, values, "o-", label=name)
            spread = dict((bands or {}).get(name, []))
            if spread and all(s in spread for s in steps):
                ax.fill_between(steps, [v - spread[s] for s, v in curve], [v + spread[s] for s, v in curve],
                                color=line.get_color(), alpha=0.2, label=f"{name} +/- std")  # fmt: skip
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        if curves:
            ax.legend(fontsize=8)
    axes[0].set_title(title)
    axes[-1].set_xlabel("step")
    axes[-1].xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return Path(path)
