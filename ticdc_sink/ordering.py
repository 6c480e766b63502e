"""Per-key commit order across Spark tasks: a layout that keeps it, and a check that sees it break.

A task writes its rows in commit-ts order, but two tasks that write the same
Kafka partition interleave their messages, so a key changed in both can reach
consumers out of order.  ``order_changes`` gives every Kafka partition to one
Spark partition, sorted by commit ts; ``check_order`` reads what the tasks of a
batch wrote (the commit-ts and offset span of each Kafka partition) and says
when two of them wrote one Kafka partition so that a later message carries an
earlier commit ts.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Iterable, Mapping

import numpy as np
import pyarrow as pa

from .changes import InputLayout, canonical_values, commit_tso
from .config import SinkConfig, parse_options
from .dispatch import PartitionDispatcher, Routing
from .errors import ConfigError, TiCDCSinkError

log = logging.getLogger(__name__)

HELP = ("prepare the DataFrame with ticdc_sink.order_changes(df, options), which gives each Kafka partition "
        "to one Spark partition sorted by commit ts")


class OrderError(TiCDCSinkError):
    """Two tasks of a batch wrote one Kafka partition out of commit-ts order (``order-check=error``)."""


# ---------------------------------------------------------------------------
# The layout


def order_changes(df, options: Mapping[str, str]):
    """``df`` repartitioned so that each Kafka partition is written by one task, in commit-ts order.

    Rows go where the sink's dispatcher (``partition`` option) sends them: one
    Spark partition per Kafka partition of the topic (its partition count is
    read from the brokers, or ``partition-num`` for a topic still to be created
    or a topic expression), then sorted within partitions by the commit ts.
    Spark cannot sort a stream: there the sink sorts each Arrow batch it
    receives, and the driver's order check reports a task whose input was out
    of order across Arrow batches.  ``index-value``, ``columns`` and ``ts``
    compute the partition with the sink's own code in an Arrow UDF, which
    needs pyspark 4.1 or newer.
    """
    from pyspark.sql import functions as F

    config = parse_options(options)
    layout = InputLayout.from_spark_schema(df.schema, config)
    dispatcher = PartitionDispatcher(config, layout.table)
    if config.partition == "ts" and not layout.has_commit_ts:
        # The sink generates commit timestamps as it writes: only one writer keeps them in order.
        return df.repartition(1)
    count = _kafka_partition_count(config)
    databases = _names(F, config.schema_column, config.database, layout.has_schema)
    tables = _names(F, config.table_column, config.table, layout.has_table)
    if config.partition in ("default", "table"):
        # TiCDC's table hash is the CRC-32 of schema + table, which Spark computes as the sink does.
        routing = F.crc32(F.concat(databases, tables).cast("binary"))
    else:
        routing = _routing_udf(config, layout, dispatcher)(databases, tables, *_routing_inputs(F, config, dispatcher))
    kafka_partition = F.pmod(routing, F.lit(count))
    spread = F.element_at(F.array(*[F.lit(v) for v in _one_value_per_partition(df.sparkSession, count)]),
                          (kafka_partition + 1).cast("int"))
    ordered = df.repartition(count, spread)
    if not layout.has_commit_ts or df.isStreaming:
        return ordered
    return ordered.sortWithinPartitions(config.commit_ts_column)


def _names(F, column: str, default: str | None, present: bool):
    """The per-row database or table name, as the sink reads it (the column, else the option)."""
    fallback = F.lit(default or "")
    return F.coalesce(F.col(column), fallback) if present else fallback


def _routing_inputs(F, config: SinkConfig, dispatcher: PartitionDispatcher) -> list:
    if dispatcher.rule == "ts":
        return [F.col(config.commit_ts_column)]
    return [F.col(c.name) for c in dispatcher.columns]


def _routing_udf(config: SinkConfig, layout: InputLayout, dispatcher: PartitionDispatcher):
    """An Arrow UDF: (database, table, dispatcher inputs) -> the dispatcher's routing value."""
    try:
        from pyspark.sql.functions import arrow_udf
    except ImportError:  # pyspark 4.0
        raise ConfigError("partition", config.partition,
                          "order_changes needs pyspark 4.1 or newer for this dispatcher (an Arrow UDF runs the "
                          "sink's hash); on pyspark 4.0 use partition=table, or repartition the DataFrame "
                          "yourself so that each key's changes are in one Spark partition") from None

    def routing(databases: pa.Array, tables: pa.Array, *inputs: pa.Array) -> pa.Array:
        if dispatcher.rule == "ts":
            commit_ts = commit_tso(inputs[0], layout.commit_ts_is_timestamp)
            return pa.array(commit_ts.astype(np.int64))
        columns = {c.name: canonical_values(values, c, config.time_zone)
                   for c, values in zip(dispatcher.columns, inputs)}
        values = dispatcher.routing_of(databases, tables, None, columns)
        return pa.array(values.astype(np.int64))

    return arrow_udf(routing, "long")


