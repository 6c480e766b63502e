"""The Simple protocol, as TiCDC writes it (TiDB docs: *TiCDC Simple Protocol*; TiCDC
``pkg/sink/codec/simple/`` at pingcap/ticdc@b813e76f; the goldens' ``tests/golden/simple/README.md``).

One event per message, without a Kafka key, in JSON (``json_wire.py``) or Avro
(``avro_wire.py``) per ``encoding-format``; this module holds what the two
share: which messages a batch or a control event makes and what goes into each.
An INSERT carries ``data``, an UPDATE ``data`` and ``old``, a DELETE ``old``;
DDL and WATERMARK go to every partition; a table-level DDL carries the table's
schema (``table_schema.py``) and, where the statement tells what it was, the
schema before it.  A table's BOOTSTRAP goes ahead of its rows when the sink's
rule says it is due (``sink/bootstrap.py``).  With integrity-check-level "correctness" a row also carries its
``checksum`` (``table/row_checksum.py``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...changes.contract import OP_DELETE, OP_INSERT, OP_UPDATE, ChangeBatch
from ...changes.dispatch import Routing
from ...config.sink import SinkConfig
from ...ddl.protocol_types import CANAL_DDL_TYPES, CANAL_TYPE_NAMES, canal_ddl_type, ddl_type
from ...ddl.statements import DDLChange, defined_columns, renamed_from
from ...errors import ContractError
from ...kafka.messages import BROADCAST, Messages
from ...table.row_checksum import row_checksums
from ...table.schema import TableSchema
from ..base import Encoder, SendsTableSchemas
from ..shared.assembly import at_updates, row_messages
from .avro_wire import SimpleAvro
from .json_wire import SimpleJSON
from .table_schema import SimpleTable, simple_table, table_id
from .wire import SimpleWire

# Table-level DDL whose table had the same shape before it (RENAME: under its old name).
_SAME_SHAPE_BEFORE = frozenset({"rename table", "rename tables", "truncate table", "drop table"})


class SimpleEncoder(SendsTableSchemas, Encoder):
    """Simple messages for one table shape, built a batch at a time."""

    def __init__(self, config: SinkConfig, table: TableSchema | None, **context):
        super().__init__(config, table, **context)
        self.wire: SimpleWire = (SimpleAvro if self.options.encoding_format == "avro" else SimpleJSON)(config.time_zone)
        if table is None:  # control events only (emit_ddl)
            return
        # The table's schema (BOOTSTRAP, DDL) is the whole table; rows carry the columns column-selectors keep.
        self.whole = table.whole or table
        self.shape = simple_table(self.whole, config)
        # Go writes map members sorted by key (bytewise, which is code-point order); so does the sink in Avro.
        self._members = sorted(table.columns, key=lambda c: c.name)

    # -- rows

    def encode_values(self, batch: ChangeBatch, locations: pa.Array | None = None) -> pa.Array:
        """One Simple message per row of the batch (``locations``: where claim-check kept each row's whole
        message, for the encoder of ``handle_key_only``)."""
        n, wire = batch.num_rows, self.wire
        row = self._rows(batch.columns, n)
        ops = batch.ops if batch.before is not None else np.where(batch.ops == OP_UPDATE, OP_INSERT, batch.ops)
        is_delete = pa.array(ops == OP_DELETE)
        data = pc.if_else(is_delete, wire.no_member("data"), wire.member("data", row))
        old = pc.if_else(is_delete, wire.member("old", row), wire.no_member("old"))
        old = at_updates(batch, old, lambda before, updates: wire.member("old", self._rows(before, len(updates))))
        names = [_one_name_or_all(n) for n in self.route.target_names(batch.databases, batch.tables)]
        return wire.dml(*names, self._table_ids(batch), ops, batch.commit_ts, self.clock(), self.shape.version,
                        data, old, n, self.marks_handle_key_only, locations, self._checksums(batch, ops))

    def _checksums(self, batch: ChangeBatch, ops: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Each row's ``checksum`` current and previous (TiCDC's ``integrity.Checksum``), with
        integrity-check-level "correctness": an INSERT's row is current, a DELETE's previous, an UPDATE's new
        row current and old row previous (0 where none: an update the input gives without its old row).  The
        checksum is of the whole row, also for a message of its handle key only."""
        if not self.config.row_checksums:
            return None
        columns = self.whole.columns
        if any(c.name not in batch.columns for c in columns):
            columns = self.table.columns
        row = row_checksums(batch.columns, columns, batch.num_rows)
        is_delete = ops == OP_DELETE
        current = np.where(is_delete, 0, row).astype(np.uint32)
        previous = np.where(is_delete, row, 0).astype(np.uint32)
        updates = np.flatnonzero(ops == OP_UPDATE)
        if batch.before is not None and len(updates):
            before = {c.name: batch.before[c.name].take(pa.array(updates)) for c in columns}
            previous[updates] = row_checksums(before, columns, len(updates))
        return current, previous

    def _rows(self, columns, n: int) -> pa.Array:
        return self.wire.row([c.name for c in self._members],
                             [self.wire.column_fragments(columns[c.name], c) for c in self._members], n)

    def encode_rows(self, batch: ChangeBatch, routing: Routing) -> Messages:
        """One message per row, without a key, after the BOOTSTRAP of each table whose schema is due."""
        rows = row_messages(self.config, batch, routing, None, self.compressed(self.encode_values(batch)), self)
        if self.bootstraps_due is None:
            return rows
        tables, table_of_row = batch.tables_of_rows
        first_row = {table: int(np.argmax(table_of_row == i)) for i, table in enumerate(tables)}
        counts = np.bincount(table_of_row, minlength=len(tables)).tolist()
        due = self.bootstraps_due(dict(zip(tables, counts)))
        schemas = [self.bootstrap_messages(*table, routing.topics[routing.topic_of_row[first_row[table]]])
                   for table in due]
        return Messages.concat([*schemas, rows]) if schemas else rows

    def large_row_messages(self, rows: ChangeBatch, locations: pa.Array | None) -> tuple:
        return None, self.compressed(self.handle_key_only.encode_values(rows, locations))

    def _table_ids(self, batch: ChangeBatch) -> np.ndarray | int:
        """Each row's ``tableID``: one per table name (the batch has one, but for a ``_table`` column)."""
        tables, table_of_row = batch.tables_of_rows
        ids = [table_id(*self.route.target(*table), self.config) for table in tables]
        if len(ids) == 1:
            return ids[0]
        return np.array(ids, dtype=np.int64)[table_of_row]

    # -- control events

    def ddl_type(self, ddl: DDLChange) -> str:
        return ddl_type(ddl, simple_ddl_type, CANAL_TYPE_NAMES, self.config.ddl_type_column,
                        f"a Simple DDL type is one of {', '.join(CANAL_DDL_TYPES)}")

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
        value = self.wire.ddl(self.ddl_type(ddl), ddl.query, ddl.commit_ts, self.clock(), after, before)
        return Messages.one(topic, BROADCAST, None, self.compressed(value))

    def encode_bootstrap(self, database: str, table: str) -> str | bytes:
        """The BOOTSTRAP message of the writing table (JSON gives it ``commitTs`` 0), under its routed names."""
        return self.wire.bootstrap(self.clock(), self._table_schema(self.shape, *self.route.target(database, table)))

    @property
    def bootstrap_version(self) -> int | None:
        return self.shape.version if self.table is not None and self.options.sends_bootstrap else None

    def bootstrap_messages(self, database: str, table: str, topic: str) -> Messages:
        """The BOOTSTRAP to every partition of the table's topic, or to its first (send-bootstrap-to-all-partition)."""
        partition = BROADCAST if self.options.send_bootstrap_to_all_partition else 0
        return Messages.one(topic, partition, None, self.compressed(self.encode_bootstrap(database, table)))

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
            kept = tuple(c for c in self.whole.columns if c.name.lower() not in added)
            before = dataclasses.replace(self.whole, columns=kept, indexes=tuple(
                i for i in self.whole.indexes if all(c.lower() not in added for c in i.columns)))
            return self._table_schema(simple_table(before, None), ddl.database, ddl.table)
        return None

    def encode_watermark(self, ts: int, topics: list[str]) -> Messages:
        """WATERMARK to every partition (TiCDC sends Simple's whatever the TiDB extension says)."""
        return Messages.to_every_partition(topics, None, self.compressed(self.wire.watermark(ts, self.clock())))


def simple_ddl_type(action: str) -> str:
    """The Simple protocol's DDL type: Canal's, but an exchanged partition is an ALTER (TiCDC ``getDDLType``)."""
    return "ALTER" if action == "exchange table partition" else canal_ddl_type(action)


def _one_name_or_all(names: pa.Array) -> pa.Array | str:
    """A batch's database or table names: the one name when all rows share it."""
    distinct = pc.unique(names)
    return distinct[0].as_py() if len(distinct) == 1 else names
