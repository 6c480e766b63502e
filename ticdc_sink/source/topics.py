"""The driver's view of the topics a read covers: their partitions, offset bounds and watermarks.

Offsets come from the brokers (ListOffsets, read_committed unless the
read's ``kafka.isolation.level`` says otherwise); a start a broker reports
too high or an end too low (the embedded broker's) is confirmed by reading.
Watermarks are found by reading back from a partition's end, a window at a
time, so a micro-batch's planning reads little of the topic.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Iterator

from confluent_kafka import IsolationLevel, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec

from ..codec import decoder_for, recognition
from ..codec.base import Decoder, WatermarkEvent
from ..config.reader import EARLIEST, LATEST, ReadConfig
from ..errors import ConfigError, DeliveryError, ReadError
from ..kafka import clients
from ..kafka.client_log import ClientErrors
from ..kafka.producer import client_settings, unreachable
from ..kafka.token_callback import broker_timeout
from ..kafka.topic_reader import GROUP_REFUSED, assign, iter_range, reader_settings
from .undecodable import undecodable

PartitionKey = str  # "topic:partition", the key of a partition in offsets Spark keeps as JSON
_FIRST_WINDOW = 1000  # messages read back from a partition's end to find its last watermark


def partition_key(topic: str, partition: int) -> PartitionKey:
    return f"{topic}:{partition}"


def split_key(key: PartitionKey) -> tuple[str, int]:
    topic, _, partition = key.rpartition(":")
    return topic, int(partition)


@dataclass(frozen=True)
class Watermark:
    offset: int
    ts: int


class TopicsView:
    """A short-lived connection of the driver to the read's topics."""

    def __init__(self, config: ReadConfig):
        self.config = config
        self.timeout = config.sink.broker_timeout_ms / 1000
        settings = client_settings(config.consumer_settings)
        isolation = settings.pop("isolation.level", "read_committed")
        self._isolation = (IsolationLevel.READ_UNCOMMITTED if str(isolation).lower() == "read_uncommitted"
                           else IsolationLevel.READ_COMMITTED)
        self.consumer_settings = {**settings, "isolation.level": isolation}
        self._errors = ClientErrors()
        within = broker_timeout(config.sink.broker_timeout_ms)
        self._admin = clients.admin({**settings, **self._errors.settings}, within)
        self._consumer = clients.consumer({**reader_settings(self.consumer_settings), **self._errors.settings},
                                          within)

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> "TopicsView":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def partitions(self) -> list[PartitionKey]:
        """Every partition of the read's topics (a pattern's topics as they are now), in topic and number order."""
        try:
            topics = self._admin.list_topics(timeout=self.timeout).topics
        except KafkaException as e:
            self._admin.poll(0)  # serves error_cb
            raise DeliveryError(unreachable(self.config.sink, e.args[0], self._errors)) from None
        if self.config.topic_pattern:
            pattern = re.compile(self.config.topic_pattern)
            names = sorted(t for t in topics if pattern.fullmatch(t) and not t.startswith("__"))
        else:
            missing = [t for t in self.config.topics if t not in topics or not topics[t].partitions]
            if missing:
                raise ConfigError("topic", ",".join(self.config.topics),
                                  f"no topic {', '.join(missing)} on the brokers {self.config.sink.bootstrap_servers}")
            names = list(self.config.topics)
        return [partition_key(t, p) for t in names for p in sorted(topics[t].partitions)]

    def bounds(self, keys: list[PartitionKey]) -> dict[PartitionKey, tuple[int, int]]:
        """(earliest, end) offsets of each partition: the end the last stable offset for read_committed."""
        if not keys:
            return {}
        parts = [TopicPartition(*split_key(k)) for k in keys]
        starts = self._confirmed_starts(self._list_offsets(parts, OffsetSpec.earliest()))
        ends = self._confirmed_ends(self._list_offsets(parts, OffsetSpec.latest()))
        return {k: (starts[k], ends[k]) for k in keys}

    def _list_offsets(self, parts: list[TopicPartition], spec: OffsetSpec) -> dict[PartitionKey, int]:
        futures = self._admin.list_offsets({p: spec for p in parts}, isolation_level=self._isolation,
                                           request_timeout=self.timeout)
        try:
            return {partition_key(p.topic, p.partition): f.result().offset for p, f in futures.items()}
        except KafkaException as e:
            raise DeliveryError(f"listing the offsets of {self.config.describe_topics()}: {e.args[0].str()}") \
                from None

    def _confirmed_starts(self, reported: dict[PartitionKey, int]) -> dict[PartitionKey, int]:
        """The reported starts, or the first message's offset where one comes before them: the embedded broker
        answers "earliest" with the batch it stored first, which under concurrent producers is not always the
        lowest offset (a read from it lost the row before).  A partition reported to start past offset 0 is read
        from 0 (where the brokers removed it, from the earliest offset they keep) to its first message."""
        starts = dict(reported)
        for key, offset in self._scan({k: 0 for k, start in reported.items() if start > 0}, first_only=True):
            starts[key] = min(starts[key], offset)
        return starts

    def _confirmed_ends(self, reported: dict[PartitionKey, int]) -> dict[PartitionKey, int]:
        """The reported ends, or past the last message found beyond them (a broker that reports its ends too
        low): each partition is read from its reported end until the brokers report its end (a partition EOF)."""
        ends = dict(reported)
        for key, offset in self._scan(reported, first_only=False):
            ends[key] = max(ends[key], offset + 1)
        return ends

    def _scan(self, starts: dict[PartitionKey, int], first_only: bool) -> Iterator[tuple[PartitionKey, int]]:
        """The partition and offset of each message from ``starts`` to the partition's end (its partition EOF),
        or of its first message only.  Quiet is not taken for an end: under load one partition's fetch can come
        seconds after another's, and a read that stopped at the first quiet second missed rows.  No answer within
        broker-timeout-ms is a failure, not an end; so is a partition's own error (a topic deleted meanwhile)."""
        if not starts:
            return
        try:
            assign(self._consumer, [TopicPartition(*split_key(k), offset) for k, offset in starts.items()],
                   self.timeout)
        except KafkaException as e:
            self._consumer.poll(0)  # serves error_cb
            raise DeliveryError(unreachable(self.config.sink, e.args[0], self._errors)) from None
        open_, last_answer = set(starts), time.monotonic()
        while open_:
            message = self._consumer.poll(min(1.0, self.timeout))
            if message is None:
                if time.monotonic() - last_answer > self.timeout:
                    raise DeliveryError(unreachable(self.config.sink, "no partition end reported for "
                                                    + ", ".join(sorted(open_)), self._errors))
                continue
            last_answer = time.monotonic()
            key = partition_key(message.topic(), message.partition())
            if key not in open_:
                continue
            error = message.error()
            if error is None:
                yield key, message.offset()
                if first_only:
                    open_.discard(key)
            elif error.code() == KafkaError._PARTITION_EOF:
                open_.discard(key)
            elif error.code() != GROUP_REFUSED:
                raise DeliveryError(f"reading {message.topic()} partition {message.partition()}: {error.str()}")

    def start_offsets(self, spec: str | dict, keys: list[PartitionKey],
                      bounds: dict[PartitionKey, tuple[int, int]]) -> dict[PartitionKey, int]:
        """The offsets ``starting-offsets`` (or ``ending-offsets``) names, per partition."""
        def offset(key: PartitionKey) -> int:
            low, high = bounds[key]
            if isinstance(spec, str):
                return low if spec == "earliest" else high
            topic, partition = split_key(key)
            given = spec.get(topic, {}).get(str(partition), EARLIEST)
            return low if given == EARLIEST else high if given == LATEST else min(max(given, low), high)
        return {key: offset(key) for key in keys}

    def messages(self, key: PartitionKey, start: int, end: int) -> Iterator:
        topic, partition = split_key(key)
        return iter_range(self._consumer, topic, partition, start, end, self.timeout)

    def watermarks(self, key: PartitionKey, start: int, end: int, decoder: Decoder) -> list[Watermark]:
        """The watermarks at offsets ``[start, end)`` of a partition, in offset order."""
        found = []
        for message in self.messages(key, start, end):
            try:
                events = recognition.decode(decoder, message.key(), message.value())
            except recognition.NotOfProtocol as e:
                # A topic of another protocol has no watermark: no micro-batch would start, and no task say why.
                if self.config.on_error != "skip":
                    what, fix = undecodable(self.config.sink.protocol, e, *split_key(key), message.offset(),
                                            message.value())
                    raise ReadError(f"{what}; {fix}") from None
                continue
            except Exception:  # an undecodable message is the tasks' to report (or skip), not the planner's
                continue
            found += [Watermark(message.offset(), e.ts) for e in events if isinstance(e, WatermarkEvent)]
        return found


class WatermarkSearch:
    """A partition's watermarks, read back from its end a window at a time, as far as a question needs."""

    def __init__(self, view: TopicsView, key: PartitionKey, start: int, end: int):
        self.view, self.key, self.start, self.end = view, key, start, end
        self._decoder = decoder_for(view.config.sink)
        self._low = end  # watermarks of [_low, end) are known
        self._found: list[Watermark] = []
        self._window = _FIRST_WINDOW

    def _read_further_back(self) -> bool:
        if self._low <= self.start:
            return False
        low = max(self.start, self._low - self._window)
        self._found = self.view.watermarks(self.key, low, self._low, self._decoder) + self._found
        self._low, self._window = low, self._window * 4
        return True

    def last(self) -> Watermark | None:
        """The partition's last watermark in the range."""
        while not self._found and self._read_further_back():
            pass
        return self._found[-1] if self._found else None

    def last_at_most(self, ts: int) -> Watermark | None:
        """The last watermark of the range whose ts is at most ``ts``."""
        while True:
            fitting = [w for w in self._found if w.ts <= ts]
            if fitting:
                return fitting[-1]
            if not self._read_further_back():
                return None
