"""Open Protocol messages decoded a column at a time, for the reader: the frames are split into their events, and
Arrow's JSON reader parses the events' keys and values at once; each column's values become TiDB values as
``decoder.decode_value`` makes them a value at a time."""

from __future__ import annotations

import base64
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc

from ...table.mysql_types import BLOB_CODES, MySQLType
from ..base import MessageColumns
from ..shared.decoding import json_lines, text_values
from ..shared.json_text import go_unquote_body
from .encoder import DDL_EVENT, RESOLVED_EVENT, ROW_EVENT
from .frames import split_frame

_KEY_SCHEMA = pa.schema([("ts", pa.int64()), ("scm", pa.string()), ("tbl", pa.string()), ("t", pa.int64()),
                         ("ohk", pa.bool_()), ("ccl", pa.string())])


def _wire_type(t: MySQLType) -> pa.DataType:
    """How a column's ``v`` is in the JSON: integers as numbers (unsigned ones past 2^63 too), floats as numbers,
    everything else as text."""
    if t.is_integer or t.kind in ("bit", "set", "year", "enum"):
        return pa.uint64() if t.unsigned or t.kind in ("bit", "set") else pa.int64()
    if t.kind in ("float", "double"):
        return pa.float64()
    return pa.string()


def _values(v: pa.Array, t: MySQLType) -> pa.Array:
    """A column's ``v`` values as TiDB values: BLOB and TEXT come in base64, binary strings Go-quoted."""
    if t.code in BLOB_CODES:
        data = [None if text is None else base64.b64decode(text) for text in v.to_pylist()]
        return pa.array(data if t.binary else [None if d is None else d.decode() for d in data],
                        pa.binary() if t.binary else pa.string())
    if t.is_string and t.binary:
        return pa.array([None if text is None else go_unquote_body(text) for text in v.to_pylist()], pa.binary())
    if pa.types.is_string(v.type):
        return text_values(v, t)
    return v


def decode_columns(keys: list[bytes | None], values: list[bytes], types: dict[str, MySQLType],
                   decompressed: Callable[[bytes], bytes]) -> MessageColumns | None:
    """The events of the messages a column at a time (each event's value ``decompressed``); None for a chunk
    with a DDL, handle-key-only or claim-check event, with a column whose type code is not the one ``types``
    gives, or that Arrow cannot parse (it goes message by message)."""
    event_keys, event_values, message = [], [], []
    for index, (key, value) in enumerate(zip(keys, values)):
        split_keys, split_values = split_frame(key or b""), split_frame(value or b"", versioned=False)
        if len(split_keys) != len(split_values):
            return None
        event_keys += split_keys
        event_values += [decompressed(v) if v else b"{}" for v in split_values]  # a resolved event's is empty
        message += [index] * len(split_keys)
    column = {name: pa.struct([("t", pa.int64()), ("v", _wire_type(t))]) for name, t in types.items()}
    row = pa.struct(list(column.items()))
    value_schema = pa.schema([("u", row), ("p", row), ("d", row)])
    try:
        parsed_keys = _parse(event_keys, _KEY_SCHEMA)
        kind = parsed_keys["t"].combine_chunks()
        if pc.any(parsed_keys["ohk"]).as_py() or parsed_keys["ccl"].null_count < len(event_keys):
            return None  # a handle-key-only event goes message by message, to be named; a claim-check one, fetched
        if pc.any(pc.equal(kind, DDL_EVENT)).as_py():
            return None
        parsed = _parse(event_values, value_schema)
        new = pc.coalesce(parsed["u"].combine_chunks(), parsed["d"].combine_chunks())
        old = parsed["p"].combine_chunks()
        if not all(_codes_agree(pc.struct_field(side, name), t) for side in (new, old) for name, t in types.items()):
            return None
        deleted, updated = parsed["d"].combine_chunks().is_valid(), old.is_valid()
        op = pc.if_else(pc.equal(kind, ROW_EVENT),
                        pc.if_else(deleted, "DELETE", pc.if_else(updated, "UPDATE", "INSERT")),
                        pa.scalar(None, pa.string()))
        ts = parsed_keys["ts"].combine_chunks()
        return MessageColumns(
            op=op, database=parsed_keys["scm"].combine_chunks(), table=parsed_keys["tbl"].combine_chunks(),
            commit_ts=pc.if_else(pc.equal(kind, ROW_EVENT), ts, pa.scalar(None, pa.int64())),
            watermark_ts=pc.if_else(pc.equal(kind, RESOLVED_EVENT), ts, pa.scalar(None, pa.int64())),
            new={name: _values(pc.struct_field(pc.struct_field(new, name), "v"), t) for name, t in types.items()},
            old={name: _values(pc.struct_field(pc.struct_field(old, name), "v"), t) for name, t in types.items()},
            message=pa.array(message, pa.int32()))
    except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError):
        return None


def _parse(lines: list[bytes], schema: pa.Schema) -> pa.Table:
    parsed = json_lines(lines, schema)
    if parsed is None:
        raise ValueError("the events are not JSON lines of the schema")
    return parsed


def _codes_agree(column: pa.Array, t: MySQLType) -> bool:
    """Whether every event's type code of the column is the one its type has (a column that is there)."""
    codes = pc.struct_field(column, "t").drop_null()
    return len(codes) == 0 or pc.all(pc.equal(codes, t.code)).as_py()
