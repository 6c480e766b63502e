"""Simple's JSON messages decoded a column at a time, for the reader: Arrow's JSON reader parses a chunk of
messages at once; values are TiDB's text (``shared.decoding.text_values``), a TIMESTAMP an object of its text
and location, binary strings base64.  Rows are typed by the columns the read knows (``type_unknown_rows_by``),
which is how a reader types them where their table's schema has not come."""

from __future__ import annotations

import base64

import pyarrow as pa
import pyarrow.compute as pc

from ...table.mysql_types import MySQLType
from ..base import MessageColumns
from ..shared.decoding import json_lines, text_values

_ROW_TYPES = pa.array(["INSERT", "UPDATE", "DELETE"])


def _wire_type(t: MySQLType) -> pa.DataType:
    return pa.struct([("value", pa.string())]) if t.kind == "timestamp" else pa.string()


def _values(values: pa.Array, t: MySQLType) -> pa.Array:
    if t.kind == "timestamp":
        values = pc.struct_field(values, "value")
    if t.is_string and t.binary:
        return pa.array([None if text is None else base64.b64decode(text) for text in values.to_pylist()],
                        pa.binary())
    return text_values(values, t)


def decode_columns(values: list[bytes], types: dict[str, MySQLType]) -> MessageColumns | None:
    """The messages a column at a time; None for a chunk in Avro, or with a DDL or BOOTSTRAP (which bring table
    schemas), or that Arrow cannot parse (it goes message by message)."""
    if any(value[:1] != b"{" for value in values):
        return None
    row = pa.struct([(name, _wire_type(t)) for name, t in types.items()])
    schema = pa.schema([("type", pa.string()), ("database", pa.string()), ("table", pa.string()),
                        ("commitTs", pa.int64()), ("handleKeyOnly", pa.bool_()), ("data", row), ("old", row)])
    parsed = json_lines(values, schema)
    if parsed is None:
        return None
    try:
        kind = parsed["type"].combine_chunks()
        if pc.any(parsed["handleKeyOnly"]).as_py():  # a handle-key-only message goes message by message
            return None
        is_row, is_watermark = pc.is_in(kind, _ROW_TYPES), pc.equal(kind, "WATERMARK")
        if not pc.all(pc.or_(is_row, is_watermark)).as_py():
            return None
        deleted = pc.equal(kind, "DELETE")
        data, old = parsed["data"].combine_chunks(), parsed["old"].combine_chunks()
        new = pc.if_else(deleted, old, data)  # a DELETE's row is its "old"
        old = pc.if_else(deleted, pa.nulls(len(old), old.type), old)
        commit_ts = parsed["commitTs"].combine_chunks()
        return MessageColumns(
            op=pc.if_else(is_row, kind, pa.scalar(None, pa.string())),
            database=parsed["database"].combine_chunks(), table=parsed["table"].combine_chunks(),
            commit_ts=pc.if_else(is_row, commit_ts, pa.scalar(None, pa.int64())),
            watermark_ts=pc.if_else(is_watermark, commit_ts, pa.scalar(None, pa.int64())),
            new={name: _values(pc.struct_field(new, name), t) for name, t in types.items()},
            old={name: _values(pc.struct_field(old, name), t) for name, t in types.items()})
    except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError):
        return None
