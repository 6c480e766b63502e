"""Kafka output through librdkafka: the producer's lifecycle, topics and delivery checks.

The producer is always idempotent with ``acks=all``, so librdkafka's retries
never duplicate or reorder a partition's messages.  Every delivery report is
checked: ``flush()`` returns only when the broker acknowledged every message
produced so far, and raises otherwise, so a task never reports rows that are
not in Kafka.  A broker that cannot be reached fails within
``broker-timeout-ms`` (the metadata wait and librdkafka's ``message.timeout.ms``).
"""

from __future__ import annotations

import itertools
import logging
import re
import time
from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from .config import SinkConfig
from .errors import ConfigError, DeliveryError, TaskTimeoutError, TiCDCSinkError
from .messages import Messages

log = logging.getLogger(__name__)
_POLL_EVERY = 1000
# librdkafka logs a failing connection again on every retry; one line per problem is enough.
_REPEAT_AFTER_SECONDS = 300
# The wait for delivery reports beyond message.timeout.ms, by which librdkafka has failed every message.
_FLUSH_MARGIN_SECONDS = 5
# What librdkafka and the broker say when a newer producer took over a transactional.id.
_FENCED = (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH)
# How librdkafka's fatal error line names a takeover.
_FENCED_TEXT = KafkaError(KafkaError._FENCED).str()


