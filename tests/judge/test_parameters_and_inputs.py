"""Issue 35, classes 1 and 2, on CPU tensors: parameters moved to a generic point (trusted/perturb.py) and
inputs made to matter on every draw (trusted/input_audit.py, candidate/inputs.py transforms).

Each structure test builds the kernel that assumes the initialiser's structure and shows that it passes
against the task's own state and fails against the perturbed one; each input test builds the kernel that
ignores an input and shows that it passes on the task's own draws and fails on the audited ones, while
honest tasks (LayerNorm, softmax, a loss, an input used for its shape) are neither refused nor transformed
beyond what they need."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from cuda_agent.judge.candidate.inputs import IDENTITY, apply_transforms, draw_factor, draw_inputs
from cuda_agent.judge.trusted import input_audit, perturb
from cuda_agent.judge.trusted.audit import differs, vary_constant_state
from cuda_agent.judge.trusted.compare import Tolerance
from cuda_agent.task import Task, import_task_module

TOL = Tolerance()


def _out(model: torch.nn.Module, *inputs: torch.Tensor) -> list[torch.Tensor]:
    with torch.no_grad():
        return [model(*inputs)]


def _moved(model: torch.nn.Module, x: torch.Tensor, seed: int = 7) -> perturb.Perturbation:
    vary_constant_state(model)
    return perturb.move_parameters(model, [x], TOL, seed=seed)


# --- class 1: structure guaranteed by an initialiser --------------------------------------------------


class Mix(torch.nn.Module):
    """y = x @ W^T (+ b): W as an initialiser leaves it (identity, permutation, block-diagonal)."""

    def __init__(self, weight: torch.Tensor, bias: bool = False) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight.clone())
        self.bias = torch.nn.Parameter(torch.randn(weight.shape[0]) * 0.1) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight, self.bias)


def _block_diagonal(n: int, blocks: int) -> torch.Tensor:
    size = n // blocks
    return torch.block_diag(*[torch.randn(size, size) / size**0.5 for _ in range(blocks)])


@pytest.mark.parametrize(
    "structure",
    ["identity", "permutation", "block_diagonal"],
)
def test_matrix_structure_is_gone_and_the_shortcut_fails(structure: str) -> None:
    torch.manual_seed(0)
    n = 256
    x = torch.randn(64, n)
    perm = torch.randperm(n)
    weight = {
        "identity": torch.eye(n),
        "permutation": torch.eye(n)[perm],
        "block_diagonal": _block_diagonal(n, 8),
    }[structure]
    model = Mix(weight)

    def shortcut(m: Mix, x: torch.Tensor) -> torch.Tensor:
        w = m.weight.detach()
        if structure == "identity":
            return x.clone()
        if structure == "permutation":  # the permutation read off the weight (argmax per row): a gather
            return x[:, w.argmax(dim=1)]
        size = n // 8  # only the diagonal blocks, read from the given weight
        return torch.cat([x[:, b * size:(b + 1) * size] @ w[b * size:(b + 1) * size, b * size:(b + 1) * size].t()
                          for b in range(8)], dim=1)  # fmt: skip

    assert not differs(_out(model, x), [shortcut(model, x)], TOL), "the shortcut is exact on the task's state"
    original = model.weight.detach().clone()
    report = _moved(model, x)
    w = model.weight.detach()
    assert bool((w != original).all()), "every entry moved, zeros included"
    assert bool((w != 0).all())
    assert "weight" in report.levels and report.does_not_matter == [] and report.kept == []
    assert differs(_out(model, x), [shortcut(model, x)], Tolerance(4e-2, 4e-2)), "fails clearly, not by a hair"


def test_dirac_convolution_copy_fails() -> None:
    torch.manual_seed(1)
    conv = torch.nn.Conv2d(16, 16, 3, padding=1)
    torch.nn.init.dirac_(conv.weight)
    x = torch.randn(4, 16, 16, 16)

    def copy_plus_bias(m: torch.nn.Conv2d, x: torch.Tensor) -> torch.Tensor:
        return x + m.bias.detach().view(1, -1, 1, 1)

    assert not differs(_out(conv, x), [copy_plus_bias(conv, x)], TOL)
    zeros_before = int((conv.weight == 0).sum())
    _moved(conv, x)
    assert zeros_before > 0 and int((conv.weight == 0).sum()) == 0
    assert differs(_out(conv, x), [copy_plus_bias(conv, x)], TOL)


@pytest.mark.parametrize("tail", ["decay", "gaussian"])
def test_tiny_entries_of_a_positive_weight_move_and_dropping_them_fails(tail: str) -> None:
    """A positive weight with a tail (a decaying mixing matrix, a wide Gaussian filter): multiplicative
    noise alone kept each entry's relative size, so the tail stayed tiny and a kernel that dropped it (a
    band: about 60% of the work here) passed. The additive part moves every entry by the tensor's own scale."""
    torch.manual_seed(12)
    n, band = 128, 48
    distance = (torch.arange(n).view(-1, 1) - torch.arange(n).view(1, -1)).abs().float()
    weight = torch.exp(-distance / 6) if tail == "decay" else torch.exp(-((distance / 14) ** 2))
    model = Mix(weight)
    x = torch.randn(32, n)
    assert bool((weight > 0).all())

    def banded(m: Mix, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, m.weight.detach() * (distance <= band).float())

    assert not differs(_out(model, x), [banded(model, x)], TOL), "the band is exact on the task's own state"
    _moved(model, x)
    assert bool((model.weight > 0).all()), "the sign domain is kept"
    assert differs(_out(model, x), [banded(model, x)], TOL), "the moved tail matters"


