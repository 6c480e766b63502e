"""TiCDC's Avro protocol with a Confluent Schema Registry (TiDB docs: *TiCDC Avro Protocol*; TiCDC
``pkg/sink/codec/avro/arvo.go`` at pingcap/ticdc@b813e76f; the goldens' ``tests/golden/avro/README.md``).

Every row is one Kafka message in the Confluent wire format: byte 0, the
schema's registry id as a big-endian int32, then the Avro binary of a record.
The key is a record of the handle-key columns (the primary key, else the NOT
NULL unique key TiDB uses as the handle; a table with neither has no key); the
value is a record of every column, followed with ``enable-tidb-extension`` by
``_tidb_op`` (``c``/``u``), ``_tidb_commit_ts`` and
``_tidb_commit_physical_time``, and with ``integrity-check-level=correctness`` by the row's checksum
(``_tidb_row_level_checksum``, ``_tidb_corrupted``, ``_tidb_checksum_version``: ``table/row_checksum.py``).
A delete is its key with a null value (a
tombstone).  With ``avro-include-before-value`` the value carries the row
before the change after the columns (``_ticdc_before``: an update's old row,
a delete's deleted row, null for an insert) and ``_tidb_op`` (``c``/``u``/``d``)
even without the extension, and a delete is a value like the others.  The
schemas (``schema.py``) are registered under ``<topic>-key`` and
``<topic>-value``, so a topic carries one table.  Avro has no DDL or watermark
events, but for TiCDC's own tests (``avro-enable-watermark`` with the
extension): a DDL is byte 1 and a JSON document, a watermark byte 2 and the
ts, and a delete without the before value byte 3 and its commit ts, each
big-endian (TiCDC ``pkg/sink/codec/avro/encoder.go``, ``helper.go``).

Records are built a column at a time (``shared/avro_binary.py``): each column
becomes per-row Avro fragments and a record is their concatenation, as the JSON
protocols build their messages.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...changes.contract import OP_DELETE, OP_UPDATE, ChangeBatch
from ...changes.dispatch import Routing
from ...config.sink import SinkConfig
from ...ddl.protocol_types import tidb_action_code
from ...ddl.statements import DDLChange
from ...errors import ConfigError, ContractError
from ...kafka.messages import BROADCAST, Messages
from ...table.row_checksum import CHECKSUM_VERSION, row_checksums
from ...table.schema import Column, TableSchema
from ...table.value_text import decimal_text, enum_names, set_names, value_text
from ...tso import TSO_LOGICAL_BITS
from ..base import Encoder
from ..shared.assembly import row_messages
from ..shared.avro_binary import (concat, decimal_bytes, fixed_width, length_prefixed, long_bytes, null_last, nullable,
                                  unsigned_bytes, varints)
from ..shared.json_text import quote_json
from ..shared.schema_registry import UsesSchemaRegistry, check_client_settings, subject
from .schema import column_field, null_comes_last, record, schema_text, value_record

log = logging.getLogger(__name__)


# _tidb_op as an Avro string, by OP_INSERT, OP_UPDATE, OP_DELETE (1, 2, 3).
_OP_FRAGMENTS = pa.array([b"", b"\x02c", b"\x02u", b"\x02d"], pa.binary())


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
        self._topics: dict[str, _TopicSchemas] = {}
        self._warned_keyless_delete = False

    def encode_rows(self, batch: ChangeBatch, routing: Routing) -> Messages:
        """One message per row: a key (none for a keyless table) and a value (none for a delete, unless the
        value carries the row before the change)."""
        n = batch.num_rows
        include_before = self.options.avro_include_before_value
        _refuse_enum_error_values(batch, self.config, include_before)
        fragments = {c.name: column_binary(batch.columns[c.name], c, self.config) for c in self.table.columns}
        columns = concat([fragments[c.name] for c in self.table.columns], n)
        body = [columns]
        if include_before:
            body.append(self._before_image(batch, columns))
        if self.options.enable_tidb_extension:
            body += self._extension_fragments(batch)
        elif include_before:
            body.append(_operations(batch))
        schemas = [self._schemas(topic, *self.route.target(*_table_of(batch, routing, index)))
                   for index, topic in enumerate(routing.topics)]
        values = concat([_headers([s.value for s in schemas], routing), concat(body, n)], n)
        tombstones = (batch.ops == OP_DELETE) & (not include_before)  # else a delete is a value like the others
        if tombstones.any():
            deleted = _marked(_DELETE_BYTE, batch.commit_ts) if self.options.avro_enable_watermark else \
                pa.scalar(None, pa.binary())
            values = pc.if_else(pa.array(tombstones), deleted, values)
        keys = None
        if self._key_columns:
            key_records = concat([fragments[c.name] for c in self._key_columns], n)
            keys = concat([_headers([s.key for s in schemas], routing), key_records], n)
        elif tombstones.any() and not self._warned_keyless_delete:
            self._warned_keyless_delete = True
            row = int(np.flatnonzero(tombstones)[0])
            log.warning("ticdc sink: table %s.%s has no primary key and no NOT NULL unique key, so its Avro "
                        "deletes are messages with neither key nor value, as TiCDC writes them (row %s); declare "
                        "the key with the primary-key or unique-keys option", batch.databases[row].as_py(),
                        batch.tables[row].as_py(), batch.row_key(row))
        return row_messages(self.config, batch, routing, keys, values)

    def _before_image(self, batch: ChangeBatch, columns: pa.Array) -> pa.Array:
        """``_ticdc_before``: the row as it was before the change, as TiCDC takes it from the event's old row
        (``pkg/sink/codec/avro/arvo.go``): an update's old row and a delete's own row.  Null for an insert, and
        for an update whose input has no ``_before`` column: no old row is known to send."""
        is_update = batch.ops == OP_UPDATE
        has_image = batch.ops == OP_DELETE
        images = columns
        if batch.before is not None and is_update.any():
            updates = pa.array(np.flatnonzero(is_update))
            old = concat([column_binary(batch.before[c.name].take(updates), c, self.config)
                          for c in self.table.columns], len(updates))
            images = pc.replace_with_mask(images, pa.array(is_update), old)
            has_image = has_image | is_update
        return nullable(images, pa.array(~has_image))

    def _extension_fragments(self, batch: ChangeBatch) -> list[pa.Array]:
        commit_ts = batch.commit_ts.view(np.int64)
        fragments = [_operations(batch), varints(commit_ts), varints(commit_ts >> TSO_LOGICAL_BITS)]
        if self.config.row_checksums:
            # The row's checksum as decimal text (a delete's is its old row's, which is the row it carries), not
            # corrupted, TiDB's checksum version (``nativeValueWithExtension``).
            # A checksum of 0 (a row of NULLs only) is TiCDC's "none": the fields' defaults, "", false, 0.
            checksums = row_checksums(batch.columns, self.table.columns, batch.num_rows)
            fields = pc.binary_join_element_wise(
                length_prefixed(pa.array(checksums, pa.uint32()).cast(pa.string())),
                pa.scalar(b"\x00" + long_bytes(CHECKSUM_VERSION), pa.binary()), pa.scalar(b"", pa.binary()))
            fragments.append(pc.if_else(pa.array(checksums == 0), pa.scalar(b"\x00\x00\x00", pa.binary()), fields))
        return fragments

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
            subject(topic, "value"), schema_text(value_record(table, database, self._value_fields, self.config)),
            f"the value schema of {database}.{table}")
        known = self._topics[topic] = _TopicSchemas(database, table, key, value)
        return known

    # -- TiCDC's test-only control events (avro-enable-watermark)

    def ddl_type(self, ddl: DDLChange) -> int | None:
        return tidb_action_code(ddl, self.config.ddl_type_column) if self.options.avro_enable_watermark else None

    def encode_ddl(self, ddl: DDLChange, topic: str) -> Messages | None:
        """Byte 1 and the DDL as JSON, to every partition of the topic."""
        if not self.options.avro_enable_watermark:
            return None
        document = (f'{{"query":{quote_json(ddl.query)},"type":{self.ddl_type(ddl)},'
                    f'"schema":{quote_json(ddl.database)},"table":{quote_json(ddl.table)},"commitTs":{ddl.commit_ts}}}')
        return Messages.one(topic, BROADCAST, None, _DDL_BYTE + document.encode())

    def encode_watermark(self, ts: int, topics: list[str]) -> Messages | None:
        """Byte 2 and the ts, to every partition of every topic."""
        if not self.options.avro_enable_watermark:
            return None
        return Messages.to_every_partition(topics, None, _CHECKPOINT_BYTE + struct.pack(">Q", ts))


@dataclass(frozen=True)
class _TopicSchemas:
    """The table a topic carries and the Confluent headers of its key (None: no key) and value."""

    database: str
    table: str
    key: bytes | None
    value: bytes


# The first byte of TiCDC's test-only events (avro-enable-watermark); a Confluent message starts with 0.
_DDL_BYTE, _CHECKPOINT_BYTE, _DELETE_BYTE = b"\x01", b"\x02", b"\x03"


def _marked(mark: bytes, commit_ts: np.ndarray) -> pa.Array:
    """``mark`` and each row's commit ts, big-endian: a delete as TiCDC's avro-enable-watermark sends it."""
    raw = np.empty((len(commit_ts), 9), np.uint8)
    raw[:, 0] = mark[0]
    raw[:, 1:] = commit_ts.astype(">u8").view(np.uint8).reshape(-1, 8)
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(9), len(commit_ts), [None, pa.py_buffer(raw.tobytes())]) \
        .cast(pa.binary())


def _operations(batch: ChangeBatch) -> pa.Array:
    """Each row's ``_tidb_op``, by its operation (TiCDC ``pkg/sink/codec/avro/helper.go``)."""
    return _OP_FRAGMENTS.take(pa.array(batch.ops))


def _refuse_enum_error_values(batch: ChangeBatch, config: SinkConfig, include_before: bool) -> None:
    """ENUM index 0 (MySQL's error value ''): TiCDC cannot write it in Avro, which has only member names; nor in
    an update's old row where the value carries it."""
    images = [("", batch.columns)]
    if include_before and batch.before is not None:
        images.append((f"{config.before_column}.", batch.before))
    for column in batch.table.columns:
        if column.type.kind != "enum":
            continue
        for label, values in images:
            zero = np.flatnonzero(pc.fill_null(pc.equal(values[column.name], 0), False).to_numpy(
                zero_copy_only=False))
            if len(zero):
                raise ContractError(f"{label}{column.name}", "", batch.row_key(int(zero[0])),
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
    if not column.nullable:
        return encoded
    return (null_last if null_comes_last(column, config) else nullable)(encoded, values.is_null())


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
