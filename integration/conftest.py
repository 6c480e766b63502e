"""The integration suite: the tests of ``tests/`` that need real Kafka, run against real Kafka.

Kafka comes from Testcontainers (``pip install -e '.[test,integration]'`` and a
Docker engine), or from an existing cluster named by
``TICDC_SINK_TEST_BOOTSTRAP_SERVERS``. Without either, every test here skips
with the reason.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))  # the shared test helpers (changefeed, ...)


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_unit = _load("ticdc_sink_unit_conftest", TESTS / "conftest.py")
spark = _unit.spark
topic = _unit.topic
hides_aborted_transactions = _unit.hides_aborted_transactions


@dataclass(frozen=True)
class RealKafka:
    bootstrap_servers: str


def _docker_reason() -> str | None:
    try:
        import docker

        docker.from_env().ping()
    except Exception as e:  # no engine, no socket, no permission: all mean "cannot run containers here"
        return f"no Docker engine to start Kafka in ({type(e).__name__}: {e})"
    return None


@pytest.fixture(scope="session")
def broker():
    external = os.environ.get("TICDC_SINK_TEST_BOOTSTRAP_SERVERS")
    if external:
        yield RealKafka(external)
        return
    try:
        from testcontainers.kafka import KafkaContainer
    except ImportError:
        pytest.skip("Testcontainers is not installed: pip install -e '.[test,integration]', "
                    "or set TICDC_SINK_TEST_BOOTSTRAP_SERVERS to a Kafka cluster")
    reason = _docker_reason()
    if reason:
        pytest.skip(reason + "; or set TICDC_SINK_TEST_BOOTSTRAP_SERVERS to a Kafka cluster")
    with KafkaContainer("confluentinc/cp-kafka:7.6.1").with_kraft() as kafka:
        yield RealKafka(kafka.get_bootstrap_server())