class _OncePerProblem(logging.Filter):
    """Lets one line per distinct librdkafka problem through, again only after a quiet spell.

    Lines that differ only in numbers (ports, milliseconds, client instance) are the same problem.
    """

    def __init__(self) -> None:
        super().__init__()
        self._last_seen: dict[tuple[int, str], float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        problem = (record.levelno, re.sub(r"\d+", "#", record.getMessage()))
        now = time.monotonic()
        last = self._last_seen.get(problem)
        if len(self._last_seen) > 1000:
            self._last_seen.clear()
        self._last_seen[problem] = now
        return last is None or now - last > _REPEAT_AFTER_SECONDS


# librdkafka's own log lines (connection failures, retries) go to Python logging, not stderr.
LIBRDKAFKA_LOG = logging.getLogger("ticdc_sink.librdkafka")
LIBRDKAFKA_LOG.addFilter(_OncePerProblem())


class _ProducerLog:
    """One producer's librdkafka log lines, passed on to ``LIBRDKAFKA_LOG``, keeping its fatal error's line.

    confluent-kafka raises a fatal error from the poll or flush that served it, but delivery reports served
    after it run with that exception pending and can replace it (a SystemError, an AttributeError, or no
    exception at all); librdkafka logs the error first, so the line is the reliable record.
    """

    def __init__(self) -> None:
        self.fatal: str | None = None

    def log(self, level: int, template: str, facility: str, client: str, line: str) -> None:
        if facility == "FATAL" and self.fatal is None:
            self.fatal = line.split("]: ", 1)[-1]  # without the "[thrd:main]" prefix
        LIBRDKAFKA_LOG.log(level, template, facility, client, line)


def producer_settings(config: SinkConfig) -> dict[str, object]:
    settings: dict[str, object] = {
        "linger.ms": 5,
        "message.timeout.ms": config.broker_timeout_ms,
        "socket.connection.setup.timeout.ms": config.broker_timeout_ms,
        # Room for a message of max-message-bytes plus the record overhead.
        "message.max.bytes": max(1_000_000, config.max_message_bytes + 1024),
        # A bounded local queue (librdkafka allows 1 GiB): a task waits for the broker instead of
        # holding its partition in memory.
        "queue.buffering.max.kbytes": max(65536, 2 * config.max_message_bytes // 1024),
    }
    settings.update(config.kafka)
    settings.update({"enable.idempotence": True, "acks": "all"})
    return settings


class ClientErrors:
    """librdkafka's client errors (its error_cb), kept for one line instead of a log line per retry."""

    def __init__(self) -> None:
        self.distinct: list[str] = []

    def __call__(self, error) -> None:
        if error.str() not in self.distinct and len(self.distinct) < 5:
            self.distinct.append(error.str())

    @property
    def settings(self) -> dict[str, object]:
        """Client settings that route librdkafka's errors here and its logs to the core's logger (once per problem)."""
        return {"error_cb": self, "logger": LIBRDKAFKA_LOG}

    def note(self) -> str:
        """The errors, as the tail of a failure's one line (empty when there were none)."""
        return f" (client errors: {'; '.join(self.distinct)})" if self.distinct else ""


def python_bytes(array: pa.Array) -> list[bytes | None]:
    """An Arrow string or binary array as Python bytes, nulls as None.

    Text goes as bytes too: a ``str`` per message would cost a UTF-8 check and
    decode in Arrow, then an encode in the producer, for the same bytes.
    """
    if pa.types.is_string(array.type):
        array = array.view(pa.binary())
    elif pa.types.is_large_string(array.type):
        array = array.view(pa.large_binary())
    return array.to_pylist()


def client_settings(settings: dict[str, object]) -> dict[str, object]:
    """The connection and security settings of ``settings``, for admin and consumer clients."""
    return {**{k: v for k, v in settings.items() if _is_client_setting(k)}, "logger": LIBRDKAFKA_LOG}


def _cluster_metadata(config: SinkConfig):
    """The brokers' topic metadata, from a short-lived admin client; one clear error if they are away.

    The error carries the client's own errors (a refused connection, a failed SASL login): they say
    which of the settings to fix.
    """
    errors = ClientErrors()
    admin = AdminClient({**client_settings(producer_settings(config)), **errors.settings})
    try:
        return admin.list_topics(timeout=config.broker_timeout_ms / 1000)
    except KafkaException as e:
        admin.poll(0)  # serves error_cb
        raise DeliveryError(_unreachable(config, e.args[0]) + errors.note()) from None


def existing_partition_count(config: SinkConfig, topic: str) -> int | None:
    """The partitions of ``topic`` on the brokers, or None when it does not exist (yet)."""
    metadata = _cluster_metadata(config).topics.get(topic)
    return len(metadata.partitions) if metadata is not None and metadata.error is None and metadata.partitions \
        else None


def check_brokers(config: SinkConfig) -> None:
    """Fail at once, on the driver, when the brokers cannot be reached within ``broker-timeout-ms``.

    Without this check every task attempt and then ``abort()`` would wait out the timeout in turn.
    """
    _cluster_metadata(config)


def _unreachable(config: SinkConfig, error) -> str:
    text = error.str() if isinstance(error, KafkaError) else str(error)
    return (f"cannot reach the Kafka brokers {config.bootstrap_servers} within broker-timeout-ms="
            f"{config.broker_timeout_ms} ({text}): check kafka.bootstrap.servers, the network and the "
            "security settings, or raise broker-timeout-ms")


class KafkaOutput:
    """One producer with checked deliveries, plus the topic metadata a task needs."""

    def __init__(self, config: SinkConfig, extra_settings: dict[str, object] | None = None):
        self.config = config
        self._settings = {**producer_settings(config), **(extra_settings or {})}
        self._log = _ProducerLog()
        self._client_errors = ClientErrors()
        self._producer = Producer({**self._settings, "error_cb": self._client_errors, "logger": self._log})
        self._partition_counts: dict[str, int] = {}
        self._failures: list[str] = []  # the first few failed deliveries, for the error
        self._failed = 0
        self._fenced_by: str | None = None  # why, when a newer producer took over the transactional.id
        self._pending = 0
        self.delivered = 0
        # (topic, partition) -> [first, last] acknowledged offset: where this producer's messages landed.
        self.offsets: dict[tuple[str, int], list[int]] = {}

    @property
    def client_settings(self) -> dict[str, object]:
        """The connection and security settings, for the admin and consumer clients beside the producer."""
        return client_settings(self._settings)

    # -- topics

    def partition_count(self, topic: str, partitions_if_created: int | None = None) -> int:
        """Partitions of ``topic``, creating it when it is missing and creation is allowed."""
        if topic not in self._partition_counts:
            partitions = partitions_if_created or self.config.partition_num
            self._partition_counts[topic] = self._lookup_or_create(topic, partitions)
        return self._partition_counts[topic]

    def remember_partition_counts(self, counts: dict[str, int]) -> None:
        """Take partition counts already looked up elsewhere (the tasks' reports), sparing the metadata calls."""
        self._partition_counts.update(counts)

    def _metadata(self):
        # All topics: asking for one by name lets some brokers auto-create it with their defaults.
        timeout = self.config.broker_timeout_ms / 1000
        try:
            return self._producer.list_topics(timeout=timeout)
        except KafkaException as e:
            raise DeliveryError(_unreachable(self.config, e.args[0]) + self._client_errors.note()) from None

    def _lookup_or_create(self, topic: str, partitions: int) -> int:
        metadata = self._metadata().topics.get(topic)
        if metadata is not None and metadata.error is None and metadata.partitions:
            return len(metadata.partitions)
        if metadata is not None and metadata.error is not None \
                and metadata.error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise DeliveryError(f"topic {topic!r} on {self.config.bootstrap_servers}: {metadata.error.str()}")
        if not self.config.auto_create_topic:
            raise ConfigError("topic", topic, "the topic does not exist; create it or set auto-create-topic=true")
        self._create(topic, partitions)
        deadline = time.monotonic() + self.config.broker_timeout_ms / 1000
        while time.monotonic() < deadline:
            metadata = self._metadata().topics.get(topic)
            if metadata is not None and metadata.error is None and metadata.partitions:
                return len(metadata.partitions)
            time.sleep(0.1)
        raise DeliveryError(f"topic {topic!r} was created but shows no partitions on {self.config.bootstrap_servers}")

    def _create(self, topic: str, partitions: int) -> None:
        admin = AdminClient(self.client_settings)
        future = admin.create_topics(
            [NewTopic(topic, num_partitions=partitions, replication_factor=self.config.replication_factor)],
            request_timeout=self.config.broker_timeout_ms / 1000,
        )[topic]
        try:
            future.result()
            log.info("created topic %s with %d partitions", topic, partitions)
        except KafkaException as e:
            error = e.args[0]
            if error.code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise ConfigError(
                    "topic", topic,
                    f"the topic does not exist and could not be created with {partitions} partitions, "
                    f"replication-factor={self.config.replication_factor}: "
                    f"{error.str()}; create it on the cluster",
                ) from None

    def grow(self, topic: str, partitions: int) -> None:
        """Give ``topic`` ``partitions`` partitions in all; raises KafkaException where the brokers refuse."""
        admin = AdminClient(self.client_settings)
        admin.create_partitions([NewPartitions(topic, partitions)],
                                request_timeout=self.config.broker_timeout_ms / 1000)[topic].result()
        self._partition_counts.pop(topic, None)  # looked up again next time
        log.info("grew topic %s to %d partitions", topic, partitions)

    # -- producing

    def produce(self, messages: Messages) -> int:
        """Produce messages in one tight loop, BROADCAST ones to every partition; returns how many.

        Every topic is looked up (created when missing and allowed) first; the counts are cached.
        """
        for topic in messages.topics:
            self.partition_count(topic)
        messages = messages.without_broadcast(self.partition_count)
        count = len(messages)
        topics = (itertools.repeat(messages.topics[0], count) if messages.topic_of_message is None
                  else [messages.topics[t] for t in messages.topic_of_message.tolist()])
        keys = python_bytes(messages.keys) if messages.keys is not None else itertools.repeat(None, count)
        produce, on_delivery = self._producer.produce, self._on_delivery
        for done, (topic, key, value, partition) in enumerate(
                zip(topics, keys, python_bytes(messages.values), messages.partitions.tolist()), 1):
            while True:
                try:
                    produce(topic, value, key, partition, on_delivery)
                    break
                except BufferError:
                    self._wait_for_room()
                except KafkaException as e:  # the producer refuses messages after its transaction failed
                    self._raise_refused(topic, partition, e)
            if not done % _POLL_EVERY:
                self._serve(0)  # delivery reports now and then, not after every message
        self._pending += count
        return count

    def _wait_for_room(self) -> None:
        """The local queue is full: serve delivery reports until there is room."""
        self._serve(0.05)
        self._raise_if_failed()

    def _serve(self, timeout: float, flush: bool = False) -> None:
        """Serve delivery reports (``poll``, or ``flush`` for at most ``timeout``); a fatal client error raises
        as one DeliveryError (see ``_ProducerLog`` for why its exception is not trusted)."""
        try:
            if flush:
                self._producer.flush(timeout)
            else:
                self._producer.poll(timeout)
            return
        except TiCDCSinkError:
            raise
        except Exception:
            if self._log.fatal is None:
                raise
        # Raised outside the except clause: the exception confluent-kafka left is noise, not the cause.
        if _FENCED_TEXT in self._log.fatal and self._fenced_by is None:
            self._fenced_by = self._log.fatal
        self._raise_if_failed()
        raise DeliveryError(f"the Kafka client failed on {self.config.bootstrap_servers}: {self._log.fatal}"
                            + self._client_errors.note())

    def _on_delivery(self, error, message) -> None:
        self._pending -= 1
        if error is not None:
            self._failed += 1
            self._note_fenced(error)
            reason = f"{message.topic()}[{message.partition()}]: {error.str()}"
            if len(self._failures) < 5 and reason not in self._failures:  # each reason once: one short line
                self._failures.append(reason)
        else:
            self.delivered += 1
            where, offset = (message.topic(), message.partition()), message.offset()
            span = self.offsets.get(where)
            if span is None:
                self.offsets[where] = [offset, offset]
            elif offset > span[1]:
                span[1] = offset

    def _raise_refused(self, topic: str, partition: int, error: KafkaException) -> None:
        """Why ``produce`` was refused: the failed deliveries that failed the transaction, when known."""
        self._serve(0)  # their delivery reports
        self._note_fenced(error.args[0])
        self._raise_if_failed()
        raise DeliveryError(f"{topic}[{partition}] refused a message: {error.args[0].str()}"
                            + self._client_errors.note()) from None

    def _note_fenced(self, error: KafkaError) -> None:
        if self._fenced_by is None and error.code() in _FENCED:
            self._fenced_by = error.str()

    def _raise_if_failed(self) -> None:
        if self._failed:
            raise DeliveryError(
                f"{self._failed} message(s) were not acknowledged by {self.config.bootstrap_servers}: "
                + "; ".join(self._failures) + self._client_errors.note()
            )

    def flush(self) -> None:
        """Wait until every produced message is acknowledged; raise if any is not.

        librdkafka fails each message within ``message.timeout.ms``; the wait allows that and a margin.
        """
        message_timeout_s = int(self._settings["message.timeout.ms"]) / 1000
        deadline = time.monotonic() + message_timeout_s + _FLUSH_MARGIN_SECONDS
        while self._pending > 0 and time.monotonic() < deadline:
            self._serve(1.0, flush=True)
        self._raise_if_failed()
        if self._pending > 0:
            raise DeliveryError(
                f"{self._pending} message(s) still unacknowledged by {self.config.bootstrap_servers} "
                f"{_FLUSH_MARGIN_SECONDS} s after message.timeout.ms={self._settings['message.timeout.ms']}"
                + self._client_errors.note()
            )

    def close(self) -> None:
        """Drop what is unsent (a failed task) without waiting; Producer has no other close."""
        self._producer.purge()
        try:
            self._producer.flush(0)
        except KafkaException:  # a fenced producer is in a fatal state: nothing is left to send, it says so again
            pass


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


def _marker_partitions(output: "KafkaOutput") -> None:
    """Make sure the marker topic exists with its partitions (growing one made by an older version)."""
    topic = output.config.marker_topic
    count = output.partition_count(topic, partitions_if_created=_MARKER_PARTITIONS)
    if count >= _MARKER_PARTITIONS:
        return
    try:
        output.grow(topic, _MARKER_PARTITIONS)
    except KafkaException as e:
        raise ConfigError("marker-topic", topic, f"the marker topic has {count} partitions, needs "
                                                 f"{_MARKER_PARTITIONS} and could not grow ({e.args[0].str()}): "
                                                 "name a new marker-topic and the sink creates it") from None


def _marker_consumer(output: "KafkaOutput", group: str):
    from confluent_kafka import Consumer

    return Consumer({**output.client_settings,
                     "group.id": group, "enable.auto.commit": False, "isolation.level": "read_committed"})


_COORDINATOR_MOVING = (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                       KafkaError.COORDINATOR_NOT_AVAILABLE)


def _committed(output: "KafkaOutput", consumer, group: str) -> list[int | None]:
    """The offsets ``group`` committed on the marker topic's partitions, None where it committed none.

    A group coordinator that is moving (a broker restarted, or just started) answers with a
    retriable error; the read is tried again until ``broker-timeout-ms``.
    """
    from confluent_kafka import TopicPartition

    topic, timeout = output.config.marker_topic, output.config.broker_timeout_ms / 1000
    deadline = time.monotonic() + timeout
    while True:
        try:
            partitions = consumer.committed([TopicPartition(topic, p) for p in range(_MARKER_PARTITIONS)],
                                            timeout=max(0.1, deadline - time.monotonic()))
            error = next((p.error for p in partitions if p.error is not None), None)
        except KafkaException as e:
            error = e.args[0]
        if error is None:
            return [p.offset if p.offset >= 0 else None for p in partitions]
        if not (error.retriable() or error.code() in _COORDINATOR_MOVING) or time.monotonic() >= deadline:
            raise DeliveryError(f"cannot read the marker of {group!r} from {output.config.bootstrap_servers}: "
                                f"{error.str()}")
        time.sleep(0.2)


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


def read_marker(output: "KafkaOutput", group: str) -> Marker:
    """The marker of ``group`` (no transaction involved)."""
    return _marker(read_group_offsets(output, group))


def read_group_offsets(output: "KafkaOutput", group: str) -> list[int | None]:
    """What ``group`` committed on each partition of the marker topic (None: nothing), outside transactions:
    the sink's other records of a query (Simple's bootstrap state)."""
    _marker_partitions(output)
    consumer = _marker_consumer(output, group)
    try:
        return _committed(output, consumer, group)
    finally:
        consumer.close()


def commit_group_offsets(output: "KafkaOutput", group: str, offsets: dict[int, int]) -> None:
    """Record ``offsets`` (marker-topic partition -> offset) for ``group`` without a transaction."""
    consumer = _marker_consumer(output, group)
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


class TransactionalOutput(KafkaOutput):
    """A producer whose messages become visible all at once, with a record of what it committed.

    Every transaction also commits the offsets of a consumer group of the sink
    (the marker group) on the marker topic: the batch id + 1 with the watermark
    (the driver) or the number of input rows (a task).  A later attempt with the
    same ``transactional.id`` first fences the earlier one (its open transaction
    is aborted), then reads that marker to learn what was committed before it.
    """

    def __init__(self, config: SinkConfig, transactional_id: str, marker_group: str):
        settings: dict[str, object] = {"transactional.id": transactional_id,
                                       "transaction.timeout.ms": config.task_timeout_ms}
        if "message.timeout.ms" not in config.kafka:  # librdkafka wants it within the transaction timeout
            settings["message.timeout.ms"] = min(config.broker_timeout_ms, config.task_timeout_ms)
        super().__init__(config, settings)
        self.transactional_id, self.marker_group = transactional_id, marker_group
        self._started = time.monotonic()
        self._group_metadata = None
        self._open = False

    def start(self) -> Marker:
        """Fence earlier attempts; return what the marker group recorded."""
        _marker_partitions(self)
        self._transaction_call("init_transactions", self._producer.init_transactions, self._timeout)
        consumer = _marker_consumer(self, self.marker_group)
        try:
            marker = _marker(_committed(self, consumer, self.marker_group))
            self._group_metadata = consumer.consumer_group_metadata()
        finally:
            consumer.close()
        return marker

    def fence(self, timeout_s: float) -> None:
        """Abort the transaction an earlier attempt with this ``transactional.id`` left open."""
        self._transaction_call("init_transactions", self._producer.init_transactions, timeout_s)

    def begin(self) -> None:
        self._transaction_call("begin_transaction", self._producer.begin_transaction)
        self._open = True

    def check_deadline(self) -> None:
        """Fail before the broker aborts a transaction that outlived ``transaction.timeout.ms``."""
        elapsed_ms = (time.monotonic() - self._started) * 1000
        if elapsed_ms > self.config.task_timeout_ms:
            raise TaskTimeoutError(
                f"the task has run {elapsed_ms / 1000:.0f} s, longer than task-timeout-ms="
                f"{self.config.task_timeout_ms}, the Kafka transaction timeout: the broker aborts such a "
                "transaction, so its rows are not committed. Raise task-timeout-ms (at most the brokers' "
                "transaction.max.timeout.ms) or give the query more, smaller partitions"
            )

    def commit(self, batch_id: int, watermark: int | None = None, input_rows: int | None = None) -> None:
        """Commit every produced message together with the marker of ``batch_id`` (and its watermark or rows)."""
        self.flush()
        self.check_deadline()
        self._transaction_call("send_offsets_to_transaction", self._producer.send_offsets_to_transaction,
                               _topic_partitions(self.config, _marker_offsets(batch_id, watermark, input_rows)),
                               self._group_metadata, self._timeout)
        self._transaction_call("commit_transaction", self._producer.commit_transaction, self._timeout)
        self._open = False

    def discard(self) -> None:
        """Abort the open transaction on purpose: none of its messages becomes visible."""
        self._transaction_call("abort_transaction", self._producer.abort_transaction, self._timeout)
        self._open = False

    def close(self) -> None:
        """Abort an open transaction (best effort: the next attempt fences it anyway).

        A fenced one was aborted by the newer attempt already.
        """
        if self._open and self._fenced_by is not None:
            self._open = False
        if self._open:
            self._open = False
            try:
                self._producer.abort_transaction(min(self._timeout, 10))
            except KafkaException as e:
                log.warning("could not abort the transaction of %s: %s", self.transactional_id, e.args[0].str())
        super().close()

    @property
    def _timeout(self) -> float:
        return self.config.broker_timeout_ms / 1000

    def _raise_if_failed(self) -> None:
        if self._fenced_by is not None:  # a refused produce is the same takeover as a fenced transaction call
            self._raise_taken_over("produce", self._fenced_by)
        super()._raise_if_failed()

    def _raise_taken_over(self, what: str, detail: str) -> None:
        self.check_deadline()  # a timed-out transaction also shows up as fenced
        raise DeliveryError(f"{what}: transactional.id {self.transactional_id!r} was taken over by a newer "
                            f"attempt of this task, so this attempt stops without committing ({detail})")

    def _transaction_call(self, what: str, call, *args) -> None:
        try:
            call(*args)
        except KafkaException as e:
            error = e.args[0]
            if error.code() in _FENCED:
                self._raise_taken_over(what, error.str())
            raise DeliveryError(f"{what} failed on {self.config.bootstrap_servers} for transactional.id "
                                f"{self.transactional_id!r}: {error.str()}{self._client_errors.note()}") from None


def _is_client_setting(key: str) -> bool:
    """Settings an AdminClient accepts too (connection and security, not producer-only ones)."""
    producer_only = ("linger.ms", "message.timeout.ms", "enable.idempotence", "acks", "compression.type",
                     "batch.num.messages", "batch.size", "queue.buffering", "retries", "retry.backoff",
                     "delivery.timeout.ms", "transactional.id", "transaction.timeout.ms", "partitioner",
                     "max.in.flight", "sticky.partitioning")
    return not key.startswith(producer_only)


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
