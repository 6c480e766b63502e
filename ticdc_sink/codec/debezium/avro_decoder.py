"""debezium-avro messages back into events: schemas read from the registry by id, each Avro field read back to
its Debezium Connect field and typed as the Debezium decoder types it (layout: ``encoder.py``)."""

from __future__ import annotations

import io
import json
from typing import Any, Callable, Hashable

import fastavro

from ...config.sink import SinkConfig
from ...table.mysql_types import MySQLType
from ..base import DDLEvent, Decoder, RowEvent, TakesDeclaredTypes, WatermarkEvent
from ..shared.schema_registry import UsesSchemaRegistry
from .decoder import ReadingContext, ReadingContexts

_ROW_KINDS = {"c": "INSERT", "u": "UPDATE", "d": "DELETE"}
_CONNECT_OF_AVRO = {"int": "int32", "long": "int64"}


class DebeziumAvroDecoder(UsesSchemaRegistry, TakesDeclaredTypes, Decoder):
    """Reads keys and values through the registry; values come back as the Debezium decoder gives them (by
    ``enable-tidb-extension``'s ``tidb_type``, else by the type the reader declares: ``ReadingContexts``; a BIGINT
    UNSIGNED and a DECIMAL in string mode are told from text)."""

    def __init__(self, config: SinkConfig | None = None):
        super().__init__(config)
        self._contexts = ReadingContexts(config)
        self._readers: dict[Hashable, _Reader] = {}

    @property
    def carries_watermarks(self) -> bool:
        return bool(self.options and self.options.enable_tidb_extension and self.options.avro_enable_watermark)

    def declare_types(self, database: str | None, table: str | None, types: dict[str, MySQLType]) -> None:
        self._contexts.declare(database, table, types)

    def decode(self, key: bytes | None, value: bytes | None) -> list:
        if value is None:
            return []  # a tombstone: Debezium's after a delete, for log compaction, is no change (TiCDC sends none)
        reader, envelope = self._read(value)
        source = envelope.get("source") or {}
        op = envelope.get("op")
        if op == "m":
            return [WatermarkEvent(source["commit_ts"])]
        if op is None and "ddl" in envelope:  # a schema-change event
            changes = envelope.get("tableChanges") or []
            return [DDLEvent(envelope.get("databaseName") or source.get("db", ""), source.get("table", ""),
                             envelope["ddl"], changes[0]["type"] if changes else "", source.get("commit_ts"))]
        if op not in _ROW_KINDS:
            raise ValueError(f"a debezium-avro message with op {op!r}: the sink reads row changes (c, u, d), "
                             "schema changes and watermarks (m)")
        kind = _ROW_KINDS[op]
        context = self._contexts.of(source["db"], source["table"])
        rows = reader.typed(context)
        before, after = rows.row(envelope.get("before")), rows.row(envelope.get("after"))
        key_columns = []
        if key:
            key_reader, key_record = self._read(key)
            key_columns = list(key_reader.typed(context).row(key_record))
        return [RowEvent(type=kind, database=source["db"], table=source["table"], commit_ts=source.get("commit_ts"),
                         columns=before if kind == "DELETE" else after, old=before if kind == "UPDATE" else None,
                         primary_keys=key_columns, column_types=rows.column_types)]

    def _read(self, data: bytes) -> tuple["_Reader", dict]:
        schema_id, body = self.registry.split(data)
        reader = self._readers.get(schema_id)
        if reader is None:
            reader = self._readers[schema_id] = _Reader(self.registry.schema_text(schema_id))
        return reader, fastavro.schemaless_reader(io.BytesIO(body), reader.parsed, None)


class _Reader:
    """One registered schema (a key record or an envelope): its fastavro form, and its rows' Connect fields
    typed once per reading context (a message's table's)."""

    def __init__(self, text: str):
        schema = json.loads(text)
        self.parsed = fastavro.parse_schema(schema)
        self._fields = [(f["name"], _connect_field(f)) for f in _row_record(schema)["fields"]]
        self._typed: dict[ReadingContext, _TypedRows] = {}

    def typed(self, context: ReadingContext) -> _TypedRows:
        rows = self._typed.get(context)
        if rows is None:
            rows = self._typed[context] = _TypedRows(self._fields, context)
        return rows


class _TypedRows:
    """A schema's rows as a reading context types them: per Avro field, its column's name, type and converter."""

    def __init__(self, fields: list[tuple[str, dict]], context: ReadingContext):
        typed = [(name, c["field"], *context.column(c["field"], c, raw_bytes=True)) for name, c in fields]
        self._columns: dict[str, tuple[str, Callable[[Any], Any]]] = {
            name: (column, convert) for name, column, _, convert in typed}
        self.column_types: dict[str, MySQLType] = {column: t for _, column, t, _ in typed}

    def row(self, record: dict | None) -> dict[str, Any] | None:
        """A row record's values by column name, as TiDB values."""
        if record is None:
            return None
        row = {}
        for field_name, value in record.items():
            name, convert = self._columns[field_name]
            row[name] = None if value is None else convert(value)
        return row


def _row_record(schema: dict) -> dict:
    """The record of a table's columns: the envelope's ``before`` branch, or the key record itself."""
    before = next((f for f in schema["fields"] if f["name"] == "before"), None)
    return schema if before is None else before["type"][1]


def _connect_field(field: dict) -> dict:
    """An Avro field as the Debezium Connect field it was made from (``connect.*`` properties, ``tidb_type``)."""
    branch = field["type"][1] if isinstance(field["type"], list) else field["type"]
    avro = branch if isinstance(branch, dict) else {"type": branch}
    connect = {"field": field.get("connect.field", field["name"]),
               "type": avro.get("connect.type") or _CONNECT_OF_AVRO.get(avro["type"], avro["type"])}
    for key, connect_key in (("connect.name", "name"), ("connect.parameters", "parameters")):
        if key in avro:
            connect[connect_key] = avro[key]
    if "tidb_type" in field:
        connect["tidb_type"] = field["tidb_type"]
    return connect
