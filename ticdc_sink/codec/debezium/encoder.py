"""TiCDC's Debezium protocol, JSON (TiDB docs: *TiCDC Debezium Protocol*; TiCDC
``pkg/sink/codec/debezium/codec.go`` at pingcap/ticdc@b813e76f; the goldens' ``tests/golden/debezium/README.md``).

A row change is one message.  Its key is ``{"payload":{<handle-key columns>},
"schema":{..Key}}``; its value ``{"payload":{"source":{..},"ts_ms":<now>,
"transaction":null,"op":"c|u|d",<before/after>},"schema":{..Envelope}}``, in
the order TiCDC writes (insert ``before:null`` then ``after``, delete
``after:null`` then ``before``, update ``before`` (with old values) then
``after``).  ``debezium-disable-schema`` leaves the ``schema`` parts out.  With
``enable-tidb-extension`` the column field schemas carry ``tidb_type``, the
source schema ``commit_ts`` and ``cluster_id``, and a WATERMARK event
(``op:"m"``) follows every micro-batch on every partition.  Columns are typed
by ``field_types.py``; names go through TiCDC's sanitising; a schema-change
event is ``ddl_event.py``'s.
"""

from __future__ import annotations

import dataclasses
import logging

import pyarrow as pa
import pyarrow.compute as pc

from ...changes.contract import OP_DELETE, OP_INSERT, OP_UPDATE, ChangeBatch
from ...changes.dispatch import Routing
from ...config.sink import SinkConfig
from ...ddl.protocol_types import ddl_type, named_types
from ...ddl.statements import DDLChange, exchanged_tables, renamed_from
from ...errors import ContractError
from ...kafka.messages import BROADCAST, Messages
from ...table.schema import TableSchema
from ...table.value_text import join, physical_ms_text
from ...tso import tso_physical_ms
from ..base import Encoder
from ..shared.assembly import at_updates, row_messages
from ..shared.json_text import PLAIN, concat, object_parts, quote_json, quoted_names_of
from ..shared.names import sanitize_name, sanitize_topic_name
from .ddl_event import DEBEZIUM_CHANGE_TYPES
from .ddl_event import KEY_SCHEMA as DDL_KEY_SCHEMA
from .ddl_event import VALUE_FIELDS as DDL_VALUE_FIELDS
from .ddl_event import debezium_change_type, table_json
from .field_types import field_schema, value_fragments

log = logging.getLogger(__name__)

CONNECTOR_VERSION = "2.4.0.Final"


def _field(field_type: str, optional: bool, name: str, extra: str = "") -> str:
    return f'{{"type":"{field_type}","optional":{str(optional).lower()},{extra}"field":"{name}"}}'


_SOURCE_FIELDS = [
    _field("string", False, "version"), _field("string", False, "connector"), _field("string", False, "name"),
    _field("int64", False, "ts_ms"),
    _field("string", True, "snapshot", '"name":"io.debezium.data.Enum","version":1,"parameters":{"allowed":'
                                       '"true,last,false,incremental"},"default":"false",'),
    _field("string", False, "db"), _field("string", True, "sequence"), _field("string", True, "table"),
    _field("int64", False, "server_id"), _field("string", True, "gtid"), _field("string", False, "file"),
    _field("int64", False, "pos"), _field("int32", False, "row"), _field("int64", True, "thread"),
    _field("string", True, "query"),
]
_EXTENSION_SOURCE_FIELDS = [_field("int64", False, "commit_ts"), _field("string", False, "cluster_id")]
_TRANSACTION_SCHEMA = ('{"type":"struct","fields":[' + ",".join([
    _field("string", False, "id"), _field("int64", False, "total_order"),
    _field("int64", False, "data_collection_order")]) + '],"optional":true,"name":"event.block","version":1,'
                       '"field":"transaction"}')
# The payload's op and row members by operation (an update with old values gets its before row in between).
_ROWS_BY_OP = {OP_INSERT: '"c","before":null,"after":', OP_UPDATE: '"u","after":',
               OP_DELETE: '"d","after":null,"before":'}
_HEADS_BY_OP = pa.array([_ROWS_BY_OP.get(code) for code in range(max(_ROWS_BY_OP) + 1)], pa.string())

_CHANGE_TYPE_NAMES = named_types(DEBEZIUM_CHANGE_TYPES)


def schema_name(cluster: str, database: str, table: str) -> str:
    """``<cluster>.<db>.<table>``: cluster and database sanitised as Avro names, the table as a topic name."""
    return f"{sanitize_name(cluster)}.{sanitize_name(database)}.{sanitize_topic_name(table)}"


