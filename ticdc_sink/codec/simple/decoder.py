"""Simple messages back into events, in either encoding, with the document's consumer rules (table schemas from
DDL and BOOTSTRAP messages; rows wait for theirs)."""

from __future__ import annotations

import base64
import dataclasses
import functools
from typing import Any

from ...table.mysql_types import INTEGER_KINDS, MySQLType
from ...table.row_checksum import utc_text, verify
from ...table.type_grammar import carried_type
from ...table.value_text import go_float_text
from ..base import DDLEvent, Decoder, LearnsTableSchemas, MessageColumns, RowEvent, WatermarkEvent
from ..shared.decoding import text_value, typed_row, unsigned_64
from .avro_wire import SimpleAvro
from .json_columns import decode_columns
from .json_wire import SimpleJSON

SchemaKey = tuple[str, str, int]  # (database, table, version)


class SimpleDecoder(LearnsTableSchemas, Decoder):
    """Follows the document's consumer rules: table schemas come from DDL and BOOTSTRAP messages and are kept
    by (database, table, version); a row whose schema has not arrived yet waits, and comes out, in arrival
    order, after the DDL or BOOTSTRAP that brings it (a consumer that joined mid-stream).

    Rows are typed by their column's ``dataType``: integers, BIT, YEAR, ENUM (index) and SET (bitmask) int,
    FLOAT/DOUBLE float, DECIMAL Decimal, DATE date, DATETIME and TIMESTAMP naive datetime (TIMESTAMP in its
    ``location``), binary strings bytes; TIME, JSON and text str.  A BOOTSTRAP is a DDLEvent of type
    ``BOOTSTRAP`` with no query, as TiCDC's decoder returns it.  Each message is read in the encoding it is
    in (an Avro message starts with the byte 0x16, a JSON one with ``{``).
    """

    def __init__(self, config=None):
        super().__init__(config)
        self._schemas: dict[SchemaKey, dict] = {}
        self._waiting: list[dict] = []
        self._known_columns: dict[tuple[str, str], dict] = {}  # (database, table) -> a schema of its columns

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @property
    def carries_watermarks(self) -> bool:
        return True

    @property
    def table_schemas(self) -> tuple[dict, ...]:
        return tuple(self._schemas.values())

    def learn_table_schemas(self, schemas: tuple[dict, ...]) -> None:
        for schema in schemas:
            self._schemas.setdefault((schema["schema"], schema["table"], schema["version"]), schema)

    def decode(self, key: bytes | None, value: bytes) -> list:
        value = self.decompressed(value)
        doc = (SimpleAvro.read if value[:1] == b"\x16" else SimpleJSON.read)(value)
        if doc.get("claimCheckLocation"):  # the row's whole message is in the claim-check storage
            return self.decode(*self.claimed(doc["claimCheckLocation"]))
        if doc["type"] == "WATERMARK":
            return [WatermarkEvent(doc["commitTs"])]
        if doc["type"] in ("INSERT", "UPDATE", "DELETE"):
            event = self._row(doc)
            if event is None:
                self._waiting.append(doc)
                return []
            return [event]
        for name in ("tableSchema", "preTableSchema"):
            if name in doc:
                self.learn_table_schemas((doc[name],))
        table = doc.get("tableSchema") or {}
        ddl = DDLEvent(table.get("schema", ""), table.get("table", ""), doc.get("sql", ""), doc["type"],
                       doc.get("commitTs", 0))  # Avro's BOOTSTRAP has none; JSON's says 0
        waiting, self._waiting = self._waiting, []
        released = [e for e in map(self._row, waiting) if e is not None]
        self._waiting = [doc for doc in waiting if self._schema_of(doc) is None]
        return [ddl, *released]

    def decode_columns(self, keys: list, values: list[bytes], types: dict) -> MessageColumns | None:
        values = self.decompressed_all(values)
        if any(b'"checksum":' in value for value in values):  # rows to verify one by one (_row)
            return None
        return decode_columns(values, types)

    def type_unknown_rows_by(self, database: str, table: str, types: dict[str, MySQLType]) -> None:
        columns = [{"name": name, "dataType": {"mysqlType": t.base_name, "unsigned": t.unsigned,
                                                "charset": "binary" if t.has_binary_charset else "utf8mb4"}}
                   for name, t in types.items()]
        self._known_columns[(database, table)] = {"columns": columns, "indexes": []}

    def _schema_of(self, doc: dict) -> dict | None:
        exact = self._schemas.get((doc["database"], doc["table"], doc.get("schemaVersion", 0)))
        return exact or self._known_columns.get((doc["database"], doc["table"]))

    def _row(self, doc: dict) -> RowEvent | None:
        schema = self._schema_of(doc)
        if schema is None:
            return None
        types = {c["name"]: c["dataType"] for c in schema["columns"]}

        def typed(row: dict | None) -> dict | None:
            known = row and {name: value for name, value in row.items() if name in types}
            return typed_row(known, lambda name, value: _decode_value(value, types[name]))

        if doc.get("checksum"):
            _verify_checksums(doc, schema)
        is_delete = doc["type"] == "DELETE"
        primary = next((i["columns"] for i in schema["indexes"] if i["primary"]), [])
        return RowEvent(type=doc["type"], database=doc["database"], table=doc["table"], commit_ts=doc["commitTs"],
                        columns=typed(doc["old"] if is_delete else doc["data"]),
                        old=None if is_delete else typed(doc.get("old")), primary_keys=list(primary),
                        column_types={name: _column_type(t) for name, t in types.items()},
                        handle_key_only=bool(doc.get("handleKeyOnly")))


