"""The native producer path (ticdc-sink-native, ``kafka/native_produce.py``) against the Python one, on a broker.

Each check sends the same ``Messages`` through ``native-producer=off`` (one Python ``produce()`` per message) and
``native-producer=on`` and holds the native path to what the Python one does: the same keys, values, partitions
and per-partition order read back, the same delivery counts and offset spans, the same one-line errors for a
refused message and a failed delivery, a full local queue waited out, and transactions committed, aborted (their
purged messages counted as failed) and fenced as before.
"""

from __future__ import annotations

import os
import signal
import socket
import time
import uuid

import numpy as np
import pyarrow as pa
import pytest

from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.errors import DeliveryError
from ticdc_sink.kafka import native_produce, producer
from ticdc_sink.kafka.messages import Messages
from ticdc_sink.kafka.producer import FENCED_ERRORS, PURGED, KafkaOutput
from ticdc_sink.kafka.transactions import TransactionalOutput

if not native_produce.installed():
    pytest.skip(native_produce.NOT_INSTALLED, allow_module_level=True)

pytestmark = [pytest.mark.broker]

PATHS = ("off", "on")  # native-producer: the Python path, the native one


def config(bootstrap: str, path: str, **extra):
    return parse_options({"kafka.bootstrap.servers": bootstrap, "protocol": "canal-json", "topic": "t",
                          "database": "d", "table": "t", "partition-num": "3", "broker-timeout-ms": "10000",
                          "native-producer": path, **extra})


def output(bootstrap: str, path: str, **extra) -> KafkaOutput:
    made = KafkaOutput(config(bootstrap, path, **extra))
    assert (made._native is not None) == (path == "on")
    return made


def renamed(messages: Messages, suffix: str) -> Messages:
    """``messages`` to topics of their own (``suffix`` added to each name)."""
    return Messages([f"{t}-{suffix}" for t in messages.topics], messages.topic_of_message, messages.partitions,
                    messages.keys, messages.values)


def expected(messages: Messages) -> dict:
    """(topic, partition) -> [(key, value)] in message order: what each partition must hold, in order."""
    def as_bytes(value):
        return value.encode() if isinstance(value, str) else value

    keys = messages.keys.to_pylist() if messages.keys is not None else [None] * len(messages)
    topic_of = messages.topic_of_message if messages.topic_of_message is not None else np.zeros(len(messages), int)
    held: dict = {}
    for topic, partition, key, value in zip(topic_of.tolist(), messages.partitions.tolist(), keys,
                                            messages.values.to_pylist()):
        held.setdefault((messages.topics[topic], partition), []).append((as_bytes(key), as_bytes(value)))
    return held


def read_back(broker, messages: Messages) -> dict:
    """What the broker holds of ``messages``' topics, as ``expected`` lays it out."""
    counts = {}
    for (topic, _), held in expected(messages).items():
        counts[topic] = counts.get(topic, 0) + len(held)
    found: dict = {}
    for topic, count in counts.items():
        for message in broker.read(topic, idle_seconds=1, expect=count):
            found.setdefault((topic, message.partition()), []).append((message.key(), message.value()))
    return found


def without(suffix: str, found: dict) -> dict:
    """A result keyed by topic, with the path's ``suffix`` taken off its topics' names."""
    return {(topic.removesuffix(f"-{suffix}"), *rest): value for (topic, *rest), value in found.items()}


def sent(broker, messages: Messages, path: str, **extra) -> tuple[dict, int, dict]:
    """``messages`` (to topics of the path's own) through ``path``: (what the broker holds, delivered, spans)."""
    own = renamed(messages, path)
    out = output(broker.bootstrap_servers, path, **extra)
    try:
        count = out.produce(own)
        out.flush()
    finally:
        out.close()
    own = own.without_broadcast(lambda topic: 3)  # as produce() sent them (partition-num)
    assert count == len(own)
    assert out._pending == 0 and out._failed == 0
    found = read_back(broker, own)
    assert found == expected(own)  # every message, each partition in message order
    return without(path, found), out.delivered, without(path, out.offsets)


KEYS = pa.array([f"key-{i:04d}".encode() for i in range(200)])
VALUES = pa.array([("v" * (i % 37)) + f"-{i}" for i in range(200)])
PARTITIONS = (np.arange(200) * 7 % 3).astype(np.int32)


