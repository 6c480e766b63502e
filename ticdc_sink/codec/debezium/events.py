"""Debezium's events as Python structures, written by both of its encoders: the JSON one renders them
(``encoder.render``), the Avro one converts their Connect schemas (``avro_schema.connect_to_avro``) and writes
their payloads with fastavro, as TiCDC converts its Debezium events (``avro.go`` ``encodeAvroMessage``).

An event is a document ``{"payload": .., "schema": <Connect schema>}``, dicts in
the order TiCDC writes their members.  The control events are the DDL
schema-change event (key ``{databaseName}``; value ``source``, ``ts_ms``,
``databaseName``, ``schemaName``, ``ddl`` and ``tableChanges``, which
``ddl_event.py`` describes) and the WATERMARK (key ``{}``; value ``source``,
``ts_ms``, ``transaction`` and ``op`` m, in the rows' envelope).  Their
``source`` schema is the encoder's: Debezium's, or Avro's named after the
event.  The rows' JSON encoder renders the source, key and envelope from here
too.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Callable

from ...config.sink import SinkConfig
from ...ddl.protocol_types import ddl_type, named_types
from ...ddl.statements import DDLChange, exchanged_tables, renamed_from
from ...errors import ContractError
from ...table.schema import TableSchema
from ...tso import tso_physical_ms
from ..shared.names import sanitize_name
from .ddl_event import DEBEZIUM_CHANGE_TYPES, KEY_SCHEMA, debezium_change_type, describe_table, value_schema

log = logging.getLogger(__name__)

CONNECTOR_VERSION = "2.4.0.Final"
_CHANGE_TYPE_NAMES = named_types(DEBEZIUM_CHANGE_TYPES)


def _field(field_type: str, optional: bool, field: str, /, **rest) -> dict:
    """A field of the envelope and source schemas, in TiCDC's order: type, optional, the rest, field."""
    return {"type": field_type, "optional": optional, **rest, "field": field}


_SOURCE_FIELDS = [
    _field("string", False, "version"), _field("string", False, "connector"), _field("string", False, "name"),
    _field("int64", False, "ts_ms"),
    _field("string", True, "snapshot", name="io.debezium.data.Enum", version=1,
           parameters={"allowed": "true,last,false,incremental"}, default="false"),
    _field("string", False, "db"), _field("string", True, "sequence"), _field("string", True, "table"),
    _field("int64", False, "server_id"), _field("string", True, "gtid"), _field("string", False, "file"),
    _field("int64", False, "pos"), _field("int32", False, "row"), _field("int64", True, "thread"),
    _field("string", True, "query"),
]
_EXTENSION_SOURCE_FIELDS = [_field("int64", False, "commit_ts"), _field("string", False, "cluster_id")]
_START_TS_FIELD = _field("int64", False, "start_ts")
# The envelope's fields after its rows and source.
_ENVELOPE_TAIL = [_field("string", False, "op"), _field("int64", True, "ts_ms"),
                  {"type": "struct", "fields": [_field("string", False, "id"), _field("int64", False, "total_order"),
                                                _field("int64", False, "data_collection_order")],
                   "optional": True, "name": "event.block", "version": 1, "field": "transaction"}]


def source_schema(extension: bool, start_ts: bool = False) -> dict:
    """Debezium's ``source`` schema: with enable-tidb-extension, ``commit_ts`` and ``cluster_id`` too; a row's
    with debezium-include-start-ts, ``start_ts`` last."""
    fields = _SOURCE_FIELDS + (_EXTENSION_SOURCE_FIELDS if extension else []) + ([_START_TS_FIELD] if start_ts else [])
    return {"type": "struct", "fields": fields, "optional": False, "name": "io.debezium.connector.mysql.Source",
            "field": "source"}


def source_payload(cluster: str, ts_ms, database, table, commit_ts, start_ts=None) -> dict:
    """The ``source`` block of an event: TiCDC's constants around the commit's ms, names and ts; a row's
    ``start_ts`` (debezium-include-start-ts) between ``commit_ts`` and ``cluster_id``."""
    source = {"version": CONNECTOR_VERSION, "connector": "TiCDC", "name": cluster, "ts_ms": ts_ms,
              "snapshot": "false", "db": database, "table": table, "server_id": 0, "gtid": None, "file": "",
              "pos": 0, "row": 0, "thread": 0, "query": None, "commit_ts": commit_ts}
    if start_ts is not None:
        source["start_ts"] = start_ts
    return {**source, "cluster_id": cluster}