def _kafka_partition_count(config: SinkConfig) -> int:
    if config.topic_has_placeholders:
        return config.partition_num
    from .kafka_io import existing_partition_count

    return existing_partition_count(config, config.topic) or config.partition_num


def _one_value_per_partition(spark, count: int) -> list[int]:
    """For each p < count, a number that ``repartition(count, number)`` sends to Spark partition p.

    Spark places a row by the Murmur3 hash of its key; picking, per partition,
    a key that hashes there makes Kafka partition p Spark partition p, so no
    two Kafka partitions share a task by chance.
    """
    from pyspark.sql import functions as F

    candidates = spark.range(0, 64 * count).select("id", F.pmod(F.hash("id"), F.lit(count)).alias("p"))
    found = dict(candidates.groupBy("p").agg(F.min("id")).collect())
    return [found[p] for p in range(count)]


# ---------------------------------------------------------------------------
# The check


@dataclass(frozen=True)
class Span:
    """What one task wrote into one Kafka partition: its commit-ts and offset ranges."""

    min_ts: int
    max_ts: int
    first_offset: int
    last_offset: int


def reorderings(spans_by_task: Mapping[int, Mapping[tuple[str, int], Span]]) -> list[str]:
    """Kafka partitions where one task's message precedes another's with a lower commit ts.

    Tasks A and B of one batch in one Kafka partition: some message of A comes
    before some message of B (A's first offset < B's last offset) and A has a
    commit ts above one of B's.  Overlapping commit-ts ranges always show up;
    ranges that merely touch, in offset order, do not.
    """
    by_partition: dict[tuple[str, int], list[tuple[int, Span]]] = {}
    for task, spans in spans_by_task.items():
        for where, span in spans.items():
            by_partition.setdefault(where, []).append((task, span))
    found = []
    for (topic, partition), writers in sorted(by_partition.items()):
        for task_a, a in writers:
            clash = next(((task_b, b) for task_b, b in writers if task_b != task_a
                          and a.first_offset < b.last_offset and a.max_ts > b.min_ts), None)
            if clash is not None:
                task_b, b = clash
                found.append(f"{topic}[{partition}]: Spark partition {task_a} wrote commit ts {a.min_ts}.."
                             f"{a.max_ts} at offsets {a.first_offset}..{a.last_offset}, Spark partition "
                             f"{task_b} wrote {b.min_ts}..{b.max_ts} at {b.first_offset}..{b.last_offset}")
                break
    return found


def check_order(config: SinkConfig, spans_by_task: Mapping[int, Mapping[tuple[str, int], Span]],
                what: str, unsorted_tasks: Iterable[int] = ()) -> None:
    """Warn (or raise, with ``order-check=error``) when tasks of ``what`` may have reordered a key's changes.

    ``unsorted_tasks`` received their input out of commit-ts order across Arrow batches.
    """
    if config.order_check == "off":
        return
    found = [f"Spark partition {task}'s input was not in commit-ts order across Arrow batches"
             for task in sorted(unsorted_tasks)] + reorderings(spans_by_task)
    if not found:
        return
    shown = "; ".join(found[:3]) + (f"; and {len(found) - 3} more" if len(found) > 3 else "")
    message = (f"ticdc sink: in {what}, rows reached a Kafka partition out of commit-ts order, so a key's "
               f"changes may reach consumers out of order ({shown}). To keep each key's changes in order, {HELP} "
               "(on a stream, keep each micro-batch task within spark.sql.execution.arrow.maxRecordsPerBatch "
               "rows); order-check=off silences this")
    if config.order_check == "error":
        raise OrderError(message)
    log.warning(message)


def add_batch_spans(ts_spans: dict[tuple[str, int], list[int]], routing: Routing, commit_ts: np.ndarray) -> None:
    """Widen ``ts_spans`` ((topic, partition) -> [min ts, max ts]) by a batch sorted by commit ts."""
    topics = routing.topics
    where = routing.topic_of_row.astype(np.int64) << 32 | routing.partition_of_row.astype(np.int64)
    keys, first = np.unique(where, return_index=True)
    _, from_end = np.unique(where[::-1], return_index=True)
    last = len(where) - 1 - from_end
    for key, i, j in zip(keys.tolist(), first.tolist(), last.tolist()):
        span = ts_spans.setdefault((topics[key >> 32], key & 0xFFFFFFFF), [int(commit_ts[i]), int(commit_ts[j])])
        span[0], span[1] = min(span[0], int(commit_ts[i])), max(span[1], int(commit_ts[j]))


def task_spans(ts_spans: Mapping[tuple[str, int], list[int]],
               offsets: Mapping[tuple[str, int], list[int]]) -> dict[tuple[str, int], Span]:
    """The spans of a task from its commit-ts ranges and its acknowledged offsets."""
    return {where: Span(ts[0], ts[1], *offsets[where]) for where, ts in ts_spans.items() if where in offsets}
