"""``broker``: the embedded broker, served until Ctrl-C or SIGTERM."""

from __future__ import annotations

import signal
import socket
import time

from ..embedded.broker import EmbeddedBroker
from .output import CommandError, say

_BROKER_CHECK_SECONDS = 1.0


def run_broker(port: int | None = None) -> int:
    """Serve the embedded broker until SIGINT or SIGTERM, then stop it: no Tansu process outlives the command.
    ``port``: the loopback port to serve on (a free one when None)."""
    # Both unwind as KeyboardInterrupt; SIGINT too, since a shell starts background jobs with SIGINT ignored.
    for stop_signal in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop_signal, signal.default_int_handler)
    broker = EmbeddedBroker(port=port).start()  # stops what it started when it fails or is interrupted
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
