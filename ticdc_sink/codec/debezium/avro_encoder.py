"""TiCDC's ``debezium-avro`` (TiCDC ``pkg/sink/codec/debezium/avro.go`` at pingcap/ticdc@b813e76f, added in
pingcap/ticdc#5475; the goldens' ``tests/golden/debezium-avro/README.md``).

A row change is one message, key and value in the registry's wire format
(Confluent's, or AWS Glue's: ``shared/glue_schema_registry.py``): the key a
record of the handle-key columns, the value the envelope ``before``,
``after``, ``source`` (``version`` 2.4.0.Final, ``connector`` TiCDC, the
cluster, the commit's physical ms, the database and table, ``commit_ts`` and
``cluster_id``), ``op`` (``c``, ``u``, ``d``) and ``ts_ms`` (the clock); there
is no ``transaction``.  An insert has no ``before``, a delete no ``after`` (and
no tombstone follows), an update its old row where the input has one (not with
debezium-output-old-value=false).  The
schemas (``schema.py``) are registered under ``<topic>-key`` and
``<topic>-value`` the first time a task writes a table to a topic.  Values are
Debezium's (``debezium/field_types.py``) in Avro types: days, epoch milli- or
microseconds, TIMESTAMP as UTC text, TIME as microseconds, Connect's Decimal
(or text), binary strings and BIT(n) as bytes.  Records are built a column at a
time (``shared/avro_binary.py``).  Nothing is compressed, and large messages
are refused, as in TiCDC.  With ``enable-tidb-extension`` and
``avro-enable-watermark``, DDL and WATERMARK events are ``events.py``'s, written
straight from its structures.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from decimal import Decimal

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...changes.contract import OP_DELETE, OP_UPDATE, ChangeBatch
from ...changes.dispatch import Routing
from ...config.sink import SinkConfig
from ...ddl.statements import DDLChange
from ...errors import ContractError
from ...kafka.messages import BROADCAST, Messages
from ...table.schema import Column, TableSchema
from ...table.text_join import join
from ...table.value_text import bit_bytes, decimal_text, enum_names, set_names, timestamp_text, value_text
from ...tso import TSO_LOGICAL_BITS
from ..base import Encoder
from ..shared.assembly import row_messages
from ..shared.avro_binary import (booleans, concat, decimal_bytes, fixed_width, length_prefixed, long_bytes, nullable,
                                  string_bytes, varints)
from ..shared.schema_registry import UsesSchemaRegistry, check_client_settings
from .avro_schema import (connect_to_avro, decimal_precision, envelope_schema, key_schema, namespace, schema_text,
                          source_connect)
from .events import CONNECTOR_VERSION, ControlEvents
from .field_types import null_defaults, two_digit_years

_NULL = b"\x00"  # a union's null branch
_VALUE = b"\x02"  # a union's second branch
_OPS = pa.array([None, b"\x02c", b"\x02u", b"\x02d"], pa.binary())  # op by the contract's op codes, Avro strings
_MAX_LONG = 2**63 - 1


class DebeziumAvroEncoder(UsesSchemaRegistry, Encoder):
    """Keys and values of one table shape, its schemas registered once per topic and table in a task."""

    def __init__(self, config: SinkConfig, table: TableSchema | None, **context):
        super().__init__(config, table, **context)
        self._cluster = string_bytes(self.options.cluster_id)
        self._schemas: dict[tuple[str, str, str], _Headers] = {}
        self._events = ControlEvents(config, table, self.clock)
        if table is None:  # control events only, and the sink sends none (avro_options.py)
            return
        check_client_settings(config)  # the client itself is built when the task first needs it
        self._key_columns = [c for c in table.columns if c.handle_key]
        self._null_defaults = null_defaults(table.columns, config.time_zone)
        # The source record's constant stretches, between its per-row fields (ts_ms, db, table, commit_ts).
        self._source_head = string_bytes(CONNECTOR_VERSION) + string_bytes("TiCDC") + self._cluster
        # server_id 0, gtid null, file "", pos 0, row 0, thread null, query null.
        self._source_after_table = long_bytes(0) + _NULL + string_bytes("") + long_bytes(0) + long_bytes(0) + \
            _NULL + _NULL

    def encode_rows(self, batch: ChangeBatch, routing: Routing) -> Messages:
        """One message per row: the key record of the handle key, the envelope of the change."""
        n = batch.num_rows
        columns = self.table.columns
        # The row as the union branch of ``after``, or of ``before`` for a delete.
        row = pc.binary_join_element_wise(_VALUE, concat([self._field(batch.columns[c.name], c, batch.row_key)
                                                          for c in columns], n), b"")
        is_delete, is_update = batch.ops == OP_DELETE, batch.ops == OP_UPDATE
        before_part = pc.if_else(pa.array(is_delete), row, _NULL)
        # debezium-output-old-value=false: an update's before is null, as TiCDC sends it.
        if batch.before is not None and is_update.any() and self.options.debezium_output_old_value:
            rows = pa.array(np.flatnonzero(is_update))
            old = concat([self._field(batch.before[c.name].take(rows), c, lambda row: batch.row_key(rows[row].as_py()))
                          for c in columns], len(rows))
            before_part = pc.replace_with_mask(before_part, pa.array(is_update),
                                               pc.binary_join_element_wise(_VALUE, old, b""))
        after_part = pc.if_else(pa.array(is_delete), _NULL, row)
        databases, tables = self.route.target_names(batch.databases, batch.tables)  # the routed names, once
        key_headers, value_headers = self._row_headers(batch, routing, databases, tables)
        envelope = concat([value_headers, before_part, after_part, *self._source(batch, databases, tables),
                           _OPS.take(pa.array(batch.ops)), long_bytes(self.clock())], n)
        key_record = concat([self._field(batch.columns[c.name], c, batch.row_key) for c in self._key_columns], n)
        keys = concat([key_headers, key_record], n)
        return row_messages(self.config, batch, routing, keys, envelope)

    def _field(self, values: pa.Array, column: Column, describe_row) -> pa.Array:
        """A column as its field of the row record: every column is a ``["null", T]`` union; a NULL of a column
        with a DEFAULT as TiCDC writes it (``field_types.NullDefault``)."""
        default = self._null_defaults.get(column.name)
        if default is not None and values.null_count:
            if column.type.kind == "decimal" and self.config.protocol_options.avro_decimal_handling_mode == "string":
                # TiCDC prints the decimal it parses from the default's text: its own digits (1.5, not 1.50).
                text = pc.fill_null(decimal_text(values), format(Decimal(column.default), "f"))
                return nullable(length_prefixed(text), text.is_null())
            values = default.fill(values, describe_row)
        return nullable(avro_values(values, column, self.config, describe_row), values.is_null())

    def _source(self, batch: ChangeBatch, databases: pa.Array, tables: pa.Array) -> list:
        commit_ts = batch.commit_ts.view(np.int64)
        return [self._source_head, varints(commit_ts >> TSO_LOGICAL_BITS), _NULL,  # snapshot: null
                length_prefixed(databases), length_prefixed(tables), self._source_after_table,
                varints(commit_ts), self._cluster]

    def _headers(self, topic: str, database: str, table: str) -> "_Headers":
        """The headers of a table's key and value on a topic, registering their schemas the first time
        (the key's first, as TiCDC does; tables sharing a topic share its subjects, as in TiCDC)."""
        known = self._schemas.get((topic, database, table))
        if known is None:
            cluster, columns = self.options.cluster_id, self.table.columns
            key = self.registry.register(
                f"{topic}-key", schema_text(key_schema(self._key_columns, cluster, database, table, self.config)),
                f"the key schema of {database}.{table}")
            value = self.registry.register(
                f"{topic}-value", schema_text(envelope_schema(columns, cluster, database, table, self.config)),
                f"the value schema of {database}.{table}")
            known = self._schemas[(topic, database, table)] = _Headers(key, value)
        return known

    # -- control events: ``events.py``'s documents, as TiCDC converts its Debezium JSON ones (avro.go
    # encodeAvroMessage), their source the Avro branch's

    @property
    def _sends_control_events(self) -> bool:
        """TiCDC sends this protocol's DDL and watermarks with enable-tidb-extension and avro-enable-watermark."""
        return self.options.enable_tidb_extension and self.options.avro_enable_watermark

    def ddl_type(self, ddl: DDLChange) -> str | None:
        return self._events.ddl_type(ddl) if self._sends_control_events else None

    def check_ddl(self, ddl: DDLChange) -> None:
        if self._sends_control_events:
            self._events.check_ddl(ddl)

    def encode_ddl(self, ddl: DDLChange, topic: str) -> Messages | None:
        """Debezium's schema-change event in Avro, to every partition of the topic (its source named after the
        database)."""
        if not self._sends_control_events:
            return None
        event = self._events.ddl_event(ddl, source_connect(namespace(self.options.cluster_id, ddl.database)))
        if event is None:
            return None
        key, value = event
        return Messages.one(topic, BROADCAST, self._written(key), self._written(value))

    def encode_watermark(self, ts: int, topics: list[str]) -> Messages | None:
        """Debezium's WATERMARK (``op`` m) in Avro, to every partition of every topic."""
        if not self._sends_control_events:
            return None
        key, value = self._events.watermark(ts, source_connect(self._events.watermark_name))
        return Messages.to_every_partition(topics, self._written(key), self._written(value))

    def _written(self, document: dict) -> bytes:
        """An event in Avro: its Connect schema converted, registered under its own name, its payload in it."""
        connect = document["schema"]
        avro = connect_to_avro(connect)
        header = self.registry.register(connect["name"], schema_text(avro), f"the schema {connect['name']}")
        out = io.BytesIO()
        fastavro.schemaless_writer(out, fastavro.parse_schema(avro), document["payload"])
        return header + out.getvalue()

    def _row_headers(self, batch: ChangeBatch, routing: Routing, databases: pa.Array, tables: pa.Array) -> tuple:
        """Each row's key and value header, by its topic and routed table (a constant where the batch has one)."""
        topic_of_row = routing.topic_of_row if len(routing.topics) > 1 else np.zeros(batch.num_rows, np.int32)
        places = join(pa.array(topic_of_row).cast(pa.string()), "\x00", databases, "\x00", tables)
        distinct = pc.unique(places)
        headers = []
        for place in distinct.to_pylist():
            topic, database, table = place.split("\x00")
            headers.append(self._headers(routing.topics[int(topic)], database, table))
        if len(headers) == 1:
            return headers[0].key, headers[0].value
        row_place = pc.index_in(places, value_set=distinct)
        return (pa.array([h.key for h in headers], pa.binary()).take(row_place),
                pa.array([h.value for h in headers], pa.binary()).take(row_place))


@dataclass(frozen=True)
class _Headers:
    key: bytes
    value: bytes


def avro_values(values: pa.Array, column: Column, config: SinkConfig, describe_row) -> pa.Array:
    """Each row's value of a column in its Avro type (``schema.column_type``), encoded; nulls as anything (the
    union says null)."""
    t, options = column.type, config.protocol_options
    if t.kind == "bigint" and t.unsigned:
        if options.avro_bigint_unsigned_handling_mode == "string":
            return length_prefixed(values.cast(pa.string()))
        over = pc.fill_null(pc.greater(values, pa.scalar(_MAX_LONG, values.type)), False)
        if pc.any(over).as_py():
            row = int(np.flatnonzero(over.to_numpy(zero_copy_only=False))[0])
            raise ContractError(column.name, values[row].as_py(), describe_row(row),
                                "unsigned bigint value overflows avro long (TiCDC's error): set "
                                "avro-bigint-unsigned-handling-mode=string")
        return varints(pc.fill_null(values, 0).to_numpy(zero_copy_only=False).astype(np.int64))
    if t.is_integer or t.kind in ("year", "time"):
        return varints(pc.fill_null(values, 0).to_numpy(zero_copy_only=False))
    if t.kind == "float":
        return fixed_width(values, "<f4" if t.decimals is None else "<f8")  # FLOAT(M,D) is a double
    if t.kind == "double":
        return fixed_width(values, "<f8")
    if t.kind == "decimal":
        if options.avro_decimal_handling_mode == "string":
            return length_prefixed(decimal_text(values))
        return decimal_bytes(values, decimal_precision(t)[1])
    if t.kind == "bit":
        if t.length == 1:
            return booleans(pc.not_equal(values, 0))
        return length_prefixed(bit_bytes(values, (t.length + 7) // 8, "little"))
    if t.kind == "enum":
        return length_prefixed(enum_names(values, t.elements))
    if t.kind == "set":
        return length_prefixed(set_names(values, t.elements))
    if t.kind == "date":
        return varints(pc.fill_null(two_digit_years(values.cast(pa.int32()), days=True), 0)
                       .to_numpy(zero_copy_only=False))
    if t.kind == "datetime":
        micros = two_digit_years(values.cast(pa.timestamp("us")).cast(pa.int64()), days=False)
        numbers = pc.fill_null(micros, 0).to_numpy(zero_copy_only=False)
        return varints(numbers if t.fsp > 3 else numbers // 1000)
    if t.kind == "timestamp":
        return length_prefixed(timestamp_text(values, t.fsp, "UTC", separator="T", suffix="Z"))
    if t.is_string and t.binary:
        return length_prefixed(values)
    return length_prefixed(value_text(values, t, config.time_zone))

