"""The Simple protocol, as TiCDC writes it (spec: ticdc-simple-protocol.md; reference section 6).

One event per message, without a Kafka key, in JSON (simple_json) or Avro
(simple_avro) per ``encoding-format``; this module holds what the two share:
which messages a batch or a control event makes and what goes into each.  An
INSERT carries ``data``, an UPDATE ``data`` and ``old``, a DELETE ``old``; DDL
and WATERMARK go to every partition; a table-level DDL carries the table's
schema and, where the statement tells what it was, the schema before it.
"""

from __future__ import annotations

import base64
import dataclasses
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
from ..mysql_types import TableSchema
from ..render import at_rows, go_float_text, string_scalar
from . import simple_avro, simple_json
from .base import Decoder, DDLEvent, Encoder, RowEvent, WatermarkEvent
from .canal_json import decode_value
from .simple_avro import SimpleAvro
from .simple_json import SimpleJSON
from .simple_schema import SimpleTable, simple_table, table_id

# Table-level DDL whose table had the same shape before it (RENAME: under its old name).
_SAME_SHAPE_BEFORE = frozenset({"rename table", "rename tables", "truncate table", "drop table"})


class SimpleEncoder(Encoder):
    """Simple messages for one table shape, built a batch at a time."""

    def __init__(self, config: SinkConfig, table: TableSchema | None, **context):
        super().__init__(config, table, **context)
        self.wire = (SimpleAvro if config.encoding_format == "avro" else SimpleJSON)(config.time_zone)
        if table is None:  # control events only (emit_ddl)
            return
        self.shape = simple_table(table, config)
        # Go writes map members sorted by key (bytewise, which is code-point order); so does the sink in Avro.
        self._members = sorted(table.columns, key=lambda c: c.name)

    # -- rows

    def encode_values(self, batch: ChangeBatch) -> pa.Array:
        """One Simple message per row of the batch."""
        n, wire = batch.num_rows, self.wire
        row = self._rows(batch.columns, n)
        ops = batch.ops if batch.before is not None else np.where(batch.ops == OP_UPDATE, OP_INSERT, batch.ops)
        is_delete, is_update = pa.array(ops == OP_DELETE), ops == OP_UPDATE
        data = pc.if_else(is_delete, wire.no_member("data"), wire.member("data", row))
        old = pc.if_else(is_delete, wire.member("old", row), wire.no_member("old"))
        if is_update.any():  # an update's old row comes from the before values, rendered for those rows only
            updates = pa.array(np.flatnonzero(is_update))
            before = self._rows({c.name: batch.before[c.name].take(updates) for c in self._members}, len(updates))
            old = at_rows(old, is_update, wire.member("old", before), n)
        names = _one_name_or_all(batch.databases), _one_name_or_all(batch.tables)
        return wire.dml(*names, self._table_ids(batch), ops, batch.commit_ts, self.clock(), self.shape.version,
                        data, old, n)

    def _rows(self, columns, n: int) -> pa.Array:
        return self.wire.row([c.name for c in self._members],
                             [self.wire.column_fragments(columns[c.name], c) for c in self._members], n)

    def encode_rows(self, batch: ChangeBatch, routing: Routing) -> Messages:
        """One message per row, without a key."""
        return Messages(routing.topics, routing.topic_of_message, routing.partition_of_row, None,
                        self.encode_values(batch), np.arange(batch.num_rows))

    def _table_ids(self, batch: ChangeBatch) -> np.ndarray | int:
        """Each row's ``tableID``: one per table name (the batch has one, but for a ``_table`` column)."""
        names = pc.binary_join_element_wise(batch.databases, batch.tables, string_scalar("\x00"))
        dictionary = names.dictionary_encode()
        ids = [table_id(*name.split("\x00"), self.config) for name in dictionary.dictionary.to_pylist()]
        if len(ids) == 1:
            return ids[0]
        return np.array(ids, dtype=np.int64)[dictionary.indices.to_numpy(zero_copy_only=False)]

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
        after = before = None
        if ddl.table:
            if self.table is None:
                raise ContractError(self.config.ddl_column, ddl.query, f"DDL of {ddl.database}.{ddl.table}",
                                    "Simple's DDL event carries the table's schema: send it as a DDL row of a "
                                    "DataFrame with the table's columns, not with emit_ddl")
            after = self._table_schema(self.shape, ddl.database, ddl.table)
            before = self._schema_before(ddl)
        value = self.wire.ddl(self._ddl_type(ddl), ddl.query, ddl.commit_ts, self.clock(), after, before)
        return Messages.one(topic, BROADCAST, None, value)

    def encode_bootstrap(self, database: str, table: str) -> str | bytes:
        """The BOOTSTRAP message of the writing table (JSON gives it ``commitTs`` 0)."""
        return self.wire.bootstrap(self.clock(), self._table_schema(self.shape, database, table))

    @property
    def bootstrap_version(self) -> int | None:
        return self.shape.version if self.table is not None and self.config.sends_bootstrap else None

    def bootstrap_messages(self, database: str, table: str, topic: str) -> Messages:
        """The BOOTSTRAP to every partition of the table's topic, or to its first (send-bootstrap-to-all-partition)."""
        partition = BROADCAST if self.config.send_bootstrap_to_all_partition else 0
        return Messages.one(topic, partition, None, self.encode_bootstrap(database, table))

    def _table_schema(self, shape: SimpleTable, database: str, table: str):
        return self.wire.table_schema(shape, database, table, table_id(database, table, self.config))

    def _schema_before(self, ddl: DDLChange):
        """The table's schema before the DDL where the statement determines it: the same shape for RENAME
        (under the old name), TRUNCATE and DROP TABLE; without the added columns for ADD COLUMN.  Otherwise
        the sink cannot know it and leaves it out, as TiCDC's newer encoder does for all but EXCHANGE
        PARTITION; CREATE has none."""
        if ddl.action in _SAME_SHAPE_BEFORE:
            database, table = renamed_from(ddl) or (ddl.database, ddl.table)
            return self._table_schema(self.shape, database, table)
        if ddl.action == "add column":
            added = set(defined_columns(ddl.query))
            kept = tuple(c for c in self.table.columns if c.name.lower() not in added)
            before = dataclasses.replace(self.table, columns=kept, indexes=tuple(
                i for i in self.table.indexes if all(c.lower() not in added for c in i.columns)))
            return self._table_schema(simple_table(before, None), ddl.database, ddl.table)
        return None

    def encode_watermark(self, ts: int, topics: list[str]) -> Messages:
        """WATERMARK to every partition (TiCDC sends Simple's whatever the TiDB extension says)."""
        return Messages.to_every_partition(topics, None, self.wire.watermark(ts, self.clock()))


