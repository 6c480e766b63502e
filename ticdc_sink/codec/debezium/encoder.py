"""TiCDC's Debezium protocol, JSON (TiDB docs: *TiCDC Debezium Protocol*; TiCDC
``pkg/sink/codec/debezium/codec.go`` at pingcap/ticdc@b813e76f; the goldens' ``tests/golden/debezium/README.md``).

A row change is one message.  Its key is ``{"payload":{<handle-key columns>},
"schema":{..Key}}``; its value ``{"payload":{"source":{..},"ts_ms":<now>,
"transaction":null,"op":"c|u|d",<before/after>},"schema":{..Envelope}}``, in
the order TiCDC writes (insert ``before:null`` then ``after``, delete
``after:null`` then ``before``, update ``before`` (with old values) then
``after``; ``debezium-output-old-value=false`` leaves an update's ``before``
out).  ``debezium-disable-schema`` leaves the ``schema`` parts out.  With
``enable-tidb-extension`` the column field schemas carry ``tidb_type``, the
source schema ``commit_ts`` and ``cluster_id``, and a WATERMARK event
(``op:"m"``) follows every micro-batch on every partition.  Columns are typed
by ``field_types.py``; names go through TiCDC's sanitising.  The control
events are ``events.py``'s structures, rendered here as compact JSON.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ...changes.contract import OP_DELETE, OP_INSERT, OP_UPDATE, ChangeBatch
from ...changes.dispatch import Routing
from ...config.sink import SinkConfig
from ...ddl.statements import DDLChange
from ...kafka.messages import BROADCAST, Messages
from ...table.schema import TableSchema
from ...table.text_join import join
from ...table.value_text import physical_ms_text
from ..base import Encoder
from ..shared.assembly import at_updates, row_messages
from ..shared.json_text import PLAIN, concat, object_parts, quote_json, quoted_names_of
from ..shared.names import sanitize_name, sanitize_topic_name
from .events import ControlEvents, envelope_schema, key_schema, source_payload, source_schema
from .field_types import field_schema, null_defaults, value_fragments


class JSONText(str):
    """Text that is JSON already, rendered as it is: the columns' field schemas, the gaps of a template."""


def render(value) -> str:
    """Compact JSON as TiCDC's jsoniter writes it: dicts in their order, lists, strings with its escaping,
    integers, booleans and null.  Only for what is rendered once an event or table, not per row."""
    if isinstance(value, JSONText):
        return value
    if isinstance(value, str):
        return quote_json(value, style=PLAIN)
    if isinstance(value, dict):
        return "{" + ",".join(f"{quote_json(k, style=PLAIN)}:{render(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(render(v) for v in value) + "]"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)  # an integer