class MaskedDepthwise(torch.nn.Module):
    """A dense 3x3 conv whose weight is masked to depthwise at init (the forward is a dense conv)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        with torch.no_grad():
            self.conv.weight.mul_(torch.eye(channels).view(channels, channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def _depthwise(m: MaskedDepthwise, x: torch.Tensor) -> torch.Tensor:
    """The shortcut: a depthwise conv with the diagonal of the given (dense) weight."""
    w = m.conv.weight.detach()
    c = w.shape[0]
    diagonal = w[torch.arange(c), torch.arange(c)].unsqueeze(1)
    return F.conv2d(x, diagonal, padding=1, groups=c)


def test_masked_depthwise_shortcut_fails_and_is_explained() -> None:
    torch.manual_seed(2)
    model = MaskedDepthwise(32)
    x = torch.randn(2, 32, 16, 16)
    assert not differs(_out(model, x), [_depthwise(model, x)], TOL)
    report = _moved(model, x)
    assert differs(_out(model, x), [_depthwise(model, x)], TOL)
    hint = perturb.explain(model, [x], [_depthwise(model, x)], TOL, report)
    assert hint is not None and "initial zero entries" in hint
    honest = _out(model, x)[0]
    wrong = honest + 1.0  # a wrong answer of another kind gets no structural diagnosis
    assert perturb.explain(model, [x], [wrong], TOL, report) is None
    assert not differs(_out(model, x), [honest], TOL), "the diagnosis left the perturbed state in place"


def test_identity_shortcut_is_explained_as_the_initial_parameters() -> None:
    torch.manual_seed(3)
    model = Mix(torch.eye(128), bias=True)
    x = torch.randn(32, 128)
    report = _moved(model, x)
    # The shortcut assumes W = I but reads the (perturbed) bias: explained by the weight alone.
    hint = perturb.explain(model, [x], [x + model.bias.detach()], TOL, report)
    assert hint is not None and "weight at its initial value" in hint and "Parameters and inputs" in hint
    assert perturb.explain(model, [x], [x + 1.0], TOL, report) is None


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_every_entry_moves_in_every_dtype(dtype: torch.dtype) -> None:
    torch.manual_seed(4)
    generator = torch.Generator().manual_seed(5)
    for value in (torch.eye(512), torch.eye(64)[torch.randperm(64)], torch.rand(64, 64) + 0.5, torch.zeros(3)):
        value = value.to(dtype)
        moved = perturb.perturbed(value, 0.5, generator)
        assert moved.dtype == dtype and bool((moved != value).all()), (dtype, value.shape)
        assert bool(torch.isfinite(moved).all())


class ThresholdRead(torch.nn.Module):
    """A structured parameter read through a threshold: round(W), `mask > 0.5`, relu(W - 0.9)."""

    def __init__(self, read: str, n: int = 256) -> None:
        super().__init__()
        self.read = read
        self.band = (torch.arange(n)[:, None] - torch.arange(n)[None, :]).abs() <= 2  # the mask's initial band
        self.w = torch.nn.Parameter(self.band.float() if read == "mask" else torch.eye(n))
        self.v = torch.nn.Parameter(torch.randn(n, n) / n**0.5)

    def seen(self) -> torch.Tensor:
        if self.read == "round":
            return torch.round(self.w)
        if self.read == "mask":
            return torch.where(self.w > 0.5, self.v, torch.zeros_like(self.v))
        return torch.relu(self.w - 0.9)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.seen()

    def shortcut(self, x: torch.Tensor) -> torch.Tensor:
        """What a kernel assuming the initial structure computes (a diagonal scale, or a band of 5)."""
        with torch.no_grad():
            if self.read == "mask":
                return x @ torch.where(self.band, self.v, torch.zeros_like(self.v))
            return x * torch.diagonal(self.seen())


@pytest.mark.parametrize("read", ["round", "mask", "relu"])
def test_a_structure_read_through_a_threshold_does_not_survive(read: str) -> None:
    """The zeros move by the scale of the nonzero entries, which crosses the threshold: by the rms of all
    entries (0.022 for an identity of 256) they stayed below it, and the shortcut was exact."""
    torch.manual_seed(10)
    model = ThresholdRead(read)
    x = torch.randn(32, 256)
    report = _moved(model, x)
    assert differs(_out(model, x), [model.shortcut(x)], TOL), f"the {read} shortcut still matches"
    if read == "round":  # the suite's case: the reason names the structure the shortcut assumed
        why = perturb.explain(model, [x], [model.shortcut(x)], TOL, report)
        assert why is not None and "initial zero entries" in why, why


@pytest.mark.parametrize("scale", [1e20, 1e-25])
def test_a_structure_at_an_extreme_scale_is_moved_by_that_scale(scale: float) -> None:
    """The noise follows the tensor's own scale even where its square leaves float32's range: a
    permutation scaled by 1e20 once kept its structure under noise of size 1 (rms overflowed to inf)."""
    torch.manual_seed(8)
    generator = torch.Generator().manual_seed(9)
    value = torch.eye(256)[torch.randperm(256)] * scale
    moved = perturb.perturbed(value, 0.5, generator)
    off = moved[value == 0].abs()
    # every nonzero entry is `scale`, so the zeros move by 0.5 * scale * |z|: a median of about 0.34 * scale
    assert bool(torch.isfinite(moved).all())
    assert 0.2 * scale < float(off.median()) < 0.5 * scale, "the zeros did not move by the tensor's own scale"


def test_sign_domains_are_kept() -> None:
    generator = torch.Generator().manual_seed(6)
    positive = torch.rand(1000) + 1e-3
    nonnegative = torch.eye(32)
    negative = -torch.rand(1000) - 1e-3
    for level in (*perturb.MULTIPLICATIVE_LEVELS, *perturb.ADDITIVE_LEVELS):
        assert bool((perturb.perturbed(positive, level, generator) > 0).all())
        assert bool((perturb.perturbed(nonnegative, level, generator) > 0).all())
        assert bool((perturb.perturbed(negative, level, generator) < 0).all())
    mixed = torch.randn(1000)
    assert bool((perturb.perturbed(mixed, 0.5, generator) < 0).any())


class Domains(torch.nn.Module):
    """A std (all positive), a log's argument (all positive), a sqrt's argument (nonnegative, with zeros)."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.std = torch.nn.Parameter(torch.rand(n) + 0.5)
        self.rate = torch.nn.Parameter(torch.rand(n) + 0.1)
        self.gain = torch.nn.Parameter(torch.eye(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / self.std + torch.log(self.rate) + x @ torch.sqrt(self.gain)


def test_restricted_domains_stay_valid_and_outputs_finite() -> None:
    torch.manual_seed(8)
    model = Domains(64)
    x = torch.randn(16, 64)
    report = _moved(model, x)
    assert set(report.levels) == {"std", "rate", "gain"} and report.kept == []
    assert bool((model.std > 0).all()) and bool((model.rate > 0).all()) and bool((model.gain >= 0).all())
    assert bool(torch.isfinite(_out(model, x)[0]).all())


def test_a_parameter_that_breaks_the_forward_when_moved_keeps_its_value_and_is_reported() -> None:
    class NeedsIdentity(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.eye(8))
            self.b = torch.nn.Parameter(torch.randn(8))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if not torch.equal(self.w, torch.eye(8)):
                raise ValueError("w must be the identity")
            return x @ self.w + self.b

    model = NeedsIdentity()
    x = torch.randn(4, 8)
    report = perturb.move_parameters(model, [x], TOL, seed=1)
    assert "w" in report.kept and torch.equal(model.w.detach(), torch.eye(8))
    assert "b" not in report.kept


def test_a_weak_perturbation_grows_until_it_matters() -> None:
    class SmallMix(torch.nn.Module):
        def __init__(self, n: int) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.eye(n))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + 0.0005 * (x @ self.w)

    torch.manual_seed(9)
    model = SmallMix(256)
    x = torch.randn(64, 256)
    report = perturb.move_parameters(model, [x], TOL, seed=2)
    assert report.levels["w"] > perturb.ADDITIVE_LEVELS[0]
    assert differs(_out(model, x), [x + 0.0005 * x], Tolerance(4e-3, 4e-3))


def test_buffers_stay_unless_all_equal_and_the_point_follows_the_seed() -> None:
    class WithBuffers(torch.nn.Module):
        def __init__(self, n: int) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.eye(n))
            self.register_buffer("mask", torch.tril(torch.ones(n, n)))
            self.register_buffer("order", torch.randperm(n).float())
            self.register_buffer("scale", torch.ones(n))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (x @ (self.w * self.mask))[:, self.order.long()] * self.scale

    torch.manual_seed(10)
    x = torch.randn(8, 32)
    models = [WithBuffers(32) for _ in range(3)]
    for m in models[1:]:
        m.load_state_dict(models[0].state_dict())
    mask, order = models[0].mask.clone(), models[0].order.clone()
    points = []
    for m, seed in zip(models, (11, 11, 12), strict=True):
        torch.manual_seed(0)  # the same constant variation: only the perturbation seed differs
        vary_constant_state(m)
        perturb.move_parameters(m, [x], TOL, seed=seed)
        assert torch.equal(m.mask, mask) and torch.equal(m.order, order), "structured buffers are constants"
        assert not bool((m.scale == 1).all()), "an all-equal buffer is varied (vary_constant_state)"
        points.append(m.w.detach().clone())
    assert torch.equal(points[0], points[1]) and not torch.equal(points[0], points[2])


