"""Canal-JSON messages decoded a column at a time, for the reader: Arrow's JSON reader parses a chunk of messages
at once, and each column's text becomes TiDB values by ``shared.decoding.text_values`` (the text ``decoder.py``
reads a value at a time)."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from ...table.mysql_types import MySQLType
from ..base import MessageColumns
from ..shared.decoding import text_values

_ROW_TYPES = pa.array(["INSERT", "UPDATE", "DELETE"])


def message_schema(names: list[str]) -> pa.Schema:
    """The parts of a Canal-JSON message the reader uses; every value is text (or null)."""
    row = pa.list_(pa.struct([(name, pa.string()) for name in names]))
    return pa.schema([("database", pa.string()), ("table", pa.string()), ("isDdl", pa.bool_()),
                      ("type", pa.string()), ("data", row), ("old", row),
                      ("_tidb", pa.struct([("commitTs", pa.int64()), ("watermarkTs", pa.int64())]))])


def decode_columns(values: list[bytes], types: dict[str, MySQLType]) -> MessageColumns | None:
    """The messages a column at a time; None for a chunk with a DDL event (whose fields differ), or one that Arrow
    cannot parse (it goes message by message, so that a bad one is named)."""
    if any(b"\n" in value for value in values):  # one message per line: JSON text escapes its newlines
        return None
    options = pa_json.ParseOptions(explicit_schema=message_schema(list(types)), unexpected_field_behavior="ignore")
    try:
        parsed = pa_json.read_json(io.BytesIO(b"\n".join(values)),
                                   read_options=pa_json.ReadOptions(use_threads=False, block_size=1 << 26),
                                   parse_options=options)
        if parsed.num_rows != len(values) or pc.any(parsed["isDdl"]).as_py():
            return None
        kind = parsed["type"].combine_chunks()
        extension = parsed["_tidb"].combine_chunks()
        data = pc.list_element(parsed["data"].combine_chunks(), 0)
        old = pc.list_element(parsed["old"].combine_chunks(), 0)
        return MessageColumns(
            op=pc.if_else(pc.is_in(kind, _ROW_TYPES), kind, pa.scalar(None, pa.string())),
            database=parsed["database"].combine_chunks(), table=parsed["table"].combine_chunks(),
            commit_ts=pc.struct_field(extension, "commitTs"), watermark_ts=pc.struct_field(extension, "watermarkTs"),
            new={name: text_values(pc.struct_field(data, name), t) for name, t in types.items()},
            old={name: text_values(pc.struct_field(old, name), t) for name, t in types.items()})
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
