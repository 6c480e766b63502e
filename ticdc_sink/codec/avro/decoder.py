"""Avro messages back into events: schemas read from the registry by id, values restored by ``tidb_type``."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
import struct
from decimal import Decimal
from typing import Any, Callable, Hashable

import fastavro

from ...config.sink import SinkConfig
from ...table.mysql_types import MySQLType
from ...table.row_checksum import utc_text, verify
from ...table.type_grammar import carried_type
from ..base import DDLEvent, Decoder, RowEvent, WatermarkEvent
from ..shared.decoding import allowed_members, enum_index, set_bitmask, unsigned_64
from ..shared.schema_registry import UsesSchemaRegistry
from .schema import BEFORE_FIELD, CHECKSUM_FIELDS, EXTENSION_FIELDS


class AvroDecoder(UsesSchemaRegistry, Decoder):
    """Reads keys and values through the registry and restores each column's TiDB value.

    Values come back as the other decoders give them, by the field's
    ``tidb_type``: integers (ENUM index, SET bitmask, BIT, YEAR and BIGINT
    UNSIGNED as the unsigned number), floats, ``Decimal``, ``date``, naive
    ``datetime``, ``str`` for TIME, JSON and text, ``bytes`` for binary
    strings.  Without the TiDB extension an update reads as INSERT and no
    commit ts is known; a delete carries the key columns only.  With
    ``avro-include-before-value`` (a ``_ticdc_before`` field, which the
    schema shows: the reader needs no option) ``_tidb_op`` tells every
    operation, an update carries its old row and a delete is a value with
    the whole deleted row.  With ``avro-enable-watermark`` (TiCDC's test-only
    events, which only the option tells apart from Glue's header) a value of
    byte 1 is a DDL, of byte 2 a watermark, and of byte 3 a delete's commit ts.
    """

    def __init__(self, config: SinkConfig | None = None):
        super().__init__(config)
        self._readers: dict[Hashable, _Reader] = {}

    @property
    def carries_watermarks(self) -> bool:
        return self._control_events

    @property
    def _control_events(self) -> bool:
        return bool(self.options and self.options.enable_tidb_extension and self.options.avro_enable_watermark)

    def decode(self, key: bytes | None, value: bytes | None) -> list[RowEvent | DDLEvent | WatermarkEvent]:
        if value and self._control_events and _is_control_event(value):
            return self._control_event(key, value)
        if value is None:
            if key is None:  # a keyless table's delete: nothing to read
                return []
            reader, columns, _ = self._read(key)
            return [reader.event("DELETE", columns, columns, None)]
        reader, columns, others = self._read(value)
        key_columns = self._read(key)[1] if key is not None else {}
        kind = _KINDS.get(others.get("_tidb_op"), "INSERT")
        old = others.get(BEFORE_FIELD) if kind == "UPDATE" else None
        return [reader.event(kind, columns, key_columns, others.get("_tidb_commit_ts"), old)]

    def _control_event(self, key: bytes | None, value: bytes) -> list[RowEvent | DDLEvent | WatermarkEvent]:
        """A DDL (byte 1, then JSON), a watermark (byte 2) or a delete (byte 3, then its commit ts)."""
        if value[:1] == b"\x01":
            ddl = json.loads(value[1:])
            return [DDLEvent(ddl["schema"], ddl["table"], ddl["query"], ddl["type"], ddl["commitTs"])]
        (ts,) = struct.unpack(">Q", value[1:9])
        if value[:1] == b"\x02":
            return [WatermarkEvent(ts)]
        if key is None:  # a keyless table's delete: no row to name
            return []
        reader, columns, _ = self._read(key)
        return [reader.event("DELETE", columns, columns, ts)]

    def _read(self, data: bytes) -> tuple["_Reader", dict[str, Any], dict[str, Any]]:
        schema_id, record_ = self.registry.split(data)
        reader = self._readers.get(schema_id)
        if reader is None:
            reader = self._readers[schema_id] = _Reader(self.registry.schema_text(schema_id),
                                                         getattr(self.config, "time_zone", None) or "UTC")
        return reader.read(record_)


class _Reader:
    """One registered schema: its fastavro form and a converter to TiDB values per field."""

    def __init__(self, text: str, time_zone: str = "UTC"):
        self.time_zone = time_zone  # the changefeed's, which TIMESTAMP texts are in
        schema = json.loads(text)
        self.table = schema["name"]
        self.database = schema.get("namespace", "").partition(".")[2]
        self._parsed = fastavro.parse_schema(schema)
        columns = [(f["name"], _value_type(f["type"])) for f in schema["fields"] if f["name"] not in _NOT_COLUMNS]
        self._converters = {name: _converter(avro_type) for name, avro_type in columns}
        self.column_types = {name: _column_type(avro_type) for name, avro_type in columns}

    def read(self, payload: bytes) -> tuple["_Reader", dict[str, Any], dict[str, Any]]:
        """The record's columns as TiDB values, and its other fields (the before-image's columns converted)."""
        record_ = fastavro.schemaless_reader(io.BytesIO(payload), self._parsed, None)
        others = {name: record_[name] for name in _NOT_COLUMNS if name in record_}
        if others.get(_CHECKSUM):  # the row's checksum ("": none), of the row the value carries
            verify(int(others[_CHECKSUM]), self._checksum_values(record_),
                   f"the {_KINDS.get(others.get('_tidb_op'), 'row')} of {self.database}.{self.table} at commit ts "
                   f"{others.get('_tidb_commit_ts')}")
        if others.get(BEFORE_FIELD) is not None:
            others[BEFORE_FIELD] = self._columns(others[BEFORE_FIELD])
        return self, self._columns(record_), others

    def _checksum_values(self, record_: dict[str, Any]):
        """Each column's (value, kind) as ``row_checksum`` takes it: ENUM, SET, BIT and BIGINT UNSIGNED as their
        numbers, a TIMESTAMP's text in UTC (the message's is in the changefeed's time zone), else as written."""
        for name, convert in self._converters.items():
            value, kind = record_[name], self.column_types[name].kind
            if value is not None:
                if kind in ("enum", "set", "bit") or (kind == "bigint" and isinstance(value, str)):
                    value = convert(value)
                elif kind == "timestamp":
                    value = utc_text(value, self.time_zone)
            yield value, kind

    def _columns(self, record_: dict[str, Any]) -> dict[str, Any]:
        return {name: None if record_[name] is None else convert(record_[name])
                for name, convert in self._converters.items()}

    def event(self, kind: str, columns: dict, key_columns: dict, commit_ts: int | None,
              old: dict | None = None) -> RowEvent:
        return RowEvent(type=kind, database=self.database, table=self.table, commit_ts=commit_ts,
                        columns=columns, old=old, primary_keys=list(key_columns), column_types=self.column_types)


