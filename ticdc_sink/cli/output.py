"""See the sink work (demo), read a topic it wrote (tail), run a local Kafka broker (broker).

demo streams a synthetic change feed (inserts, updates with old values,
deletes and a DDL, in a few micro-batches) through Spark into Kafka (the
embedded broker unless --bootstrap-servers is given), reads the topic back and
prints one raw message and then every message decoded.  tail prints the
decoded events of any topic.  broker runs the embedded broker until it is
interrupted, for demo, tail and your own Spark jobs.
"""

from __future__ import annotations

import sys


class CommandError(Exception):
    """A failure the CLI reports in one line, without a traceback."""


def say(text: str) -> None:
    print(f"[ticdc-sink] {text}", flush=True)


def complain(text: str) -> None:
    print(f"[ticdc-sink] error: {text}", file=sys.stderr, flush=True)