# --- class 2: inputs the candidate ignores ----------------------------------------------------------


def _sets(draw, count: int = input_audit.AUDIT_DRAWS) -> list[list[torch.Tensor]]:
    return [draw(seed) for seed in range(100, 100 + count)]


class Weighted(torch.nn.Module):
    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x) + 1e-6 * mask


def _weighted_draw(seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(64, 64, generator=g), torch.randn(64, 64, generator=g)]


def test_a_weakly_weighted_input_is_scaled_until_ignoring_it_fails() -> None:
    model = Weighted()
    sets = _sets(_weighted_draw)
    assert not differs(_out(model, *sets[0]), [torch.tanh(sets[0][0])], TOL), "ignoring the mask passes as drawn"
    audit = input_audit.audit_inputs(model, sets, TOL)
    assert audit.matter == ["input 0"] and "input 1" in audit.made_to_matter and audit.problem() is None
    transforms = audit.active()
    assert transforms is not None and transforms[0] == IDENTITY and transforms[1][0] >= 1e4
    drawn = apply_transforms(_weighted_draw(5), 5, transforms)
    assert differs(_out(model, *drawn), [torch.tanh(drawn[0])], TOL), "ignoring the mask fails now"
    hint = input_audit.explain(model, _weighted_draw(5), [torch.tanh(drawn[0])], TOL, audit)
    assert hint is not None and "input 1" in hint


