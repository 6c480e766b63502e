"""See the sink work (demo), read a topic it wrote (tail), run a local Kafka broker (broker).

demo streams a synthetic change feed (inserts, updates with old values,
deletes and a DDL, in a few micro-batches) through Spark into Kafka (the
embedded broker unless --bootstrap-servers is given), reads the topic back and
prints one raw message and then every message decoded.  tail prints the
decoded events of any topic.  broker runs the embedded broker until it is
interrupted, for demo, tail and your own Spark jobs.
"""

from __future__ import annotations

import signal
import socket
import time

from ..broker import EmbeddedBroker
from .output import CommandError, say

_BROKER_CHECK_SECONDS = 1.0


def run_broker() -> int:
    """Serve the embedded broker until SIGINT or SIGTERM, then stop it: no Tansu process outlives the command."""
    # Both unwind as KeyboardInterrupt; SIGINT too, since a shell starts background jobs with SIGINT ignored.
    for stop_signal in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop_signal, signal.default_int_handler)
    broker = EmbeddedBroker().start()  # stops what it started when it fails or is interrupted
    try:
        address = broker.bootstrap_servers
        print(address, flush=True)
        say(f"embedded Kafka broker (Tansu, data in memory) running until Ctrl-C; use it with "
            f"demo/tail --bootstrap-servers {address}, or the Spark option kafka.bootstrap.servers={address}")
        port = int(address.rsplit(":", 1)[1])
        while _accepts_connections(port):
            time.sleep(_BROKER_CHECK_SECONDS)
        raise CommandError(f"the broker at {address} stopped by itself; the end of its log:\n"
                           + broker.log_path.read_text(errors="replace")[-2000:])
    except KeyboardInterrupt:
        say("stopping the broker")
        return 0
    finally:
        for stop_signal in (signal.SIGINT, signal.SIGTERM):  # a second Ctrl-C must not cut the stop short
            signal.signal(stop_signal, signal.SIG_IGN)
        broker.stop()
        say("broker stopped")


def _accepts_connections(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=_BROKER_CHECK_SECONDS):
            return True
    except OSError:
        return False
