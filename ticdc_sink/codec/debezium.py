"""TiCDC's Debezium protocol, JSON (spec: ticdc-debezium-protocol.md; reference section 5).

A row change is one message.  Its key is ``{"payload":{<handle-key columns>},
"schema":{..Key}}``; its value ``{"payload":{"source":{..},"ts_ms":<now>,
"transaction":null,"op":"c|u|d",<before/after>},"schema":{..Envelope}}``, in
the order TiCDC writes (insert ``before:null`` then ``after``, delete
``after:null`` then ``before``, update ``before`` (with old values) then
``after``).  ``debezium-disable-schema`` leaves the ``schema`` parts out.  With
``enable-tidb-extension`` the column field schemas carry ``tidb_type``, the
source schema ``commit_ts`` and ``cluster_id``, and a WATERMARK event
(``op:"m"``) follows every micro-batch on every partition.  Columns are typed
by ``debezium_types``; names go through TiCDC's sanitising.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import json
import logging
from decimal import Decimal
from typing import Any, Callable
from zoneinfo import ZoneInfo

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..changes import OP_DELETE, OP_INSERT, OP_UPDATE, ChangeBatch
from ..config import SinkConfig
from ..ddl import DEBEZIUM_CHANGE_TYPES, DDLChange, debezium_change_type, exchanged_tables, renamed_from
from ..dispatch import Routing
from ..errors import ContractError
from ..messages import BROADCAST, Messages
from ..mysql_types import TableSchema, parse_mysql_type, split_column_types, tso_physical_ms
from ..render import at_rows, duration_text, join, physical_ms_text
from .base import DDLEvent, Decoder, Encoder, RowEvent, WatermarkEvent
from .debezium_ddl import KEY_SCHEMA as DDL_KEY_SCHEMA
from .debezium_ddl import VALUE_FIELDS as DDL_VALUE_FIELDS
from .debezium_ddl import table_json
from .debezium_types import field_schema, value_fragments
from .json_text import PLAIN, concat, object_parts, quote_json, quoted_names_of
from .member_names import allowed_members, enum_index, set_bitmask
from .tidb_names import sanitize_name, sanitize_topic_name

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


def schema_name(cluster: str, database: str, table: str) -> str:
    """``<cluster>.<db>.<table>``: cluster and database sanitised as Avro names, the table as a topic name."""
    return f"{sanitize_name(cluster)}.{sanitize_name(database)}.{sanitize_topic_name(table)}"


class DebeziumEncoder(Encoder):
    """Debezium keys and values for one table shape, a batch at a time."""

    def __init__(self, config: SinkConfig, table: TableSchema | None, **context):
        super().__init__(config, table, **context)
        extension = config.enable_tidb_extension
        self._source_schema = ('{"type":"struct","fields":[' + ",".join(
            _SOURCE_FIELDS + (_EXTENSION_SOURCE_FIELDS if extension else [])) +
            '],"optional":false,"name":"io.debezium.connector.mysql.Source","field":"source"}')
        self._ddl_value_schema = ('{"optional":false,"type":"struct","version":1,'
                                  '"name":"io.debezium.connector.mysql.SchemaChangeValue","fields":['
                                  + ",".join([self._source_schema, *DDL_VALUE_FIELDS]) + "]}")
        self._cluster = quote_json(config.cluster_id, style=PLAIN)
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
        return Messages(routing.topics, routing.topic_of_message, routing.partition_of_row, keys, values,
                        np.arange(n))

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
        ops = batch.ops
        heads = _HEADS_BY_OP.take(pa.array(ops))
        is_update = ops == OP_UPDATE
        if batch.before is not None and is_update.any():
            updates = pa.array(np.flatnonzero(is_update))
            old = [value_fragments(batch.before[c.name].take(updates), c, self.config.time_zone)
                   for c in self.table.columns]
            with_old = join('"u","before":', concat(object_parts(self._heads, old), len(updates)), ',"after":')
            heads = at_rows(heads, is_update, with_old, batch.num_rows)
        return heads

    # -- schemas

    def _names(self, batch: ChangeBatch) -> tuple[list[str], pa.Array | None]:
        """The batch's distinct ``<cluster>.<db>.<table>`` and, when there are several, each row's index."""
        pairs = join(batch.databases, "\x00", batch.tables)
        distinct = pc.unique(pairs)
        names = [schema_name(self.config.cluster_id, *pair.split("\x00")) for pair in distinct.to_pylist()]
        return names, None if len(names) == 1 else pc.index_in(pairs, value_set=distinct)

    def _schema(self, names: tuple[list[str], pa.Array | None], build) -> list:
        """``,"schema":{..}`` for each row's name, or nothing with ``debezium-disable-schema``."""
        if self.config.debezium_disable_schema:
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
        if not self.config.enable_tidb_extension:
            return None
        name = f"{sanitize_name(self.config.cluster_id)}.watermark"
        source = "".join(self._source_parts(str(tso_physical_ms(ts)), '""', '""', str(ts)))
        key = '{"payload":{}' + self._fixed_schema(self._key_schema(name, "")) + "}"
        value = (f'{{"payload":{{"source":{source},"ts_ms":{self.clock()},"transaction":null,"op":"m"}}'
                 + self._fixed_schema(self._envelope(name, [])) + "}")
        return Messages.to_every_partition(topics, key, value)

    def check_ddl(self, ddl: DDLChange) -> None:
        if self._change_type(ddl) is not None:
            self._event_tables(ddl)

    def _change_type(self, ddl: DDLChange) -> str | None:
        """CREATE, ALTER or DROP: the ``_ddl_type`` override, else by the statement's action (None: not sent)."""
        if not ddl.type_override:
            return debezium_change_type(ddl.action)
        change = ddl.type_override.strip().upper()
        if change not in DEBEZIUM_CHANGE_TYPES:
            raise ContractError(self.config.ddl_type_column, ddl.type_override, f"DDL {ddl.query!r}",
                                f"a Debezium change type is one of {', '.join(DEBEZIUM_CHANGE_TYPES)}")
        return change

    def encode_ddl(self, ddl: DDLChange, topic: str) -> Messages | None:
        """A schema-change event to every partition of the topic; none for an action TiCDC sends none for."""
        change = self._change_type(ddl)
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
        return Messages.one(topic, BROADCAST, key, value)

    def _fixed_schema(self, schema: str) -> str:
        return "" if self.config.debezium_disable_schema else ',"schema":' + schema

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