class DebeziumEncoder(Encoder):
    """Debezium keys and values for one table shape, a batch at a time."""

    def __init__(self, config: SinkConfig, table: TableSchema | None, **context):
        super().__init__(config, table, **context)
        extension = self.options.enable_tidb_extension
        self._source_schema = ('{"type":"struct","fields":[' + ",".join(
            _SOURCE_FIELDS + (_EXTENSION_SOURCE_FIELDS if extension else [])) +
            '],"optional":false,"name":"io.debezium.connector.mysql.Source","field":"source"}')
        self._ddl_value_schema = ('{"optional":false,"type":"struct","version":1,'
                                  '"name":"io.debezium.connector.mysql.SchemaChangeValue","fields":['
                                  + ",".join([self._source_schema, *DDL_VALUE_FIELDS]) + "]}")
        self._cluster = quote_json(self.options.cluster_id, style=PLAIN)
        self._unsent_actions: set[str] = set()
        if table is None:  # control events only
            return
        self._heads = [quote_json(c.name, style=PLAIN) + ":" for c in table.columns]
        self._fields = ",".join(field_schema(c, extension) for c in table.columns)
        self._key_positions = [i for i, c in enumerate(table.columns) if c.handle_key]
        self._key_fields = ",".join(field_schema(table.columns[i], extension) for i in self._key_positions)

    # -- rows

    def encode_rows(self, batch: ChangeBatch, routing: Routing) -> Messages:
        """One message per row, keyed by its handle-key columns."""
        n, columns = batch.num_rows, self.table.columns
        fragments = [value_fragments(batch.columns[c.name], c, self.config.time_zone) for c in columns]
        names = self._names(batch)
        key_object = concat(object_parts([self._heads[i] for i in self._key_positions],
                                         [fragments[i] for i in self._key_positions]), n)
        keys = concat(['{"payload":', key_object, *self._schema(names, self._key_schema), "}"], n)
        values = concat(['{"payload":{"source":', *self._source(batch),
                         f',"ts_ms":{self.clock()},"transaction":null,"op":', self._op_and_old_rows(batch),
                         *object_parts(self._heads, fragments), "}", *self._schema(names, self._value_schema), "}"],
                        n)
        # TiCDC compresses Debezium's keys and values alike (large-message-handle-compression).
        return row_messages(self.config, batch, routing, self.compressed(keys), self.compressed(values))

    def _source(self, batch: ChangeBatch) -> list:
        """The ``source`` block's pieces, joined in with the rest of the value (one copy of each row)."""
        return self._source_parts(physical_ms_text(batch.commit_ts), quoted_names_of(batch.databases, style=PLAIN),
                                  quoted_names_of(batch.tables, style=PLAIN),
                                  pa.array(batch.commit_ts).cast(pa.string()))

    def _source_parts(self, physical, database, table, commit_ts) -> list:
        """The pieces of the ``source`` block (constants or per-row arrays), for ``concat``."""
        return [f'{{"version":"{CONNECTOR_VERSION}","connector":"TiCDC","name":{self._cluster},"ts_ms":', physical,
                ',"snapshot":"false","db":', database, ',"table":', table,
                ',"server_id":0,"gtid":null,"file":"","pos":0,"row":0,"thread":0,"query":null,"commit_ts":',
                commit_ts, f',"cluster_id":{self._cluster}}}']

    def _op_and_old_rows(self, batch: ChangeBatch) -> pa.Array:
        """``"op",`` and the members before the new row: ``before`` of an insert, delete or update."""
        heads = _HEADS_BY_OP.take(pa.array(batch.ops))
        return at_updates(batch, heads, lambda before, updates: join('"u","before":', concat(object_parts(
            self._heads, [value_fragments(before[c.name], c, self.config.time_zone) for c in self.table.columns]),
            len(updates)), ',"after":'))

    # -- schemas

    def _names(self, batch: ChangeBatch) -> tuple[list[str], pa.Array | None]:
        """The batch's distinct ``<cluster>.<db>.<table>`` and, when there are several, each row's index."""
        pairs = join(batch.databases, "\x00", batch.tables)
        distinct = pc.unique(pairs)
        names = [schema_name(self.options.cluster_id, *pair.split("\x00")) for pair in distinct.to_pylist()]
        return names, None if len(names) == 1 else pc.index_in(pairs, value_set=distinct)

    def _schema(self, names: tuple[list[str], pa.Array | None], build) -> list:
        """``,"schema":{..}`` for each row's name, or nothing with ``debezium-disable-schema``."""
        if self.options.debezium_disable_schema:
            return []
        distinct, row_index = names
        if row_index is None:
            return [',"schema":' + build(distinct[0])]
        return [',"schema":', pa.array([build(name) for name in distinct], pa.string()).take(row_index)]

    def _key_schema(self, name: str, fields: str | None = None) -> str:
        fields = self._key_fields if fields is None else fields
        return f'{{"type":"struct","name":"{name}.Key","optional":false,"fields":[{fields}]}}'

    def _value_schema(self, name: str) -> str:
        rows = [f'{{"type":"struct","optional":true,"name":"{name}.Value","field":"{member}","fields":'
                f'[{self._fields}]}}' for member in ("before", "after")]
        return self._envelope(name, rows)

    def _envelope(self, name: str, row_fields: list[str]) -> str:
        fields = [*row_fields, self._source_schema, _field("string", False, "op"), _field("int64", True, "ts_ms"),
                  _TRANSACTION_SCHEMA]
        return (f'{{"type":"struct","optional":false,"name":"{name}.Envelope","version":1,'
                f'"fields":[{",".join(fields)}]}}')

    # -- control events

    def encode_watermark(self, ts: int, topics: list[str]) -> Messages | None:
        """A WATERMARK event (``op:"m"``) to every partition of every topic, with the TiDB extension only."""
        if not self.options.enable_tidb_extension:
            return None
        name = f"{sanitize_name(self.options.cluster_id)}.watermark"
        source = "".join(self._source_parts(str(tso_physical_ms(ts)), '""', '""', str(ts)))
        key = '{"payload":{}' + self._fixed_schema(self._key_schema(name, "")) + "}"
        value = (f'{{"payload":{{"source":{source},"ts_ms":{self.clock()},"transaction":null,"op":"m"}}'
                 + self._fixed_schema(self._envelope(name, [])) + "}")
        return Messages.to_every_partition(topics, self.compressed(key), self.compressed(value))

    def check_ddl(self, ddl: DDLChange) -> None:
        if self.ddl_type(ddl) is not None:
            self._event_tables(ddl)

    def ddl_type(self, ddl: DDLChange) -> str | None:
        """CREATE, ALTER or DROP: the ``_ddl_type`` override, else by the statement's action (None: not sent)."""
        return ddl_type(ddl, debezium_change_type, _CHANGE_TYPE_NAMES, self.config.ddl_type_column,
                        f"a Debezium change type is one of {', '.join(DEBEZIUM_CHANGE_TYPES)}")

    def encode_ddl(self, ddl: DDLChange, topic: str) -> Messages | None:
        """A schema-change event to every partition of the topic; none for an action TiCDC sends none for."""
        change = self.ddl_type(ddl)
        if change is None:
            if ddl.action not in self._unsent_actions:
                self._unsent_actions.add(ddl.action)
                log.warning("ticdc sink: Debezium has no schema-change event for %r (TiDB action %s), as in "
                            "TiCDC; nothing is sent. Give it a %s of CREATE, ALTER or DROP to send one",
                            ddl.query, ddl.action, self.config.ddl_type_column)
            return None
        names, ddl = self._event_tables(ddl)
        database, table = quote_json(ddl.database, style=PLAIN), quote_json(ddl.table, style=PLAIN)
        key = '{"payload":{"databaseName":' + database + "}" + self._fixed_schema(DDL_KEY_SCHEMA) + "}"
        source = "".join(self._source_parts(str(tso_physical_ms(ddl.commit_ts)), database, table,
                                            str(ddl.commit_ts)))
        value = (f'{{"payload":{{"source":{source},"ts_ms":{self.clock()},"databaseName":{database},'
                 f'"schemaName":null,"ddl":{quote_json(ddl.query, style=PLAIN)},'
                 f'"tableChanges":[{self._table_change(ddl, change, names)}]}}'
                 + self._fixed_schema(self._ddl_value_schema) + "}")
        return Messages.one(topic, BROADCAST, self.compressed(key), self.compressed(value))

    def _fixed_schema(self, schema: str) -> str:
        return "" if self.options.debezium_disable_schema else ',"schema":' + schema

    def _event_tables(self, ddl: DDLChange) -> tuple[list[tuple[str, str]], DDLChange]:
        """The tables ``tableChanges[].id`` names, and the DDL as TiCDC's event sees it: a RENAME names the old
        table and the new one; an EXCHANGE PARTITION is the plain table's event naming the partitioned one."""
        if ddl.action in ("rename table", "rename tables"):
            old = renamed_from(ddl)
            if old is None:
                raise ContractError(self.config.ddl_column, ddl.query, f"DDL of {ddl.database}.{ddl.table}",
                                    "Debezium's RENAME event names the old table, and this statement renames "
                                    "no table to the DDL row's table")
            return [old, (ddl.database, ddl.table)], ddl
        if ddl.action == "exchange table partition":
            tables = exchanged_tables(ddl)
            if tables is None:
                raise ContractError(self.config.ddl_column, ddl.query, f"DDL of {ddl.database}.{ddl.table}",
                                    "Debezium's EXCHANGE PARTITION event names both tables: write it as "
                                    "ALTER TABLE <partitioned> EXCHANGE PARTITION <p> WITH TABLE <table>")
            partitioned, (database, table) = tables
            return [partitioned], dataclasses.replace(ddl, database=database, table=table)
        return [(ddl.database, ddl.table)], ddl

    def _table_change(self, ddl: DDLChange, change: str, names: list[tuple[str, str]]) -> str:
        """The one ``tableChanges`` entry, or none for a database-level DDL and TRUNCATE TABLE."""
        if not ddl.table or ddl.action == "truncate table":
            return ""
        table_id = quote_json(",".join(f'"{database}"."{table}"' for database, table in names), style=PLAIN)
        if ddl.action == "drop table":
            return f'{{"type":"{change}","id":{table_id},"table":null}}'
        if self.table is None:
            raise ContractError(self.config.ddl_column, ddl.query, f"DDL of {ddl.database}.{ddl.table}",
                                "Debezium's schema-change event describes the table's columns: send it as a "
                                "DDL row of a DataFrame with the table's columns, not with emit_ddl")
        return f'{{"type":"{change}","id":{table_id},"table":{table_json(self.table, ddl.query)}}}'
