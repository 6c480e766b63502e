"""Per-key commit order across Spark tasks: a layout of the DataFrame that keeps it.

A task writes its rows in commit-ts order, but two tasks that write the same
Kafka partition interleave their messages, so a key changed in both can reach
consumers out of order.  ``order_changes`` gives every Kafka partition to one
Spark partition, sorted by commit ts; the driver's check
(``sink/order_check.py``) reports a batch whose tasks broke the order.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pyarrow as pa

from ..config.sink import SinkConfig
from ..config.sink_options import parse_options
from ..errors import ConfigError
from .canonical import canonical_values
from .contract import InputLayout, commit_tso
from .dispatch import PartitionDispatcher


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
    from ..kafka.producer import existing_partition_count

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