def _one_name_or_all(names: pa.Array) -> pa.Array | str:
    """A batch's database or table names: the one name when all rows share it."""
    distinct = pc.unique(names)
    return distinct[0].as_py() if len(distinct) == 1 else names


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
    ``BOOTSTRAP`` with no query, as TiCDC's decoder returns it.  Each message is read in the encoding it is
    in (an Avro message starts with the byte 0x16, a JSON one with ``{``).
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
        doc = (simple_avro.read if value[:1] == b"\x16" else simple_json.read)(value)
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
                schema = doc[name]
                self._schemas.setdefault((schema["schema"], schema["table"], schema["version"]), schema)
        table = doc.get("tableSchema") or {}
        ddl = DDLEvent(table.get("schema", ""), table.get("table", ""), doc.get("sql", ""), doc["type"],
                       doc.get("commitTs", 0))  # Avro's BOOTSTRAP has none; JSON's says 0
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
    """A value as JSON (a string, or a TIMESTAMP object) or Avro (a typed union branch) gives it."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, int):  # Avro's long: an unsigned type's (BIT's too) 64 bits as a signed number
        return value % 2**64 if value < 0 and data_type.get("unsigned") else value
    mysql_type = data_type["mysqlType"]
    if isinstance(value, dict):  # a TIMESTAMP, or Avro's UnsignedBigint (the 64 bits as a signed long)
        return decode_value(value["value"], mysql_type) if "location" in value else value["value"] % 2**64
    if isinstance(value, float):  # Avro's float and double: as the JSON text of the same value reads
        return float(go_float_text(value, 32 if mysql_type == "float" else 64))
    if data_type["charset"] == "binary" and ("binary" in mysql_type or "blob" in mysql_type):
        return base64.b64decode(value)
    return decode_value(value, mysql_type)
