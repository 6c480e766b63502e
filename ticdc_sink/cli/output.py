"""How the command line speaks: a line per step, and one line for a failure."""

from __future__ import annotations

import re
import sys

# The last line a sink error leaves in what Spark reports of a failed task: "ticdc_sink.errors.XError: ...".
_SINK_ERROR = re.compile(r"^ticdc_sink\.[\w.]*(?:Error|Failure): (.+?)(?: SQLSTATE: \w+)*$", re.MULTILINE)


class CommandError(Exception):
    """A failure the CLI reports in one line, without a traceback."""


def say(text: str) -> None:
    print(f"[ticdc-sink] {text}", flush=True)


def complain(text: str) -> None:
    print(f"[ticdc-sink] error: {text}", file=sys.stderr, flush=True)


def spark_failure(error: Exception) -> str:
    """What a failed Spark job says in one line: the sink's own error where it is one, else Spark's first line."""
    text = str(error)
    found = _SINK_ERROR.findall(text)
    return found[-1] if found else text.strip().splitlines()[0]
