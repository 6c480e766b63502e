"""The integration suite: the tests of ``tests/`` that need real Kafka, run against real Kafka.

Kafka comes from Testcontainers (``pip install -e '.[test,integration]'`` and a
Docker engine), or from an existing cluster named by
``TICDC_SINK_TEST_BOOTSTRAP_SERVERS``. The avro cases use a real Confluent
Schema Registry in place of the unit suite's test double: a container on the
Kafka container's network, or the registry named by
``TICDC_SINK_TEST_SCHEMA_REGISTRY``. Without them, the tests skip with the reason.
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
under_test = _unit.under_test

KAFKA_IMAGE = "confluentinc/cp-kafka:7.6.1"
REGISTRY_IMAGE = "confluentinc/cp-schema-registry:7.6.1"


@dataclass(frozen=True)
class RealKafka(_unit.BrokerUnderTest):
    isolation: str = "read_committed"  # what TiCDC's consumers read, and real Kafka keeps it
    network: object = None  # the Docker network of a Kafka container, which a registry container joins


@dataclass(frozen=True)
class RealSchemaRegistry:
    url: str


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
    from testcontainers.core.network import Network

    with Network() as network, \
            KafkaContainer(KAFKA_IMAGE).with_kraft().with_network(network).with_network_aliases("kafka") as kafka:
        yield RealKafka(kafka.get_bootstrap_server(), network=network)


@pytest.fixture(scope="session")
def real_schema_registry(broker):
    """A Confluent Schema Registry whose store is the Kafka cluster under test."""
    external = os.environ.get("TICDC_SINK_TEST_SCHEMA_REGISTRY")
    if external:
        yield RealSchemaRegistry(external)
        return
    if broker.network is None:
        pytest.skip("no Schema Registry for the external cluster: set TICDC_SINK_TEST_SCHEMA_REGISTRY")
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.waiting_utils import wait_for_logs

    registry = (DockerContainer(REGISTRY_IMAGE).with_network(broker.network).with_exposed_ports(8081)
                .with_env("SCHEMA_REGISTRY_HOST_NAME", "schema-registry")
                .with_env("SCHEMA_REGISTRY_LISTENERS", "http://0.0.0.0:8081")
                .with_env("SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS", "PLAINTEXT://kafka:9092"))
    with registry:
        wait_for_logs(registry, "Server started, listening for requests", timeout=180)
        yield RealSchemaRegistry(f"http://{registry.get_container_host_ip()}:{registry.get_exposed_port(8081)}")


@pytest.fixture
def schema_registry(real_schema_registry):
    """The real registry where the unit suite starts its test double (tests use fresh topics, so subjects)."""
    return real_schema_registry
