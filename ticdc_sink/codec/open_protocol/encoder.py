"""TiCDC Open Protocol events, as the newer TiCDC writes them (TiDB docs: *TiCDC Open Protocol*; TiCDC
``pkg/sink/codec/open/`` at pingcap/ticdc@b813e76f; the goldens' ``tests/golden/open-protocol/README.md``).

An event is a key JSON (``{"ts","scm","tbl","t"}``) and a value JSON, packed
with the other events bound for its partition into a message's frames
(``frames.py``).  Row values are ``{"u":{..}}`` (insert, and update without
old values), ``{"u":{..},"p":{..}}`` (update with ``_before``, unless open-output-old-value=false) and
``{"d":{..}}`` (delete: the handle-key columns, every column with
``_before``).  Each column is ``{"t":<type code>,"h":true (handle-key columns
only),"f":<flags>,"v":<value>}`` in table order, and strings are escaped
without HTML escapes (jsoniter).  DDL events (``t`` 2) and resolved events
(``t`` 3, an empty value) are messages of their own, sent to every partition.
"""

from __future__ import annotations

import struct

import pyarrow as pa
import pyarrow.compute as pc

from ...changes.contract import OP_DELETE, ChangeBatch
from ...changes.dispatch import Routing
from ...config.sink import SinkConfig
from ...ddl.protocol_types import tidb_action_code
from ...ddl.statements import DDLChange
from ...kafka.messages import BROADCAST, Messages
from ...table.schema import Column, TableSchema
from ...table.text_join import join, string_scalar
from ...table.value_text import float_json_numbers, value_text
from ..base import Encoder
from ..shared.assembly import at_updates, check_sizes, large_messages
from ..shared.json_text import (PLAIN, bare_fragments, base64_fragments, changed_members_object, concat,
                                go_quoted_fragments, json_fragments, object_parts, quote_json, quoted_names_of)
from .frames import frame, pack_events

ROW_EVENT, DDL_EVENT, RESOLVED_EVENT = 1, 2, 3


_EMPTY_VALUE = struct.pack(">Q", 0)  # a resolved event's value: one event of length 0


_FRAME_OVERHEAD = 8 + 16  # an event framed alone: the version, and its key's and value's lengths


