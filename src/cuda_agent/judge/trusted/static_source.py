"""Trusted side: the static checks of kernels/: the submission's own C++/CUDA, preprocessed as the compiler
sees it (preprocess.py), searched for the patterns of static_source_rules.py; a stream never joined,
driver functions asked for by name, cuBLAS/cuDNN where the task has no product or convolution.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from cuda_agent.judge.trusted import driver_gate, library_rules
from cuda_agent.judge.trusted.library_rules import CONV_OPS, GEMM_OPS
from cuda_agent.judge.trusted.static_finding import Finding
from cuda_agent.judge.trusted.static_source_rules import (
    CPP_RULES,
    CPP_SUFFIXES,
    CUBLAS_USE,
    CUDNN_USE,
    DRIVER_ENTRY_LITERAL,
    STREAM_CREATE,
    STREAM_JOIN,
    STRING_RULES,
)


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


@dataclass(frozen=True)
class _Code:
    """Code of one file as (line, text) pairs, searchable as one string with a line for each match."""

    path: str
    lines: tuple[tuple[int, str], ...]

    @property
    def text(self) -> str:
        return "\n".join(code for _, code in self.lines)

    def line_of(self, offset: int, searched: str | None = None) -> int:
        """The file line of `offset` in `searched` (the text, or a copy with the same newlines)."""
        index = (self.text if searched is None else searched).count("\n", 0, offset)
        return self.lines[index][0] if index < len(self.lines) else 0


_RAW_STRING = re.compile(r'R"([^()\\\s]{0,16})\((.*?)\)\1"', re.S)
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.){1,8}\'')


def _strip_strings(text: str) -> str:
    """String and character literals emptied (newlines kept, so offsets map to the same lines)."""
    text = _RAW_STRING.sub(lambda m: '""' + "\n" * m.group(0).count("\n"), text)
    return _STRING.sub('""', text)


# Rules on libc calls by a bare name that a submission may define for itself (a morphological `open`, a
# `connect` of graph components, a `system` of equations): the built object's imports (static_imports.py)
# show a real libc call whatever the source says, so these skip an unqualified call of the submission's own
# function (00_honest_device_function_named_open).
OWN_NAME_RULES = ("starts a process", "opens network connections", "opens or changes files")
_DEFINITION = re.compile(r"\b([A-Za-z_]\w*)\s*\((?:[^;{}()]|\([^;{}()]*\))*\)\s*(?:const\s*)?(?:noexcept\s*)?\{")
_NOT_FUNCTIONS = frozenset({"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignas"})


def _defined_functions(codes: list[_Code]) -> frozenset[str]:
    """Names the submission defines as functions anywhere in kernels/ (`name(...) {`)."""
    found = {m.group(1) for code in codes for m in _DEFINITION.finditer(_strip_strings(code.text))}
    return frozenset(found - _NOT_FUNCTIONS)


def _own_call(match: re.Match[str], searched: str, own: frozenset[str]) -> bool:
    """An unqualified call of a function the submission defines (`open(...)`, not `::open(...)`)."""
    name = re.match(r"\w+", match.group(0).lstrip())
    qualified = searched[max(0, match.start() - 2) : match.start()] == "::"
    return name is not None and name.group(0) in own and not qualified


def _file_rules(code: _Code, reference_ops: set[str] | None, own: frozenset[str] = frozenset()) -> list[Finding]:
    full = code.text
    text = _strip_strings(full)
    findings = []
    for pattern, message in CPP_RULES:
        searched = full if message.startswith(STRING_RULES) else text
        for match in pattern.finditer(searched):
            if message in OWN_NAME_RULES and _own_call(match, searched, own):
                continue
            line = code.line_of(match.start(), searched)
            findings.append(Finding(code.path, line, f"`{match.group(0).strip()}` {message}"))
            break
    for asked in DRIVER_ENTRY_LITERAL.finditer(full):
        if not driver_gate.is_allowed(asked.group(1)):
            findings.append(Finding(code.path, code.line_of(asked.start(), full),
                                    f"asks for the driver function {asked.group(1)}, which the judge's gate refuses at "
                                    f"run time (allowed: {driver_gate.allowed_list()})"))  # fmt: skip
    if reference_ops is not None:
        if CUBLAS_USE.search(text) and not reference_ops & GEMM_OPS:
            findings.append(Finding(code.path, 0, library_rules.no_library_reason("cuBLAS", reference_ops)))
        if CUDNN_USE.search(text) and not (reference_ops & CONV_OPS):
            findings.append(Finding(code.path, 0, library_rules.no_library_reason("cuDNN", reference_ops)))
    return findings


def _unjoined_streams(codes: list[_Code]) -> list[Finding]:
    """A stream created anywhere in the submission with no join anywhere in it (a stream made in one file is
    often joined in the file that launches on it)."""
    texts = [(code, _strip_strings(code.text)) for code in codes]
    if any(STREAM_JOIN.search(text) for _, text in texts):
        return []
    for code, text in texts:
        if created := STREAM_CREATE.search(text):
            return [Finding(code.path, code.line_of(created.start(), text),
                            "creates a CUDA stream it never joins to the caller's stream (cudaStreamWaitEvent, or "
                            "CUDAEvent's record + block); use at::cuda::getStreamFromPool() and join it with events, "
                            "or launch on the current stream")]  # fmt: skip
    return []


def _own_code(kernels_dir: Path, preprocess: bool) -> tuple[list[_Code], list[Finding]]:
    """The submission's code per file: preprocessed where the preprocessor ran, raw (comments removed)
    otherwise; plus findings about the raw text itself (line directives)."""
    raw: dict[str, str] = {}
    findings: list[Finding] = []
    for path in sorted(kernels_dir.rglob("*")):
        if path.is_file() and path.suffix in CPP_SUFFIXES:
            shown = f"kernels/{path.relative_to(kernels_dir)}"
            raw[shown] = path.read_text(errors="replace")
    from cuda_agent.judge.trusted.preprocess import line_directives, preprocess_submission

    for shown, text in raw.items():
        for line in line_directives(_strip_comments(text)):
            findings.append(Finding(shown, line, "#line directives and line markers are not allowed in kernels/"))
    units: dict[str, object] = {}
    if preprocess and raw:
        try:
            units = preprocess_submission(kernels_dir)  # type: ignore[assignment]
        except Exception:  # a kernels/ folder the build refuses, or no toolchain: raw text only
            units = {}
    codes: list[_Code] = []
    covered: set[str] = set()
    by_file: dict[str, list[tuple[int, str]]] = {}
    for name, unit in units.items():
        if not getattr(unit, "ok", False):
            continue
        covered.add(f"kernels/{name}")
        for file, line, code in unit.lines:  # type: ignore[attr-defined]
            by_file.setdefault(f"kernels/{file}", []).append((line, code))
            covered.add(f"kernels/{file}")
    codes += [_Code(path, tuple(lines)) for path, lines in sorted(by_file.items())]
    for shown, text in raw.items():
        if shown not in covered:  # not reached by a unit that preprocessed (or preprocessing unavailable)
            stripped = _strip_comments(text)
            codes.append(_Code(shown, tuple(enumerate(stripped.split("\n"), start=1))))
    return codes, findings


def check_kernel_sources(
    kernels_dir: Path, reference_ops: set[str] | None = None, preprocess: bool = True
) -> list[Finding]:
    """Findings for kernels/. `reference_ops` (ATen op names the reference ran) decides whether cuBLAS
    and cuDNN are allowed; None skips those rules (unknown task). `preprocess` matches the code as the
    compiler sees it (see preprocess.py); without it, the raw text with comments removed."""
    codes, findings = _own_code(Path(kernels_dir), preprocess)
    findings += _unjoined_streams(codes)
    own = _defined_functions(codes)
    seen: set[tuple[str, str]] = set()
    for code in codes:
        for finding in _file_rules(code, reference_ops, own):
            key = (finding.path, finding.message)
            if key not in seen:
                seen.add(key)
                findings.append(finding)
    return findings
