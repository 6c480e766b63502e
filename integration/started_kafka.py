"""A Kafka cluster of ``kafka_server.py`` for a module's or a class's tests: started, yielded, stopped.

Where java or mvn is missing the tests skip, saying what they needed; every
other failure to start is an error.
"""

from __future__ import annotations

import pytest
from kafka_server import KafkaCluster, ToolMissing


def started_kafka(needed: str, nodes: int, *args, **settings):
    """For a fixture to ``yield from``: ``KafkaCluster(nodes, *args, **settings)`` while its tests run;
    ``needed`` names it in the skip."""
    kafka = KafkaCluster(nodes, *args, **settings)
    try:
        kafka.start()
    except ToolMissing as e:
        pytest.skip(f"no {needed}: {e}")
    try:
        yield kafka
    finally:
        kafka.stop()
