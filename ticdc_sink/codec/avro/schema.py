"""The Avro schemas TiCDC registers for a table (TiCDC ``pkg/sink/codec/avro/arvo.go`` at pingcap/ticdc@b813e76f).

A schema is a record named after the table in the namespace
``<avro-namespace>.<database>``, one field per column (the value's followed by
what its options add: ``value_record``); TiCDC writes it with Go's
``json.Marshal``, so the text registered here follows its key order (``type``
before ``connect.parameters`` in a column's type, field keys and parameters in
alphabetical order) and its escapes (``<``, ``>``, ``&``).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np

from ...config.sink import SinkConfig
from ...table.schema import Column
from ..shared.names import escape_member, sanitize_name

_GO_HTML_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                                  "\u2029": "\\u2029"})

_TIDB_TYPES = {"tinyint": "INT", "smallint": "INT", "mediumint": "INT", "int": "INT", "bigint": "BIGINT",
               "float": "FLOAT", "double": "DOUBLE", "decimal": "DECIMAL", "bit": "BIT", "enum": "ENUM",
               "set": "SET", "json": "JSON", "date": "DATE", "datetime": "DATETIME", "timestamp": "TIMESTAMP",
               "time": "TIME", "year": "YEAR"}
_AVRO_TYPES = {"tinyint": "int", "smallint": "int", "mediumint": "int", "int": "int", "bigint": "long",
               "float": "float", "double": "double", "decimal": "bytes", "bit": "bytes", "year": "int"}
OPERATION_FIELD = {"default": "", "name": "_tidb_op", "type": "string"}
EXTENSION_FIELDS = [
    OPERATION_FIELD,
    {"default": 0, "name": "_tidb_commit_ts", "type": "long"},
    {"default": 0, "name": "_tidb_commit_physical_time", "type": "long"},
]
# With integrity-check-level "correctness", after the extension's (``schemaWithExtension``).
CHECKSUM_FIELDS = [
    {"default": "", "name": "_tidb_row_level_checksum", "type": "string"},
    {"default": False, "name": "_tidb_corrupted", "type": "boolean"},
    {"default": 0, "name": "_tidb_checksum_version", "type": "int"},
]
BEFORE_FIELD = "_ticdc_before"


def namespace(config: SinkConfig, database: str) -> str:
    base = sanitize_name(config.protocol_options.avro_namespace)
    return f"{base}.{sanitize_name(database)}" if database else base


def column_type(column: Column, config: SinkConfig) -> dict[str, Any]:
    """The Avro type of a column's values, with TiCDC's ``connect.parameters``."""
    t, parameters = column.type, {}
    if t.is_string:
        avro, tidb = ("bytes", "BLOB") if t.binary else ("string", "TEXT")
    else:
        avro, tidb = _AVRO_TYPES.get(t.kind, "string"), _TIDB_TYPES[t.kind]
    if t.unsigned and t.is_integer:
        tidb += " UNSIGNED"
        if t.kind == "int":
            avro = "long"
        elif t.kind == "bigint" and config.protocol_options.avro_bigint_unsigned_handling_mode == "string":
            avro = "string"
    if t.kind == "bit":
        parameters["length"] = str(t.length)
    if t.kind in ("enum", "set"):
        parameters["allowed"] = ",".join(escape_member(e) for e in t.elements)
    parameters["tidb_type"] = tidb
    result: dict[str, Any] = {"type": avro, "connect.parameters": dict(sorted(parameters.items()))}
    if t.kind == "decimal":
        if config.protocol_options.avro_decimal_handling_mode == "string":
            result["type"] = "string"
        else:
            result.update(logicalType="decimal", precision=t.length, scale=t.decimals)
    return result


def column_field(column: Column, config: SinkConfig) -> dict[str, Any]:
    """A record field: ``["null", T]`` with a null default for a nullable column; a column with a DEFAULT
    has it as the field's default, a nullable one as ``[T, "null"]`` (Avro takes a union's default from its
    first branch).  TiCDC gives a logical type (a precise DECIMAL) no default (``columns2AvroSchema``)."""
    name = sanitize_name(column.name)
    avro_type = column_type(column, config)
    default = _field_default(column, avro_type, config)
    if column.nullable:
        if default is None:
            return {"default": None, "name": name, "type": ["null", avro_type]}
        return {"default": default, "name": name, "type": [avro_type, "null"]}
    if default is None:
        return {"name": name, "type": avro_type}
    return {"default": default, "name": name, "type": avro_type}


def null_comes_last(column: Column, config: SinkConfig) -> bool:
    """Whether the column's field is the union ``[T, "null"]``: nullable, with a default."""
    return column.nullable and _field_default(column, column_type(column, config), config) is not None


def _field_default(column: Column, avro_type: dict[str, Any], config: SinkConfig) -> Any:
    return None if "logicalType" in avro_type else _default_value(column, config)


def _default_value(column: Column, config: SinkConfig) -> Any:
    """The column's stored DEFAULT as an Avro default of its field's type (TiCDC ``getDefaultValue``): a
    number for the integer, float and YEAR types, base64 text for bytes (Go's JSON of ``[]byte``), else text."""
    text, t = column.default, column.type
    if text is None:
        return None
    if t.kind == "bit":
        return base64.b64encode(text.encode("latin-1")).decode()
    if t.is_integer or t.kind == "year":
        if t.kind == "bigint" and t.unsigned:
            if config.protocol_options.avro_bigint_unsigned_handling_mode == "string":
                return text
            return int(text) - 2**64 if int(text) >= 2**63 else int(text)
        return int(text)
    if t.kind in ("float", "double"):
        return float(np.float32(text)) if t.kind == "float" else float(text)
    if t.is_string and t.binary:
        return base64.b64encode(text.encode()).decode()
    return text


def record(table: str, database: str, fields: list[dict[str, Any]], config: SinkConfig) -> dict[str, Any]:
    return {"type": "record", "name": sanitize_name(table), "namespace": namespace(config, database),
            "fields": fields}


def value_record(table: str, database: str, columns: list[dict[str, Any]], config: SinkConfig) -> dict[str, Any]:
    """The value's record: the ``columns``' fields, then what the options add after them (``value2AvroSchema``).

    With ``avro-include-before-value`` the row before the change, a nullable
    record of the same fields named ``<table>_before``, and ``_tidb_op``
    (which the TiDB extension carries anyway); then the extension's fields.
    """
    options, fields = config.protocol_options, list(columns)
    if options.avro_include_before_value:
        before = {**record(table, database, columns, config), "name": sanitize_name(table) + "_before"}
        fields.append({"default": None, "name": BEFORE_FIELD, "type": ["null", before]})
        if not options.enable_tidb_extension:
            fields.append(OPERATION_FIELD)
    if options.enable_tidb_extension:
        fields += EXTENSION_FIELDS
        if config.row_checksums:
            fields += CHECKSUM_FIELDS
    return record(table, database, fields, config)


def schema_text(schema: dict[str, Any] | list | str) -> str:
    """The compact JSON TiCDC registers, escaped as Go's ``json.Marshal`` does."""
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False).translate(_GO_HTML_ESCAPES)
