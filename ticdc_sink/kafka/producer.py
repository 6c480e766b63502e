"""Kafka output through librdkafka: the producer's lifecycle, topics and delivery checks.

The producer is always idempotent with ``acks=all``, so librdkafka's retries
never duplicate or reorder a partition's messages.  Every delivery report is
checked: ``flush()`` returns only when the broker acknowledged every message
produced so far, and raises otherwise, so a task never reports rows that are
not in Kafka.  A broker that cannot be reached fails within
``broker-timeout-ms`` (the metadata wait and librdkafka's ``message.timeout.ms``).
Transactions are ``transactions.py``; what the sink records of its batches,
``markers.py``.  Where ``ticdc-sink-native`` is installed, ``produce`` hands
each batch to librdkafka in one call and its deliveries are counted in C
(``native_produce.py``); the checks here take both paths' counts.
"""

from __future__ import annotations

import itertools
import logging
import sys
import time

import pyarrow as pa
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewPartitions, NewTopic

from ..config.sink import SinkConfig
from ..errors import ConfigError, DeliveryError, TiCDCSinkError
from . import clients, native_produce
from .client_log import LIBRDKAFKA_LOG, ClientErrors, ProducerLog
from .messages import Messages
from .token_callback import broker_timeout

log = logging.getLogger(__name__)
_POLL_EVERY = 1000
# Messages per call on the native path, with the delivery reports served between calls.
_NATIVE_CHUNK = 10_000


# The wait for delivery reports beyond message.timeout.ms, by which librdkafka has failed every message.
_FLUSH_MARGIN_SECONDS = 5


# What librdkafka and the broker say when a newer producer took over a transactional.id (codes, and their text
# in librdkafka's log lines).
FENCED_ERRORS = (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH)
FENCED_TEXTS = tuple(KafkaError(code).str() for code in FENCED_ERRORS)
# Messages dropped by the producer itself: a failed transaction's queue, or a closing producer's.
PURGED = (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT)


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
    admin = clients.admin({**client_settings(producer_settings(config)), **errors.settings},
                          broker_timeout(config.broker_timeout_ms))
    try:
        return admin.list_topics(timeout=config.broker_timeout_ms / 1000)
    except KafkaException as e:
        admin.poll(0)  # serves error_cb
        raise DeliveryError(unreachable(config, e.args[0], errors)) from None


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


def unreachable(config: SinkConfig, error, errors: ClientErrors) -> str:
    """The line of brokers that did not answer within broker-timeout-ms (a write's, a read's): which, what the
    client ran into, and what to do."""
    return (f"cannot reach the Kafka brokers {config.bootstrap_servers} within broker-timeout-ms="
            f"{config.broker_timeout_ms} ({errors.cause(error, config.kafka)}): check kafka.bootstrap.servers, the "
            "network and the security settings, or raise broker-timeout-ms")


