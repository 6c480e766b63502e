"""Kafka messages as every codec hands them to the producer: column-wise, any number per row.

One container serves rows and control events alike, so there is one produce
path: a message has a topic, a partition (or ``BROADCAST``: every partition of
its topic), a key or none, and a value or none (a tombstone).  It lives outside
the codec package so that the Kafka side does not depend on any protocol.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

BROADCAST = -1  # the partition of a message that goes to every partition of its topic
# TiCDC's per-message overhead in its size check (common/message.go MaxRecordOverhead).
MESSAGE_OVERHEAD = 36


@dataclass
class Messages:
    """Messages in produce order; per-partition order is the order here."""

    topics: list[str]
    topic_of_message: np.ndarray | None  # index into ``topics``; None: every message goes to topics[0]
    partitions: np.ndarray  # int32 per message, BROADCAST for every partition
    keys: pa.Array | None  # binary or string per message, null for no key; None: no message has a key
    values: pa.Array  # binary or string per message, null for a tombstone
    rows: np.ndarray | None = None  # per message, the input row it carries (the first of several)

    def __len__(self) -> int:
        return len(self.values)

    @classmethod
    def one(cls, topic: str, partition: int, key: bytes | str | None, value: bytes | str | None) -> "Messages":
        """A single control event."""
        return cls([topic], None, np.array([partition], dtype=np.int32),
                   None if key is None else pa.array([key]), pa.array([value], _arrow_type(value)))

    @classmethod
    def to_every_partition(cls, topics: list[str], key: bytes | str | None, value: bytes | str) -> "Messages":
        """The same event to every partition of each topic (watermarks)."""
        count = len(topics)
        return cls(list(topics), np.arange(count, dtype=np.int32), np.full(count, BROADCAST, dtype=np.int32),
                   None if key is None else pa.array([key] * count), pa.array([value] * count, _arrow_type(value)))

    @classmethod
    def concat(cls, parts: list["Messages"]) -> "Messages":
        """The messages of ``parts``, one part after the other (``rows`` kept only where every part has them)."""
        topics = sorted({t for part in parts for t in part.topics})
        index = {t: i for i, t in enumerate(topics)}
        topic_of_message = np.concatenate([
            np.array([index[t] for t in part.topics], dtype=np.int32)[
                part.topic_of_message if part.topic_of_message is not None else np.zeros(len(part), dtype=np.int32)]
            for part in parts])
        keys = None
        if any(part.keys is not None for part in parts):
            keys = pa.concat_arrays([_as_binary(part.keys) if part.keys is not None
                                     else pa.nulls(len(part), pa.binary()) for part in parts])
        rows = None if any(part.rows is None for part in parts) else np.concatenate([part.rows for part in parts])
        return cls(topics, topic_of_message, np.concatenate([part.partitions for part in parts]), keys,
                   pa.concat_arrays([_as_binary(part.values) for part in parts]), rows)

    def byte_lengths(self) -> np.ndarray:
        """Key plus value bytes of each message."""
        lengths = byte_lengths(self.values)
        if self.keys is not None:
            lengths += byte_lengths(self.keys)
        return lengths

    def first_oversized(self, limit: int) -> tuple[int, int] | None:
        """(index, size) of the first message whose key, value and TiCDC's overhead exceed ``limit`` bytes."""
        sizes = self.byte_lengths() + MESSAGE_OVERHEAD
        over = np.flatnonzero(sizes > limit)
        return (int(over[0]), int(sizes[over[0]])) if len(over) else None

    def without_broadcast(self, partition_count: Callable[[str], int]) -> "Messages":
        """Every BROADCAST message replaced by one message per partition of its topic, in partition order."""
        broadcast = self.partitions == BROADCAST
        if not broadcast.any():
            return self
        topic_of = self.topic_of_message if self.topic_of_message is not None \
            else np.zeros(len(self), dtype=np.int32)
        counts = np.array([partition_count(t) for t in self.topics], dtype=np.int64)
        repeat = np.where(broadcast, counts[topic_of], 1)
        index = np.repeat(np.arange(len(self)), repeat)
        starts = np.cumsum(repeat) - repeat
        partitions = np.where(broadcast[index], np.arange(len(index)) - starts[index], self.partitions[index])
        take = pa.array(index)
        return Messages(self.topics, topic_of[index], partitions.astype(np.int32),
                        None if self.keys is None else self.keys.take(take), self.values.take(take),
                        None if self.rows is None else self.rows[index])


def byte_lengths(array: pa.Array) -> np.ndarray:
    """The bytes of each value of a string or binary array (0 for a null)."""
    return pc.fill_null(pc.binary_length(array), 0).to_numpy(zero_copy_only=False).astype(np.int64)


def _as_binary(array: pa.Array) -> pa.Array:
    """A string or binary array as binary, so that parts of both kinds concatenate."""
    if pa.types.is_string(array.type):
        return array.view(pa.binary())
    if pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type):
        return array.cast(pa.binary())
    return array


def _arrow_type(value) -> pa.DataType:
    return pa.binary() if isinstance(value, bytes) else pa.string()