class TwoOfThree(torch.nn.Module):
    """relu(x) + 1e-5 * a @ b: as drawn, a kernel that ignores a and b (and skips the GEMM) passes."""

    def forward(self, x: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) + 1e-5 * (a @ b)


def _three_draw(seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(64, 64, generator=g), torch.randn(64, 256, generator=g), torch.randn(256, 64, generator=g)]


def test_inputs_are_audited_together_so_one_scale_is_enough_and_nothing_drowns() -> None:
    model = TwoOfThree()
    sets = _sets(_three_draw)
    assert all(not differs(_out(model, *s), [torch.relu(s[0])], TOL) for s in sets), "ignoring a and b passes"
    audit = input_audit.audit_inputs(model, sets, TOL)
    transforms = audit.active()
    assert transforms is not None and audit.weak == [] and audit.ignored == []
    assert list(audit.made_to_matter) == ["input 1"], "once a is scaled, b matters as drawn"
    assert audit.matter == ["input 0", "input 2"]
    for seed in range(5):
        drawn = apply_transforms(_three_draw(seed), seed, transforms)
        assert differs(_out(model, *drawn), [torch.relu(drawn[0])], TOL)
        assert differs(_out(model, *drawn), [1e-5 * drawn[1] @ drawn[2]], TOL), "x still matters"