def cases(topic: str) -> dict[str, Messages]:
    nulls = pa.array([None if i % 4 == 0 else b"" if i % 4 == 1 else f"k{i}".encode() for i in range(200)])
    tombstones = pa.array([None if i % 5 == 0 else b"" if i % 5 == 1 else f"value {i}".encode() for i in range(200)])
    two_topics = np.array([i % 3 == 0 for i in range(200)], dtype=np.int32)
    sliced_keys, sliced_values = pa.concat_arrays([nulls, KEYS]).slice(150, 200), pa.concat_arrays(
        [tombstones, VALUES.cast(pa.binary())]).slice(150, 200)
    return {
        "keys": Messages([topic], None, PARTITIONS, KEYS, VALUES),
        "no-keys": Messages([topic], None, PARTITIONS, None, VALUES),
        "null-and-empty-keys-and-values": Messages([topic], None, PARTITIONS, nulls, tombstones),
        "only-nulls": Messages([topic], None, PARTITIONS, pa.nulls(200), pa.nulls(200, pa.binary())),
        "several-topics": Messages([f"{topic}-a", f"{topic}-b"], two_topics, PARTITIONS, nulls, VALUES),
        "sliced": Messages([topic], None, PARTITIONS, sliced_keys, sliced_values),
        "large": Messages([topic], None, PARTITIONS, nulls.cast(pa.large_binary()), tombstones.cast(pa.large_string())),
        "string-keys": Messages([topic], None, PARTITIONS, pa.array([f"ключ {i}" for i in range(200)]), VALUES),
    }


@pytest.mark.parametrize("case", ["keys", "no-keys", "null-and-empty-keys-and-values", "only-nulls",
                                  "several-topics", "sliced", "large", "string-keys"])
def test_both_paths_send_the_same_messages_in_the_same_order(broker, topic, case):
    messages = cases(topic)[case]
    if case == "sliced":
        assert messages.keys.offset and messages.values.offset
    python, native = (sent(broker, messages, path) for path in PATHS)
    assert native[0] == python[0]  # keys, values, partitions, order
    assert native[1] == python[1] == len(messages)  # delivered
    assert native[2] == python[2]  # (topic, partition) -> [first, last] offset
    assert sum(last - first + 1 for first, last in native[2].values()) == len(messages)


def test_broadcast_messages_go_to_every_partition_through_both_paths(broker, topic):
    messages = Messages.to_every_partition([f"{topic}-a", f"{topic}-b"], b"k", b"resolved")
    python, native = (sent(broker, messages, path) for path in PATHS)
    assert native == python
    assert sorted(native[0]) == [(f"{topic}-{t}", p) for t in "ab" for p in range(3)]


def normalized(error: BaseException, *names: str) -> str:
    text = str(error)
    for name in names:
        text = text.replace(name, "<name>")
    return text


def test_a_refused_message_is_the_same_one_line_and_nothing_after_it_is_sent(broker, topic):
    """A message to a partition the topic does not have: refused at once; the ones before it are sent, the ones
    after it (to good partitions too) are not."""
    messages = Messages([topic], None, np.array([0, 1, 7, 2, 0], np.int32), None,
                        pa.array([b"before", b"before", b"refused", b"after", b"after"]))
    lines, held = [], []
    for path in PATHS:
        own = renamed(messages, path)
        out = output(broker.bootstrap_servers, path)
        try:
            with pytest.raises(DeliveryError) as error:
                out.produce(own)
            lines.append(normalized(error.value, own.topics[0]))
            out._serve(10, flush=True)  # the two before it (the Python path's pending does not count them)
            assert (out.delivered, out._failed) == (2, 0)
            held.append([(m.partition(), m.key(), m.value())
                         for m in broker.read(own.topics[0], idle_seconds=1, expect=2)])
        finally:
            out.close()
    assert lines[0] == lines[1] == \
        "<name>[7] refused a message: Unable to produce message: Local: Unknown partition"
    assert held[0] == held[1] == [(0, None, b"before"), (1, None, b"before")]


def gone_for_good(bootstrap: str) -> None:
    host, port = bootstrap.rsplit(":", 1)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, int(port)), timeout=0.5).close()
        except OSError:
            return
        time.sleep(0.05)
    raise AssertionError(f"{bootstrap} still answers")


