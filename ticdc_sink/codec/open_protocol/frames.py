"""Open Protocol's framing: how events share a Kafka message (TiCDC ``pkg/sink/codec/open/codec.go`` at
pingcap/ticdc@b813e76f).

A message's key is the protocol version (big-endian uint64 1) followed by each
event key with its big-endian uint64 length; its value is each event value with
its length, in the same order.  A message holds at most ``max-batch-size``
events and stays within ``max-message-bytes`` (TiCDC's rule: a new message when
the open one's length plus the event's key, value and 16 length bytes would
exceed it).
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...changes.dispatch import Routing
from ...kafka.messages import Messages, byte_lengths

VERSION = 1


_VERSION_HEADER = struct.pack(">Q", VERSION)


# What a frame adds to its events: the version header and TiCDC's per-message overhead (MaxRecordOverhead).
_FRAME_OVERHEAD = 8 + 36
_EVENT_OVERHEAD = 16  # the key's and the value's length prefixes
_NO_SEPARATOR = pa.scalar(b"", pa.large_binary())


def frame(events: list[bytes], versioned: bool = True) -> bytes:
    """Events framed as one message key (``versioned``) or value."""
    parts = [_VERSION_HEADER] if versioned else []
    for event in events:
        parts += [struct.pack(">Q", len(event)), event]
    return b"".join(parts)


def split_frame(data: bytes, versioned: bool = True) -> list[bytes]:
    """The events of a message key (``versioned``) or value."""
    position = 0
    if versioned:
        if len(data) < 8 or struct.unpack_from(">Q", data)[0] != VERSION:
            raise ValueError(f"not an Open Protocol version {VERSION} key: {data[:16]!r}")
        position = 8
    events = []
    while position < len(data):
        if position + 8 > len(data):
            raise ValueError(f"a truncated Open Protocol frame: {len(data) - position} bytes left at {position}")
        (length,) = struct.unpack_from(">Q", data, position)
        position += 8
        if position + length > len(data):
            raise ValueError(f"a truncated Open Protocol frame: an event of {length} bytes at {position}")
        events.append(data[position:position + length])
        position += length
    return events


def pack_events(keys: pa.Array, values: pa.Array, routing: Routing, max_events: int, max_bytes: int) -> Messages:
    """Events packed into messages per (topic, partition), in their order within each.

    A message takes up to ``max_events`` events while its length (key, value
    and 36 bytes of overhead) stays within ``max_bytes``; an event too large on
    its own becomes a message of its own, which the writer's size check refuses.
    The frames are built for the whole batch at once: the framed pieces of the
    events, sorted by partition, are one buffer, and each message is a slice of it.
    """
    where = routing.topic_of_row.astype(np.int64) << 32 | routing.partition_of_row.astype(np.int64)
    order = np.argsort(where, kind="stable")
    take = pa.array(order)
    keys = keys.take(take).cast(pa.large_binary())
    values = values.take(take).cast(pa.large_binary())
    key_lengths, value_lengths = byte_lengths(keys), byte_lengths(values)
    sorted_where = where[order]
    new_partition = np.r_[True, sorted_where[1:] != sorted_where[:-1]] if len(order) else np.zeros(0, dtype=bool)
    first = _message_starts(new_partition, key_lengths + value_lengths + _EVENT_OVERHEAD, max_events, max_bytes)
    header = pc.if_else(pa.array(first), pa.scalar(_VERSION_HEADER, pa.large_binary()), _NO_SEPARATOR)
    key_pieces = pc.binary_join_element_wise(header, _big_endian_lengths(key_lengths), keys, _NO_SEPARATOR)
    value_pieces = pc.binary_join_element_wise(_big_endian_lengths(value_lengths), values, _NO_SEPARATOR)
    starts = np.flatnonzero(first)
    rows = order[starts]
    return Messages(routing.topics, routing.topic_of_row[rows] if len(routing.topics) > 1 else None,
                    routing.partition_of_row[rows], _join_runs(key_pieces, starts),
                    _join_runs(value_pieces, starts), rows)


def _message_starts(new_partition: np.ndarray, event_sizes: np.ndarray, max_events: int,
                    max_bytes: int) -> np.ndarray:
    """Which events open a new message: TiCDC's greedy rule, by count and then by bytes."""
    position = np.arange(len(new_partition))
    partition_start = np.maximum.accumulate(np.where(new_partition, position, 0)) if len(position) else position
    first = new_partition | ((position - partition_start) % max_events == 0)
    message = np.cumsum(first) - 1
    if not len(first) or (np.bincount(message, weights=event_sizes) + _FRAME_OVERHEAD).max() <= max_bytes:
        return first
    # Some message would be too large by count alone: walk the events (their sizes only).
    first = new_partition.copy()
    length, count = 0, 0
    for i, size in enumerate(event_sizes.tolist()):
        if first[i] or count >= max_events or length + size > max_bytes:
            first[i], length, count = True, _FRAME_OVERHEAD, 0
        length, count = length + size, count + 1
    return first


def _big_endian_lengths(lengths: np.ndarray) -> pa.Array:
    data = pa.py_buffer(lengths.astype(">u8").tobytes())
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(8), len(lengths), [None, data]).cast(pa.large_binary())


def _join_runs(pieces: pa.Array, starts: np.ndarray) -> pa.Array:
    """One value per run of consecutive pieces (runs begin at ``starts``), sharing the pieces' buffer."""
    offsets = np.frombuffer(pieces.buffers()[1], dtype=np.int64)[pieces.offset: pieces.offset + len(pieces) + 1]
    bounds = np.r_[offsets[starts], offsets[-1]].astype(np.int64)
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(starts),
                                            [None, pa.py_buffer(bounds), pieces.buffers()[2]])