class OpenProtocolEncoder(Encoder):
    """Open Protocol frames for one table shape, built a batch at a time."""

    def __init__(self, config: SinkConfig, table: TableSchema | None, **context):
        super().__init__(config, table, **context)
        if table is None:  # control events only
            return
        self._heads = [_column_head(c) for c in table.columns]
        if self.options.delete_only_output_handle_key_columns:
            table.handle_key_only("delete-only-output-handle-key-columns")  # refuses a table without one
        handle = {c.name for c in table.handle_columns}
        self._handle_positions = [i for i, c in enumerate(table.columns) if c.name in handle]

    # -- rows

    def encode_rows(self, batch: ChangeBatch, routing: Routing) -> Messages:
        """The batch's events packed per partition, in commit-ts order within each."""
        # TiCDC sizes each event before it packs them: its key and (compressed) value, framed alone.
        keys, values = large_messages(self, batch, self.event_keys(batch), self.compressed(self.event_values(batch)),
                                      framing=_FRAME_OVERHEAD)
        messages = pack_events(keys, values, routing, self.options.max_batch_size, self.config.max_message_bytes)
        check_sizes(self.config, messages, batch)
        return messages

    def large_row_messages(self, rows: ChangeBatch, locations: pa.Array | None) -> tuple:
        marked = self.handle_key_only
        return marked.event_keys(rows, locations), self.compressed(marked.event_values(rows))

    def keep_whole(self, key: bytes | None, value: bytes) -> str:
        """The event kept as TiCDC keeps it: framed alone, as a message of its own would be."""
        return super().keep_whole(frame([key]), frame([value], versioned=False))

    def event_keys(self, batch: ChangeBatch, locations: pa.Array | None = None) -> pa.Array:
        """``{"ts":..,"scm":..,"tbl":..,"t":1}`` per row; marked ``"ohk":true`` for a handle-key-only event, and
        ``"ohk":true,"ohk":false,"ccl":<location>`` for claim-check's (TiCDC writes ``ohk`` twice)."""
        if locations is not None:
            tail = [',"ohk":true,"ohk":false,"ccl":', json_fragments(locations, style=PLAIN), "}"]
        else:
            tail = [',"ohk":true}' if self.marks_handle_key_only else "}"]
        databases, tables = self.route.target_names(batch.databases, batch.tables)
        return concat(['{"ts":', pa.array(batch.commit_ts).cast(pa.string()),
                       ',"scm":', quoted_names_of(databases, style=PLAIN),
                       ',"tbl":', quoted_names_of(tables, style=PLAIN), f',"t":{ROW_EVENT}', *tail],
                      batch.num_rows)

    def event_values(self, batch: ChangeBatch) -> pa.Array:
        """The value JSON of each row's event."""
        n, columns = batch.num_rows, self.table.columns
        fragments = [self._fragments(batch.columns[c.name], c) for c in columns]
        row = concat(object_parts(self._heads, fragments, tail="}"), n)
        is_delete = batch.ops == OP_DELETE
        old_values = self.options.open_output_old_value
        # A delete names its row by the handle key with delete-only-output-handle-key-columns, and where the input
        # has no old values (the protocol document's old value off); with TiCDC's output-old-value=false it carries
        # the whole row, as TiCDC's does.
        handle_only = self.options.delete_only_output_handle_key_columns or (batch.before is None and old_values)
        if is_delete.any() and handle_only:
            handle = concat(object_parts([self._heads[i] for i in self._handle_positions],
                                         [fragments[i] for i in self._handle_positions], tail="}"), n)
            row = pc.if_else(pa.array(is_delete), handle, row)
        opening = pc.if_else(pa.array(is_delete), string_scalar('{"d":'), string_scalar('{"u":'))
        if not old_values:
            return concat([opening, row, "}"], n)
        closing = at_updates(batch, "}", lambda before, updates: join(',"p":', self._old_object(
            [f.take(updates) for f in fragments], [self._fragments(before[c.name], c) for c in columns]), "}"))
        return concat([opening, row, closing], n)

    def _old_object(self, new: list[pa.Array], old: list[pa.Array]) -> pa.Array:
        if self.options.only_output_updated_columns:
            return changed_members_object(self._heads, new, old, tail="}")
        return concat(object_parts(self._heads, old, tail="}"), len(old[0]))

    def _fragments(self, values: pa.Array, column: Column) -> pa.Array:
        """The JSON ``v`` of each row of a column (TiCDC ``writeColumnFieldValue``)."""
        t = column.type
        if t.is_blob:  # TEXT and BLOB alike
            return base64_fragments(values)
        if t.kind in ("float", "double"):
            return bare_fragments(float_json_numbers(values, 32 if t.kind == "float" else 64))
        text = value_text(values, t, self.config.time_zone)
        if t.is_integer or t.kind in ("year", "bit", "enum", "set"):
            return bare_fragments(text)
        if t.is_string and t.binary:
            return go_quoted_fragments(text, style=PLAIN)
        # Decimals, dates and times render without characters that JSON escapes.
        return json_fragments(text, escape=t.is_string or t.kind == "json", style=PLAIN)

    # -- control events

    def ddl_type(self, ddl: DDLChange) -> int:
        return tidb_action_code(ddl, self.config.ddl_type_column)

    def encode_ddl(self, ddl: DDLChange, topic: str) -> Messages:
        """One DDL event to every partition of the topic."""
        key = (f'{{"ts":{ddl.commit_ts},"scm":{quote_json(ddl.database, style=PLAIN)},'
               f'"tbl":{quote_json(ddl.table, style=PLAIN)},"t":{DDL_EVENT}}}')
        value = f'{{"q":{quote_json(ddl.query, style=PLAIN)},"t":{self.ddl_type(ddl)}}}'
        return Messages.one(topic, BROADCAST, frame([key.encode()]),
                            frame([self.compressed(value.encode())], versioned=False))

    def encode_watermark(self, ts: int, topics: list[str]) -> Messages:
        """The resolved event to every partition of every topic."""
        key = frame([f'{{"ts":{ts},"t":{RESOLVED_EVENT}}}'.encode()])
        return Messages.to_every_partition(topics, key, _EMPTY_VALUE)


def _column_head(column: Column) -> str:
    """``"name":{"t":..,"h":true,"f":..,"v":`` of a column: everything before its value."""
    handle = ',"h":true' if column.handle_key else ""
    return f'{quote_json(column.name, style=PLAIN)}:{{"t":{column.type.code}{handle},"f":{column.flag},"v":'
