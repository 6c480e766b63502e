"""Canal-JSON messages as TiCDC writes them (TiDB docs: *TiCDC Canal-JSON Protocol*; TiCDC
``pkg/sink/codec/canal/canal_json_encoder.go`` at pingcap/ticdc@b813e76f; the goldens' ``tests/golden/canal-json/README.md``).

A DML message is one row, with TiCDC's field order: ``id, database, table,
pkNames, isDdl, type, es, ts, sql, sqlType, mysqlType, old, data[, _tidb]``.
Values are JSON strings (``null`` for NULL), binary values read as
ISO-8859-1.  The encoder assembles every message of a batch column by column
with Arrow string kernels: each column is rendered and JSON-quoted once for the
whole batch, and the messages are the element-wise concatenation of those
fragments with the constant parts.  Kafka keys are empty; DDL goes to
partition 0; TIDB_WATERMARK events exist only with ``enable-tidb-extension``,
which with ``output-row-key`` also ends each row's ``_tidb`` with its TiKV key
(``table/row_key.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...changes.contract import OP_DELETE, OP_INSERT, OP_UPDATE, ChangeBatch
from ...changes.dispatch import Routing
from ...config.sink import SinkConfig
from ...ddl.protocol_types import CANAL_DDL_TYPES, CANAL_TYPE_NAMES, canal_ddl_type, ddl_type
from ...ddl.statements import DDLChange
from ...errors import ConfigError
from ...kafka.messages import Messages
from ...table.row_key import RowKeyEncoder
from ...table.schema import Column, TableSchema
from ...table.text_join import string_scalar
from ...table.value_text import at_rows, physical_ms_text, value_text
from ...tso import tso_physical_ms
from ..base import Encoder
from ..shared import java_sql_types as java
from ..shared.assembly import at_updates, row_messages
from ..shared.json_text import (base64_fragments, changed_members_object, concat, json_fragments, latin1_json_fragments,
                                object_parts, quote_json, quoted_names_of)

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
        type_name = (lambda c: c.type.full_name) if self.options.content_compatible else (lambda c: c.type.short_name)
        # TiCDC builds mysqlType from a Go map, so consumers must not rely on its order; column order here.
        self._mysql_types = "{" + ",".join(
            f"{q}:{quote_json(type_name(c))}" for q, c in zip(self._quoted_names, table.columns)) + "}"
        self._java_types = [java_sql_type(c) for c in table.columns]
        # output-row-key: the row's TiKV key, of the whole table whichever columns the messages carry.
        self._row_keys = RowKeyEncoder(table.whole or table, self.options.table_id, f"{config.database}.{config.table}",
                                       config.row_id_column) if self.options.output_row_key else None
        # TiCDC's delete-only-output-handle-key-columns: a DELETE's sqlType, mysqlType and data name the handle
        # key only (and carry no onlyHandleKey mark), as the same encoder renders the table's handle-key shape;
        # nothing to do where the table is that shape already (the encoder of ``handle_key_only``).
        self._handle_key_deletes = None
        shape = table.handle_key_only("delete-only-output-handle-key-columns") \
            if self.options.delete_only_output_handle_key_columns else table
        if len(shape.columns) < len(table.columns):
            self._handle_key_deletes = CanalJSONEncoder(config, shape, clock=self.clock)

    # -- rows

    def encode_values(self, batch: ChangeBatch, locations: pa.Array | None = None) -> pa.Array:
        """One Canal-JSON document per row of the batch, as a string array (``locations``: where claim-check
        kept each row's whole message, for the encoder of ``handle_key_only``)."""
        build_ms = self.clock()
        columns = self.table.columns
        new_frags = [self._fragments(batch.columns[c.name], c) for c in columns]

        has_old = batch.before is not None
        is_update = batch.ops == OP_UPDATE
        event_types = np.array(['"INSERT"', '"INSERT"', '"UPDATE"', '"DELETE"'], dtype=object)
        ops = batch.ops if has_old else np.where(is_update, OP_INSERT, batch.ops)  # old value off
        type_json = pa.array(event_types[ops], pa.string())

        old_json = at_updates(batch, "null", lambda before, updates: self._old_document(
            [f.take(updates) for f in new_frags], [self._fragments(before[c.name], c) for c in columns]))

        es = physical_ms_text(batch.commit_ts)
        databases, tables = self.route.target_names(batch.databases, batch.tables)
        parts: list[Any] = [
            '{"id":0,"database":', quoted_names_of(databases),
            ',"table":', quoted_names_of(tables),
            f',"pkNames":{self._pk_names},"isDdl":false,"type":', type_json,
            ',"es":', es,
            f',"ts":{build_ms},"sql":"","sqlType":', *self._sql_type_parts(batch),
            f',"mysqlType":{self._mysql_types},"old":', old_json,
            ',"data":', *object_parts(self._member_heads, new_frags, "[{", "}]"),
        ]
        if self.options.enable_tidb_extension:
            parts += [',"_tidb":{"commitTs":', pa.array(batch.commit_ts).cast(pa.string())]
            if locations is not None:  # TiCDC's claim-check message is its handle-key-only one, unmarked, pointing
                parts += [',"claimCheckLocation":', json_fragments(locations)]
            elif self.marks_handle_key_only:
                parts.append(',"onlyHandleKey":true')
            if self._row_keys is not None:  # last in _tidb, after any mark, as TiCDC writes it
                parts += [',"rowkey":', base64_fragments(self._row_keys_of(batch))]
            parts.append("}")
        parts.append("}")
        values = concat(parts, batch.num_rows)
        if self._handle_key_deletes is not None and (is_delete := batch.ops == OP_DELETE).any():
            deletes = self._handle_key_deletes.encode_values(batch.rows(np.flatnonzero(is_delete)))
            values = at_rows(values, is_delete, deletes, batch.num_rows)
        return values

    def encode_rows(self, batch: ChangeBatch, routing: Routing) -> Messages:
        """One message per row, without a key."""
        return row_messages(self.config, batch, routing, None, self.compressed(self.encode_values(batch)), self)

    def large_row_messages(self, rows: ChangeBatch, locations: pa.Array | None) -> tuple:
        return None, self.compressed(self.handle_key_only.encode_values(rows, locations))

    def _row_keys_of(self, batch: ChangeBatch) -> pa.Array:
        """The rows' TiKV keys; rows of another table than the one table-id names are refused."""
        tables, _ = batch.tables_of_rows
        named = (self.config.database, self.config.table)
        others = [f"{database}.{table}" for database, table in tables if (database, table) != named]
        if others:
            raise ConfigError("table-id", self.options.table_id,
                              f"is the id of {named[0]}.{named[1]}, and output-row-key cannot key rows of "
                              f"{', '.join(others)}: write each table with its own table-id")
        return self._row_keys.keys(batch.columns, batch.row_ids)

    def _fragments(self, values: pa.Array, column: Column) -> pa.Array:
        """The JSON value of each row of a column: a quoted string, or ``null``."""
        text = value_text(values, column.type, self.config.time_zone)
        if column.type.binary and column.type.is_string:
            return latin1_json_fragments(text)
        # Numbers, dates and times render without characters that JSON escapes.
        may_escape = column.type.is_string or column.type.kind == "json"
        return json_fragments(text, escape=may_escape)

    def _old_document(self, new_frags: list[pa.Array], old_frags: list[pa.Array]) -> pa.Array:
        if self.options.only_output_updated_columns:
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

    def ddl_type(self, ddl: DDLChange) -> str:
        return ddl_type(ddl, canal_ddl_type, CANAL_TYPE_NAMES, self.config.ddl_type_column,
                        f"a Canal DDL type is one of {', '.join(CANAL_DDL_TYPES)}")

    def encode_ddl(self, ddl: DDLChange, topic: str) -> Messages:
        """Partition 0 of the topic, as TiCDC sends Canal DDL."""
        extension = f'"commitTs":{ddl.commit_ts}' if self.options.enable_tidb_extension else None
        value = self._control(ddl.database, ddl.table, True, self.ddl_type(ddl), ddl.commit_ts, ddl.query,
                              extension)
        return Messages.one(topic, 0, None, self.compressed(value))

    def encode_watermark(self, ts: int, topics: list[str]) -> Messages | None:
        """TIDB_WATERMARK to every partition, with ``enable-tidb-extension`` only."""
        if not self.options.enable_tidb_extension:
            return None
        value = self._control("", "", False, "TIDB_WATERMARK", ts, "", f'"watermarkTs":{ts}')
        return Messages.to_every_partition(topics, None, self.compressed(value))
