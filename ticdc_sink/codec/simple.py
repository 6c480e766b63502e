"""The Simple protocol in JSON, as TiCDC writes it (spec: ticdc-simple-protocol.md; reference section 6).

One event per message, without a Kafka key, marshalled as Go's encoding/json
marshals TiCDC's message struct: fields in its order (``version, database,
table, tableID, type, sql, commitTs, buildTs, schemaVersion, data, old,
tableSchema, preTableSchema``), empty ones left out, map members (``data``,
``old``) sorted by name, and Go 1.22's escapes.  Every value is a JSON string
but a TIMESTAMP, which is ``{"location":<time-zone>,"value":<text>}``, and
binary strings are base64.  An INSERT carries ``data``, an UPDATE ``data`` and
``old``, a DELETE ``old``.  WATERMARK goes to every partition, always.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..changes import OP_DELETE, OP_INSERT, OP_UPDATE, ChangeBatch
from ..config import SinkConfig
from ..ddl import CANAL_DDL_TYPES, DDLChange, defined_columns, renamed_from, simple_ddl_type
from ..dispatch import Routing
from ..errors import ContractError
from ..messages import BROADCAST, Messages
from ..mysql_types import Column, TableSchema
from ..render import at_rows, join, string_scalar, value_text
from .base import Decoder, DDLEvent, Encoder, RowEvent, WatermarkEvent
from .canal_json import decode_value
from .json_text import GO_JSON, base64_fragments, concat, json_fragments, object_parts, quote_json, quoted_names_of
from .simple_schema import SimpleTable, simple_table, table_id

VERSION = 1
_EVENT_TYPES = np.array(["", '"INSERT"', '"UPDATE"', '"DELETE"'], dtype=object)  # by OP_*
# Table-level DDL whose table had the same shape before it (RENAME: under its old name).
_SAME_SHAPE_BEFORE = frozenset({"rename table", "rename tables", "truncate table", "drop table"})


class SimpleEncoder(Encoder):
    """Simple JSON messages for one table shape, built a batch at a time."""

    def __init__(self, config: SinkConfig, table: TableSchema | None, **context):
        super().__init__(config, table, **context)
        if table is None:  # control events only (emit_ddl)
            return
        self.shape = simple_table(table, config)
        # Go writes map members sorted by key (bytewise, which is code-point order).
        self._members = sorted(table.columns, key=lambda c: c.name)
        self._heads = [quote_json(c.name, GO_JSON) + ":" for c in self._members]
        self._timestamp_head = f'{{"location":{quote_json(config.time_zone, GO_JSON)},"value":"'

    # -- rows

    def encode_values(self, batch: ChangeBatch) -> pa.Array:
        """One Simple JSON document per row of the batch, as a string array."""
        n = batch.num_rows
        row = concat(object_parts(self._heads, [self._fragments(batch.columns[c.name], c) for c in self._members]),
                     n)
        ops = batch.ops if batch.before is not None else np.where(batch.ops == OP_UPDATE, OP_INSERT, batch.ops)
        is_delete, is_update = ops == OP_DELETE, ops == OP_UPDATE
        data = pc.if_else(pa.array(is_delete), string_scalar(""), join(',"data":', row))
        old = pc.if_else(pa.array(is_delete), join(',"old":', row), string_scalar(""))
        if is_update.any():  # an update's old row comes from the before values, rendered for those rows only
            updates = pa.array(np.flatnonzero(is_update))
            before = concat(object_parts(self._heads, [self._fragments(batch.before[c.name].take(updates), c)
                                                       for c in self._members]), len(updates))
            old = at_rows(old, is_update, join(',"old":', before), n)
        return concat([
            f'{{"version":{VERSION},"database":', quoted_names_of(batch.databases, GO_JSON),
            ',"table":', quoted_names_of(batch.tables, GO_JSON),
            ',"tableID":', self._table_ids(batch),
            ',"type":', pa.array(_EVENT_TYPES[ops], pa.string()),
            ',"commitTs":', pa.array(batch.commit_ts).cast(pa.string()),
            f',"buildTs":{self.clock()},"schemaVersion":{self.shape.version}', data, old, "}",
        ], n)

    def encode_rows(self, batch: ChangeBatch, routing: Routing) -> Messages:
        """One message per row, without a key."""
        return Messages(routing.topics, routing.topic_of_message, routing.partition_of_row, None,
                        self.encode_values(batch), np.arange(batch.num_rows))

    def _table_ids(self, batch: ChangeBatch) -> pa.Array | str:
        """Each row's ``tableID``: one per table name (the batch has one, but for a ``_table`` column)."""
        names = pc.binary_join_element_wise(batch.databases, batch.tables, string_scalar("\x00"))
        dictionary = names.dictionary_encode()
        ids = [str(table_id(*name.split("\x00"), self.config)) for name in dictionary.dictionary.to_pylist()]
        if len(ids) == 1:
            return ids[0]
        return pa.array(ids, pa.string()).take(dictionary.indices)

    def _fragments(self, values: pa.Array, column: Column) -> pa.Array:
        """The JSON value of each row of a column: a string, a TIMESTAMP object, or ``null``."""
        t = column.type
        if t.is_string and t.binary:
            return base64_fragments(values)
        text = value_text(values, t, self.config.time_zone)
        if t.kind == "timestamp":
            return pc.fill_null(join(self._timestamp_head, text, '"}'), string_scalar("null"))
        return json_fragments(text, escape=t.is_string or t.kind == "json", style=GO_JSON)

    # -- control events

    def check_ddl(self, ddl: DDLChange) -> None:
        self._ddl_type(ddl)

    def _ddl_type(self, ddl: DDLChange) -> str:
        event_type = ddl.type_override.strip().upper() if ddl.type_override else simple_ddl_type(ddl.action)
        if event_type not in CANAL_DDL_TYPES:  # Simple's DDL types are Canal's
            raise ContractError(self.config.ddl_type_column, ddl.type_override, f"DDL {ddl.query!r}",
                                f"a Simple DDL type is one of {', '.join(CANAL_DDL_TYPES)}")
        return event_type

    def encode_ddl(self, ddl: DDLChange, topic: str) -> Messages:
        """The DDL to every partition of the topic, with the table's schema after it and, where the statement
        tells, before it (see ``_schema_before``); a database-level DDL has neither."""
        value = f'{{"version":{VERSION},"type":"{self._ddl_type(ddl)}"'
        if ddl.query:
            value += f',"sql":{quote_json(ddl.query, GO_JSON)}'
        value += f',"commitTs":{ddl.commit_ts},"buildTs":{self.clock()}'
        if ddl.table:
            if self.table is None:
                raise ContractError(self.config.ddl_column, ddl.query, f"DDL of {ddl.database}.{ddl.table}",
                                    "Simple's DDL event carries the table's schema: send it as a DDL row of a "
                                    "DataFrame with the table's columns, not with emit_ddl")
            value += ',"tableSchema":' + self._schema_json(self.shape, ddl.database, ddl.table)
            before = self._schema_before(ddl)
            if before is not None:
                value += ',"preTableSchema":' + before
        return Messages.one(topic, BROADCAST, None, value + "}")

    def encode_bootstrap(self, database: str, table: str) -> str:
        """The BOOTSTRAP message of the writing table (its ``commitTs`` is always 0)."""
        return (f'{{"version":{VERSION},"type":"BOOTSTRAP","commitTs":0,"buildTs":{self.clock()},'
                f'"tableSchema":{self._schema_json(self.shape, database, table)}}}')

    def _schema_json(self, shape: SimpleTable, database: str, table: str) -> str:
        return shape.json(database, table, table_id(database, table, self.config))

    def _schema_before(self, ddl: DDLChange) -> str | None:
        """The table's schema before the DDL where the statement determines it: the same shape for RENAME
        (under the old name), TRUNCATE and DROP TABLE; without the added columns for ADD COLUMN.  Otherwise
        the sink cannot know it and leaves it out, as TiCDC's newer encoder does for all but EXCHANGE
        PARTITION; CREATE has none."""
        if ddl.action in _SAME_SHAPE_BEFORE:
            database, table = renamed_from(ddl) or (ddl.database, ddl.table)
            return self._schema_json(self.shape, database, table)
        if ddl.action == "add column":
            added = set(defined_columns(ddl.query))
            kept = tuple(c for c in self.table.columns if c.name.lower() not in added)
            before = dataclasses.replace(self.table, columns=kept, indexes=tuple(
                i for i in self.table.indexes if all(c.lower() not in added for c in i.columns)))
            return self._schema_json(simple_table(before, None), ddl.database, ddl.table)
        return None

    def encode_watermark(self, ts: int, topics: list[str]) -> Messages:
        """WATERMARK to every partition (TiCDC sends Simple's whatever the TiDB extension says)."""
        value = f'{{"version":{VERSION},"type":"WATERMARK","commitTs":{ts},"buildTs":{self.clock()}}}'
        return Messages.to_every_partition(topics, None, value)


