"""Argument types shared by the command lines (argparse ``type=``), so that each check says the same thing.

In the base stage because both the front ends (bench/cli/) and the feature rooms' commands (``surfbench synth``,
bench/synth/synth_cli.py) parse with them, and a room may not import the front ends.
"""

from __future__ import annotations

import argparse
from typing import TypeVar

ParserT = TypeVar("ParserT", bound=argparse.ArgumentParser)
"""The ``surfbench`` parser's class: its subparsers (``argparse._SubParsersAction[ParserT]``) make parsers of it.

A command that adds its subcommands takes ``sub: argparse._SubParsersAction[ParserT]``: the class is invariant, so
the parser's own subclass must pass through (the bare name is subscriptable for the type checker only).
"""


def positive_int(text: str) -> int:
    """A whole number of 1 or more, or argparse's error saying which of the two it is not."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be 1 or more")
    return value