# ---------------------------------------------------------------------------
# Decoding

_ROW_KINDS = {"c": "INSERT", "r": "INSERT", "u": "UPDATE", "d": "DELETE"}
_BINARY_TIDB_TYPES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}
_EPOCH = dt.datetime(1970, 1, 1)


class DebeziumDecoder(Decoder):
    """Reads Debezium messages back into events, typing values by their field schemas.

    Values come back as the other decoders give them: dates, naive datetimes
    (TIMESTAMP in the sink's ``time-zone``), TIME as text, ENUM index, SET
    bitmask and BIT as numbers.  ``tidb_type`` (``enable-tidb-extension``)
    tells BIGINT UNSIGNED, DECIMAL and binary strings apart; without it they
    read as Debezium typed them (int64, double, base64 text).  TIME's fraction
    digits come from ``column-types`` when the config names the column.  With
    ``debezium-disable-schema`` the values are the JSON as it is.
    """

    def __init__(self, config: SinkConfig | None = None):
        super().__init__(config)
        self._zone = ZoneInfo(config.time_zone if config else "UTC")
        self._time_fsp = {name: parse_mysql_type(text).fsp
                          for name, text in split_column_types(config.column_types or "")} if config else {}

    def decode(self, key: bytes | None, value: bytes) -> list[RowEvent | DDLEvent | WatermarkEvent]:
        message = json.loads(value, parse_float=Decimal)
        payload, source = message["payload"], message["payload"]["source"]
        if "tableChanges" in payload:
            changes = payload["tableChanges"]
            return [DDLEvent(payload["databaseName"], source["table"], payload["ddl"],
                             changes[0]["type"] if changes else "", source.get("commit_ts"))]
        if payload["op"] == "m":
            return [WatermarkEvent(source["commit_ts"])]
        fields = self._converters(message.get("schema"))
        tidb_types = {name: tidb_type for name, (tidb_type, _) in fields.items() if tidb_type}

        def typed(row: dict | None) -> dict | None:
            if row is None:
                return None
            return {name: None if v is None else fields[name][1](v) if name in fields else v for name, v in row.items()}

        kind = _ROW_KINDS[payload["op"]]
        new, old = typed(payload.get("after")), typed(payload.get("before"))
        return [RowEvent(type=kind, database=source["db"], table=source["table"], commit_ts=source.get("commit_ts"),
                         columns=old if kind == "DELETE" else new, old=old if kind == "UPDATE" else None,
                         primary_keys=list(json.loads(key)["payload"]) if key else [], mysql_types=tidb_types)]

    def _converters(self, schema: dict | None) -> dict[str, tuple[str | None, Callable[[Any], Any]]]:
        """Per column of the envelope schema: its ``tidb_type`` and how its JSON value becomes the TiDB value."""
        if schema is None:
            return {}
        rows = next(f for f in schema["fields"] if f["field"] in ("after", "before"))
        return {f["field"]: (f.get("tidb_type"), self._converter(f)) for f in rows["fields"]}

    def _converter(self, field: dict) -> Callable[[Any], Any]:
        name, schema_type, tidb_type = field.get("name"), field["type"], field.get("tidb_type", "")
        parameters = field.get("parameters", {})
        if name == "io.debezium.time.Date":
            return lambda days: (_EPOCH + dt.timedelta(days=days)).date()
        if name == "io.debezium.time.Timestamp":
            return lambda ms: _EPOCH + dt.timedelta(milliseconds=ms)
        if name == "io.debezium.time.MicroTimestamp":
            return lambda us: _EPOCH + dt.timedelta(microseconds=us)
        if name == "io.debezium.time.ZonedTimestamp":
            return lambda text: dt.datetime.fromisoformat(text).astimezone(self._zone).replace(tzinfo=None)
        if name == "io.debezium.time.MicroTime":
            fsp = self._time_fsp.get(field["field"])
            return lambda us: _time_text(us, fsp)
        if name == "io.debezium.data.Enum":
            members = allowed_members(parameters.get("allowed", ""))
            return lambda member: enum_index(members, member)
        if name == "io.debezium.data.EnumSet":
            members = allowed_members(parameters.get("allowed", ""), escaped=False)
            return lambda names: set_bitmask(members, names)
        if name == "io.debezium.data.Bits":
            return lambda text: int.from_bytes(base64.b64decode(text), "little")
        if schema_type == "boolean":  # BIT(1)
            return int
        if tidb_type == "bigint unsigned":
            return lambda number: number % 2**64  # TiCDC wrote the uint64's bits as an int64
        if schema_type in ("float", "double"):
            return Decimal if tidb_type == "decimal" else float
        if tidb_type in _BINARY_TIDB_TYPES:
            return base64.b64decode
        return lambda v: v


def _time_text(micros: int, fsp: int | None) -> str:
    """TiDB's TIME text; without a known precision, the fraction's significant digits."""
    if fsp is None:
        fraction = f"{abs(micros) % 1_000_000:06d}".rstrip("0")
        fsp = len(fraction)
    return duration_text(pa.array([micros], pa.int64()), fsp)[0].as_py()
