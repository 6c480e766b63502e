"""What a Debezium schema-change event says of a DDL and of its table (TiCDC ``pkg/sink/codec/debezium/codec.go``
``EncodeDDLEvent`` at pingcap/ticdc@b813e76f).

Its change type is CREATE, ALTER or DROP by the statement's action (others send
no event).  TiCDC describes the table after the change in ``tableChanges``: its
charset, its primary key and each column with the Debezium MySQL connector's
metadata (``jdbcType``, ``typeName``, ``typeExpression``, ``length``,
``scale``, ``position``...).  Lengths are TiDB's stored widths, null where TiDB
keeps its default width.  TiCDC re-reads DATETIME, TIMESTAMP and TIME
precisions and YEAR widths from the statement for the columns the statement
defines, so those lengths are null there when the statement gives none, and
their DEFAULTs too (``_default_expression``).  The sink knows the table from
its options: the charset is TiDB's default (utf8mb4), and it has no column
comments or auto-increment flags.
The descriptions and the event's Connect schemas are structures (dicts in
TiCDC's member order), which ``events.py`` puts in the event both encoders write.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np

from ...ddl.statements import column_definitions, defined_columns
from ...table.column_default import CURRENT_TIMESTAMP
from ...table.mysql_types import INTEGER_KINDS, TABLE_CHARSET, default_width
from ...table.type_grammar import DefaultLiteral, definition_default
from ...table.value_text import go_float_text
from ...table.schema import Column, TableSchema
from ..shared import java_sql_types as java
from .field_types import NO_UNSIGNED_SUFFIX

# Debezium's tableChanges type per action (TiCDC debezium EncodeDDLEvent); other actions send no event.
_DEBEZIUM_TYPES = {
    **dict.fromkeys(["create schema", "create table", "create view"], "CREATE"),
    **dict.fromkeys(
        ["add column", "modify column", "drop column", "multi-schema change", "add table partition",
         "remove partitioning", "reorganize partition", "exchange table partition", "alter table partitioning",
         "truncate table partition", "drop table partition", "rebase auto id", "set default value",
         "modify table comment", "modify table charset and collate", "modify schema charset and collate",
         "add index", "alter index visibility", "rename index", "rename table", "rename tables",
         "add primary key", "drop primary key"],
        "ALTER",
    ),
    **dict.fromkeys(["drop schema", "drop table", "drop index", "drop view", "truncate table"], "DROP"),
}
DEBEZIUM_CHANGE_TYPES = ("CREATE", "ALTER", "DROP")


def debezium_change_type(action: str) -> str | None:
    return _DEBEZIUM_TYPES.get(action)


_JDBC_BY_KIND = {
    "tinyint": java.SMALLINT, "smallint": java.SMALLINT, "mediumint": java.INTEGER, "int": java.INTEGER,
    "year": java.INTEGER, "bigint": java.BIGINT, "float": java.FLOAT, "double": java.DOUBLE,
    "decimal": java.DECIMAL, "timestamp": java.TIMESTAMP_WITH_TIMEZONE, "datetime": java.TIMESTAMP,
    "date": java.DATE, "time": java.TIME, "enum": java.CHAR, "set": java.CHAR, "bit": java.BIT,
    "json": java.OTHER, "char": java.CHAR, "varchar": java.VARCHAR,
    **dict.fromkeys(["tinytext", "text", "mediumtext", "longtext"], java.VARCHAR),
}
_BINARY_JDBC = {"char": java.BINARY, "varchar": java.VARBINARY,
                **dict.fromkeys(["tinytext", "text", "mediumtext", "longtext"], java.BLOB)}
_FRACTIONAL = {"datetime", "timestamp", "time"}
# TiDB's default widths that the column model does not apply (it keeps no width for these).
_OTHER_DEFAULT_WIDTHS = {"float": 12, "double": 22, "varchar": 5}
# Types whose length TiCDC gives only when it is not TiDB's default width.
_WIDTH_UNLESS_DEFAULT = {"bit", "char", "varchar", "bigint", "float", "double"}


def _default_width(kind: str) -> int | None:
    return _OTHER_DEFAULT_WIDTHS.get(kind) or default_width(kind)


def _member(field: str, optional: bool, schema_type: str, /, **rest) -> dict:
    """A field of the DDL schemas, in the order TiCDC writes them there: field, optional, type."""
    return {"field": field, "optional": optional, "type": schema_type, **rest}


def _items(name: str, fields: list[dict]) -> dict:
    return {"name": name, "optional": False, "type": "struct", "version": 1, "fields": fields}


_STRINGS = {"type": "string", "optional": False}
_COLUMN_FIELDS = [_member(*field) for field in [
    ("name", False, "string"), ("jdbcType", False, "int32"), ("nativeType", True, "int32"),
    ("typeName", False, "string"), ("typeExpression", True, "string"), ("charsetName", True, "string"),
    ("length", True, "int32"), ("scale", True, "int32"), ("position", False, "int32"), ("optional", True, "boolean"),
    ("autoIncremented", True, "boolean"), ("generated", True, "boolean"), ("comment", True, "string"),
    ("defaultValueExpression", True, "string")]] + [_member("enumValues", True, "array", items=_STRINGS)]
_TABLE_FIELDS = [_member("defaultCharsetName", True, "string"),
                 _member("primaryKeyColumnNames", True, "array", items=_STRINGS),
                 _member("columns", False, "array",
                         items=_items("io.debezium.connector.schema.Column", _COLUMN_FIELDS)),
                 _member("comment", True, "string")]
_CHANGE_FIELDS = [_member("type", False, "string"), _member("id", False, "string"),
                  _member("table", True, "struct", name="io.debezium.connector.schema.Table", version=1,
                          fields=_TABLE_FIELDS)]
# The SchemaChangeValue fields after ``source``.
_VALUE_FIELDS = [_member("ts_ms", False, "int64"), _member("databaseName", True, "string"),
                 _member("schemaName", True, "string"), _member("ddl", True, "string"),
                 _member("tableChanges", False, "array",
                         items=_items("io.debezium.connector.schema.Change", _CHANGE_FIELDS))]
KEY_SCHEMA = {"type": "struct", "name": "io.debezium.connector.mysql.SchemaChangeKey", "optional": False,
              "version": 1, "fields": [_member("databaseName", False, "string")]}


def value_schema(source: dict) -> dict:
    """The SchemaChangeValue schema with the encoder's ``source`` schema (Debezium's, or Avro's named after the
    database)."""
    return {"optional": False, "type": "struct", "version": 1,
            "name": "io.debezium.connector.mysql.SchemaChangeValue", "fields": [source, *_VALUE_FIELDS]}


def describe_table(table: TableSchema, statement: str) -> dict:
    """``tableChanges[].table``: the table after ``statement``, which may define some of its columns."""
    defined, definitions = defined_columns(statement), column_definitions(statement)
    # TiDB's primary key, in the key's order: a table without one names its first NOT NULL unique key.
    return {"defaultCharsetName": TABLE_CHARSET, "primaryKeyColumnNames": list(table.tidb_primary_key),
            "columns": [describe_column(c, position, defined.get(c.name.lower()), definitions.get(c.name.lower()))
                        for position, c in enumerate(table.columns, start=1)],
            "comment": None}


def describe_column(column: Column, position: int, definition: tuple[str, int | None] | None = None,
                    written: str | None = None) -> dict:
    """One column's entry; ``definition`` is (type word, width or precision) and ``written`` its definition's
    text when the statement defines it."""
    t = column.type
    name = t.base_name.upper()
    suffix = ""
    if t.kind not in NO_UNSIGNED_SUFFIX:
        suffix = " UNSIGNED ZEROFILL" if t.zerofill else " UNSIGNED" if t.unsigned else ""
    expression = name
    if t.kind == "double" and t.decimals:
        expression += f"({t.length or _default_width('double')},{t.decimals})"
    return {"name": column.name, "jdbcType": _jdbc_type(column), "nativeType": None, "comment": None,
            "defaultValueExpression": _default_expression(column, written),
            "enumValues": [f"'{e}'" for e in t.elements] if t.kind in ("enum", "set") else None,
            "typeName": name + suffix, "typeExpression": expression + suffix,
            "charsetName": None if t.has_binary_charset else TABLE_CHARSET,
            "length": _length(column, definition), "scale": _scale(column), "position": position,
            "optional": column.nullable, "autoIncremented": False, "generated": False}


# TiCDC re-reads these types' DEFAULTs from the statement (helper.go parseColumns); the others are TiDB's text.
_REREAD_DEFAULT = {"datetime", "time", "timestamp", "year"}
_EPOCH_TEXT = "1970-01-01 00:00:00"  # TiCDC's text for CURRENT_TIMESTAMP (Debezium's)


def _default_expression(column: Column, written: str | None) -> str | None:
    """``defaultValueExpression`` (TiCDC ``codec.go`` ``EncodeDDLEvent``): the DEFAULT as TiDB stores it, a BIT's
    as its bits, CURRENT_TIMESTAMP as the epoch's text; a DATETIME, TIME, TIMESTAMP or YEAR the statement
    defines with a literal DEFAULT has that literal as TiDB's parser reads it."""
    text, t = column.default, column.type
    literal = definition_default(written) if written is not None and t.kind in _REREAD_DEFAULT else None
    if literal is not None and not (literal.kind == "number" and literal.text[0] in "+-"):
        text = _as_parsed(literal)
    elif t.kind == "bit" and text is not None:
        # The bits of its bytes, the first byte's to the width's remainder (helper.go parseBit).
        return "".join(format(ord(byte), f"0{t.length % 8 if i == 0 else 8}b") for i, byte in enumerate(text))
    if text is None:
        return None
    return _EPOCH_TEXT if text.upper() == CURRENT_TIMESTAMP else text


