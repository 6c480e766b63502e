"""The Simple protocol's Avro encoding (``encoding-format=avro``; TiCDC ``pkg/sink/codec/simple/avro.go`` at pingcap/ticdc@b813e76f).

A message is the Avro binary form of TiCDC's schema (``simple_avro_schema.json``:
TiCDC's, without its ``docs``), a union of twelve records of which a message is
always the last, ``Message``: its ``type`` and a ``payload`` union of Watermark,
Bootstrap, DDL and DML.  No Confluent header: consumers hold the schema.

Rows are built a column at a time (avro_binary); the few control messages go
through fastavro.  ``data`` and ``old`` are Avro maps written as one block with
members sorted by name (TiCDC writes them in Go's map order, which changes from
message to message).  A value takes the branch of ``null | long | float | double
| string | bytes | Timestamp | UnsignedBigint`` that the Go type TiCDC holds it
in selects: integers, YEAR, ENUM (index) and SET (bitmask) long; BIGINT
UNSIGNED UnsignedBigint (the 64 bits as a signed long); FLOAT float; DOUBLE
double; binary strings bytes; TIMESTAMP Timestamp (time zone and TiDB's text);
BIT a string of its unsigned number (``encodeValue4Avro``); DECIMAL, dates,
times, JSON and text a string of TiDB's text.  The document's
mysqlType table says string for TIMESTAMP and for BIGINT UNSIGNED above 2^63-1;
TiCDC's encoder and its schema use the two records, and so does the sink.
"""

from __future__ import annotations

import io
import json
from importlib import resources
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...table.row_checksum import CHECKSUM_VERSION
from ...table.schema import Column
from ...table.value_text import value_text
from ..shared.avro_binary import concat, fixed_width, length_prefixed, long_bytes, nullable, string_bytes, varints
from .table_schema import ColumnInfo, SimpleTable
from .wire import SimpleWire

SCHEMA = fastavro.parse_schema(json.loads(
    resources.files(__package__).joinpath("simple_avro_schema.json").read_text(encoding="utf-8")))
_NAMESPACE = "com.pingcap.simple.avro."
VERSION = 1
# Union branch 11 (Message), its type DML (3) and its payload's branch DML (3), then version 1.
_DML_HEAD = bytes([22, 6, 6, 2])
_DML_TYPES = np.array([b"", b"\x00", b"\x02", b"\x04"], dtype=object)  # INSERT, UPDATE, DELETE by OP_*
_NO_EXTRAS = b"\x00\x00\x00"  # claimCheckLocation, handleKeyOnly and checksum: null
_HANDLE_KEY_ONLY = b"\x00\x02\x01\x00"  # the same but handleKeyOnly: its union's boolean branch, true
_CLAIM_CHECK_TAIL = b"\x02\x01\x00"  # after claimCheckLocation's string: handleKeyOnly true, no checksum
# The branches of a DML value's union (0 is null).
LONG, FLOAT, DOUBLE, STRING, BYTES, TIMESTAMP, UNSIGNED_BIGINT = range(1, 8)
# TiCDC writes unsigned/zerofill for these types only, decimal for DECIMAL and TIMESTAMP only (``newTableSchemaMap``),
# elements for ENUM and SET.
_FLAGGED_TYPES = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint", "float", "double", "bit", "year",
                            "decimal"})
_SCALED_TYPES = frozenset({"decimal", "timestamp"})


def _constant(data: bytes) -> pa.Scalar:
    return pa.scalar(data, pa.binary())


def _assemble(parts: list, n: int) -> pa.Array:
    """Per-row arrays and constant bytes joined row by row (adjacent constants merged first)."""
    merged: list[Any] = []
    for part in parts:
        if isinstance(part, bytes) and merged and isinstance(merged[-1], bytes):
            merged[-1] += part
        else:
            merged.append(part)
    return concat([_constant(p) if isinstance(p, bytes) else p for p in merged], n)


