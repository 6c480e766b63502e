"""Canal-JSON, as TiCDC writes it (spec: ticdc-canal-json-protocol.md; reference section 3).

A DML message is one row, with TiCDC's field order: ``id, database, table,
pkNames, isDdl, type, es, ts, sql, sqlType, mysqlType, old, data[, _tidb]``.
Values are JSON strings (``null`` for NULL), binary values read as
ISO-8859-1.  The encoder assembles every message of a batch column by column
with Arrow string kernels: each column is rendered and JSON-quoted once for the
whole batch, and the messages are the element-wise concatenation of those
fragments with the constant parts.  Kafka keys are empty; DDL goes to
partition 0; TIDB_WATERMARK events exist only with ``enable-tidb-extension``.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..changes import OP_INSERT, OP_UPDATE, ChangeBatch
from ..config import SinkConfig
from ..ddl import CANAL_DDL_TYPES, DDLChange, canal_ddl_type
from ..dispatch import Routing
from ..errors import ContractError
from ..messages import Messages
from ..mysql_types import Column, TableSchema, tso_physical_ms
from ..render import at_rows, physical_ms_text, string_scalar, value_text
from . import java_sql_types as java
from .base import Decoder, DDLEvent, Encoder, RowEvent, WatermarkEvent
from .json_text import (changed_members_object, concat, json_fragments, latin1_json_fragments, object_parts,
                        quote_json, quoted_names_of)

_JAVA_BY_KIND = {
    "tinyint": java.TINYINT, "smallint": java.SMALLINT, "mediumint": java.INTEGER, "int": java.INTEGER,
    "bigint": java.BIGINT, "float": java.REAL, "double": java.DOUBLE, "decimal": java.DECIMAL,
    "bit": java.BIT, "set": java.BIT, "enum": java.INTEGER, "year": java.VARCHAR, "json": java.VARCHAR,
    "date": java.DATE, "datetime": java.TIMESTAMP, "timestamp": java.TIMESTAMP, "time": java.TIME,
    "char": java.CHAR, "varchar": java.VARCHAR,
    "tinytext": java.CLOB, "text": java.CLOB, "mediumtext": java.CLOB, "longtext": java.CLOB,
}
# Unsigned integers whose value exceeds the signed maximum get the next wider java type.
_UNSIGNED_PROMOTION = {
    "tinyint": (2**7 - 1, java.SMALLINT),
    "smallint": (2**15 - 1, java.INTEGER),
    "int": (2**31 - 1, java.BIGINT),
    "bigint": (2**63 - 1, java.DECIMAL),
}


def java_sql_type(column: Column) -> int:
    """The base java.sql.Types code of a column (TiCDC ``mysqlType2JavaType``)."""
    t = column.type
    if t.binary and t.is_string:
        return java.BLOB
    return _JAVA_BY_KIND[t.kind]


class CanalJSONEncoder(Encoder):
    """Canal-JSON messages for one table shape, built a batch at a time."""

    def __init__(self, config: SinkConfig, table: TableSchema | None, **context):
        super().__init__(config, table, **context)
        if table is None:  # control events only (emit_ddl)
            return
        self._quoted_names = [quote_json(c.name) for c in table.columns]
        self._member_heads = [q + ":" for q in self._quoted_names]
        self._pk_names = "[" + ",".join(quote_json(n) for n in table.primary_key_names) + "]"
        type_name = (lambda c: c.type.full_name) if config.content_compatible else (lambda c: c.type.short_name)
        # TiCDC builds mysqlType from a Go map, so consumers must not rely on its order; column order here.
        self._mysql_types = "{" + ",".join(
            f"{q}:{quote_json(type_name(c))}" for q, c in zip(self._quoted_names, table.columns)) + "}"
        self._java_types = [java_sql_type(c) for c in table.columns]

    # -- rows

    def encode_values(self, batch: ChangeBatch) -> pa.Array:
        """One Canal-JSON document per row of the batch, as a string array."""
        config = self.config
        build_ms = self.clock()
        columns = self.table.columns
        new_frags = [self._fragments(batch.columns[c.name], c) for c in columns]

        has_old = batch.before is not None
        is_update = batch.ops == OP_UPDATE
        event_types = np.array(['"INSERT"', '"INSERT"', '"UPDATE"', '"DELETE"'], dtype=object)
        ops = batch.ops if has_old else np.where(is_update, OP_INSERT, batch.ops)  # old value off
        type_json = pa.array(event_types[ops], pa.string())

        old_json: pa.Array | str = "null"
        if has_old and is_update.any():
            # Old rows exist on updates only: render just those rows, then put them in place.
            updates = pa.array(np.flatnonzero(is_update))
            old_frags = [self._fragments(batch.before[c.name].take(updates), c) for c in columns]
            old_doc = self._old_document([f.take(updates) for f in new_frags], old_frags)
            old_json = at_rows("null", is_update, old_doc, batch.num_rows)

        es = physical_ms_text(batch.commit_ts)
        parts: list[Any] = [
            '{"id":0,"database":', quoted_names_of(batch.databases),
            ',"table":', quoted_names_of(batch.tables),
            f',"pkNames":{self._pk_names},"isDdl":false,"type":', type_json,
            ',"es":', es,
            f',"ts":{build_ms},"sql":"","sqlType":', *self._sql_type_parts(batch),
            f',"mysqlType":{self._mysql_types},"old":', old_json,
            ',"data":', *object_parts(self._member_heads, new_frags, "[{", "}]"),
        ]
        if config.enable_tidb_extension:
            parts += [',"_tidb":{"commitTs":', pa.array(batch.commit_ts).cast(pa.string()), "}"]
        parts.append("}")
        return concat(parts, batch.num_rows)

    def encode_rows(self, batch: ChangeBatch, routing: Routing) -> Messages:
        """One message per row, without a key."""
        return Messages(routing.topics, routing.topic_of_message, routing.partition_of_row, None,
                        self.encode_values(batch), np.arange(batch.num_rows))

    def _fragments(self, values: pa.Array, column: Column) -> pa.Array:
        """The JSON value of each row of a column: a quoted string, or ``null``."""
        text = value_text(values, column.type, self.config.time_zone)
        if column.type.binary and column.type.is_string:
            return latin1_json_fragments(text)
        # Numbers, dates and times render without characters that JSON escapes.
        may_escape = column.type.is_string or column.type.kind == "json"
        return json_fragments(text, escape=may_escape)

    def _old_document(self, new_frags: list[pa.Array], old_frags: list[pa.Array]) -> pa.Array:
        if self.config.only_output_updated_columns:
            return changed_members_object(self._member_heads, new_frags, old_frags, "[{", "}]")
        return concat(object_parts(self._member_heads, old_frags, "[{", "}]"), len(old_frags[0]))

    def _sql_type_parts(self, batch: ChangeBatch) -> list:
        """The pieces of ``sqlType``: constant but where an unsigned value needs the wider java type."""
        parts: list[Any] = []
        for i, (name, column, base) in enumerate(zip(self._quoted_names, self.table.columns, self._java_types)):
            code: Any = str(base)
            promotion = _UNSIGNED_PROMOTION.get(column.type.kind) if column.type.unsigned else None
            if promotion is not None:
                limit, wider = promotion
                over = pc.fill_null(pc.greater(batch.columns[column.name], pa.scalar(limit, pa.uint64())), False)
                if pc.any(over).as_py():
                    code = pc.if_else(over, string_scalar(str(wider)), string_scalar(str(base)))
            parts += [("{" if i == 0 else ",") + name + ":", code]
        parts.append("}")
        return parts

    # -- control events

    def _control(self, database: str, table: str, is_ddl: bool, event_type: str, es_ts: int, query: str,
                 extension: str | None) -> str:
        """The struct-marshalled layout TiCDC uses for DDL and watermark events (data before old)."""
        text = (
            f'{{"id":0,"database":{quote_json(database)},"table":{quote_json(table)},"pkNames":null,'
            f'"isDdl":{"true" if is_ddl else "false"},"type":{quote_json(event_type)},'
            f'"es":{tso_physical_ms(es_ts)},"ts":{self.clock()},"sql":{quote_json(query)},'
            f'"sqlType":null,"mysqlType":null,"data":null,"old":null'
        )
        if extension is not None:
            text += f',"_tidb":{{{extension}}}'
        return text + "}"

    def check_ddl(self, ddl: DDLChange) -> None:
        self._ddl_type(ddl)

    def _ddl_type(self, ddl: DDLChange) -> str:
        event_type = ddl.type_override.upper() if ddl.type_override else canal_ddl_type(ddl.action)
        if event_type not in CANAL_DDL_TYPES:
            raise ContractError(self.config.ddl_type_column, ddl.type_override, f"DDL {ddl.query!r}",
                                f"a Canal DDL type is one of {', '.join(CANAL_DDL_TYPES)}")
        return event_type

    def encode_ddl(self, ddl: DDLChange, topic: str) -> Messages:
        """Partition 0 of the topic, as TiCDC sends Canal DDL."""
        extension = f'"commitTs":{ddl.commit_ts}' if self.config.enable_tidb_extension else None
        value = self._control(ddl.database, ddl.table, True, self._ddl_type(ddl), ddl.commit_ts, ddl.query,
                              extension)
        return Messages.one(topic, 0, None, value)

    def encode_watermark(self, ts: int, topics: list[str]) -> Messages | None:
        """TIDB_WATERMARK to every partition, with ``enable-tidb-extension`` only."""
        if not self.config.enable_tidb_extension:
            return None
        value = self._control("", "", False, "TIDB_WATERMARK", ts, "", f'"watermarkTs":{ts}')
        return Messages.to_every_partition(topics, None, value)


# ---------------------------------------------------------------------------
# Decoding


def _base_type(mysql_type: str) -> tuple[str, bool]:
    text = mysql_type.lower()
    base = text.split("(")[0].split(" ")[0]
    return base, "unsigned" in text


def decode_value(text: str | None, mysql_type: str) -> Any:
    """A Canal value string back to a Python value, typed by its ``mysqlType``.

    Integers, BIT, YEAR, ENUM (index) and SET (bitmask) become int; FLOAT/DOUBLE
    float; DECIMAL Decimal; DATE date; DATETIME/TIMESTAMP naive datetime in the
    rendering time zone; binary types bytes; TIME, JSON and text stay str.
    """
    if text is None:
        return None
    base, _ = _base_type(mysql_type)
    if base in ("tinyint", "smallint", "mediumint", "int", "bigint", "bit", "year", "enum", "set"):
        return int(text)
    if base in ("float", "double"):
        return float(text.replace("+Inf", "inf").replace("-Inf", "-inf"))
    if base == "decimal":
        return Decimal(text)
    if base == "date":
        return dt.date.fromisoformat(text)
    if base in ("datetime", "timestamp"):
        return dt.datetime.fromisoformat(text)
    if "blob" in base or "binary" in base:
        return text.encode("latin-1")
    return text


class CanalJSONDecoder(Decoder):
    def decode(self, key: bytes | None, value: bytes) -> list:
        doc = json.loads(value)
        extension = doc.get("_tidb") or {}
        if doc.get("isDdl"):
            return [DDLEvent(doc["database"], doc["table"], doc["sql"], doc["type"], extension.get("commitTs"))]
        if doc.get("type") == "TIDB_WATERMARK":
            return [WatermarkEvent(extension["watermarkTs"])]
        types = doc.get("mysqlType") or {}

        def typed(row: dict | None) -> dict | None:
            if row is None:
                return None
            return {name: decode_value(v, types.get(name, "")) for name, v in row.items()}

        data = doc["data"][0] if doc.get("data") else None
        old = doc["old"][0] if doc.get("old") else None
        return [RowEvent(
            type=doc["type"],
            database=doc["database"],
            table=doc["table"],
            commit_ts=extension.get("commitTs"),
            columns=typed(data),
            old=typed(old),
            primary_keys=list(doc.get("pkNames") or []),
            mysql_types=dict(types),
        )]