class KafkaOutput:
    """One producer with checked deliveries, plus the topic metadata a task needs."""

    def __init__(self, config: SinkConfig, extra_settings: dict[str, object] | None = None):
        self.config = config
        self._settings = {**producer_settings(config), **(extra_settings or {})}
        self._client_errors = ClientErrors()
        self._log = ProducerLog(self._client_errors)
        native = native_produce.choose(config, FENCED_ERRORS, PURGED)
        plugin = native.plugin_settings(self._settings) if native is not None else {}
        self._producer = clients.producer({**self._settings, **plugin, "error_cb": self._client_errors,
                                           "logger": self._log}, broker_timeout(config.broker_timeout_ms))
        self._native = native.attach(self._producer) if native is not None else None
        if native is not None and self._native is None:
            native_produce.unattached(config)
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

    def partition_count(self, topic: str, partitions_if_created: int | None = None, option: str = "topic") -> int:
        """Partitions of ``topic``, creating it when it is missing and creation is allowed; ``option`` names the
        topic in errors."""
        if topic not in self._partition_counts:
            partitions = partitions_if_created or self.config.partition_num
            self._partition_counts[topic] = self._lookup_or_create(topic, partitions, option)
        return self._partition_counts[topic]

    def remember_partition_counts(self, counts: dict[str, int]) -> None:
        """Take partition counts already looked up elsewhere (the tasks' reports), sparing the metadata calls."""
        self._partition_counts.update(counts)

    def _metadata(self, topic: str | None = None):
        """Every topic's metadata, or ``topic``'s: asking for a missing one by name lets some brokers auto-create
        it with their defaults."""
        timeout = self.config.broker_timeout_ms / 1000
        try:
            return self._producer.list_topics(topic, timeout=timeout)
        except KafkaException as e:
            self._producer.poll(0)  # serves error_cb
            raise DeliveryError(unreachable(self.config, e.args[0], self._client_errors)) from None

    def _lookup_or_create(self, topic: str, partitions: int, option: str) -> int:
        metadata = self._metadata().topics.get(topic)
        if metadata is not None and metadata.error is None and metadata.partitions:
            return len(metadata.partitions)
        if metadata is not None and metadata.error is not None \
                and metadata.error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise DeliveryError(f"topic {topic!r} ({option}) on {self.config.bootstrap_servers}: "
                                f"{metadata.error.str()}")
        if not self.config.auto_create_topic:
            raise ConfigError(option, topic, "the topic does not exist (or is hidden from this login): create it, "
                                             "or set auto-create-topic=true")
        self._create(topic, partitions, option)
        deadline = time.monotonic() + self.config.broker_timeout_ms / 1000
        while True:
            # By name: it exists now, and a login that may create a topic but not describe it learns so.
            metadata = self._metadata(topic).topics.get(topic)
            if metadata is not None and metadata.error is None and metadata.partitions:
                return len(metadata.partitions)
            refused = metadata is not None and metadata.error is not None \
                and metadata.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
            if refused or time.monotonic() >= deadline:
                why = f": {metadata.error.str()}" if metadata is not None and metadata.error is not None else ""
                raise DeliveryError(f"topic {topic!r} ({option}) was created but shows no partitions on "
                                    f"{self.config.bootstrap_servers}{why}")
            time.sleep(0.1)

    def _create(self, topic: str, partitions: int, option: str) -> None:
        admin = clients.admin(self.client_settings, broker_timeout(self.config.broker_timeout_ms))
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
                    option, topic,
                    "the topic does not exist (or is hidden from this login) and could not be created with "
                    f"{partitions} partitions, replication-factor={self.config.replication_factor}: "
                    f"{error.str()}; create it on the cluster",
                ) from None

    def grow(self, topic: str, partitions: int) -> None:
        """Give ``topic`` ``partitions`` partitions in all; raises KafkaException where the brokers refuse."""
        admin = clients.admin(self.client_settings, broker_timeout(self.config.broker_timeout_ms))
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
        if self._native is not None and self._native.producer is self._producer:
            return self._produce_native(messages)
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

    def _produce_native(self, messages: Messages) -> int:
        """``produce`` through ticdc-sink-native: a chunk of messages per call, in order; a refused one is what
        ``produce()`` refusing it would be (a full queue waited out, another error raised)."""
        count, start = len(messages), 0
        batch = self._native.batch(messages) if count else None
        while start < count:
            done, error = batch.produce(start, min(count, start + _NATIVE_CHUNK))
            self._pending += done
            start += done
            if error == KafkaError._QUEUE_FULL:
                self._wait_for_room()
            elif error:
                self._raise_refused(batch.topic(start), int(messages.partitions[start]),
                                    native_produce.refused(error))
            else:
                self._serve(0)
        return count

    def _take_native(self) -> None:
        """The native path's deliveries since the last call, counted as ``_on_delivery`` counts its own."""
        if self._native is None or self._native.producer is not self._producer:
            return
        taken = self._native.take()
        if taken is None:
            return
        self._pending -= taken.acknowledged + taken.failed
        self.delivered += taken.acknowledged
        self._failed += taken.failed
        if taken.fenced:
            self._note_fenced(KafkaError(taken.fenced))
        for topic, partition, code in taken.failures:
            self._note_failure(topic, partition, KafkaError(code))
        for topic, partition, first, last in taken.spans:
            self._note_acknowledged((topic, partition), first, last)

    def _wait_for_room(self) -> None:
        """The local queue is full: serve delivery reports until there is room."""
        self._serve(0.05)
        self._raise_if_failed()

    def _serve(self, timeout: float, flush: bool = False) -> None:
        """Serve delivery reports (``poll``, or ``flush`` for at most ``timeout``); a fatal client error raises
        as one DeliveryError (see ``ProducerLog`` for why its exception is not trusted)."""
        try:
            if flush:
                self._producer.flush(timeout)
            else:
                self._producer.poll(timeout)
        except TiCDCSinkError:
            raise
        except:  # noqa: E722 -- see below
            # confluent-kafka raises a fatal error from the poll or flush that served it, and where no Python
            # delivery report ran after it (the native path), what it leaves raised is the KafkaError itself,
            # which is no exception class: only a bare except takes it.  Its text stands in for the log line.
            raised = sys.exc_info()[1]
            error = raised.args[0] if isinstance(raised, KafkaException) and raised.args else raised
            fatal = self._log.fatal or (error.str() if isinstance(error, KafkaError) and error.fatal() else None)
            if fatal is None:
                raise
        else:
            self._take_native()
            return
        self._take_native()
        # Raised outside the except clause: the exception confluent-kafka left is noise, not the cause.
        if any(text in fatal for text in FENCED_TEXTS) and self._fenced_by is None:
            self._fenced_by = fatal
        self._raise_if_failed()
        raise DeliveryError(f"the Kafka client failed on {self.config.bootstrap_servers}: {fatal}"
                            + self._client_errors.note())

    def _on_delivery(self, error, message) -> None:
        self._pending -= 1
        if error is not None:
            self._failed += 1
            self._note_fenced(error)
            if error.code() not in PURGED:  # a purge's reason is what purged it (a failed transaction's log line)
                self._note_failure(message.topic(), message.partition(), error)
        else:
            self.delivered += 1
            self._note_acknowledged((message.topic(), message.partition()), message.offset(), message.offset())

    def _note_failure(self, topic: str, partition: int, error: KafkaError) -> None:
        reason = f"{topic}[{partition}]: {error.str()}"
        if len(self._failures) < 5 and reason not in self._failures:  # each reason once: one short line
            self._failures.append(reason)

    def _note_acknowledged(self, where: tuple[str, int], first: int, last: int) -> None:
        """Offsets ``first``..``last`` of ``where`` acknowledged: the span of the partition this producer wrote."""
        span = self.offsets.get(where)
        if span is None:
            self.offsets[where] = [first, last]
        elif last > span[1]:
            span[1] = last

    def _raise_refused(self, topic: str, partition: int, error: KafkaException) -> None:
        """Why ``produce`` was refused: the failed deliveries that failed the transaction, when known."""
        self._serve(0)  # their delivery reports
        self._note_fenced(error.args[0])
        self._raise_if_failed()
        raise DeliveryError(f"{topic}[{partition}] refused a message: {error.args[0].str()}"
                            + self._client_errors.note()) from None

    def _note_fenced(self, error: KafkaError) -> None:
        if self._fenced_by is None and error.code() in FENCED_ERRORS:
            self._fenced_by = error.str()

    def _raise_if_failed(self) -> None:
        if self._failed:
            raise DeliveryError(f"{self._failed} message(s) were not acknowledged by {self.config.bootstrap_servers}: "
                                f"{self._failure_reasons}{self._client_errors.note()}")

    @property
    def _failure_reasons(self) -> str:
        return "; ".join(self._failures) or "purged from the queue"

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
        self._take_native()


def _is_client_setting(key: str) -> bool:
    """Settings an AdminClient accepts too (connection and security, not producer-only ones)."""
    producer_only = ("linger.ms", "message.timeout.ms", "enable.idempotence", "acks", "compression.type",
                     "batch.num.messages", "batch.size", "queue.buffering", "retries", "retry.backoff",
                     "delivery.timeout.ms", "transactional.id", "transaction.timeout.ms", "partitioner",
                     "max.in.flight", "sticky.partitioning")
    return not key.startswith(producer_only)
