"""TiCDC Open Protocol, as the newer TiCDC writes it (spec: ticdc-open-protocol.md; reference section 2).

An event is a key JSON (``{"ts","scm","tbl","t"}``) and a value JSON; a Kafka
message packs the events bound for one partition in frames: the key is the
protocol version (big-endian uint64 1) followed by each event key with its
big-endian uint64 length, the value is each event value with its length, in
the same order.  A message holds at most ``max-batch-size`` events and stays
within ``max-message-bytes`` (TiCDC's rule: a new message when the open one's
length plus the event's key, value and 16 length bytes would exceed it).

Row values are ``{"u":{..}}`` (insert, and update without old values),
``{"u":{..},"p":{..}}`` (update with ``_before``) and ``{"d":{..}}`` (delete:
the handle-key columns, every column with ``_before``).  Each column is
``{"t":<type code>,"h":true (handle-key columns only),"f":<flags>,"v":<value>}``
in table order, and strings are escaped without HTML escapes (jsoniter).
DDL events (``t`` 2) and resolved events (``t`` 3, an empty value) are
messages of their own, sent to every partition.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import struct
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..changes import OP_DELETE, OP_UPDATE, ChangeBatch
from ..config import SinkConfig
from ..ddl import ACTION_CODES, DDLChange
from ..dispatch import Routing
from ..errors import ContractError
from ..messages import BROADCAST, Messages
from ..mysql_types import (FLAG_BINARY, FLAG_PRIMARY_KEY, TYPE_BIT, TYPE_BLOB, TYPE_DATE, TYPE_DATETIME,
                           TYPE_DOUBLE, TYPE_ENUM, TYPE_FLOAT, TYPE_INT24, TYPE_LONG, TYPE_LONG_BLOB, TYPE_LONGLONG,
                           TYPE_MEDIUM_BLOB, TYPE_NEWDECIMAL, TYPE_SET, TYPE_SHORT, TYPE_STRING, TYPE_TIMESTAMP,
                           TYPE_TINY, TYPE_TINY_BLOB, TYPE_VARCHAR, TYPE_YEAR, Column, TableSchema)
from ..render import at_rows, float_json_numbers, join, string_scalar, value_text
from .base import Decoder, DDLEvent, Encoder, RowEvent, WatermarkEvent
from .json_text import (PLAIN, bare_fragments, base64_fragments, changed_members_object, concat,
                        go_quoted_fragments, go_unquote_body, json_fragments, object_parts, quote_json,
                        quoted_names_of)

VERSION = 1
ROW_EVENT, DDL_EVENT, RESOLVED_EVENT = 1, 2, 3
_VERSION_HEADER = struct.pack(">Q", VERSION)
_EMPTY_VALUE = struct.pack(">Q", 0)  # a resolved event's value: one event of length 0
# What a frame adds to its events: the version header and TiCDC's per-message overhead (MaxRecordOverhead).
_FRAME_OVERHEAD = 8 + 36
_EVENT_OVERHEAD = 16  # the key's and the value's length prefixes
_NO_SEPARATOR = pa.scalar(b"", pa.large_binary())


class OpenProtocolEncoder(Encoder):
    """Open Protocol frames for one table shape, built a batch at a time."""

    def __init__(self, config: SinkConfig, table: TableSchema | None, **context):
        super().__init__(config, table, **context)
        if table is None:  # control events only
            return
        self._heads = [_column_head(c) for c in table.columns]
        handle = {c.name for c in table.handle_columns}
        self._handle_positions = [i for i, c in enumerate(table.columns) if c.name in handle]

    # -- rows

    def encode_rows(self, batch: ChangeBatch, routing: Routing) -> Messages:
        """The batch's events packed per partition, in commit-ts order within each."""
        return pack_events(self.event_keys(batch), self.event_values(batch), routing, self.config.max_batch_size,
                           self.config.max_message_bytes)

    def event_keys(self, batch: ChangeBatch) -> pa.Array:
        """``{"ts":..,"scm":..,"tbl":..,"t":1}`` per row."""
        return concat(['{"ts":', pa.array(batch.commit_ts).cast(pa.string()),
                       ',"scm":', quoted_names_of(batch.databases, style=PLAIN),
                       ',"tbl":', quoted_names_of(batch.tables, style=PLAIN), f',"t":{ROW_EVENT}}}'], batch.num_rows)

    def event_values(self, batch: ChangeBatch) -> pa.Array:
        """The value JSON of each row's event."""
        n, columns = batch.num_rows, self.table.columns
        fragments = [self._fragments(batch.columns[c.name], c) for c in columns]
        row = concat(object_parts(self._heads, fragments, tail="}"), n)
        is_delete = batch.ops == OP_DELETE
        has_old = batch.before is not None
        if is_delete.any() and not has_old:  # old value off: a delete names its row by the handle key
            handle = concat(object_parts([self._heads[i] for i in self._handle_positions],
                                         [fragments[i] for i in self._handle_positions], tail="}"), n)
            row = pc.if_else(pa.array(is_delete), handle, row)
        opening = pc.if_else(pa.array(is_delete), string_scalar('{"d":'), string_scalar('{"u":'))
        closing: pa.Array | str = "}"
        is_update = batch.ops == OP_UPDATE
        if has_old and is_update.any():
            updates = pa.array(np.flatnonzero(is_update))
            old = [self._fragments(batch.before[c.name].take(updates), c) for c in columns]
            old_object = self._old_object([f.take(updates) for f in fragments], old)
            with_old = join(',"p":', old_object, "}")
            closing = at_rows("}", is_update, with_old, n)
        return concat([opening, row, closing], n)

    def _old_object(self, new: list[pa.Array], old: list[pa.Array]) -> pa.Array:
        if self.config.only_output_updated_columns:
            return changed_members_object(self._heads, new, old, tail="}")
        return concat(object_parts(self._heads, old, tail="}"), len(old[0]))

    def _fragments(self, values: pa.Array, column: Column) -> pa.Array:
        """The JSON ``v`` of each row of a column (TiCDC ``writeColumnFieldValue``)."""
        t = column.type
        if t.is_blob:  # TEXT and BLOB alike
            return base64_fragments(values)
        if t.kind in ("float", "double"):
            return bare_fragments(float_json_numbers(values, 32 if t.kind == "float" else 64))
        text = value_text(values, t, self.config.time_zone)
        if t.is_integer or t.kind in ("year", "bit", "enum", "set"):
            return bare_fragments(text)
        if t.is_string and t.binary:
            return go_quoted_fragments(text, style=PLAIN)
        # Decimals, dates and times render without characters that JSON escapes.
        return json_fragments(text, escape=t.is_string or t.kind == "json", style=PLAIN)

    # -- control events

    def check_ddl(self, ddl: DDLChange) -> None:
        self._ddl_code(ddl)

    def _ddl_code(self, ddl: DDLChange) -> int:
        """TiDB's action code of the DDL: the ``_ddl_type`` override (a code or an action name), else classified."""
        override = (ddl.type_override or "").strip()
        code = int(override) if override.isdigit() else _ACTION_BY_NAME.get(_name_key(override or ddl.action))
        if code is None:
            raise ContractError(self.config.ddl_type_column, ddl.type_override, f"DDL {ddl.query!r}",
                                "the statement's TiDB action is not recognised; give it in the DDL type column "
                                "as TiDB's action code (e.g. 3) or name (e.g. 'create table')")
        return code

    def encode_ddl(self, ddl: DDLChange, topic: str) -> Messages:
        """One DDL event to every partition of the topic."""
        key = (f'{{"ts":{ddl.commit_ts},"scm":{quote_json(ddl.database, style=PLAIN)},'
               f'"tbl":{quote_json(ddl.table, style=PLAIN)},"t":{DDL_EVENT}}}')
        value = f'{{"q":{quote_json(ddl.query, style=PLAIN)},"t":{self._ddl_code(ddl)}}}'
        return Messages.one(topic, BROADCAST, frame([key.encode()]), frame([value.encode()], versioned=False))

    def encode_watermark(self, ts: int, topics: list[str]) -> Messages:
        """The resolved event to every partition of every topic."""
        key = frame([f'{{"ts":{ts},"t":{RESOLVED_EVENT}}}'.encode()])
        return Messages.to_every_partition(topics, key, _EMPTY_VALUE)