_GAP = JSONText("\x00")  # rendered JSON has no NUL of its own: quote_json escapes control characters
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
        extension = self.options.enable_tidb_extension
        self._events = ControlEvents(config, table, self.clock)
        self._source_schema = source_schema(extension)
        start_ts = self.options.debezium_include_start_ts
        self._row_source_schema = source_schema(extension, start_ts) if start_ts else self._source_schema
        # The rows' source block: the events' one, its per-row values (ts_ms, db, table, commit_ts and with
        # debezium-include-start-ts start_ts) left as gaps.
        gaps = [_GAP] * (5 if start_ts else 4)
        self._source_stretches = render(source_payload(self.options.cluster_id, *gaps)).split(_GAP)
        if table is None:  # control events only
            return
        self._heads = [quote_json(c.name, style=PLAIN) + ":" for c in table.columns]
        self._fields = [JSONText(field_schema(c, extension)) for c in table.columns]
        self._key_positions = [i for i, c in enumerate(table.columns) if c.handle_key]
        self._key_fields = [self._fields[i] for i in self._key_positions]
        self._null_defaults = null_defaults(table.columns, config.time_zone)
        self._rendered_schemas: dict[str, tuple[str, str]] = {}

    # -- rows

    def encode_rows(self, batch: ChangeBatch, routing: Routing) -> Messages:
        """One message per row, keyed by its handle-key columns."""
        n = batch.num_rows
        fragments = self._fragments(batch.columns, batch.row_key)
        databases, tables = self.route.target_names(batch.databases, batch.tables)  # the routed names, once
        names = self._names(databases, tables)
        key_object = concat(object_parts([self._heads[i] for i in self._key_positions],
                                         [fragments[i] for i in self._key_positions]), n)
        keys = concat(['{"payload":', key_object, *self._schema(names, self._key_schema), "}"], n)
        values = concat(['{"payload":{"source":', *self._source(batch, databases, tables),
                         f',"ts_ms":{self.clock()},"transaction":null,"op":', self._op_and_old_rows(batch),
                         *object_parts(self._heads, fragments), "}", *self._schema(names, self._value_schema), "}"],
                        n)
        # TiCDC compresses Debezium's keys and values alike (large-message-handle-compression).
        return row_messages(self.config, batch, routing, self.compressed(keys), self.compressed(values))

    def _source(self, batch: ChangeBatch, databases: pa.Array, tables: pa.Array) -> list:
        """The ``source`` block's pieces, joined in with the rest of the value (one copy of each row)."""
        values = [physical_ms_text(batch.commit_ts), quoted_names_of(databases, style=PLAIN),
                  quoted_names_of(tables, style=PLAIN), pa.array(batch.commit_ts).cast(pa.string())]
        if self.options.debezium_include_start_ts:
            values.append(pa.array(batch.start_ts).cast(pa.string()))
        head, *stretches = self._source_stretches
        return [head, *(piece for pair in zip(values, stretches) for piece in pair)]

    def _op_and_old_rows(self, batch: ChangeBatch) -> pa.Array:
        """``"op",`` and the members before the new row: ``before`` of an insert, delete or update (left out with
        debezium-output-old-value=false, as TiCDC leaves it)."""
        heads = _HEADS_BY_OP.take(pa.array(batch.ops))
        if not self.options.debezium_output_old_value:
            return heads
        return at_updates(batch, heads, lambda before, updates: join('"u","before":', concat(object_parts(
            self._heads, self._fragments(before, lambda row: batch.row_key(updates[row].as_py()))), len(updates)),
            ',"after":'))

    def _fragments(self, row: dict[str, pa.Array], describe_row) -> list[pa.Array]:
        """Each column's values as JSON, a NULL of a column with a DEFAULT as TiCDC writes it."""
        fragments = []
        for c in self.table.columns:
            values = row[c.name]
            if c.name in self._null_defaults:
                values = self._null_defaults[c.name].fill(values, describe_row)
            fragments.append(value_fragments(values, c, self.config.time_zone))
        return fragments

    # -- schemas

    def _names(self, databases: pa.Array, tables: pa.Array) -> tuple[list[str], pa.Array | None]:
        """The batch's distinct ``<cluster>.<db>.<table>`` and, when there are several, each row's index."""
        pairs = join(databases, "\x00", tables)
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

    def _key_schema(self, name: str) -> str:
        return self._schema_texts(name)[0]

    def _value_schema(self, name: str) -> str:
        return self._schema_texts(name)[1]

    def _schema_texts(self, name: str) -> tuple[str, str]:
        """The key and value schemas of ``name``'s rows, rendered the first time a batch has it (not per batch)."""
        texts = self._rendered_schemas.get(name)
        if texts is None:
            rows = [{"type": "struct", "optional": True, "name": f"{name}.Value", "field": member,
                     "fields": self._fields} for member in ("before", "after")]
            texts = self._rendered_schemas[name] = (render(key_schema(name, self._key_fields)),
                                                    render(envelope_schema(name, rows, self._row_source_schema)))
        return texts

    # -- control events: ``events.py``'s documents, rendered

    def encode_watermark(self, ts: int, topics: list[str]) -> Messages | None:
        """A WATERMARK event (``op:"m"``) to every partition of every topic, with the TiDB extension only."""
        if not self.options.enable_tidb_extension:
            return None
        key, value = self._events.watermark(ts, self._source_schema)
        return Messages.to_every_partition(topics, self._rendered(key), self._rendered(value))

    def check_ddl(self, ddl: DDLChange) -> None:
        self._events.check_ddl(ddl)

    def ddl_type(self, ddl: DDLChange) -> str | None:
        return self._events.ddl_type(ddl)

    def encode_ddl(self, ddl: DDLChange, topic: str) -> Messages | None:
        """A schema-change event to every partition of the topic; none for an action TiCDC sends none for."""
        event = self._events.ddl_event(ddl, self._source_schema)
        if event is None:
            return None
        key, value = event
        return Messages.one(topic, BROADCAST, self._rendered(key), self._rendered(value))

    def _rendered(self, document: dict) -> str:
        """An event's JSON text, compressed as the rows' are; ``debezium-disable-schema`` leaves its schema out."""
        if self.options.debezium_disable_schema:
            document = {"payload": document["payload"]}
        return self.compressed(render(document))