_KINDS = {"c": "INSERT", "u": "UPDATE", "d": "DELETE"}  # _tidb_op


def _is_control_event(value: bytes) -> bool:
    """TiCDC's test-only events (``pkg/sink/codec/avro/helper.go``: ddlByte, checkpointByte, deleteByte): byte 1 and
    a JSON object, or byte 2 or 3 and a ts, 9 bytes; a Confluent message starts with 0, and Glue's header (byte 3)
    is 18 bytes before its record."""
    return value[:2] == b"\x01{" or (len(value) == 9 and value[:1] in (b"\x02", b"\x03"))
# The value's fields that are no column: the TiDB extension's and the before-image.
_NOT_COLUMNS = (*(f["name"] for f in EXTENSION_FIELDS + CHECKSUM_FIELDS), BEFORE_FIELD)
_CHECKSUM = CHECKSUM_FIELDS[0]["name"]


def _value_type(avro_type: Any) -> dict:
    """A field's type without its null branch (``["null", T]``)."""
    if isinstance(avro_type, list):
        avro_type = next(t for t in avro_type if t != "null")
    return avro_type


def _column_type(avro_type: dict) -> MySQLType:
    """The column's type as the schema tells it: ``tidb_type``, the members, BIT's width, DECIMAL's precision."""
    parameters = avro_type.get("connect.parameters", {})
    t = carried_type(parameters.get("tidb_type", "TEXT"))
    if t.kind in ("enum", "set"):
        return dataclasses.replace(t, elements=tuple(allowed_members(parameters.get("allowed", ""))))
    if t.kind == "bit":
        return dataclasses.replace(t, length=int(parameters.get("length", 1)))
    if t.kind == "decimal":
        precise = avro_type.get("logicalType") == "decimal"
        return dataclasses.replace(t, length=avro_type["precision"] if precise else None,
                                   decimals=avro_type["scale"] if precise else None)
    return t


def _converter(avro_type: dict) -> Callable[[Any], Any]:
    """How a field's Avro value becomes the TiDB value, by its ``tidb_type`` (and ``allowed``)."""
    parameters = avro_type.get("connect.parameters", {})
    tidb_type = parameters.get("tidb_type", "")
    if tidb_type == "BIGINT UNSIGNED":
        return lambda v: unsigned_64(int(v))  # string mode's text, or long mode's 64 bits
    if tidb_type == "DECIMAL":
        return Decimal
    if tidb_type == "BIT":
        return lambda v: int.from_bytes(v, "big")
    if tidb_type in ("ENUM", "SET"):
        members = allowed_members(parameters.get("allowed", ""))
        if tidb_type == "ENUM":
            return lambda v: enum_index(members, v)
        return lambda v: set_bitmask(members, v)
    if tidb_type == "DATE":
        return dt.date.fromisoformat
    if tidb_type in ("DATETIME", "TIMESTAMP"):
        return dt.datetime.fromisoformat
    return lambda v: v
