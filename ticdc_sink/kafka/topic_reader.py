"""Reading a topic from its beginning without a consumer group: for ``tail``, the demo and the tests."""

from __future__ import annotations

import time
from typing import Iterator

from confluent_kafka import KafkaError

from ..errors import DeliveryError


def iter_messages(bootstrap_servers: str, topic: str, idle_seconds: float = 5.0,
                  max_messages: int | None = None, settings: dict | None = None,
                  expect: int = 0, timeout_seconds: float = 60.0) -> Iterator:
    """The messages of ``topic`` from the beginning, as they arrive, without a consumer group.

    Reading stops after ``idle_seconds`` without a new message (or at
    ``max_messages``): some brokers report wrong high watermarks, so the end
    of a topic is found by quiet, not by offsets.  Before ``expect`` messages
    arrived, quiet does not count: reading then stops only after
    ``timeout_seconds`` without a message, so a slow start loses nothing.
    """
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": bootstrap_servers,
        "group.id": "ticdc-sink-reader",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
        "auto.offset.reset": "earliest",
        **(settings or {}),
    })
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
                if message.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise DeliveryError(f"reading {topic}: {message.error().str()}")
            count, last = count + 1, time.monotonic()
            yield message
    finally:
        consumer.close()


def read_messages(bootstrap_servers: str, topic: str, idle_seconds: float = 5.0,
                  max_messages: int | None = None, settings: dict | None = None, expect: int = 0) -> list:
    """Every message of ``topic`` (see ``iter_messages``), in partition and offset order."""
    messages = iter_messages(bootstrap_servers, topic, idle_seconds, max_messages, settings, expect)
    return sorted(messages, key=lambda m: (m.partition(), m.offset()))
