"""One Spark task of a read: a Kafka partition's offset range, decoded under TiCDC's consumer rules.

The rules (pingcap/ticdc ``cmd/kafka-consumer`` and the protocol documents):
a partition's watermark is the commit ts up to which it has delivered every
change, so a row at or below it is one TiCDC's at-least-once delivery
repeated, and is dropped and counted; a streaming micro-batch gives the
changes with ``after_ts < commit ts <= through_ts`` (its consistent cut,
``reader.py``); DDL rows come once per topic, from its first partition,
where TiCDC sends them after every row they follow.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import InputPartition

from ..codec import decoder_for, recognition
from ..codec.base import DDLEvent, LearnsTableSchemas, MessageColumns, RowEvent, TakesDeclaredTypes, WatermarkEvent
from ..errors import ReadError
from ..kafka import clients
from ..kafka.producer import client_settings
from ..kafka.token_callback import broker_timeout
from ..kafka.topic_reader import iter_range_batches, reader_settings
from .layout import ReadLayout, RowsBuilder
from .topics import split_key
from .undecodable import skipped_as, stops_every_message, undecodable

log = logging.getLogger(__name__)
BATCH_ROWS = 10_000  # rows per Arrow record batch handed to Spark, where messages are decoded one by one
CHUNK_MESSAGES = 10_000  # messages decoded at once, where the protocol decodes a column at a time


@dataclass(frozen=True)
class KafkaRange(InputPartition):
    """What one task reads: offsets ``[start, end)`` of a partition, and the commit ts window it gives."""

    key: str  # topic:partition
    start: int
    end: int
    after_ts: int | None = None  # rows at or below it came in an earlier micro-batch
    through_ts: int | None = None  # rows above it come in a later one
    emits_ddl: bool = True


class _RangeRead:
    """The state of one range's read: the partition's watermark, what was dropped, and the rows on their way."""

    def __init__(self, layout: ReadLayout, part: KafkaRange):
        self.layout, self.part = layout, part
        self.config = layout.config
        self.topic, self.partition = split_key(part.key)
        self.decoder = decoder_for(self.config.sink)
        if isinstance(self.decoder, LearnsTableSchemas):
            self.decoder.learn_table_schemas(layout.table_schemas)
            if layout.table is not None and layout.database is not None:
                self.decoder.type_unknown_rows_by(layout.database, layout.table,
                                                  {c.name: c.type for c in layout.columns})
        if isinstance(self.decoder, TakesDeclaredTypes):
            self.decoder.declare_types(layout.database, layout.table, layout.declared_types)
        self.types = {c.name: c.type for c in layout.columns}
        self.rows = RowsBuilder(layout)
        self.counts: Counter = Counter()
        self.watermark = -1

    def chunk(self, messages: list) -> Iterator[pa.RecordBatch]:
        """The record batches of a chunk of messages: a column at a time where the protocol can, else one by one."""
        try:
            columns = self.decoder.decode_columns([m.key() for m in messages], [m.value() for m in messages],
                                                  self.types)
        except Exception:  # a message the columns cannot take (a tombstone, no Open Protocol frame)
            columns = None
        if columns is None or pc.any(pc.and_(columns.op.is_null(), columns.watermark_ts.is_null())).as_py():
            # Message by message, where each is decoded or named: also where an event is neither a row nor a
            # watermark (another protocol's message parsed as this one's finds neither).
            for message in messages:
                self.message(message)
            if len(self.rows) >= BATCH_ROWS:
                yield self.take()
            return
        keep = self._kept(columns, messages)
        if pc.any(keep).as_py():
            if len(self.rows):
                yield self.take()
            offsets = pa.array([m.offset() for m in messages], pa.int64())
            if columns.message is not None:
                offsets = offsets.take(columns.message)
            batch = self.rows.batch_of_columns(columns, keep, self.topic, self.partition, offsets)
            self.counts["rows"] += batch.num_rows
            yield batch

    def _kept(self, columns: MessageColumns, messages: list) -> pa.Array:
        """Which events' rows the read gives: the rules of ``message``, a column at a time."""
        watermarks = columns.watermark_ts.fill_null(-1).to_numpy(zero_copy_only=False)
        seen = np.maximum.accumulate(np.concatenate(([self.watermark], watermarks)))
        self.watermark = int(seen[-1])
        is_row = columns.op.is_valid().to_numpy(zero_copy_only=False)
        events = len(columns.op)
        ours = np.ones(events, dtype=bool)
        if self.layout.table is not None:
            ours &= pc.equal(columns.table, self.layout.table).fill_null(False).to_numpy(zero_copy_only=False)
        if self.layout.database is not None:
            ours &= pc.equal(columns.database, self.layout.database).fill_null(False).to_numpy(zero_copy_only=False)
        others = is_row & ~ours
        if others.any():
            first = int(np.argmax(others))
            message = first if columns.message is None else columns.message[first].as_py()
            self._other_table(columns.database[first].as_py(), columns.table[first].as_py(),
                              messages[message].offset())
            self.counts["of other tables"] += int(others.sum())
        has_ts = columns.commit_ts.is_valid().to_numpy(zero_copy_only=False)
        ts = columns.commit_ts.fill_null(-1).to_numpy(zero_copy_only=False)
        repeated = is_row & ours & has_ts & (ts <= seen[:-1])
        self.counts["repeated"] += int(repeated.sum())
        window = np.ones(events, dtype=bool)
        if self.part.after_ts is not None:
            window &= ~has_ts | (ts > self.part.after_ts)
        if self.part.through_ts is not None:
            window &= ~has_ts | (ts <= self.part.through_ts)
        return pa.array(is_row & ours & ~repeated & window)

    def message(self, message) -> None:
        """One message's events, under the consumer rules (the module's docstring)."""
        offset = message.offset()
        try:
            events = recognition.decode(self.decoder, message.key(), message.value())
        except Exception as e:
            what, fix = undecodable(self.config.sink.protocol, e, self.topic, self.partition, offset, message.value())
            if self.config.on_error != "skip" or stops_every_message(e):
                raise ReadError(f"{what}; {fix}") from None
            kind = skipped_as(e)
            if not self.counts[kind]:
                log.warning("skipping (on-error=skip) %s, and any more such", what)
            self.counts[kind] += 1
            return
        for event in events:
            if isinstance(event, WatermarkEvent):
                self.watermark = max(self.watermark, event.ts)
                continue
            if isinstance(event, DDLEvent) and (event.type == "BOOTSTRAP" or not self.part.emits_ddl):
                continue
            if not self.layout.reads(event.database, event.table):
                if isinstance(event, RowEvent):
                    self._other_table(event.database, event.table, offset)
                    self.counts["of other tables"] += 1
                continue
            ts = event.commit_ts
            if ts is not None:
                if ts <= self.watermark:
                    self.counts["repeated"] += 1
                    continue
                if (self.part.after_ts is not None and ts <= self.part.after_ts) or \
                        (self.part.through_ts is not None and ts > self.part.through_ts):
                    continue
            if isinstance(event, RowEvent) and event.handle_key_only:
                self._handle_key_only(offset)
                continue
            if isinstance(event, RowEvent):
                self.rows.add_row(event, self.topic, self.partition, offset)
            else:
                self.rows.add_ddl(event, self.topic, self.partition, offset)

    def _handle_key_only(self, offset: int) -> None:
        """A row TiCDC sent as its handle key alone (it was over max-message-bytes): its other values are not in
        the topic (TiCDC's consumers read them from TiDB), so the read fails, or with on-error=skip counts it."""
        where = f"{self.topic} partition {self.partition} offset {offset}"
        if self.config.on_error != "skip":
            raise ReadError(f"the {self.config.sink.protocol} message at {where} carries a row's handle key only "
                            "(large-message-handle-option=handle-key-only: the row was over max-message-bytes) "
                            "and not its values; set on-error=skip to skip such rows")
        if not self.counts["handle-key-only"]:
            log.warning("skipping the handle-key-only row at %s, and any more", where)
        self.counts["handle-key-only"] += 1

    def _other_table(self, database: str, table: str, offset: int) -> None:
        """A row of another table: skipped where the user chose the table, else the read cannot go on."""
        if not self.layout.table_chosen:
            raise ReadError(
                f"{self.topic} holds rows of several tables ({self.layout.database}.{self.layout.table}, and "
                f"{database}.{table} at partition {self.partition} offset {offset}): choose one with the options "
                "database and table (a DataFrame holds one table shape)")

    def take(self) -> pa.RecordBatch:
        self.counts["rows"] += len(self.rows)
        return self.rows.take()

    def finish(self) -> Iterator[pa.RecordBatch]:
        if len(self.rows):
            yield self.take()
        if isinstance(self.decoder, LearnsTableSchemas) and self.decoder.waiting:
            self.counts["waiting for their table schema"] = self.decoder.waiting
        _report(self.part, self.counts)


def read_range(layout: ReadLayout, part: KafkaRange) -> Iterator[pa.RecordBatch]:
    """The range's rows, as Arrow record batches of the read's schema."""
    read = _RangeRead(layout, part)
    consumer = clients.consumer(reader_settings(client_settings(layout.config.consumer_settings)),
                                broker_timeout(layout.config.sink.broker_timeout_ms))
    try:
        chunk = []
        for messages in iter_range_batches(consumer, read.topic, read.partition, part.start, part.end,
                                           layout.config.sink.broker_timeout_ms / 1000):
            chunk += messages
            if len(chunk) >= CHUNK_MESSAGES:
                yield from read.chunk(chunk)
                chunk = []
        if chunk:
            yield from read.chunk(chunk)
    finally:
        consumer.close()
    yield from read.finish()


def _report(part: KafkaRange, counts: Counter) -> None:
    """One log line per range: what it gave, and what it dropped or skipped and why."""
    dropped = {k: v for k, v in counts.items() if k != "rows" and v}
    summary = f"{part.key} offsets {part.start}..{part.end}: {counts['rows']} rows"
    if dropped:
        log.warning("%s; dropped: %s", summary, ", ".join(f"{v} {k}" for k, v in dropped.items()))
    else:
        log.info(summary)
