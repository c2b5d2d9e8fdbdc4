"""Kernel names a library makes at run time from printf templates, matched in time linear in the name.

cuBLASLt on Hopper assembles its nvjet GEMM kernels while the program runs, so no fat binary on disk holds
their names; the library's read-only data holds the templates it prints them from
(`nvjet_sm%d_%s_%dx%d_..._%c%c%c`). A traced name is cuBLAS's if one of those templates can print it.

Why not a regular expression: a template has several `%s` (any run of name characters, underscores
included), and a backtracking engine takes seconds to minutes to refuse a crafted 250-character name
(measured: 45 s). The match here runs the template as a small automaton over the name, one pass, at most
one set of template positions per character."""

from __future__ import annotations

import string
from dataclasses import dataclass

_DIGITS = frozenset(string.digits)
_ALNUM = frozenset(string.ascii_letters + string.digits)
_NAME = _ALNUM | {"_"}
ONE, ANY = "1", "*"  # a step consumes exactly one allowed character, or any number of them


@dataclass(frozen=True)
class NameTemplate:
    """One printf template as steps (how many, which characters): %s a run of name characters, %d one or
    more digits, %c one letter or digit, %% a percent sign, anything else itself."""

    text: str
    steps: tuple[tuple[str, frozenset[str]], ...]

    @classmethod
    def parse(cls, text: str) -> NameTemplate | None:
        """None for a template with a conversion no kernel name is printed with (%f, %p, a width...)."""
        steps: list[tuple[str, frozenset[str]]] = []
        at = 0
        while at < len(text):
            char = text[at]
            if char != "%":
                steps.append((ONE, frozenset(char)))
                at += 1
                continue
            conversion = text[at + 1 : at + 2]
            at += 2
            if conversion == "s":
                if not steps or steps[-1] != (ANY, _NAME):  # %s%s...: one run, the same names
                    steps.append((ANY, _NAME))
            elif conversion == "d":
                steps += [(ONE, _DIGITS), (ANY, _DIGITS)]
            elif conversion == "c":
                steps.append((ONE, _ALNUM))
            elif conversion == "%":
                steps.append((ONE, frozenset("%")))
            else:
                return None
        return cls(text, tuple(steps))

    def _closure(self, states: set[int]) -> set[int]:
        """The positions reachable without reading a character: past any ANY step (it may match nothing)."""
        out = set(states)
        for index in sorted(states):
            while index < len(self.steps) and self.steps[index][0] == ANY:
                index += 1
                out.add(index)
        return out

    def matches(self, name: str) -> bool:
        """Whether the template can print exactly `name`."""
        states = self._closure({0})
        for char in name:
            following: set[int] = set()
            for index in states:
                if index < len(self.steps) and char in self.steps[index][1]:
                    following.add(index if self.steps[index][0] == ANY else index + 1)
            if not following:
                return False
            states = self._closure(following)
        return len(self.steps) in states
