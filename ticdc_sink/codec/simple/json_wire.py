"""The Simple protocol's JSON encoding (``encoding-format=json``, the default; TiCDC
``pkg/sink/codec/simple/message.go`` at pingcap/ticdc@b813e76f).

Go's encoding/json marshalling TiCDC's message struct: fields in its order
(``version, database, table, tableID, type, sql, commitTs, buildTs,
schemaVersion, claimCheckLocation, handleKeyOnly, checksum, data, old, tableSchema, preTableSchema``),
empty ones left out,
map members (``data``, ``old``) sorted by name, and Go 1.22's escapes.  Every
value is a JSON string but a TIMESTAMP, which is
``{"location":<time-zone>,"value":<text>}``, and binary strings are base64.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...table.row_checksum import CHECKSUM_VERSION
from ...table.schema import Column
from ...table.text_join import join, string_scalar
from ...table.value_text import value_text
from ..shared.json_text import (GO_JSON, base64_fragments, concat, json_fragments, object_parts, quote_json,
                                quote_json_array)
from .table_schema import SimpleTable
from .wire import SimpleWire

VERSION = 1
_DML_TYPES = np.array(["", '"INSERT"', '"UPDATE"', '"DELETE"'], dtype=object)  # by OP_*


class SimpleJSON(SimpleWire):
    """Simple messages as TiCDC's JSON marshaller writes them."""

    def __init__(self, time_zone: str):
        super().__init__(time_zone)
        self._timestamp_head = f'{{"location":{quote_json(time_zone, GO_JSON)},"value":"'

    # -- rows

    def column_fragments(self, values: pa.Array, column: Column) -> pa.Array:
        """The JSON value of each row of a column: a string, a TIMESTAMP object, or ``null``."""
        t = column.type
        if t.is_string and t.binary:
            return base64_fragments(values)
        text = value_text(values, t, self.time_zone)
        if t.kind == "timestamp":
            return pc.fill_null(join(self._timestamp_head, text, '"}'), string_scalar("null"))
        return json_fragments(text, escape=t.is_string or t.kind == "json", style=GO_JSON)

    def row(self, names: list[str], fragments: list[pa.Array], n: int) -> pa.Array:
        """The object of column name to value per row."""
        return concat(object_parts([quote_json(name, GO_JSON) + ":" for name in names], fragments), n)

    def member(self, name: str, rows: pa.Array) -> pa.Array:
        return join(f',"{name}":', rows)

    def no_member(self, name: str) -> pa.Scalar:
        return string_scalar("")

    def dml(self, databases: pa.Array | str, tables: pa.Array | str, table_ids: np.ndarray | int, ops: np.ndarray,
            commit_ts: np.ndarray, build_ts: int, schema_version: int, data: pa.Array, old: pa.Array,
            n: int, handle_key_only: bool = False, locations: pa.Array | None = None,
            checksums: tuple[np.ndarray, np.ndarray] | None = None) -> pa.Array:
        """One DML message per row (``handle_key_only``: marked as standing for a row over max-message-bytes;
        ``locations``: and, with claim-check, where each row's whole message is; ``checksums``: each row's
        current and previous checksum)."""
        checksum: list = []
        if checksums is not None:  # none where both are 0 (a row of NULLs only), as TiCDC's mounter leaves it
            present = join(f',"checksum":{{"version":{CHECKSUM_VERSION},"corrupted":false,"current":',
                           pa.array(checksums[0]).cast(pa.string()), ',"previous":',
                           pa.array(checksums[1]).cast(pa.string()), "}")
            checksum = [pc.if_else(pa.array((checksums[0] == 0) & (checksums[1] == 0)), string_scalar(""), present)]
        return concat([
            f'{{"version":{VERSION},"database":', _quoted(databases), ',"table":', _quoted(tables),
            ',"tableID":', str(table_ids) if isinstance(table_ids, int) else pa.array(table_ids).cast(pa.string()),
            ',"type":', pa.array(_DML_TYPES[ops], pa.string()),
            ',"commitTs":', pa.array(commit_ts).cast(pa.string()),
            f',"buildTs":{build_ts},"schemaVersion":{schema_version}',
            *([',"claimCheckLocation":', _quoted(locations)] if locations is not None else []),
            ',"handleKeyOnly":true' if handle_key_only else "", *checksum, data, old, "}",
        ], n)

    # -- control messages

    def table_schema(self, shape: SimpleTable, database: str, table: str, table_id: int) -> str:
        return shape.json(database, table, table_id)

    def watermark(self, commit_ts: int, build_ts: int) -> str:
        return f'{{"version":{VERSION},"type":"WATERMARK","commitTs":{commit_ts},"buildTs":{build_ts}}}'

    def bootstrap(self, build_ts: int, table_schema: str) -> str:
        return (f'{{"version":{VERSION},"type":"BOOTSTRAP","commitTs":0,"buildTs":{build_ts},'
                f'"tableSchema":{table_schema}}}')

    def ddl(self, ddl_type: str, sql: str, commit_ts: int, build_ts: int, table_schema: str | None,
            pre_table_schema: str | None) -> str:
        value = f'{{"version":{VERSION},"type":"{ddl_type}"'
        if sql:
            value += f',"sql":{quote_json(sql, GO_JSON)}'
        value += f',"commitTs":{commit_ts},"buildTs":{build_ts}'
        if table_schema is not None:
            value += ',"tableSchema":' + table_schema
        if pre_table_schema is not None:
            value += ',"preTableSchema":' + pre_table_schema
        return value + "}"

    @staticmethod
    def read(value: bytes) -> dict:
        return json.loads(value)


def _quoted(names: pa.Array | str) -> pa.Array | str:
    return quote_json(names, GO_JSON) if isinstance(names, str) else quote_json_array(names, GO_JSON)
