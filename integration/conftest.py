"""The integration suite: the sink against the components its users run, on the best backend this machine has.

Backends, in order of choice (the session header says which one ran):

- an existing cluster, ``TICDC_SINK_TEST_BOOTSTRAP_SERVERS=host:9092`` (and for
  Avro ``TICDC_SINK_TEST_SCHEMA_REGISTRY=http://host:8081``, else the registry
  test double); ``python integration/kafka_server.py`` starts real Apache Kafka
  for it, as CI does;
- Testcontainers (``pip install -e '.[test,integration]'`` and a Docker engine):
  Apache Kafka in KRaft mode and a Confluent Schema Registry on its network,
  started once for the session;
- otherwise the embedded broker (Tansu) and the Schema Registry test double
  (``ticdc_sink/embedded/schema_registry.py``): what they cannot show (abort
  isolation for read_committed consumers) skips with its reason.

The SASL/PLAIN tests use a broker of their own that requires the login: a
second Kafka container, or the cluster named by
``TICDC_SINK_TEST_SASL_BOOTSTRAP_SERVERS`` with ``TICDC_SINK_TEST_SASL_USERNAME``
and ``TICDC_SINK_TEST_SASL_PASSWORD``.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))  # the shared test helpers (changefeed, shared_fixtures, ...)

from backend import KAFKA_IMAGE, REGISTRY_IMAGE, chosen  # noqa: E402
from shared_fixtures import (BrokerUnderTest, broker_that_goes_away, hides_aborted_transactions,  # noqa: E402,F401
                             pytest_collection_modifyitems, spark, topic, under_test)


@dataclass(frozen=True)
class RealKafka(BrokerUnderTest):
    isolation: str = "read_committed"  # what TiCDC's consumers read, and real Kafka keeps it
    network: object = None  # the Docker network of a Kafka container, which a registry container joins


@dataclass(frozen=True)
class RealSchemaRegistry:
    url: str


def pytest_report_header(config) -> str:
    return f"ticdc-sink integration backend: {chosen().description}"


@pytest.fixture(scope="session")
def broker():
    backend = chosen()
    if backend.kind == "external":
        yield RealKafka(os.environ["TICDC_SINK_TEST_BOOTSTRAP_SERVERS"])
    elif backend.kind == "containers":
        from testcontainers.core.network import Network
        from testcontainers.kafka import KafkaContainer

        with Network() as network, \
                KafkaContainer(KAFKA_IMAGE).with_kraft().with_network(network).with_network_aliases("kafka") as kafka:
            yield RealKafka(kafka.get_bootstrap_server(), network=network)
    else:
        from ticdc_sink.embedded.broker import EmbeddedBroker

        with EmbeddedBroker() as running:  # read uncommitted, as the unit suite reads it (docs/limits.md)
            yield BrokerUnderTest(running.bootstrap_servers, "read_uncommitted")


def _sasl_plain_kafka(image: str, username: str, password: str):
    """A Kafka container whose client listener requires a SASL/PLAIN login as ``username``.

    Testcontainers names the client listener PLAINTEXT and advertises it once the
    port is mapped; mapping that listener name to the SASL_PLAINTEXT protocol, with
    a login module scoped to it, keeps the broker's own listeners as they are.
    """
    from testcontainers.kafka import KafkaContainer

    class SaslPlainKafkaContainer(KafkaContainer):
        def configure(self) -> None:
            self.security_protocol_map = "BROKER:PLAINTEXT,PLAINTEXT:SASL_PLAINTEXT"
            super().configure()
            self.with_env("KAFKA_SASL_ENABLED_MECHANISMS", "PLAIN")
            self.with_env("KAFKA_LISTENER_NAME_PLAINTEXT_PLAIN_SASL_JAAS_CONFIG",
                          "org.apache.kafka.common.security.plain.PlainLoginModule required "
                          f'username="{username}" password="{password}" user_{username}="{password}";')

    return SaslPlainKafkaContainer(image).with_kraft()


SASL_USERNAME, SASL_PASSWORD = "ticdc-sink", "sink-secret"


def sasl_plain(username: str, password: str) -> dict:
    """librdkafka's settings of a SASL/PLAIN login without TLS."""
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": username, "sasl.password": password}


@pytest.fixture(scope="session")
def sasl_broker():
    """A broker that refuses clients without a SASL/PLAIN login; its ``security`` holds the login."""
    backend = chosen()
    if backend.kind == "embedded":
        pytest.skip("the embedded broker (Tansu 0.6) knows SCRAM only, not PLAIN: the SASL/PLAIN tests run "
                    "with Docker, or against a cluster named by TICDC_SINK_TEST_SASL_BOOTSTRAP_SERVERS")
    if backend.kind == "external":
        servers = os.environ.get("TICDC_SINK_TEST_SASL_BOOTSTRAP_SERVERS")
        if not servers:
            pytest.skip("no SASL/PLAIN cluster: set TICDC_SINK_TEST_SASL_BOOTSTRAP_SERVERS, "
                        "TICDC_SINK_TEST_SASL_USERNAME and TICDC_SINK_TEST_SASL_PASSWORD")
        yield RealKafka(servers, security=sasl_plain(os.environ["TICDC_SINK_TEST_SASL_USERNAME"],
                                                     os.environ["TICDC_SINK_TEST_SASL_PASSWORD"]))
        return
    with _sasl_plain_kafka(KAFKA_IMAGE, SASL_USERNAME, SASL_PASSWORD) as kafka:
        yield RealKafka(kafka.get_bootstrap_server(), security=sasl_plain(SASL_USERNAME, SASL_PASSWORD))


@pytest.fixture(scope="session")
def real_schema_registry(broker):
    """A Confluent Schema Registry whose store is the Kafka cluster under test (None: the test double)."""
    backend = chosen()
    if backend.kind == "embedded":
        yield None
        return
    external = os.environ.get("TICDC_SINK_TEST_SCHEMA_REGISTRY")
    if external:
        yield RealSchemaRegistry(external)
        return
    if broker.network is None:  # an external cluster without a registry: the test double stands in
        yield None
        return
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
    """The real registry where there is one (tests use fresh topics, so subjects), else a fresh test double."""
    if real_schema_registry is not None:
        yield real_schema_registry
        return
    from ticdc_sink.embedded.schema_registry import SchemaRegistryDouble

    with SchemaRegistryDouble() as double:
        yield double
