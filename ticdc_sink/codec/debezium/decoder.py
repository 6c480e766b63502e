"""Debezium messages back into events, values typed by their field schemas (layout: ``encoder.py``)."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable
from zoneinfo import ZoneInfo

import pyarrow as pa

from ...config.sink import SinkConfig
from ...table.mysql_types import MySQLType
from ...table.type_grammar import carried_type, declared_types
from ...table.value_text import duration_text
from ..base import DDLEvent, Decoder, RowEvent, TakesDeclaredTypes, WatermarkEvent
from ..shared.decoding import allowed_members, enum_index, set_bitmask, typed_row, unsigned_64
from . import field_types

_ROW_KINDS = {"c": "INSERT", "r": "INSERT", "u": "UPDATE", "d": "DELETE"}
_BINARY_TIDB_TYPES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}
_EPOCH = dt.datetime(1970, 1, 1)
_KEPT_SCHEMAS = 64  # envelope schemas a decoder keeps parsed (a topic's table shapes)


class DebeziumDecoder(TakesDeclaredTypes, Decoder):
    """Reads Debezium messages back into events, typing values by their field schemas.

    Values come back as the other decoders give them: dates, naive datetimes
    (TIMESTAMP in the sink's ``time-zone``), TIME as text, ENUM index, SET
    bitmask and BIT as numbers.  ``tidb_type`` (``enable-tidb-extension``)
    tells BIGINT UNSIGNED, DECIMAL and binary strings apart; without it, the
    type the reader declares does (``ReadingContexts``: ``column-types``, and
    for the table it reads its schema's), else they read as Debezium typed
    them (int64, double, base64 text).  With ``debezium-disable-schema`` the
    declared types stand for the field schemas the messages leave out; an
    undeclared column's value is the JSON's (``_untyped``).
    """

    def __init__(self, config: SinkConfig | None = None):
        super().__init__(config)
        self._contexts = ReadingContexts(config)
        # (reading context, an envelope schema's text) -> its columns' types and converters
        self._fields: dict[tuple[ReadingContext, bytes | None], dict] = {}

    def decode(self, key: bytes | None, value: bytes | None) -> list[RowEvent | DDLEvent | WatermarkEvent]:
        if value is None:
            return []  # a tombstone: Debezium's after a delete, for log compaction, is no change
        # TiCDC writes the envelope's schema after its payload, and the same schema for every row of a table
        # shape: it is parsed once per shape, and each message's payload alone.
        value = self.decompressed(value.encode() if isinstance(value, str) else value)
        at = value.rfind(b',"schema":{')
        schema_text = value[at + len(',"schema":'):-1] if at >= 0 else None
        message = json.loads(value[:at] + b"}" if at >= 0 else value, parse_float=Decimal)
        payload, source = message["payload"], message["payload"]["source"]
        if "tableChanges" in payload:
            changes = payload["tableChanges"]
            return [DDLEvent(payload["databaseName"], source["table"], payload["ddl"],
                             changes[0]["type"] if changes else "", source.get("commit_ts"))]
        if payload["op"] == "m":
            return [WatermarkEvent(source["commit_ts"])]
        fields = self._fields_of(self._contexts.of(source["db"], source["table"]), schema_text)

        def value(name: str, v: Any) -> Any:
            return None if v is None else fields[name][1](v) if name in fields else _untyped(v)

        kind = _ROW_KINDS[payload["op"]]
        new, old = typed_row(payload.get("after"), value), typed_row(payload.get("before"), value)
        columns = old if kind == "DELETE" else new
        return [RowEvent(type=kind, database=source["db"], table=source["table"], commit_ts=source.get("commit_ts"),
                         columns=columns, old=old if kind == "UPDATE" else None,
                         primary_keys=list(json.loads(self.decompressed(key))["payload"]) if key else [],
                         column_types={name: t for name, (t, _) in fields.items() if name in (columns or {})},
                         start_ts=source.get("start_ts"))]

    @property
    def carries_watermarks(self) -> bool:
        return bool(self.options and self.options.enable_tidb_extension)

    def declare_types(self, database: str | None, table: str | None, types: dict[str, MySQLType]) -> None:
        self._contexts.declare(database, table, types)

    def _fields_of(self, context: ReadingContext,
                   schema_text: bytes | None) -> dict[str, tuple[MySQLType, Callable[[Any], Any]]]:
        fields = self._fields.get((context, schema_text))
        if fields is None:
            if len(self._fields) >= _KEPT_SCHEMAS:
                self._fields.clear()
            schema = json.loads(schema_text) if schema_text is not None else None
            fields = self._fields[(context, schema_text)] = context.columns(schema)
        return fields


DECIMAL = "org.apache.kafka.connect.data.Decimal"


@dataclass(frozen=True, eq=False)  # one per declaration: a key of the converters made by it
class ReadingContext:
    """What typing Debezium's values takes from the reader: the time zone TIMESTAMP values are shown in, and the
    declared types, which tell what a message without the TiDB extension or its schema does not
    (``declared_field``) and TIME's fraction digits."""

    zone: ZoneInfo
    declared: dict[str, MySQLType]

    @classmethod
    def of(cls, config: SinkConfig | None) -> "ReadingContext":
        if config is None:
            return cls(ZoneInfo("UTC"), {})
        return cls(ZoneInfo(config.time_zone), declared_types(config.column_types))

    def columns(self, schema: dict | None) -> dict[str, tuple[MySQLType, Callable[[Any], Any]]]:
        """Per column of a JSON envelope's schema (without one: per declared column), its type and how its value
        becomes the TiDB value."""
        if schema is None:
            return {name: self.column(name, None) for name in self.declared}
        rows = next(f for f in schema["fields"] if f["field"] in ("after", "before"))
        return {f["field"]: self.column(f["field"], f) for f in rows["fields"]}

    def column(self, name: str, field: dict | None,
               raw_bytes: bool = False) -> tuple[MySQLType, Callable[[Any], Any]]:
        """A column's type and how its value becomes the TiDB value (``field_converter``), by its field schema
        completed by its declared type; ``field`` None: by the declared type alone."""
        declared = self.declared.get(name)
        field = declared_field(field, declared)
        fsp = None if declared is None else declared.fsp
        return column_type(field), field_converter(field, self.zone, fsp, raw_bytes)


class ReadingContexts:
    """A decoder's reading contexts: by ``column-types`` for every table, and for the table a read reads by the
    types it declares over them (``TakesDeclaredTypes.declare_types``: its schema's ``mysql_type`` metadata and Spark types)."""

    def __init__(self, config: SinkConfig | None):
        self._everywhere = ReadingContext.of(config)
        self._tables: dict[tuple[str | None, str | None], ReadingContext] = {}

    def declare(self, database: str | None, table: str | None, types: dict[str, MySQLType]) -> None:
        self._tables[(database, table)] = ReadingContext(self._everywhere.zone, {**self._everywhere.declared, **types})

    def of(self, database: str, table: str) -> ReadingContext:
        """The context of a message of ``database.table``: its table's (a name a read left None matches any)."""
        return next((context for (d, t), context in self._tables.items()
                     if d in (None, database) and t in (None, table)), self._everywhere)


def declared_field(field: dict | None, declared: MySQLType | None) -> dict | None:
    """A column's field schema as the encoder writes it with the TiDB extension, where the message left out what
    the declared type tells: ``tidb_type`` (without it, a BIGINT UNSIGNED, a DECIMAL and a binary string look
    like a BIGINT, a DOUBLE and text), or the whole field (``debezium-disable-schema``)."""
    if declared is None or (field is not None and "tidb_type" in field):
        return field
    if field is None:
        schema_type, name, parameters = field_types.connect_type(declared)
        field = {"type": schema_type, **({"name": name} if name else {}),
                 **({"parameters": dict([parameters])} if parameters else {})}
    return {**field, "tidb_type": field_types.tidb_type(declared)}


def field_converter(field: dict, zone: ZoneInfo, time_fsp: int | None,
                    raw_bytes: bool = False) -> Callable[[Any], Any]:
    """How a column's value, as its Connect field schema types it, becomes the TiDB value: from JSON, where
    bytes are base64 text, or (``raw_bytes``) from Avro, where they are bytes and decimals Connect's Decimal."""
    name, schema_type, tidb_type = field.get("name"), field["type"], field.get("tidb_type", "")
    parameters = field.get("parameters", {})
    as_bytes = (lambda v: v) if raw_bytes else base64.b64decode
    if name == "io.debezium.time.Date":
        return lambda days: (_EPOCH + dt.timedelta(days=days)).date()
    if name == "io.debezium.time.Timestamp":
        return lambda ms: _EPOCH + dt.timedelta(milliseconds=ms)
    if name == "io.debezium.time.MicroTimestamp":
        return lambda us: _EPOCH + dt.timedelta(microseconds=us)
    if name == "io.debezium.time.ZonedTimestamp":
        return lambda text: dt.datetime.fromisoformat(text).astimezone(zone).replace(tzinfo=None)
    if name == "io.debezium.time.MicroTime":
        return lambda us: _time_text(us, time_fsp)
    if name == "io.debezium.data.Enum":
        members = allowed_members(parameters.get("allowed", ""))
        return lambda member: enum_index(members, member)
    if name == "io.debezium.data.EnumSet":
        members = allowed_members(parameters.get("allowed", ""), escaped=False)
        return lambda names: set_bitmask(members, names)
    if name == "io.debezium.data.Bits":
        return lambda data: int.from_bytes(as_bytes(data), "little")
    if name == DECIMAL:
        return Decimal
    if schema_type == "boolean":  # BIT(1)
        return int
    if tidb_type == "bigint unsigned":
        return int if schema_type == "string" else unsigned_64  # TiCDC wrote the uint64's bits as an int64
    if schema_type in ("float", "double"):
        return Decimal if tidb_type == "decimal" else float
    if tidb_type == "decimal":
        return Decimal  # avro-decimal-handling-mode=string
    if tidb_type in _BINARY_TIDB_TYPES:
        return as_bytes
    return lambda v: v


# A field's type by its Connect schema, where the TiDB extension's ``tidb_type`` does not say it.
_CONNECT_NAMES = {"io.debezium.time.Date": "date", "io.debezium.time.Timestamp": "datetime",
                  "io.debezium.time.MicroTimestamp": "datetime(6)", "io.debezium.time.ZonedTimestamp": "timestamp",
                  "io.debezium.time.MicroTime": "time", "io.debezium.time.Year": "year",
                  "io.debezium.data.Json": "json", "io.debezium.data.Enum": "enum", "io.debezium.data.EnumSet": "set",
                  "io.debezium.data.Bits": "bit", DECIMAL: "decimal"}
_CONNECT_TYPES = {"int8": "tinyint", "int16": "smallint", "int32": "int", "int64": "bigint", "float": "float",
                  "double": "double", "boolean": "bit(1)", "string": "text", "bytes": "blob"}


def column_type(field: dict) -> MySQLType:
    """A column's type from its field schema: ``tidb_type`` where the extension gives it, else what the Connect
    type and name tell; ENUM and SET members and BIT's width from the parameters."""
    name = field.get("name")
    t = carried_type(field.get("tidb_type") or _CONNECT_NAMES.get(name) or _CONNECT_TYPES.get(field["type"], "text"))
    parameters = field.get("parameters", {})
    if name == "io.debezium.data.Enum":
        return dataclasses.replace(t, elements=tuple(allowed_members(parameters.get("allowed", ""))))
    if name == "io.debezium.data.EnumSet":
        return dataclasses.replace(t, elements=tuple(allowed_members(parameters.get("allowed", ""), escaped=False)))
    if name == "io.debezium.data.Bits":
        return dataclasses.replace(t, length=int(parameters.get("length", 1)))
    if name == DECIMAL:  # Connect's Decimal (debezium-avro) carries them
        return dataclasses.replace(t, length=int(parameters["precision"]), decimals=int(parameters["scale"]))
    if t.kind == "decimal":  # a double or text on the wire: no precision carried
        return dataclasses.replace(t, length=None, decimals=None)
    return t


def _untyped(value: Any) -> Any:
    """A value no schema or declared type types: the JSON's, a number with a fraction a double (the payload's are
    parsed as Decimals, for the DECIMAL columns of a schema)."""
    return float(value) if isinstance(value, Decimal) else value


def _time_text(micros: int, fsp: int | None) -> str:
    """TiDB's TIME text; without a known precision, the fraction's significant digits."""
    if fsp is None:
        fraction = f"{abs(micros) % 1_000_000:06d}".rstrip("0")
        fsp = len(fraction)
    return duration_text(pa.array([micros], pa.int64()), fsp)[0].as_py()