def _verify_checksums(doc: dict, schema: dict) -> None:
    """A row's ``checksum``: ``current`` of ``data``, ``previous`` of ``old`` (0: none), over the table's columns
    in its order (``table/row_checksum.py``)."""
    checksum = doc["checksum"]
    where = f"the {doc['type']} of {doc['database']}.{doc['table']} at commit ts {doc.get('commitTs')}"
    for expected, row, which in ((checksum.get("current", 0), doc.get("data"), "row"),
                                 (checksum.get("previous", 0), doc.get("old"), "old row")):
        if expected and row is not None:
            values = ((_checksum_value(row.get(c["name"]), c["dataType"]), _column_type(c["dataType"]).kind)
                      for c in schema["columns"])
            verify(int(expected), values, f"{where}, its {which}")


def _checksum_value(value: Any, data_type: dict) -> Any:
    """A Simple value as ``row_checksum.value_bytes`` takes it: a number for the numeric kinds, a binary string's
    bytes, a TIMESTAMP's text in UTC, else the text."""
    if value is None or isinstance(value, (bytes, int, float)):
        return value
    if isinstance(value, dict):  # a TIMESTAMP, or Avro's UnsignedBigint
        return utc_text(value["value"], value["location"]) if "location" in value else value["value"]
    mysql_type = data_type["mysqlType"]
    if data_type.get("charset") == "binary" and ("binary" in mysql_type or "blob" in mysql_type):
        return base64.b64decode(value)
    kind = _column_type(data_type).kind
    if kind in INTEGER_KINDS or kind in ("year", "bit", "enum", "set"):
        return int(value)
    if kind in ("float", "double"):
        return float(value)
    return value


@functools.lru_cache(maxsize=4096)
def _carried(mysql_type: str, unsigned: bool, length: int | None, decimals: int | None,
             elements: tuple[str, ...]) -> MySQLType:
    t = carried_type(mysql_type)
    numeric = t.kind in INTEGER_KINDS or t.kind in ("float", "double", "decimal")
    return dataclasses.replace(t, unsigned=t.unsigned or (unsigned and numeric), length=length, decimals=decimals,
                               elements=elements)


def _column_type(data_type: dict) -> MySQLType:
    """A column's type from its ``dataType``: the name, with the width, scale, members and sign it states."""
    return _carried(data_type["mysqlType"], bool(data_type.get("unsigned")), data_type.get("length"),
                    data_type.get("decimal"), tuple(data_type.get("elements") or ()))


def _decode_value(value: Any, data_type: dict) -> Any:
    """A value as JSON (a string, or a TIMESTAMP object) or Avro (a typed union branch) gives it."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, int):  # Avro's long: an unsigned type's (BIT's too) 64 bits as a signed number
        return unsigned_64(value) if value < 0 and data_type.get("unsigned") else value
    mysql_type = data_type["mysqlType"]
    if isinstance(value, dict):  # a TIMESTAMP, or Avro's UnsignedBigint (the 64 bits as a signed long)
        return text_value(value["value"], mysql_type) if "location" in value else unsigned_64(value["value"])
    if isinstance(value, float):  # Avro's float and double: as the JSON text of the same value reads
        return float(go_float_text(value, 32 if mysql_type == "float" else 64))
    if data_type["charset"] == "binary" and ("binary" in mysql_type or "blob" in mysql_type):
        return base64.b64decode(value)
    return text_value(value, mysql_type)
