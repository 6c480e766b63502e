"""How the command line speaks: a line per step, and one line for a failure."""

from __future__ import annotations

import sys


class CommandError(Exception):
    """A failure the CLI reports in one line, without a traceback."""


def say(text: str) -> None:
    print(f"[ticdc-sink] {text}", flush=True)


def complain(text: str) -> None:
    print(f"[ticdc-sink] error: {text}", file=sys.stderr, flush=True)
