"""The Avro schemas of TiCDC's ``debezium-avro``: its Debezium Connect schemas as Avro records (TiCDC
``pkg/sink/codec/debezium/avro.go`` ``toAvroSchema`` and ``codec.go``'s Avro branch, at pingcap/ticdc@b813e76f).

Names: ``N = <cluster>.<database>`` and ``T = <table>``, each part sanitised
(``shared/names.sanitize_name``); the key is the record ``N.TKey`` of the
handle-key columns, the value ``N.TEnvelope`` (``connect.version`` 1) of
``before`` and ``after`` (the row record ``N.T``, the second time by its name),
``source`` (``N.Source``), ``op`` and ``ts_ms``.  Every column is a ``["null",
T]`` union defaulting to null, with ``connect.field`` (its own name) and, with
``enable-tidb-extension``, ``tidb_type``; named Connect types carry
``connect.name``, ``connect.version`` and ``connect.parameters``.  The text is
Go's ``json.Marshal`` of maps: keys sorted, compact, ``<``, ``>`` and ``&``
escaped.
"""

from __future__ import annotations

import json

from ...config.sink import SinkConfig
from ...table.mysql_types import MySQLType
from ...table.schema import Column
from ..shared.names import sanitize_name
from .field_types import connect_type, tidb_type

DECIMAL = "org.apache.kafka.connect.data.Decimal"
_AVRO_PRIMITIVES = {"int8": "int", "int16": "int", "int32": "int", "int64": "long", "float": "float",
                    "double": "double", "boolean": "boolean", "string": "string", "bytes": "bytes"}
_MYSQL_DEFAULT_DECIMAL = (10, 0)  # DECIMAL without a precision (mysql.GetDefaultFieldLengthAndDecimal)
# The source record's fields: (name, Avro type, optional), codec.go's Avro branch (no sequence, no start_ts).
SOURCE_FIELDS = (("version", "string", False), ("connector", "string", False), ("name", "string", False),
                 ("ts_ms", "long", False), ("snapshot", "string", True), ("db", "string", False),
                 ("table", "string", False), ("server_id", "long", False), ("gtid", "string", True),
                 ("file", "string", False), ("pos", "long", False), ("row", "int", False),
                 ("thread", "long", True), ("query", "string", True), ("commit_ts", "long", False),
                 ("cluster_id", "string", False))


def namespace(cluster: str, database: str) -> str:
    return f"{sanitize_name(cluster)}.{sanitize_name(database)}"


def decimal_precision(t: MySQLType) -> tuple[int, int]:
    default_precision, default_scale = _MYSQL_DEFAULT_DECIMAL
    return (t.length if t.length is not None else default_precision,
            t.decimals if t.decimals is not None else default_scale)


def column_type(t: MySQLType, config: SinkConfig) -> str | dict:
    """The Avro type of a column's values (the branch of its union that is not null)."""
    options = config.protocol_options
    if t.kind == "bigint" and t.unsigned and options.avro_bigint_unsigned_handling_mode == "string":
        return "string"
    if t.kind == "decimal":
        if options.avro_decimal_handling_mode == "string":
            return "string"
        precision, scale = decimal_precision(t)
        return {"connect.name": DECIMAL, "connect.parameters": {"precision": str(precision), "scale": str(scale)},
                "logicalType": "decimal", "precision": precision, "scale": scale, "type": "bytes"}
    if t.is_string and t.binary:
        return "bytes"
    kind, name, parameters = connect_type(t)
    avro: dict = {"type": _AVRO_PRIMITIVES[kind]}
    if kind in ("int8", "int16"):
        avro["connect.type"] = kind
    if name:
        avro.update({"connect.name": name, "connect.version": 1})
    if parameters:
        avro["connect.parameters"] = dict([parameters])
    return avro["type"] if len(avro) == 1 else avro


def column_field(column: Column, config: SinkConfig) -> dict:
    field = {"connect.field": column.name, "default": None, "name": sanitize_name(column.name),
             "type": ["null", column_type(column.type, config)]}
    if config.protocol_options.enable_tidb_extension:
        field["tidb_type"] = tidb_type(column.type)
    return field