# ---------------------------------------------------------------------------
# Decoding

SchemaKey = tuple[str, str, int]  # (database, table, version)


class SimpleDecoder(Decoder):
    """Follows the document's consumer rules: table schemas come from DDL and BOOTSTRAP messages and are kept
    by (database, table, version); a row whose schema has not arrived yet waits, and comes out, in arrival
    order, after the DDL or BOOTSTRAP that brings it (a consumer that joined mid-stream).

    Rows are typed by their column's ``dataType``: integers, BIT, YEAR, ENUM (index) and SET (bitmask) int,
    FLOAT/DOUBLE float, DECIMAL Decimal, DATE date, DATETIME and TIMESTAMP naive datetime (TIMESTAMP in its
    ``location``), binary strings bytes; TIME, JSON and text str.  A BOOTSTRAP is a DDLEvent of type
    ``BOOTSTRAP`` with no query, as TiCDC's decoder returns it.
    """

    def __init__(self, config=None):
        super().__init__(config)
        self._schemas: dict[SchemaKey, dict] = {}
        self._waiting: list[dict] = []

    @property
    def waiting(self) -> int:
        """Rows held until their table's schema arrives."""
        return len(self._waiting)

    def decode(self, key: bytes | None, value: bytes) -> list:
        doc = json.loads(value)
        if doc["type"] == "WATERMARK":
            return [WatermarkEvent(doc["commitTs"])]
        if "data" in doc or "old" in doc:
            event = self._row(doc)
            if event is None:
                self._waiting.append(doc)
                return []
            return [event]
        for name in ("tableSchema", "preTableSchema"):
            if name in doc:
                schema = doc[name]
                self._schemas.setdefault((schema["schema"], schema["table"], schema["version"]), schema)
        table = doc.get("tableSchema") or {}
        ddl = DDLEvent(table.get("schema", ""), table.get("table", ""), doc.get("sql", ""), doc["type"],
                       doc["commitTs"])
        waiting, self._waiting = self._waiting, []
        released = [e for e in map(self._row, waiting) if e is not None]
        self._waiting = [doc for doc in waiting if self._schema_of(doc) is None]
        return [ddl, *released]

    def _schema_of(self, doc: dict) -> dict | None:
        return self._schemas.get((doc["database"], doc["table"], doc.get("schemaVersion", 0)))

    def _row(self, doc: dict) -> RowEvent | None:
        schema = self._schema_of(doc)
        if schema is None:
            return None
        types = {c["name"]: c["dataType"] for c in schema["columns"]}

        def typed(row: dict | None) -> dict | None:
            return None if row is None else {name: _decode_value(v, types[name]) for name, v in row.items()}

        is_delete = doc["type"] == "DELETE"
        primary = next((i["columns"] for i in schema["indexes"] if i["primary"]), [])
        return RowEvent(type=doc["type"], database=doc["database"], table=doc["table"], commit_ts=doc["commitTs"],
                        columns=typed(doc["old"] if is_delete else doc["data"]),
                        old=None if is_delete else typed(doc.get("old")), primary_keys=list(primary),
                        mysql_types={name: t["mysqlType"] for name, t in types.items()})


def _decode_value(value: Any, data_type: dict) -> Any:
    if value is None:
        return None
    mysql_type = data_type["mysqlType"]
    if mysql_type == "timestamp":
        return decode_value(value["value"], mysql_type)
    if data_type["charset"] == "binary" and ("binary" in mysql_type or "blob" in mysql_type):
        return base64.b64decode(value)
    return decode_value(value, mysql_type)
