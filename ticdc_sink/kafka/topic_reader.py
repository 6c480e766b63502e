"""Reading topics without a consumer group: a whole topic (``tail``, the demo, the tests) and offset ranges (the
reader)."""

from __future__ import annotations

import time
import uuid
from typing import Iterator

from confluent_kafka import KafkaError

from ..errors import DeliveryError
from . import clients
from .token_callback import DEFAULT_WITHIN, Within, failure_note

_CONSUME_BATCH = 2000  # messages asked of librdkafka at once
# The refusal of the consumer group that confluent-kafka requires and librdkafka looks up even for a consumer that
# only assigns and commits nothing: it does not concern a read (whose login needs no group ACL).
GROUP_REFUSED = KafkaError.GROUP_AUTHORIZATION_FAILED


def iter_messages(bootstrap_servers: str, topic: str, idle_seconds: float = 5.0,
                  max_messages: int | None = None, settings: dict | None = None,
                  expect: int = 0, timeout_seconds: float = 60.0, within: Within = DEFAULT_WITHIN) -> Iterator:
    """The messages of ``topic`` from the beginning, as they arrive, without a consumer group.

    Reading stops after ``idle_seconds`` without a new message (or at
    ``max_messages``): some brokers report wrong high watermarks, so the end
    of a topic is found by quiet, not by offsets.  Before ``expect`` messages
    arrived, quiet does not count: reading then stops only after
    ``timeout_seconds`` without a message, so a slow start loses nothing.
    """
    from confluent_kafka import TopicPartition

    consumer = clients.consumer({
        "bootstrap.servers": bootstrap_servers,
        "group.id": "ticdc-sink-reader",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
        "auto.offset.reset": "earliest",
        **(settings or {}),
    }, within)
    try:
        metadata = consumer.list_topics(timeout=30).topics.get(topic)
        if metadata is None or not metadata.partitions:
            return
        # Offset 0, not OFFSET_BEGINNING: the embedded broker answers "earliest" with the batch written first,
        # which under concurrent producers is not always the lowest offset, and reading from it skipped
        # batches.  Where retention has removed offset 0, the reset above starts at the earliest kept one.
        consumer.assign([TopicPartition(topic, p, 0) for p in sorted(metadata.partitions)])
        count, last = 0, time.monotonic()
        while (time.monotonic() - last < (idle_seconds if count >= expect else timeout_seconds)
               and (max_messages is None or count < max_messages)):
            message = consumer.poll(0.2)
            if message is None:
                continue
            if message.error():
                if message.error().code() in (KafkaError._PARTITION_EOF, GROUP_REFUSED):
                    continue
                raise DeliveryError(f"reading {topic}: {message.error().str()}")
            count, last = count + 1, time.monotonic()
            yield message
    finally:
        consumer.close()


def read_messages(bootstrap_servers: str, topic: str, idle_seconds: float = 5.0,
                  max_messages: int | None = None, settings: dict | None = None, expect: int = 0,
                  within: Within = DEFAULT_WITHIN) -> list:
    """Every message of ``topic`` (see ``iter_messages``), in partition and offset order."""
    messages = iter_messages(bootstrap_servers, topic, idle_seconds, max_messages, settings, expect, within=within)
    return sorted(messages, key=lambda m: (m.partition(), m.offset()))


def reader_settings(settings: dict) -> dict:
    """A consumer's settings for reading offset ranges: no group offsets kept, partition ends reported, a fetch
    at a partition's end answered at once (librdkafka's default holds it 500 ms for data to come, which every
    range's end and every probe of an end would wait out), and fetching resumed soon after the reader drains a
    full prefetch queue (by default librdkafka waits a second, and a large range's read stalled on it)."""
    return {"fetch.wait.max.ms": 10, "fetch.queue.backoff.ms": 10, **settings,
            "group.id": f"ticdc-sink-reader-{uuid.uuid4().hex}", "enable.auto.commit": False,
            "enable.partition.eof": True, "auto.offset.reset": "earliest"}


def assign(consumer, partitions: list, timeout_seconds: float) -> None:
    """``consumer.assign(partitions)``, fetching at once: librdkafka asks for the metadata of a topic new to a
    consumer whose connection is already up only on its next one-second scan, and fetches nothing until then."""
    for topic in dict.fromkeys(p.topic for p in partitions):
        consumer.list_topics(topic, timeout=timeout_seconds)
    consumer.assign(partitions)


def iter_range(consumer, topic: str, partition: int, start: int, end: int, timeout_seconds: float) -> Iterator:
    """The messages of one partition at offsets ``[start, end)``, in order, through ``consumer``."""
    for batch in iter_range_batches(consumer, topic, partition, start, end, timeout_seconds):
        yield from batch


def iter_range_batches(consumer, topic: str, partition: int, start: int, end: int,
                       timeout_seconds: float) -> Iterator[list]:
    """The messages of one partition at offsets ``[start, end)``, in order, a list at a time as librdkafka gives
    them (a reader that takes messages by the thousand spares a generator step per message).

    Transaction markers and aborted records take offsets but arrive as no
    message, so the range also ends where the consumer's position or a
    partition end passes ``end``.  A partition end short of ``end`` does not
    end it (some brokers report wrong high watermarks); ``timeout_seconds``
    without a message does, as an error.
    """
    from confluent_kafka import TopicPartition

    if start >= end:
        return
    assign(consumer, [TopicPartition(topic, partition, start)], timeout_seconds)
    following, last = start, time.monotonic()
    while True:
        # consume() returns once it has the messages asked for, else at its timeout: asking for no more than the
        # range holds ends a range at once, and a short timeout bounds the wait where markers take offsets.
        batch = consumer.consume(min(_CONSUME_BATCH, end - following), timeout=0.05)
        if batch:
            last = time.monotonic()
            messages, ended = _within(batch, end, topic, partition)
            if messages:
                yield messages
                following = messages[-1].offset() + 1
            if ended or following >= end:
                return
            continue
        position = consumer.position([TopicPartition(topic, partition)])[0].offset
        if position >= end:
            return
        if time.monotonic() - last > timeout_seconds:
            raise DeliveryError(
                f"reading {topic} partition {partition}: no message for {timeout_seconds:g} s at offset "
                f"{max(position, start)}, short of the range's end {end}: check that the brokers are up "
                f"(broker-timeout-ms bounds the wait){failure_note()}")


def _within(batch: list, end: int, topic: str, partition: int) -> tuple[list, bool]:
    """The messages of a consumed batch before ``end``, and whether the batch reached ``end`` (a message or a
    partition end at or past it).  A partition end short of ``end`` is passed over, and so is the group's
    refusal; another error raises."""
    if all(m.error() is None for m in batch) and batch[-1].offset() < end:
        return batch, False
    messages = []
    for message in batch:
        error = message.error()
        if error is not None and error.code() == GROUP_REFUSED:
            continue
        if error is not None and error.code() != KafkaError._PARTITION_EOF:
            raise DeliveryError(f"reading {topic} partition {partition}: {error.str()}")
        if message.offset() >= end:
            return messages, True
        if error is None:
            messages.append(message)
    return messages, False
