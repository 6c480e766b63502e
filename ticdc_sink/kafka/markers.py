"""What the sink records of a query's batches: consumer groups' committed offsets on the marker topic.

A group of the sink does not consume; the offsets it commits on the marker
topic's partitions are numbers the sink keeps (a batch id, a watermark, input
rows, Simple's bootstrap state), in Kafka beside the data, committed in the
same transaction as the batch where it is exactly-once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException

from ..config.sink import SinkConfig
from ..errors import ConfigError, DeliveryError
from . import clients
from .producer import KafkaOutput
from .token_callback import broker_timeout


@dataclass(frozen=True)
class Marker:
    """What a consumer group of the sink recorded on the marker topic.

    Partition 0's offset is the last committed batch id + 1; partition 1's is the
    last watermark sent (the driver's group; a TSO fits in an offset); partition
    2's is how many input rows the task that committed the batch had read (the
    tasks' groups), which tells a complete earlier attempt from one whose input
    Spark cut short.
    """

    batch_id: int | None = None
    watermark: int = 0
    input_rows: int | None = None


_MARKER_BATCH, _MARKER_WATERMARK, _MARKER_INPUT_ROWS = 0, 1, 2
_MARKER_PARTITIONS = 3


def ensure_marker_topic(output: "KafkaOutput") -> None:
    """Make sure the marker topic exists with its partitions (growing one made by an older version)."""
    topic = output.config.marker_topic
    count = output.partition_count(topic, partitions_if_created=_MARKER_PARTITIONS, option="marker-topic")
    if count >= _MARKER_PARTITIONS:
        return
    try:
        output.grow(topic, _MARKER_PARTITIONS)
    except KafkaException as e:
        raise ConfigError("marker-topic", topic, f"the marker topic has {count} partitions, needs "
                                                 f"{_MARKER_PARTITIONS} and could not grow ({e.args[0].str()}): "
                                                 "name a new marker-topic and the sink creates it") from None


def marker_consumer(output: "KafkaOutput", group: str):
    """A consumer of ``group``, whose committed offsets on the marker topic are its marker."""
    return clients.consumer({**output.client_settings,
                             "group.id": group, "enable.auto.commit": False, "isolation.level": "read_committed"},
                            broker_timeout(output.config.broker_timeout_ms))


# What the brokers refuse this login: no wait makes it pass.
_REFUSALS = (KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.TOPIC_AUTHORIZATION_FAILED,
             KafkaError.CLUSTER_AUTHORIZATION_FAILED, KafkaError._AUTHENTICATION)
# A coordinator that is moving or not found yet: committed() is asked again (each time for at most a second).
_WAIT_FOR_COORDINATOR = (KafkaError._TIMED_OUT, KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                         KafkaError.COORDINATOR_NOT_AVAILABLE)


def _committed(output: "KafkaOutput", consumer, group: str) -> list[int | None]:
    """The offsets ``group`` committed on the marker topic's partitions, None where it committed none.

    A group coordinator that is moving (a broker restarted, or just started) answers with a
    retriable error or not at all; the read is tried again until ``broker-timeout-ms``.  A refusal
    (the login may not read the group) fails within a second.
    """
    from confluent_kafka import TopicPartition

    topic, timeout = output.config.marker_topic, output.config.broker_timeout_ms / 1000
    deadline = time.monotonic() + timeout
    while True:
        try:
            partitions = consumer.committed([TopicPartition(topic, p) for p in range(_MARKER_PARTITIONS)],
                                            timeout=max(0.1, min(1.0, deadline - time.monotonic())))
            error = next((p.error for p in partitions if p.error is not None), None)
        except KafkaException as e:
            error = e.args[0]
        if error is None:
            return [p.offset if p.offset >= 0 else None for p in partitions]
        refusal = _refusal(consumer)
        if refusal is not None:
            error = refusal
        elif (error.retriable() or error.code() in _WAIT_FOR_COORDINATOR) and time.monotonic() < deadline:
            time.sleep(0.2)
            continue
        raise DeliveryError(f"cannot read the marker of {group!r} from {output.config.bootstrap_servers}: "
                            f"{error.str()}")


def _refusal(consumer) -> KafkaError | None:
    """A refusal among the events on the consumer's queue: a refused coordinator lookup (no Read on the group)
    arrives there, not from committed(); the other events (a connection lost while a broker restarts) pass, as
    the wait for the coordinator does.  The consumer subscribes to nothing, so the queue holds only events."""
    while (event := consumer.poll(0)) is not None:
        if event.error() is not None and event.error().code() in _REFUSALS:
            return event.error()
    return None


def _marker(offsets: list[int | None]) -> Marker:
    batch, watermark, input_rows = offsets
    return Marker(None if batch is None else batch - 1, watermark or 0, input_rows)


def _marker_offsets(batch_id: int, watermark: int | None = None, input_rows: int | None = None) -> dict[int, int]:
    offsets = {_MARKER_BATCH: batch_id + 1}
    if watermark:
        offsets[_MARKER_WATERMARK] = watermark
    if input_rows is not None:
        offsets[_MARKER_INPUT_ROWS] = input_rows
    return offsets


def _topic_partitions(config: SinkConfig, offsets: dict[int, int]) -> list:
    from confluent_kafka import TopicPartition

    return [TopicPartition(config.marker_topic, partition, offset) for partition, offset in offsets.items()]


def committed_marker(output: "KafkaOutput", consumer, group: str) -> Marker:
    """The marker ``group`` committed, read through its ``consumer``."""
    return _marker(_committed(output, consumer, group))


def marker_positions(config: SinkConfig, batch_id: int, watermark: int | None = None,
                     input_rows: int | None = None) -> list:
    """The marker-topic offsets that record ``batch_id`` (and the watermark or the input rows)."""
    return _topic_partitions(config, _marker_offsets(batch_id, watermark, input_rows))


def read_marker(output: "KafkaOutput", group: str) -> Marker:
    """The marker of ``group`` (no transaction involved)."""
    return _marker(read_group_offsets(output, group))


def read_group_offsets(output: "KafkaOutput", group: str) -> list[int | None]:
    """What ``group`` committed on each partition of the marker topic (None: nothing), outside transactions:
    the sink's other records of a query (Simple's bootstrap state)."""
    ensure_marker_topic(output)
    consumer = marker_consumer(output, group)
    try:
        return _committed(output, consumer, group)
    finally:
        consumer.close()


def commit_group_offsets(output: "KafkaOutput", group: str, offsets: dict[int, int]) -> None:
    """Record ``offsets`` (marker-topic partition -> offset) for ``group`` without a transaction."""
    consumer = marker_consumer(output, group)
    try:
        consumer.commit(offsets=_topic_partitions(output.config, offsets), asynchronous=False)
    except KafkaException as e:
        raise DeliveryError(f"cannot record the marker of {group!r} on {output.config.bootstrap_servers}: "
                            f"{e.args[0].str()}") from None
    finally:
        consumer.close()


def write_marker(output: "KafkaOutput", group: str, batch_id: int, watermark: int | None) -> None:
    """Record ``batch_id`` (and the watermark) for ``group`` without a transaction (at-least-once)."""
    commit_group_offsets(output, group, _marker_offsets(batch_id, watermark))
