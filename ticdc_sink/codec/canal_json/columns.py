"""Canal-JSON messages decoded a column at a time, for the reader: Arrow's JSON reader parses a chunk of messages
at once, and each column's text becomes TiDB values by ``shared.decoding.text_values`` (the text ``decoder.py``
reads a value at a time)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ...table.mysql_types import MySQLType
from ...tso import TSO_LOGICAL_BITS
from ..base import MessageColumns
from ..shared.decoding import json_lines, text_values

_ROW_TYPES = pa.array(["INSERT", "UPDATE", "DELETE"])


def message_schema(names: list[str]) -> pa.Schema:
    """The parts of a Canal-JSON message the reader uses; every value is text (or null)."""
    row = pa.list_(pa.struct([(name, pa.string()) for name in names]))
    return pa.schema([("database", pa.string()), ("table", pa.string()), ("isDdl", pa.bool_()),
                      ("type", pa.string()), ("es", pa.int64()), ("data", row), ("old", row),
                      ("_tidb", pa.struct([("commitTs", pa.int64()), ("watermarkTs", pa.int64()),
                                           ("onlyHandleKey", pa.bool_()),
                                           ("claimCheckLocation", pa.string())]))])


def decode_columns(values: list[bytes], types: dict[str, MySQLType]) -> MessageColumns | None:
    """The messages a column at a time; None for a chunk with a DDL event (whose fields differ), a handle-key-only
    or claim-check message, or one that Arrow cannot parse (it goes message by message, so that a bad one is named)."""
    parsed = json_lines(values, message_schema(list(types)))
    if parsed is None or pc.any(parsed["isDdl"]).as_py():
        return None
    try:
        kind = parsed["type"].combine_chunks()
        extension = parsed["_tidb"].combine_chunks()
        if pc.any(pc.struct_field(extension, "onlyHandleKey")).as_py():  # message by message, to be named
            return None
        if pc.struct_field(extension, "claimCheckLocation").null_count < len(extension):  # to be fetched
            return None
        data = pc.list_element(parsed["data"].combine_chunks(), 0)
        old = pc.list_element(parsed["old"].combine_chunks(), 0)
        return MessageColumns(
            op=pc.if_else(pc.is_in(kind, _ROW_TYPES), kind, pa.scalar(None, pa.string())),
            database=parsed["database"].combine_chunks(), table=parsed["table"].combine_chunks(),
            commit_ts=pc.coalesce(pc.struct_field(extension, "commitTs"),  # else es, as decoder.commit_ts reads it
                                  pc.shift_left(parsed["es"].combine_chunks(), TSO_LOGICAL_BITS)),
            watermark_ts=pc.struct_field(extension, "watermarkTs"),
            new={name: text_values(pc.struct_field(data, name), t) for name, t in types.items()},
            old={name: text_values(pc.struct_field(old, name), t) for name, t in types.items()})
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