def _as_parsed(literal: DefaultLiteral) -> str | None:
    """Go's ``%v`` of the value TiDB's parser makes of a literal: an integer's digits, a decimal's, a float (one
    with an exponent) as ``%g``, a string's value, bits as 0x hex, CURRENT_TIMESTAMP as that word.  A signed
    number is an expression to it, which TiCDC does not read."""
    if literal.kind == "null":
        return None
    if literal.kind == "now":
        return CURRENT_TIMESTAMP
    if literal.kind == "bits":
        return "0x" + literal.value.hex() if literal.value else ""
    if literal.kind != "number":
        return literal.value
    if literal.value.isdigit():
        return str(int(literal.value))
    if "e" not in literal.value.lower():
        return format(Decimal(literal.value), "f")
    mantissa, exponent = np.format_float_scientific(float(literal.value), unique=True, trim="-").split("e")
    if -4 <= int(exponent) < 6:
        return go_float_text(float(literal.value), 64)
    return f"{mantissa}e{exponent[0]}{abs(int(exponent)):02d}"


def _jdbc_type(column: Column) -> int:
    t = column.type
    return _BINARY_JDBC[t.kind] if t.binary and t.kind in _BINARY_JDBC else _JDBC_BY_KIND[t.kind]


def _length(column: Column, definition: tuple[str, int | None] | None) -> int | None:
    """TiCDC's ``getLen``: the width TiDB stores, or None where TiCDC writes null."""
    t = column.type
    if definition is not None and (t.kind in _FRACTIONAL or t.kind == "year"):
        return definition[1]  # re-read from the statement: None when it gives no (n)
    if t.kind in _FRACTIONAL:
        return t.fsp
    if t.kind in ("year", "decimal"):
        return t.length
    if t.kind == "set":
        return 2 * len(t.elements) - 1
    if t.kind == "enum":
        return 1
    if t.kind in INTEGER_KINDS and t.kind != "bigint":
        default = default_width(t.kind) - (1 if t.unsigned else 0) + (1 if t.kind == "tinyint" and t.zerofill else 0)
        return t.length if t.length != default else None
    if t.kind in _WIDTH_UNLESS_DEFAULT:
        return t.length if t.length is not None and t.length != _default_width(t.kind) else None
    return None


def _scale(column: Column) -> int | None:
    t = column.type
    return t.decimals if t.kind in ("decimal", "float", "double") else None