def key_schema(columns: list[Column], cluster: str, database: str, table: str, config: SinkConfig) -> dict:
    space, name = namespace(cluster, database), sanitize_name(table)
    return _record(space, f"{name}Key", [column_field(c, config) for c in columns])


def envelope_schema(columns: list[Column], cluster: str, database: str, table: str, config: SinkConfig) -> dict:
    space, name = namespace(cluster, database), sanitize_name(table)
    row = _record(space, name, [column_field(c, config) for c in columns])
    source = _record(space, "Source", [_plain_field(*field) for field in SOURCE_FIELDS])
    return _record(space, f"{name}Envelope", [
        {"connect.field": "before", "default": None, "name": "before", "type": ["null", row]},
        {"connect.field": "after", "default": None, "name": "after", "type": ["null", f"{space}.{name}"]},
        {"connect.field": "source", "name": "source", "type": source},
        _plain_field("op", "string", False), _plain_field("ts_ms", "long", False)], version=1)


def _record(space: str, name: str, fields: list[dict], version: int = 0) -> dict:
    record = {"connect.name": f"{space}.{name}", "fields": fields, "name": name, "namespace": space,
              "type": "record"}
    if version:
        record["connect.version"] = version
    return record


def _plain_field(name: str, avro_type: str, optional: bool) -> dict:
    if optional:
        return {"connect.field": name, "default": None, "name": name, "type": ["null", avro_type]}
    return {"connect.field": name, "name": name, "type": avro_type}


def source_connect(space: str) -> dict:
    """The Debezium Connect schema of the source of a DDL or watermark event (codec.go's Avro branch): its
    record named ``<space>.Source``."""
    connect_types = {"string": "string", "long": "int64", "int": "int32"}
    return {"type": "struct", "optional": False, "name": f"{space}.Source", "field": "source",
            "fields": [{"type": connect_types[kind], "optional": optional, "field": name}
                       for name, kind, optional in SOURCE_FIELDS]}


def connect_to_avro(connect: dict, defined: set[str] | None = None) -> dict | str:
    """A Debezium Connect schema as TiCDC's ``toAvroSchema`` makes it an Avro one: a struct becomes a record
    (named once; then by its name), an array an array, a primitive its Avro type; ``optional`` fields a
    ``["null", T]`` union defaulting to null; ``connect.*`` properties keep the Connect metadata."""
    defined = set() if defined is None else defined
    kind, name = connect["type"], connect.get("name")
    if kind == "struct":
        if name in defined:
            return name
        defined.add(name)
        *space, short = name.split(".")
        avro: dict = {"type": "record", "name": sanitize_name(short), "fields": [
            _connect_field(field, defined) for field in connect["fields"]]}
        if space:
            avro["namespace"] = ".".join(sanitize_name(part) for part in space)
    elif kind == "array":
        avro = {"type": "array", "items": connect_to_avro(connect["items"], defined)}
    else:
        avro = {"type": _AVRO_PRIMITIVES[kind]}
        if kind in ("int8", "int16"):
            avro["connect.type"] = kind
    if name:
        avro["connect.name"] = name
    if connect.get("version"):
        avro["connect.version"] = connect["version"]
    if connect.get("parameters"):
        avro["connect.parameters"] = connect["parameters"]
    return avro["type"] if len(avro) == 1 else avro


def _connect_field(field: dict, defined: set[str]) -> dict:
    avro_type = connect_to_avro(field, defined)
    avro = {"connect.field": field["field"], "name": sanitize_name(field["field"]), "type": avro_type}
    if field.get("optional"):
        avro.update(type=["null", avro_type], default=None)
    if "tidb_type" in field:
        avro["tidb_type"] = field["tidb_type"]
    return avro


def schema_text(schema: dict) -> str:
    """As Go's ``json.Marshal`` writes the schema's maps: sorted keys, no spaces, HTML characters escaped."""
    text = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") \
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