def test_an_input_drowned_by_another_inputs_scale_is_reported_weak() -> None:
    class Sum(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return torch.tanh(x) + 1e-6 * y.sum()

    def draw(seed: int) -> list[torch.Tensor]:
        g = torch.Generator().manual_seed(seed)
        return [torch.randn(16, 16, generator=g), torch.randn(1000, 1000, generator=g)]

    model, sets = Sum(), _sets(draw)
    audit = input_audit.audit_inputs(model, sets, TOL)
    assert audit.matter == ["input 0"] and "input 1" in audit.made_to_matter and audit.weak == []
    # Had y needed a scale of 10^9, tanh(x) would vanish beside it: the final check says so.
    audit.transforms[1] = (1e9, 1.0, 1.0)
    columns = {k: [s[k] for s in sets] for k in (0, 1)}
    input_audit._recheck(model, list(sets[0]), columns, Tolerance(4e-2, 4e-2), True, audit)
    assert audit.weak == ["input 0"] and audit.matter == []


class Loss(torch.nn.Module):
    """A scalar loss over a large tensor: its value concentrates, so one draw of either input barely moves
    it; it depends on both all the same."""

    def forward(self, prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.mse_loss(prediction, target)


def _loss_draw(seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(256, 1024, generator=g), torch.randn(256, 1024, generator=g)]


def test_a_concentrating_loss_is_made_to_depend_on_each_draw_not_called_degenerate() -> None:
    model = Loss()
    sets = _sets(_loss_draw)

    def ignores_target(p: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return p.square().mean() + 1.0  # E[(p - t)^2] for a unit-normal target it never reads

    assert all(not differs(_out(model, *s), [ignores_target(*s)], TOL) for s in sets), "passes every draw"
    audit = input_audit.audit_inputs(model, sets, TOL)
    assert audit.ignored == [] and audit.problem() is None
    transforms = audit.active()
    assert transforms is not None and transforms[1][1] < 1 < transforms[1][2], transforms
    failed = 0
    for seed in range(20):
        drawn = apply_transforms(_loss_draw(seed), seed, transforms)
        failed += differs(_out(model, *drawn), [ignores_target(*drawn)], TOL)
    assert failed >= 15, failed


def test_an_input_the_reference_ignores_is_a_task_error() -> None:
    class IgnoresTwo(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
            return torch.relu(x) + 0 * y.sum()

    def draw(seed: int) -> list[torch.Tensor]:
        g = torch.Generator().manual_seed(seed)
        return [torch.randn(32, 32, generator=g) for _ in range(3)]

    audit = input_audit.audit_inputs(IgnoresTwo(), _sets(draw), TOL)
    assert audit.ignored == ["input 1", "input 2"] and audit.matter == ["input 0"]
    problem = audit.problem()
    assert problem is not None and "input 1, input 2" in problem and "does not depend" in problem


def test_honest_tasks_are_not_refused_nor_transformed() -> None:
    class Honest(torch.nn.Module):
        def forward(self, x: torch.Tensor, logits: torch.Tensor, like: torch.Tensor, idx: torch.Tensor,
                    table: torch.Tensor) -> tuple[torch.Tensor, ...]:  # fmt: skip
            normed = F.layer_norm(x, x.shape[-1:])  # scale-invariant in x
            probs = torch.softmax(logits, dim=-1)  # shift-invariant in logits
            shaped = torch.zeros_like(like) + 1.0  # `like` only for its shape
            picked = x[:, idx]  # an integer index input
            return normed * table, probs, shaped, picked

    def draw(seed: int) -> list[torch.Tensor]:
        g = torch.Generator().manual_seed(seed)
        return [torch.randn(16, 64, generator=g), torch.randn(16, 64, generator=g),
                torch.randn(16, 64, generator=g), torch.randint(0, 64, (64,), generator=g), torch.ones(64)]  # fmt: skip

    audit = input_audit.audit_inputs(Honest(), _sets(draw), TOL)
    assert audit.matter == ["input 0", "input 1", "input 3"]
    assert audit.shape_only == ["input 2"] and audit.constant == ["input 4"]
    assert audit.ignored == [] and audit.problem() is None and audit.active() is None


def test_a_global_mean_of_a_zero_one_input_is_made_to_matter_by_shrinking_only() -> None:
    class GlobalMean(torch.nn.Module):
        """x scaled by the mean of a [0, 1] tensor: one draw of it barely moves the mean."""

        def forward(self, x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
            return x * weights.mean()

    def draw(seed: int) -> list[torch.Tensor]:
        g = torch.Generator().manual_seed(seed)
        return [torch.randn(64, 64, generator=g), torch.rand(1024, 1024, generator=g)]

    model = GlobalMean()
    sets = _sets(draw)
    assert all(not differs(_out(model, *s), [s[0] * 0.5], TOL) for s in sets), "x / 2 passes every draw"
    audit = input_audit.audit_inputs(model, sets, TOL)
    transforms = audit.active()
    assert audit.matter == ["input 0"] and transforms is not None
    scale, low, high = transforms[1]
    assert scale == 1.0 and high == 1.0 and low < 1.0, "a [0, 1] input is only shrunk"
    failed = 0
    for seed in range(20):
        drawn = apply_transforms(draw(seed), seed, transforms)
        assert bool((drawn[1] >= 0).all()) and bool((drawn[1] <= 1).all())
        failed += differs(_out(model, *drawn), [drawn[0] * 0.5], TOL)
    assert failed >= 15, failed


def test_a_loss_whose_dependence_averages_out_is_weak_not_a_task_error() -> None:
    class Bce(torch.nn.Module):
        def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            return F.binary_cross_entropy_with_logits(logits, target)

    def draw(seed: int) -> list[torch.Tensor]:
        g = torch.Generator().manual_seed(seed)
        return [torch.randn(512, 512, generator=g), torch.rand(512, 512, generator=g)]

    audit = input_audit.audit_inputs(Bce(), _sets(draw), TOL)
    assert "input 1" in audit.weak and audit.ignored == [] and audit.problem() is None


def test_a_nondeterministic_reference_is_left_unaudited() -> None:
    class Noisy(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + torch.randn_like(x)

    audit = input_audit.audit_inputs(Noisy(), _sets(lambda s: [torch.randn(8, 8)]), TOL)
    assert "input 0" in audit.unaudited and audit.problem() is None and audit.active() is None


TASK = """
import torch

def get_inputs():
    return [torch.randn(32, 32), torch.randint(0, 9, (32,)), torch.randn(32), 3]
"""


def test_both_workers_draw_the_same_transformed_inputs(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(TASK)
    module = import_task_module(Task(name="model", source=TASK, path=path))
    transforms = [(1.0, 0.5, 2.0), (10.0, 1.0, 1.0), IDENTITY, (1e3, 1.0, 1.0)]
    a = draw_inputs(module, 42, device="cpu", transforms=transforms)
    b = draw_inputs(module, 42, device="cpu", transforms=transforms)
    raw = draw_inputs(module, 42, device="cpu")
    assert all(torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y for x, y in zip(a, b, strict=True))
    factor = draw_factor(42, 0, transforms[0])
    # within the rounding probe's step (common/rounding_probe.py: both draws settled after scaling)
    assert 0.5 <= factor <= 2.0 and torch.allclose(a[0], raw[0] * factor, rtol=2.0**-7, atol=0.0)
    assert torch.equal(a[1], raw[1]), "integer inputs are never scaled"
    assert torch.equal(a[2], raw[2]) and a[3] == 3
    factors = {draw_factor(seed, 0, transforms[0]) for seed in range(50)}
    assert len(factors) == 50 and min(factors) < 0.7 and max(factors) > 1.4, "a factor per draw, over the range"


# --- the reference worker: prepare hands both over, compare names the shortcut ------------------------

STRUCTURED_TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """y = x @ W + 1e-6 * mask, W the identity at init: a copy of x passes as written."""

    def __init__(self, n):
        super().__init__()
        self.w = nn.Parameter(torch.eye(n))

    def forward(self, x, mask):
        return x @ self.w + 1e-6 * mask


def get_inputs():
    return [torch.randn(64, 128), torch.randn(64, 128)]


def get_init_inputs():
    return [128]
'''

IGNORING_TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(32, 32), torch.randn(32, 32)]


def get_init_inputs():
    return []
'''


@pytest.fixture
def cpu_worker(cpu_reference):
    """The reference worker on the CPU (conftest.py `cpu_reference`)."""
    return cpu_reference


def _prepare(worker, tmp_path: Path, source: str, **switches: bool) -> dict:
    task = tmp_path / "model.py"
    task.write_text(source)
    return worker.prepare(str(task), str(tmp_path), 1234, [11, 12, 13, 14, 15], 99, 1e-2, 1e-2, precision_audit=False,
                          **switches)  # fmt: skip


def test_prepare_hands_over_the_moved_state_and_the_transforms(cpu_worker, tmp_path: Path) -> None:
    from cuda_agent.judge.candidate.inputs import fingerprint
    from cuda_agent.judge.candidate.worker import InputSource
    from cuda_agent.judge.common import tensorfile

    reply = _prepare(cpu_worker, tmp_path, STRUCTURED_TASK)
    assert reply["input_problem"] is None and "w" in reply["parameter_audit"]["perturbed"]
    assert "input 1" in reply["input_audit"]["made_to_matter"]
    state = torch.load(tmp_path / "state.pt", weights_only=True)
    w = state["state_dict"]["w"]
    assert bool((w != torch.eye(128)).all()), "the candidate gets the moved weights, not the identity"
    assert torch.equal(w, cpu_worker.model.w.detach()), "the reference computes on the same state"
    # The candidate worker's input source, given the transforms from state.pt as its `load` does, draws
    # the inputs the reference compared on.
    source = InputSource(str(tmp_path / "model.py"))
    source.transforms = state["input_transforms"]
    assert [fingerprint(source.get(seed, None)) for seed in (11, 12)] == reply["input_prints"][:2]
    source.transforms = None
    assert fingerprint(source.get(11, None)) != reply["input_prints"][0], "without them it would differ"

    # The shortcut that takes W for the identity: refused, and the reason names the initial parameters.
    x, mask = cpu_worker._draw(11)
    tensorfile.save([x + 1e-6 * mask], tmp_path / "out.tensors")
    verdict = cpu_worker.compare(0, str(tmp_path / "out.tensors"), 1e-2, 1e-2, aliases=[[]])
    assert not verdict["match"] and "w at its initial value" in verdict["reason"], verdict
    # The honest answer passes.
    tensorfile.save([cpu_worker.outputs[0][0].clone()], tmp_path / "out.tensors")
    assert cpu_worker.compare(0, str(tmp_path / "out.tensors"), 1e-2, 1e-2, aliases=[[]])["match"]
    # Ignoring the mask (with the real weights): refused, and the reason names the scaled input.
    x, _ = cpu_worker._draw(12)
    tensorfile.save([x @ cpu_worker.model.w.detach()], tmp_path / "out.tensors")
    verdict = cpu_worker.compare(1, str(tmp_path / "out.tensors"), 1e-2, 1e-2, aliases=[[]])
    assert not verdict["match"] and "input 1" in verdict["reason"] and "get_inputs()" in verdict["reason"], verdict


def test_prepare_reports_an_ignored_input_as_the_tasks_problem(cpu_worker, tmp_path: Path) -> None:
    reply = _prepare(cpu_worker, tmp_path, IGNORING_TASK)
    assert reply["input_problem"] and "input 1" in reply["input_problem"]
    assert reply["input_audit"]["ignored"] == ["input 1"]


def test_prepare_with_the_audits_switched_off_is_the_judge_before_them(cpu_worker, tmp_path: Path) -> None:
    """JudgeConfig(perturb_parameters=False, input_audit=False): what the GPU test of the 19_*/20_* cases
    judges them with, to show that each passed before."""
    reply = _prepare(cpu_worker, tmp_path, STRUCTURED_TASK, perturb_parameters=False, audit_inputs=False)
    state = torch.load(tmp_path / "state.pt", weights_only=True)
    assert torch.equal(state["state_dict"]["w"], torch.eye(128)) and state["input_transforms"] is None
    assert reply["parameter_audit"]["perturbed"] == {} and reply["input_problem"] is None
    assert _prepare(cpu_worker, tmp_path, IGNORING_TASK, audit_inputs=False)["input_problem"] is None


def test_issue_35_cases_are_in_the_suite_with_reasons() -> None:
    """At least two cheats per class, each expecting a reason that names the check, and honest cases."""
    import json

    suite = Path(__file__).parents[2] / "tests" / "adversarial"
    cases = {p.parent.name: json.loads(p.read_text()) for p in suite.glob("*/expected.json")}
    labelled = {n: e for n, e in cases.items() if "issue35" in e}
    for cls, hint in (("class 1", "initial"), ("class 2", "as get_inputs() draws them")):
        cheats = [e for e in labelled.values() if e["issue35"] == cls and e["kind"] == "cheat"]
        assert len(cheats) >= 2, cls
        named = [[*e.get("reason_contains", []), *e.get("reason_any", [])] for e in cheats]
        assert all(e["expect"] == "reject" and any(hint in r for r in n) for e, n in zip(cheats, named, strict=True)), cls
    honest = [e for e in labelled.values() if e["kind"] == "honest"]
    assert len(honest) >= 2 and all(e["expect"] == "accept" for e in honest)


def test_the_noise_is_not_the_initialisations_own_stream() -> None:
    """init_seed seeds both the model's initialisation and the perturbation: drawn from the same stream, the
    noise of a `torch.randn` weight would be the weight itself (masked zeros then move, but the rest only
    scales). The perturbation's generator is seeded from a hash of the seed."""

    class RandnMasked(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(64, 64))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x @ self.w

    torch.manual_seed(77)
    model = RandnMasked()
    before = model.w.detach().clone()
    perturb.move_parameters(model, [torch.randn(8, 64)], TOL, seed=77)
    noise = model.w.detach() - before
    correlation = float((noise * before).sum() / (noise.norm() * before.norm()))
    assert abs(correlation) < 0.2, correlation
