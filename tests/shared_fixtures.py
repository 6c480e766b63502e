"""The fixtures both suites share: the unit suite's conftest and the integration suite's import them from here.

Each suite's conftest adds its own backend, the ``broker`` and ``schema_registry``
fixtures these build on: a test module imports helpers by their own names, never
``conftest``, which names two different files when both suites run together.
"""

from __future__ import annotations

import itertools
import os
import sys
import time
from dataclasses import dataclass, field

import pytest


@dataclass(frozen=True)
class BrokerUnderTest:
    """The session's broker, and the view of its topics the tests read back."""

    bootstrap_servers: str
    isolation: str  # the readers' isolation.level
    security: dict = field(default_factory=dict)  # librdkafka's security settings, where the broker asks for them

    def read(self, topic: str, **options) -> list:
        """Every message of ``topic``, in partition and offset order (``kafka.topic_reader.read_messages``'s options)."""
        from ticdc_sink.kafka.topic_reader import read_messages

        return read_messages(self.bootstrap_servers, topic,
                             settings={"isolation.level": self.isolation, **self.security}, **options)


class _BrokerThatGoesAway:
    """What a test takes away: its ``bootstrap_servers`` and ``pid``, ``bring_back()``, and ``read`` as the
    session's broker reads."""

    view: BrokerUnderTest
    hides_aborted_transactions: bool

    def read(self, topic: str, **options) -> list:
        return self.view.read(topic, **options)


class _ProxiedEmbeddedBroker(_BrokerThatGoesAway):
    """The embedded broker behind a proxy: killing the proxy takes the broker away, data kept."""

    def __init__(self, broker: BrokerUnderTest, hides_aborted_transactions: bool):
        from ticdc_sink.embedded.broker import BrokerProxy

        self.view, self.proxy = broker, BrokerProxy(broker)
        self.hides_aborted_transactions = hides_aborted_transactions

    @property
    def bootstrap_servers(self) -> str:
        return self.proxy.bootstrap_servers

    @property
    def pid(self) -> int:
        return self.proxy.pid

    def bring_back(self) -> None:
        self.proxy.stop()
        self.proxy.start()


class _PrivateKafka(_BrokerThatGoesAway):
    """A one-node Apache Kafka of the test's own (integration/kafka_server.py): killed with -9 and
    restarted on the same ports with its data, as a cluster shared with other tests cannot be."""

    def __init__(self):
        import importlib.util
        from pathlib import Path

        path = Path(__file__).resolve().parents[1] / "integration" / "kafka_server.py"
        spec = importlib.util.spec_from_file_location("ticdc_sink_kafka_server", path)
        kafka_server = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # dataclasses look it up
        spec.loader.exec_module(kafka_server)
        self.cluster, self.tool_missing = kafka_server.KafkaCluster(1), kafka_server.ToolMissing
        self.view = None
        self.hides_aborted_transactions = True

    @property
    def bootstrap_servers(self) -> str:
        return self.cluster.bootstrap_servers

    @property
    def pid(self) -> int:
        return self.cluster.nodes[0].process.pid

    def bring_back(self) -> None:
        node = self.cluster.nodes[0]
        node.process.wait()
        self.cluster.start_node(node)
        self.cluster.wait_until_ready()


@pytest.fixture
def broker_that_goes_away(broker, hides_aborted_transactions):
    """A broker that a test can take away (kill its ``pid``) and ``bring_back()`` with everything it had.

    Next to the embedded broker: a proxy in front of it.  Next to real Kafka, which
    cannot be taken away from under the other tests: a private one-node Kafka,
    read as the session's broker is read.
    """
    if os.environ.get("TICDC_SINK_TEST_BOOTSTRAP_SERVERS") is None and broker.isolation == "read_uncommitted":
        proxied = _ProxiedEmbeddedBroker(broker, hides_aborted_transactions)
        proxied.proxy.start()
        try:
            yield proxied
        finally:
            proxied.proxy.stop()
        return
    private = _PrivateKafka()
    try:
        private.cluster.start()
    except private.tool_missing as e:
        pytest.skip(f"a broker to take away next to real Kafka is a private Kafka node, which needs {e}")
    private.view = BrokerUnderTest(private.bootstrap_servers, "read_committed")
    try:
        yield private
    finally:
        private.cluster.stop()


def pytest_collection_modifyitems(items) -> None:
    """A test that takes the Spark session is a Spark test whatever its module's marks say, so that ``-m spark``
    (the lowest pyspark's run in .ci/run) and ``-m "not spark"`` (the quick run) select it by what it does."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()) and item.get_closest_marker("spark") is None:
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark():
    # Spark's Python workers must run the interpreter that has the dependencies.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    # local[2,3]: a failed task is retried (up to 3 attempts), as on a cluster.
    session = (SparkSession.builder.master("local[2,3]").appName("ticdc-sink-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def hides_aborted_transactions(broker) -> bool:
    """Whether read_committed consumers of this broker skip aborted transactions (Tansu does not)."""
    import uuid

    from confluent_kafka import Producer

    from ticdc_sink.kafka.topic_reader import read_messages

    probe_topic = f"abort-probe-{uuid.uuid4().hex}"
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": probe_topic})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(probe_topic, b"aborted")
    producer.flush(30)
    producer.abort_transaction(30)
    return not read_messages(broker.bootstrap_servers, probe_topic, idle_seconds=2,
                             settings={"isolation.level": "read_committed"})


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory):
    """A throwaway CA and a certificate it signed for 127.0.0.1 and localhost (certificates.py), as PEM files."""
    from certificates import make_tls_files

    return make_tls_files(tmp_path_factory.mktemp("tls"))


_topic_numbers = itertools.count()


@pytest.fixture
def topic(request) -> str:
    """A fresh topic name per test."""
    name = request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:80]
    return f"t{int(time.time())}-{next(_topic_numbers)}-{name}"


@pytest.fixture
def under_test(request, protocol):
    """The ``protocol`` of a test run for every protocol, with a registry (a fresh test double) for avro."""
    from protocols import ProtocolUnderTest

    registry = request.getfixturevalue("schema_registry").url if protocol in ("avro", "debezium-avro") else None
    return ProtocolUnderTest(protocol, registry)
