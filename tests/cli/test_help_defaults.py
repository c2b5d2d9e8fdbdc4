"""Every option's `--help` says its default, once, in every command and subcommand."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

from cuda_agent.cli import build_parser
from cuda_agent.commands.helptext import default_text


def parsers(parser: argparse.ArgumentParser, path: str = "cuda-agent") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, f"{path} {name}")


def option_help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The help block argparse prints for `action` (invocation and text, wrapped as in --help)."""
    formatter = parser._get_formatter()
    formatter.add_argument(action)  # sets the column widths as format_help does
    return re.sub(r"\s+", " ", formatter._format_action(action))


def test_every_option_with_a_default_states_it_once() -> None:
    missing, twice, checked = [], [], 0
    for path, parser in parsers(build_parser()):
        for action in parser._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction | argparse._VersionAction):
                continue
            text = default_text(action.default)
            if text is None:
                continue
            checked += 1
            block = option_help(parser, action)
            if f"default: {text}" not in block and "default" not in block.lower():
                missing.append(f"{path} {action.option_strings[0]} (default {text!r}): {block}")
            if block.lower().count("default") > 1 or re.search(rf"\({re.escape(text)}\) \(default", block):
                twice.append(f"{path} {action.option_strings[0]}: {block}")
    assert checked > 80  # every command's options were seen
    assert not missing, "\n".join(missing)
    assert not twice, "\n".join(twice)


def test_the_defaults_shown_are_the_parsers_own() -> None:
    parser = dict(parsers(build_parser()))["cuda-agent train grpo"]
    block = option_help(parser, next(a for a in parser._actions if "--num-generations" in a.option_strings))
    assert "rollouts per task in a group (default: 4)" in block
    solve = dict(parsers(build_parser()))["cuda-agent solve"]
    assert "(default: runs)" in option_help(solve, next(a for a in solve._actions if "--runs-dir" in a.option_strings))
    synth = dict(parsers(build_parser()))["cuda-agent synth"]
    assert "(default: 1 100)" in option_help(synth, next(a for a in synth._actions if "--band-ms" in a.option_strings))
