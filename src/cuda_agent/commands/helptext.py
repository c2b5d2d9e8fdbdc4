"""`--help` that states every option's default, for every command and subcommand.

argparse's own `ArgumentDefaultsHelpFormatter` prints "(default: None)" and "(default: False)", which
say nothing, and skips options that have no help text. This formatter adds "(default: X)" to each option
whose default means something (not None, False, or empty), whether or not it has help text, unless the
text already states it. `Parser` makes every subcommand's parser (nested ones too) use it.
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import Any


def default_text(value: Any) -> str | None:
    """How a default reads in help, or None when there is nothing worth saying (None, False, empty)."""
    if value is None or value is False or value is argparse.SUPPRESS:
        return None
    if isinstance(value, list | tuple):
        parts = [default_text(v) for v in value]
        return " ".join(p for p in parts if p is not None) if value else None
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def states_default(help_text: str) -> bool:
    """Whether a help text already says its default (as "default ..." or "%(default)s")."""
    return "default" in help_text.lower()


class DefaultsFormatter(argparse.HelpFormatter):
    """Adds "(default: X)" to the help of every option with a meaningful default (see `default_text`)."""

    def _format_action(self, action: argparse.Action) -> str:
        if action.help is None and self._default_of(action) is not None:
            action = copy.copy(action)
            action.help = ""  # an empty text: _get_help_string below turns it into the default alone
            action.help = self._get_help_string(action).strip()
        return super()._format_action(action)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = self._default_of(action)
        if default is None or states_default(text):
            return text
        return f"{text} (default: {default.replace('%', '%%')})"

    @staticmethod
    def _default_of(action: argparse.Action) -> str | None:
        if not action.option_strings and action.nargs not in (argparse.OPTIONAL, argparse.ZERO_OR_MORE):
            return None  # a required positional has no default to state
        if isinstance(action, argparse._HelpAction | argparse._VersionAction):
            return None
        return default_text(action.default)


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose help states defaults; its subparsers are Parsers too (argparse builds them
    with the parent's class)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)