def test_a_failed_delivery_is_the_same_one_line(broker_that_goes_away, topic, monkeypatch):
    gone = broker_that_goes_away
    # librdkafka fails the messages at message.timeout.ms, now and then seconds later (on either path): past
    # flush's 5 s margin, flush would say they are still unacknowledged.
    monkeypatch.setattr(producer, "_FLUSH_MARGIN_SECONDS", 60)
    outputs = {path: output(gone.bootstrap_servers, path, **{"broker-timeout-ms": "2000", "partition-num": "1"})
               for path in PATHS}
    try:
        for out in outputs.values():
            out.partition_count(topic)  # the topic and its metadata, while the broker is there
        os.kill(gone.pid, signal.SIGKILL)
        gone_for_good(gone.bootstrap_servers)  # else a message can leave before it is: in flight, it times out later
        messages = Messages([topic], None, np.zeros(10, np.int32), KEYS.slice(0, 10), VALUES.slice(0, 10))
        lines = []
        for out in outputs.values():
            assert out.produce(messages) == 10
        for out in outputs.values():
            with pytest.raises(DeliveryError) as error:
                out.flush()
            lines.append(str(error.value).split(" (client errors: ")[0])
            assert (out.delivered, out._failed, out._pending) == (0, 10, 0)
    finally:
        for out in outputs.values():
            out.close()
    assert lines[0] == lines[1] == (f"10 message(s) were not acknowledged by {gone.bootstrap_servers}: "
                                    f"{topic}[0]: Local: Message timed out")


def test_a_full_local_queue_is_waited_out_and_every_message_sent_in_order(broker, topic, monkeypatch):
    count = 3000
    messages = Messages([topic], None, (np.arange(count) % 3).astype(np.int32),
                        pa.array([f"k{i}".encode() for i in range(count)]),
                        pa.array([f"value {i} ".encode() * 5 for i in range(count)]))
    waits = []
    original = KafkaOutput._wait_for_room

    def counted(self):
        waits.append(self._native is not None)
        original(self)

    monkeypatch.setattr(KafkaOutput, "_wait_for_room", counted)
    python, native = (sent(broker, messages, path, **{"kafka.queue.buffering.max.messages": "100"})
                      for path in PATHS)
    assert native == python
    assert native[1] == count
    assert True in waits and False in waits  # both paths found the queue full


def transaction(broker, path: str, **extra) -> TransactionalOutput:
    made = TransactionalOutput(config(broker.bootstrap_servers, path, **extra), f"native-test-{uuid.uuid4().hex}",
                               f"native-test-{uuid.uuid4().hex}")
    assert (made._native is not None) == (path == "on")
    return made


def test_an_exactly_once_task_commits_through_both_paths(broker, topic):
    messages = Messages([topic], None, PARTITIONS, KEYS, VALUES)
    results = []
    for path in PATHS:
        own = renamed(messages, path)
        out = transaction(broker, path)
        try:
            out.start()
            out.begin()
            out.produce(own)
            out.commit(0, input_rows=len(own))
        finally:
            out.close()
        assert (out.delivered, out._failed, out._pending) == (len(own), 0, 0)
        found = read_back(broker, own)
        assert found == expected(own)
        results.append((without(path, found), without(path, out.offsets)))
    assert results[0] == results[1]


def test_an_aborted_transaction_counts_its_purged_messages_as_failed_through_both_paths(broker, topic):
    """A transaction aborted before its messages left (a long linger.ms): each is purged, counted as failed, with
    no reason of its own, as the Python path counts them."""
    messages = Messages([topic], None, PARTITIONS, KEYS, VALUES)
    counts = []
    for path in PATHS:
        out = transaction(broker, path, **{"kafka.linger.ms": "5000"})
        try:
            out.start()
            out.begin()
            out.produce(renamed(messages, path))
            out.discard()
            counts.append((out.delivered, out._failed, out._pending, out._failure_reasons))
        finally:
            out.close()
    assert counts[0] == counts[1] == (0, len(messages), 0, "purged from the queue")


def test_a_fenced_attempt_stops_with_the_same_one_line_through_both_paths(broker, topic):
    lines = []
    for path in PATHS:
        zombie = transaction(broker, path, **{"kafka.linger.ms": "3000"})  # its messages still queued when fenced
        retry = TransactionalOutput(zombie.config, zombie.transactional_id, zombie.marker_group)
        try:
            zombie.start()
            zombie.begin()
            zombie.produce(renamed(Messages([topic], None, PARTITIONS, KEYS, VALUES), path))
            retry.start()
            with pytest.raises(DeliveryError) as error:
                zombie.commit(0)
            lines.append(normalized(error.value, zombie.transactional_id))
        finally:
            zombie.close()
            retry.close()
    assert lines[0] == lines[1]
    assert "was taken over by a newer attempt of this task" in lines[0]


def test_the_plugin_joins_a_users_own_plugins():
    native, why = native_produce.load(FENCED_ERRORS, PURGED)
    assert native is not None, why
    own = native.plugin_settings({})["plugin.library.paths"]
    assert own.endswith(".so") and os.path.isfile(own)
    assert native.plugin_settings({"plugin.library.paths": "/opt/monitoring.so"}) == {
        "plugin.library.paths": f"/opt/monitoring.so;{own}"}
