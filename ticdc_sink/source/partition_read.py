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

import pyarrow as pa
from confluent_kafka import Consumer
from pyspark.sql.datasource import InputPartition

from ..codec import decoder_for
from ..codec.base import DDLEvent, RowEvent, WatermarkEvent
from ..errors import ReadError
from ..kafka.producer import client_settings
from ..kafka.topic_reader import iter_range, reader_settings
from .layout import ReadLayout, RowsBuilder
from .topics import split_key

log = logging.getLogger(__name__)
BATCH_ROWS = 10_000  # rows per Arrow record batch handed to Spark


@dataclass(frozen=True)
class KafkaRange(InputPartition):
    """What one task reads: offsets ``[start, end)`` of a partition, and the commit ts window it gives."""

    key: str  # topic:partition
    start: int
    end: int
    after_ts: int | None = None  # rows at or below it came in an earlier micro-batch
    through_ts: int | None = None  # rows above it come in a later one
    emits_ddl: bool = True


def read_range(layout: ReadLayout, part: KafkaRange) -> Iterator[pa.RecordBatch]:
    """The range's rows, as Arrow record batches of the read's schema."""
    config = layout.config
    topic, partition = split_key(part.key)
    decoder = decoder_for(config.sink)
    decoder.learn_table_schemas(layout.table_schemas)
    consumer = Consumer(reader_settings(client_settings(config.consumer_settings)))
    rows = RowsBuilder(layout)
    counts: Counter = Counter()
    watermark = -1
    try:
        for message in iter_range(consumer, topic, partition, part.start, part.end,
                                  config.sink.broker_timeout_ms / 1000):
            offset = message.offset()
            try:
                events = decoder.decode(message.key(), message.value())
            except Exception as e:
                where = f"{topic} partition {partition} offset {offset}"
                if config.on_error == "skip":
                    if not counts["undecodable"]:
                        log.warning("skipping the undecodable %s message at %s (%s), and any more", config.sink.protocol,
                                    where, e)
                    counts["undecodable"] += 1
                    continue
                raise ReadError(f"cannot decode the {config.sink.protocol} message at {where}: {e}; "
                                f"check protocol and its options, or set on-error=skip to skip such messages") from None
            for event in events:
                if isinstance(event, WatermarkEvent):
                    watermark = max(watermark, event.ts)
                    continue
                if isinstance(event, DDLEvent) and (event.type == "BOOTSTRAP" or not part.emits_ddl):
                    continue
                if not layout.reads(event.database, event.table):
                    if isinstance(event, RowEvent) and not layout.table_chosen:
                        raise ReadError(
                            f"{topic} holds rows of several tables ({layout.database}.{layout.table}, and "
                            f"{event.database}.{event.table} at partition {partition} offset {offset}): choose one "
                            "with the options database and table (a DataFrame holds one table shape)")
                    counts["of other tables"] += isinstance(event, RowEvent)
                    continue
                ts = event.commit_ts
                if ts is not None:
                    if ts <= watermark:
                        counts["repeated"] += 1
                        continue
                    if (part.after_ts is not None and ts <= part.after_ts) or \
                            (part.through_ts is not None and ts > part.through_ts):
                        continue
                if isinstance(event, RowEvent):
                    rows.add_row(event, topic, partition, offset)
                else:
                    rows.add_ddl(event, topic, partition, offset)
            if len(rows) >= BATCH_ROWS:
                counts["rows"] += len(rows)
                yield rows.take()
    finally:
        consumer.close()
    if len(rows):
        counts["rows"] += len(rows)
        yield rows.take()
    if decoder.waiting:
        counts["waiting for their table schema"] = decoder.waiting
    _report(part, counts)


def _report(part: KafkaRange, counts: Counter) -> None:
    """One log line per range: what it gave, and what it dropped or skipped and why."""
    dropped = {k: v for k, v in counts.items() if k != "rows" and v}
    summary = f"{part.key} offsets {part.start}..{part.end}: {counts['rows']} rows"
    if dropped:
        log.warning("%s; dropped: %s", summary, ", ".join(f"{v} {k}" for k, v in dropped.items()))
    else:
        log.info(summary)