def key_schema(name: str, fields: list) -> dict:
    return {"type": "struct", "name": f"{name}.Key", "optional": False, "fields": fields}


def envelope_schema(name: str, row_fields: list, source) -> dict:
    """The value schema of a row event (``before`` and ``after`` in ``row_fields``) or of a WATERMARK (none)."""
    return {"type": "struct", "optional": False, "name": f"{name}.Envelope", "version": 1,
            "fields": [*row_fields, source, *_ENVELOPE_TAIL]}


class ControlEvents:
    """The DDL and WATERMARK documents of an encoder's table (None: control events only), with the ``source``
    schema each encoder gives."""

    def __init__(self, config: SinkConfig, table: TableSchema | None, clock: Callable[[], int]):
        self.config, self.table, self.clock = config, table, clock
        self.cluster = config.protocol_options.cluster_id
        self.watermark_name = f"{sanitize_name(self.cluster)}.watermark"
        self._unsent_actions: set[str] = set()

    def watermark(self, ts: int, source) -> tuple[dict, dict]:
        """The WATERMARK at ``ts``: an empty key, and the rows' envelope with no rows and ``op`` m."""
        payload = {"source": source_payload(self.cluster, tso_physical_ms(ts), "", "", ts), "ts_ms": self.clock(),
                   "transaction": None, "op": "m"}
        return ({"payload": {}, "schema": key_schema(self.watermark_name, [])},
                {"payload": payload, "schema": envelope_schema(self.watermark_name, [], source)})

    def ddl_type(self, ddl: DDLChange) -> str | None:
        """CREATE, ALTER or DROP: the ``_ddl_type`` override, else by the statement's action (None: not sent)."""
        return ddl_type(ddl, debezium_change_type, _CHANGE_TYPE_NAMES, self.config.ddl_type_column,
                        f"a Debezium change type is one of {', '.join(DEBEZIUM_CHANGE_TYPES)}")

    def check_ddl(self, ddl: DDLChange) -> None:
        if self.ddl_type(ddl) is not None:
            self._event_tables(ddl)

    def ddl_event(self, ddl: DDLChange, source) -> tuple[dict, dict] | None:
        """The schema-change event's key and value; none for an action TiCDC sends none for."""
        change = self.ddl_type(ddl)
        if change is None:
            if ddl.action not in self._unsent_actions:
                self._unsent_actions.add(ddl.action)
                log.warning("ticdc sink: Debezium has no schema-change event for %r (TiDB action %s), as in "
                            "TiCDC; nothing is sent. Give it a %s of CREATE, ALTER or DROP to send one",
                            ddl.query, ddl.action, self.config.ddl_type_column)
            return None
        names, ddl = self._event_tables(ddl)
        payload = {"source": source_payload(self.cluster, tso_physical_ms(ddl.commit_ts), ddl.database, ddl.table,
                                            ddl.commit_ts),
                   "ts_ms": self.clock(), "databaseName": ddl.database, "schemaName": None, "ddl": ddl.query,
                   "tableChanges": self._table_changes(ddl, change, names)}
        return ({"payload": {"databaseName": ddl.database}, "schema": KEY_SCHEMA},
                {"payload": payload, "schema": value_schema(source)})

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

    def _table_changes(self, ddl: DDLChange, change: str, names: list[tuple[str, str]]) -> list[dict]:
        """The one ``tableChanges`` entry, or none for a database-level DDL and TRUNCATE TABLE."""
        if not ddl.table or ddl.action == "truncate table":
            return []
        table_id = ",".join(f'"{database}"."{table}"' for database, table in names)
        if ddl.action == "drop table":
            return [{"type": change, "id": table_id, "table": None}]
        if self.table is None:
            raise ContractError(self.config.ddl_column, ddl.query, f"DDL of {ddl.database}.{ddl.table}",
                                "Debezium's schema-change event describes the table's columns: send it as a "
                                "DDL row of a DataFrame with the table's columns, not with emit_ddl")
        return [{"type": change, "id": table_id, "table": describe_table(self.table, ddl.query)}]