def _name_key(action: str) -> str:
    """An action name as looked up: case and spaces do not count ("Shard RowID" is "shard row id")."""
    return action.lower().replace(" ", "")


_ACTION_BY_NAME = {_name_key(name): code for name, code in ACTION_CODES.items()}


def _column_head(column: Column) -> str:
    """``"name":{"t":..,"h":true,"f":..,"v":`` of a column: everything before its value."""
    handle = ',"h":true' if column.handle_key else ""
    return f'{quote_json(column.name, style=PLAIN)}:{{"t":{column.type.code}{handle},"f":{column.flag},"v":'


# ---------------------------------------------------------------------------
# Frames


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
    key_lengths, value_lengths = _lengths(keys), _lengths(values)
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


def _lengths(array: pa.Array) -> np.ndarray:
    return pc.binary_length(array).to_numpy(zero_copy_only=False).astype(np.int64)


def _big_endian_lengths(lengths: np.ndarray) -> pa.Array:
    data = pa.py_buffer(lengths.astype(">u8").tobytes())
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(8), len(lengths), [None, data]).cast(pa.large_binary())


def _join_runs(pieces: pa.Array, starts: np.ndarray) -> pa.Array:
    """One value per run of consecutive pieces (runs begin at ``starts``), sharing the pieces' buffer."""
    offsets = np.frombuffer(pieces.buffers()[1], dtype=np.int64)[pieces.offset: pieces.offset + len(pieces) + 1]
    bounds = np.r_[offsets[starts], offsets[-1]].astype(np.int64)
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(starts),
                                            [None, pa.py_buffer(bounds), pieces.buffers()[2]])


