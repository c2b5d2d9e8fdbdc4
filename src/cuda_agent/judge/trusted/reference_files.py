"""The reference worker's input-file mode: for a task whose inputs a seed does not reproduce in the
candidate worker (a `get_inputs()` that reads a clock or an unseeded generator), the reference writes the
verification sets and each timed round's sets as files. Mixed into `ReferenceWorker`
(reference_worker.py), whose state it uses: the model, its truth, the draw, the kept outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from cuda_agent.judge.candidate.inputs import fingerprint
from cuda_agent.judge.common import tensorfile
from cuda_agent.task import flatten_tensors


class InputFiles:
    """Input-file mode's commands of the reference worker."""

    # provided by ReferenceWorker (reference_worker.py)
    model: Any
    exact: Any
    tol: Any
    input_seeds: list[int]
    input_prints: list[str]
    outputs: list[Any]
    exact_outputs: list[Any]
    cut_alternatives: list[Any]
    round_sets: dict[int, list[Any]]
    # and its `_draw` and `_cut_alternatives`

    def draw_round(self, seeds: list[int], workdir: str) -> dict[str, Any]:
        """Input-file mode (a task whose inputs a seed does not reproduce in the candidate worker): draw
        one input set per timed call of the next round, keep them for its checks, write them as a file."""
        self.round_sets = {seed: self._draw(seed) for seed in seeds}
        path = Path(workdir) / "round_inputs.tensors"
        tensorfile.save([self.round_sets[seed] for seed in seeds], path)
        return {"path": str(path)}

    def save_inputs(self, workdir: str) -> dict[str, Any]:
        """Write this judgment's input and timing sets as files, for a task whose inputs the candidate
        worker could not reproduce from the seeds. A set that draws differently again (a task reading a
        clock) gets its reference outputs recomputed, so files and outputs always belong together."""
        out = Path(workdir)
        for index, seed in enumerate(self.input_seeds):
            inputs = self._draw(seed)
            if fingerprint(inputs) != self.input_prints[index] or self.outputs[index] is None:
                # The truth too: the file's inputs are the ones the candidate's outputs will be held to.
                self.exact_outputs[index] = self.exact.outputs(inputs) if self.exact else None
                with torch.no_grad():
                    result = self.model(*[t.clone() if isinstance(t, torch.Tensor) else t for t in inputs])
                self.outputs[index] = [t.detach().clone() for t in flatten_tensors(result)]
                self.exact_outputs[index] = self.exact.confirm(self.exact_outputs[index], self.outputs[index], self.tol, inputs) if self.exact else None  # fmt: skip
                if index < len(self.cut_alternatives):
                    self.cut_alternatives[index] = self._cut_alternatives(inputs, self.outputs[index], self.tol)
            tensorfile.save(inputs, out / f"inputs_{index}.tensors")
        return {"sets": len(self.input_seeds)}