class SimpleAvro(SimpleWire):
    """Simple messages in TiCDC's Avro schema."""

    def __init__(self, time_zone: str):
        super().__init__(time_zone)
        self._timestamp_head = _constant(string_bytes(time_zone))

    # -- rows

    def column_fragments(self, values: pa.Array, column: Column) -> pa.Array:
        """Each row's value of a column as its branch of the value union."""
        branch, encoded = self._typed(values, column)
        return nullable(encoded, values.is_null(), branch)

    def _typed(self, values: pa.Array, column: Column) -> tuple[int, pa.Array]:
        t = column.type
        if t.is_integer or t.kind in ("year", "enum", "set"):
            numbers = pc.fill_null(values, 0).to_numpy(zero_copy_only=False)
            numbers = numbers.view(np.int64) if numbers.dtype == np.uint64 else numbers.astype(np.int64)
            return (UNSIGNED_BIGINT if t.kind == "bigint" and t.unsigned else LONG), varints(numbers)
        if t.kind in ("float", "double"):
            return (FLOAT, fixed_width(values, "<f4")) if t.kind == "float" else (DOUBLE, fixed_width(values, "<f8"))
        text = value_text(values, t, self.time_zone)
        if t.is_string and t.binary:
            return BYTES, length_prefixed(text)
        if t.kind == "timestamp":
            return TIMESTAMP, pc.binary_join_element_wise(self._timestamp_head, length_prefixed(text), _constant(b""))
        return STRING, length_prefixed(text)

    def row(self, names: list[str], fragments: list[pa.Array], n: int) -> pa.Array:
        """A map of column name to value per row: one block of every column, then the end of the map."""
        parts: list[Any] = [long_bytes(len(names))] if names else []
        for name, fragment in zip(names, fragments):
            parts += [string_bytes(name), fragment]
        return _assemble(parts + [b"\x00"], n)

    def member(self, name: str, rows: pa.Array) -> pa.Array:
        """``data`` or ``old`` present: the map branch of its ``["null", map]`` union."""
        return pc.binary_join_element_wise(_constant(b"\x02"), rows, _constant(b""))

    def no_member(self, name: str) -> pa.Scalar:
        return _constant(b"\x00")

    def dml(self, databases: pa.Array | str, tables: pa.Array | str, table_ids: np.ndarray | int, ops: np.ndarray,
            commit_ts: np.ndarray, build_ts: int, schema_version: int, data: pa.Array, old: pa.Array,
            n: int, handle_key_only: bool = False, locations: pa.Array | None = None,
            checksums: tuple[np.ndarray, np.ndarray] | None = None) -> pa.Array:
        """One DML message per row (``handle_key_only``: marked as standing for a row over max-message-bytes;
        ``locations``: and, with claim-check, where each row's whole message is; ``checksums``: each row's
        current and previous checksum, for its Checksum record)."""
        extras = self._extras(handle_key_only, locations)
        if checksums is not None:  # the checksum union's record branch in place of its null (the last byte),
            # but where both are 0 (a row of NULLs only), which TiCDC's mounter leaves without a checksum
            record = concat([_constant(b"\x02" + long_bytes(CHECKSUM_VERSION) + b"\x00"),
                             varints(checksums[0].astype(np.int64)), varints(checksums[1].astype(np.int64))], n)
            none = pa.array((checksums[0] == 0) & (checksums[1] == 0))
            extras = [*extras[:-1], extras[-1][:-1], pc.if_else(none, _constant(b"\x00"), record)]
        return _assemble([
            _DML_HEAD, self._strings(databases), self._strings(tables),
            long_bytes(table_ids) if isinstance(table_ids, int) else varints(table_ids),
            pa.array(_DML_TYPES[ops], pa.binary()), varints(commit_ts.astype(np.int64)),
            long_bytes(build_ts) + long_bytes(schema_version), *extras, data, old,
        ], n)

    @staticmethod
    def _extras(handle_key_only: bool, locations: pa.Array | None) -> list:
        """claimCheckLocation, handleKeyOnly and checksum: each union's null, or its string or boolean."""
        if locations is not None:
            return [b"\x02", length_prefixed(locations), _CLAIM_CHECK_TAIL]
        return [_HANDLE_KEY_ONLY if handle_key_only else _NO_EXTRAS]

    @staticmethod
    def _strings(names: pa.Array | str) -> pa.Array | bytes:
        return string_bytes(names) if isinstance(names, str) else length_prefixed(names)

    # -- control messages

    def table_schema(self, shape: SimpleTable, database: str, table: str, table_id: int) -> dict:
        return {"database": database, "table": table, "tableID": table_id, "version": shape.version,
                "columns": [_column(c) for c in shape.columns],
                "indexes": [{"name": i.name, "unique": i.unique, "primary": i.primary, "nullable": i.nullable,
                             "columns": list(i.columns)} for i in shape.indexes]}

    def watermark(self, commit_ts: int, build_ts: int) -> bytes:
        return _message("WATERMARK", "Watermark", {"version": VERSION, "commitTs": commit_ts, "buildTs": build_ts})

    def bootstrap(self, build_ts: int, table_schema: dict) -> bytes:
        return _message("BOOTSTRAP", "Bootstrap", {"version": VERSION, "buildTs": build_ts,
                                                   "tableSchema": table_schema})

    def ddl(self, ddl_type: str, sql: str, commit_ts: int, build_ts: int, table_schema: dict | None,
            pre_table_schema: dict | None) -> bytes:
        return _message("DDL", "DDL", {"version": VERSION, "type": ddl_type, "sql": sql, "commitTs": commit_ts,
                                       "buildTs": build_ts, "tableSchema": table_schema,
                                       "preTableSchema": pre_table_schema})

    @staticmethod
    def read(value: bytes) -> dict:
        """A message as the JSON encoding's fields: the payload's non-null fields, the message type for WATERMARK
        and BOOTSTRAP, and ``schema`` for a table schema's ``database``."""
        message = fastavro.schemaless_reader(io.BytesIO(value), SCHEMA, None)
        doc = {name: v for name, v in message["payload"].items() if v is not None}
        doc.setdefault("type", message["type"])  # DDL and DML payloads carry their own
        for name in ("tableSchema", "preTableSchema"):
            if name in doc:
                doc[name]["schema"] = doc[name].pop("database")
        return doc


def _column(c: ColumnInfo) -> dict:
    flagged = c.mysql_type in _FLAGGED_TYPES
    data_type = {"mysqlType": c.mysql_type, "charset": c.charset, "collate": c.collate, "length": c.length,
                 "decimal": c.decimals if c.mysql_type in _SCALED_TYPES else None,
                 "elements": list(c.elements) if c.mysql_type in ("enum", "set") else None,
                 "unsigned": c.unsigned if flagged else None, "zerofill": c.zerofill if flagged else None}
    return {"name": c.name, "dataType": data_type, "nullable": c.nullable, "default": c.default}


def _message(message_type: str, record: str, payload: dict) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, SCHEMA, (_NAMESPACE + "Message",
                                             {"type": message_type, "payload": (_NAMESPACE + record, payload)}))
    return out.getvalue()