# ---------------------------------------------------------------------------
# Decoding


class OpenProtocolDecoder(Decoder):
    """Splits a message's frames and restores each event's typed values.

    Column values come back as Python values by their type code: integers
    (ENUM index, SET bitmask, BIT and YEAR too), floats, ``Decimal``, ``date``,
    naive ``datetime`` (in the rendering time zone), ``str`` for TIME, JSON and
    text, ``bytes`` for binary strings and BLOBs.  An update without old values
    cannot be told from an insert, and reads as INSERT.
    """

    def decode(self, key: bytes | None, value: bytes) -> list:
        keys = split_frame(key or b"")
        values = split_frame(value or b"", versioned=False)
        if len(keys) != len(values):
            raise ValueError(f"an Open Protocol message with {len(keys)} event keys and {len(values)} values")
        return [self._event(json.loads(k), v) for k, v in zip(keys, values)]

    def _event(self, key: dict, value: bytes):
        kind = key["t"]
        if kind == RESOLVED_EVENT:
            return WatermarkEvent(key["ts"])
        document = json.loads(value)
        if kind == DDL_EVENT:
            return DDLEvent(key.get("scm", ""), key.get("tbl", ""), document["q"], document["t"], key["ts"])
        if "d" in document:
            event_type, row = "DELETE", document["d"]
        else:
            event_type, row = ("UPDATE" if "p" in document else "INSERT"), document["u"]
        return RowEvent(type=event_type, database=key["scm"], table=key["tbl"], commit_ts=key["ts"],
                        columns=_typed(row), old=_typed(document.get("p")),
                        primary_keys=[name for name, c in row.items() if c["f"] & FLAG_PRIMARY_KEY])


def _typed(columns: dict | None) -> dict | None:
    if columns is None:
        return None
    return {name: decode_value(c["v"], c["t"], c["f"]) for name, c in columns.items()}


_NUMBER_CODES = {TYPE_TINY, TYPE_SHORT, TYPE_LONG, TYPE_LONGLONG, TYPE_INT24, TYPE_YEAR, TYPE_BIT, TYPE_ENUM,
                 TYPE_SET}
_BLOB_CODES = {TYPE_TINY_BLOB, TYPE_MEDIUM_BLOB, TYPE_LONG_BLOB, TYPE_BLOB}


def decode_value(value: Any, code: int, flag: int) -> Any:
    """A column's ``v`` back to a Python value, by its type code and flags."""
    if value is None:
        return None
    if code in _NUMBER_CODES:
        return int(value)
    if code in (TYPE_FLOAT, TYPE_DOUBLE):
        return float(value)
    if code == TYPE_NEWDECIMAL:
        return Decimal(value)
    if code == TYPE_DATE:
        return dt.date.fromisoformat(value)
    if code in (TYPE_TIMESTAMP, TYPE_DATETIME):
        return dt.datetime.fromisoformat(value)
    if code in _BLOB_CODES:
        data = base64.b64decode(value)
        return data if flag & FLAG_BINARY else data.decode("utf-8")
    if code in (TYPE_VARCHAR, TYPE_STRING) and flag & FLAG_BINARY:
        return go_unquote_body(value)
    return value
