"""TiCDC's Avro protocol with a Confluent Schema Registry (TiDB docs: *TiCDC Avro Protocol*; TiCDC
``pkg/sink/codec/avro/arvo.go`` at pingcap/ticdc@b813e76f; the goldens' ``tests/golden/avro/README.md``).

Every row is one Kafka message in the Confluent wire format: byte 0, the
schema's registry id as a big-endian int32, then the Avro binary of a record.
The key is a record of the handle-key columns (the primary key, else the NOT
NULL unique key TiDB uses as the handle; a table with neither has no key); the
value is a record of every column, followed with ``enable-tidb-extension`` by
``_tidb_op`` (``c``/``u``), ``_tidb_commit_ts`` and
``_tidb_commit_physical_time``.  A delete is its key with a null value (a
tombstone).  The schemas (``schema.py``) are registered under ``<topic>-key``
and ``<topic>-value``, so a topic carries one table.  Avro has no DDL or
watermark events.

Records are built a column at a time (``shared/avro_binary.py``): each column
becomes per-row Avro fragments and a record is their concatenation, as the JSON
protocols build their messages.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...changes.contract import OP_DELETE, OP_UPDATE, ChangeBatch
from ...changes.dispatch import Routing
from ...config.sink import SinkConfig
from ...errors import ConfigError, ContractError
from ...kafka.messages import Messages
from ...table.schema import Column, TableSchema
from ...table.value_text import decimal_text, enum_names, set_names, value_text
from ...tso import TSO_LOGICAL_BITS
from ..base import Encoder
from ..shared.assembly import row_messages
from ..shared.avro_binary import concat, decimal_bytes, fixed_width, length_prefixed, nullable, unsigned_bytes, varints
from ..shared.schema_registry import UsesSchemaRegistry, check_client_settings, subject
from .schema import EXTENSION_FIELDS, column_field, record, schema_text

log = logging.getLogger(__name__)


_OP_FRAGMENTS = pa.array([b"\x02c", b"\x02u"], pa.binary())  # _tidb_op "c" / "u" as Avro strings


class AvroEncoder(UsesSchemaRegistry, Encoder):
    """Keys and values of one table shape, with the schemas registered once per topic and task."""

    def __init__(self, config: SinkConfig, table: TableSchema | None, **context):
        super().__init__(config, table, **context)
        if table is None:  # control events only, and Avro has none
            return
        check_client_settings(config)  # the client itself is built when the task first needs it
        self._key_columns = [c for c in table.columns if c.handle_key]
        self._key_fields = [column_field(c, config) for c in self._key_columns]
        self._value_fields = [column_field(c, config) for c in table.columns]
        if self.options.enable_tidb_extension:
            self._value_fields += EXTENSION_FIELDS
        self._topics: dict[str, _TopicSchemas] = {}
        self._warned_keyless_delete = False

    def encode_rows(self, batch: ChangeBatch, routing: Routing) -> Messages:
        """One message per row: a key (none for a keyless table) and a value (none for a delete)."""
        n = batch.num_rows
        _refuse_enum_error_values(batch)
        fragments = {c.name: column_binary(batch.columns[c.name], c, self.config) for c in self.table.columns}
        body = [fragments[c.name] for c in self.table.columns]
        if self.options.enable_tidb_extension:
            body += self._extension_fragments(batch)
        schemas = [self._schemas(topic, *_table_of(batch, routing, index))
                   for index, topic in enumerate(routing.topics)]
        values = concat([_headers([s.value for s in schemas], routing), concat(body, n)], n)
        is_delete = batch.ops == OP_DELETE
        if is_delete.any():
            values = pc.if_else(pa.array(is_delete), pa.scalar(None, pa.binary()), values)
        keys = None
        if self._key_columns:
            key_records = concat([fragments[c.name] for c in self._key_columns], n)
            keys = concat([_headers([s.key for s in schemas], routing), key_records], n)
        elif is_delete.any() and not self._warned_keyless_delete:
            self._warned_keyless_delete = True
            row = int(np.flatnonzero(is_delete)[0])
            log.warning("ticdc sink: table %s.%s has no primary key and no NOT NULL unique key, so its Avro "
                        "deletes are messages with neither key nor value, as TiCDC writes them (row %s); declare "
                        "the key with the primary-key or unique-keys option", batch.databases[row].as_py(),
                        batch.tables[row].as_py(), batch.row_key(row))
        return row_messages(self.config, batch, routing, keys, values)

    def _extension_fragments(self, batch: ChangeBatch) -> list[pa.Array]:
        op = _OP_FRAGMENTS.take(pa.array((batch.ops == OP_UPDATE).astype(np.int8)))
        commit_ts = batch.commit_ts.view(np.int64)
        return [op, varints(commit_ts), varints(commit_ts >> TSO_LOGICAL_BITS)]

    def _schemas(self, topic: str, database: str, table: str) -> "_TopicSchemas":
        """A topic's key and value headers, registering its table's schemas the first time.

        The subjects are the topic's, so a second table on the same topic is
        refused: its schema would replace the first one's.
        """
        known = self._topics.get(topic)
        if known is not None:
            if (known.database, known.table) != (database, table):
                raise _two_tables(topic, f"{known.database}.{known.table}", f"{database}.{table}")
            return known
        registry = self.registry
        key = None
        if self._key_fields:  # TiCDC registers the key first
            key = registry.register(
                subject(topic, "key"), schema_text(record(table, database, self._key_fields, self.config)),
                f"the key schema of {database}.{table}")
        value = registry.register(
            subject(topic, "value"), schema_text(record(table, database, self._value_fields, self.config)),
            f"the value schema of {database}.{table}")
        known = self._topics[topic] = _TopicSchemas(database, table, key, value)
        return known


@dataclass(frozen=True)
class _TopicSchemas:
    """The table a topic carries and the Confluent headers of its key (None: no key) and value."""

    database: str
    table: str
    key: bytes | None
    value: bytes


def _refuse_enum_error_values(batch: ChangeBatch) -> None:
    """ENUM index 0 (MySQL's error value ''): TiCDC cannot write it in Avro, which has only member names."""
    for column in batch.table.columns:
        if column.type.kind != "enum":
            continue
        zero = np.flatnonzero(pc.fill_null(pc.equal(batch.columns[column.name], 0), False).to_numpy(
            zero_copy_only=False))
        if len(zero):
            raise ContractError(column.name, "", batch.row_key(int(zero[0])),
                                f"'' is not a member of ENUM{column.type.elements}: the avro protocol writes an "
                                "ENUM value as its member name, and TiCDC refuses MySQL's error value here too")


def _table_of(batch: ChangeBatch, routing: Routing, topic_index: int) -> tuple[str, str]:
    """The one table whose rows go to a topic: its schemas are the topic's subjects."""
    databases, tables = batch.databases, batch.tables
    if len(routing.topics) > 1:
        rows = pa.array(np.flatnonzero(routing.topic_of_row == topic_index))
        databases, tables = databases.take(rows), tables.take(rows)
    if len(pc.unique(databases)) > 1 or len(pc.unique(tables)) > 1:
        pairs = pc.unique(pc.binary_join_element_wise(databases, tables, pa.scalar(".", pa.string())))
        if len(pairs) > 1:
            raise _two_tables(routing.topics[topic_index], pairs[0].as_py(), pairs[1].as_py())
    return databases[0].as_py(), tables[0].as_py()


def _two_tables(topic: str, first: str, second: str) -> ConfigError:
    return ConfigError("topic", topic, f"tables {first} and {second} both go to this topic; the avro protocol "
                                       "registers one table's schemas per topic (<topic>-key, <topic>-value): use a "
                                       "topic expression that keeps them apart")


def _headers(headers: list[bytes], routing: Routing) -> pa.Array | pa.Scalar:
    """Each row's Confluent header: its topic's (one constant when the batch has one topic)."""
    if len(headers) == 1:
        return pa.scalar(headers[0], pa.binary())
    return pa.array(headers, pa.binary()).take(pa.array(routing.topic_of_row))


def column_binary(values: pa.Array, column: Column, config: SinkConfig) -> pa.Array:
    """The Avro encoding of each row's value of a column, as its field (union for a nullable column)."""
    encoded = _value_binary(values, column, config)
    return nullable(encoded, values.is_null()) if column.nullable else encoded


def _value_binary(values: pa.Array, column: Column, config: SinkConfig) -> pa.Array:
    """TiCDC's Avro value of each row (``arvo.go`` ``columnToAvroData``), encoded."""
    t = column.type
    if t.is_integer or t.kind == "year":
        numbers = pc.fill_null(values, 0).to_numpy(zero_copy_only=False)
        if t.kind == "bigint" and t.unsigned:
            if config.protocol_options.avro_bigint_unsigned_handling_mode == "string":
                return length_prefixed(values.cast(pa.string()))
            numbers = numbers.astype(np.uint64).view(np.int64)  # TiCDC keeps the 64 bits: 2^64-1 is -1
        return varints(numbers)
    if t.kind in ("float", "double"):
        return fixed_width(values, "<f4" if t.kind == "float" else "<f8")
    if t.kind == "decimal":
        if config.protocol_options.avro_decimal_handling_mode == "string":
            return length_prefixed(decimal_text(values))
        return decimal_bytes(values, t.decimals)
    if t.kind == "bit":
        return unsigned_bytes(values, (t.length + 7) // 8)
    if t.kind == "enum":
        return length_prefixed(enum_names(values, t.elements))
    if t.kind == "set":
        return length_prefixed(set_names(values, t.elements))
    # Text, binary strings (bytes), JSON, dates and times (TiDB's text).
    return length_prefixed(value_text(values, t, config.time_zone))
