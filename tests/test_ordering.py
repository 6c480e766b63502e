"""Per-key commit order across Spark tasks: ``order_changes`` keeps it, the driver's check reports it broken."""

from __future__ import annotations

import logging

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ticdc_sink import order_changes
from ticdc_sink.codec import decoder_for
from ticdc_sink.codec.base import RowEvent
from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.errors import ConfigError
from ticdc_sink.sink.order_check import OrderError, check_order, reorderings
from ticdc_sink.sink.report import Span

SCHEMA = T.StructType([
    T.StructField("_op", T.StringType()),
    T.StructField("_commit_ts", T.LongType()),
    T.StructField("id", T.IntegerType(), False),
    T.StructField("v", T.IntegerType()),
])
BASE_TS = 450_000_000_000_000_000
HAS_ARROW_UDF = hasattr(F, "arrow_udf")  # pyspark 4.1+: order_changes runs the sink's hash for any dispatcher
KEYS, CHANGES_PER_KEY = 30, 4


def chains() -> list[dict]:
    """Each key: INSERT, UPDATE, UPDATE, DELETE, with commit ts interleaved across keys."""
    ops = ["INSERT", "UPDATE", "UPDATE", "DELETE"]
    return [{"_op": ops[step], "_commit_ts": BASE_TS + step * KEYS + key, "id": key, "v": step}
            for step in range(CHANGES_PER_KEY) for key in range(KEYS)]


def options(broker, topic, **extra) -> dict:
    return {"kafka.bootstrap.servers": broker.bootstrap_servers, "protocol": "canal-json", "topic": topic,
            "database": "shop", "table": "orders", "primary-key": "id", "partition-num": "3",
            "broker-timeout-ms": "10000", "delivery": "at-least-once", **extra}


def chains_in_topic_order(broker, topic, expected: int) -> dict[int, list[int]]:
    """Per key, the ``v`` of its row events in the order a consumer of their partition reads them."""
    decoder = decoder_for("canal-json")
    messages = broker.read(topic, max_messages=expected, idle_seconds=60)
    assert len(messages) == expected
    found: dict[int, list[int]] = {}
    for message in messages:  # partition, then offset order
        for event in decoder.decode(message.key(), message.value()):
            if isinstance(event, RowEvent):
                found.setdefault(event.columns["id"], []).append(event.columns["v"])
    return found


# -- the check


def span(ts: tuple[int, int], offsets: tuple[int, int]) -> Span:
    return Span(*ts, *offsets)


@pytest.mark.parametrize("a, b, clash", [
    (span((1, 10), (0, 9)), span((5, 15), (10, 19)), True),     # overlapping commit ts
    (span((6, 20), (0, 9)), span((1, 5), (10, 19)), True),      # disjoint, but the later ts went first
    (span((1, 5), (0, 9)), span((6, 20), (10, 19)), False),     # disjoint and in offset order
    (span((1, 5), (0, 9)), span((5, 20), (10, 19)), False),     # touching at one ts, in order
    (span((1, 10), (0, 19)), span((5, 15), (5, 6)), True),      # interleaved offsets
])
def test_reorderings_between_two_tasks(a, b, clash):
    assert bool(reorderings({0: {("t", 0): a}, 1: {("t", 0): b}})) is clash
    assert not reorderings({0: {("t", 0): a}, 1: {("t", 1): b}})  # other Kafka partitions never clash


def test_check_order_warns_raises_or_stays_quiet(caplog):
    spans = {0: {("t", 2): span((1, 10), (0, 9))}, 1: {("t", 2): span((5, 15), (10, 19))}}
    base = {"kafka.bootstrap.servers": "h:1", "protocol": "canal-json", "topic": "t"}
    with caplog.at_level(logging.WARNING, logger="ticdc_sink"):
        check_order(parse_options(base), spans, "micro-batch 7")
    [warning] = [r.getMessage() for r in caplog.records]
    assert "in micro-batch 7" in warning and "t[2]" in warning and "order_changes" in warning
    with pytest.raises(OrderError, match="Spark partition 0 wrote commit ts 1..10"):
        check_order(parse_options({**base, "order-check": "error"}), spans, "micro-batch 7")
    with pytest.raises(OrderError, match="Spark partition 3's input was not in commit-ts order"):
        check_order(parse_options({**base, "order-check": "error"}), {}, "micro-batch 7", unsorted_tasks=[3])
    caplog.clear()
    check_order(parse_options({**base, "order-check": "off"}), spans, "micro-batch 7", unsorted_tasks=[3])
    assert not caplog.records


# -- through Spark


@pytest.mark.spark
@pytest.mark.broker
def test_two_tasks_writing_one_partition_are_reported(spark, broker, topic):
    df = spark.createDataFrame(chains(), SCHEMA).repartition(2)
    with pytest.raises(PySparkException, match="rows reached a Kafka partition out of commit-ts order"):
        df.write.format("ticdc").mode("append").options(**options(broker, topic, **{"order-check": "error"})).save()


@pytest.mark.spark
@pytest.mark.broker
@pytest.mark.parametrize("partition", ["table", "index-value"])
def test_order_changes_keeps_each_keys_chain_in_topic_order(spark, broker, topic, partition):
    sink = options(broker, topic, partition=partition, **{"order-check": "error"})
    # Shuffled input: without the helper the chain of a key is spread over tasks in any order.
    df = spark.createDataFrame(chains(), SCHEMA).repartition(4)
    if partition != "table" and not HAS_ARROW_UDF:
        with pytest.raises(ConfigError, match="order_changes needs pyspark 4.1 or newer for this dispatcher"):
            order_changes(df, sink)
        pytest.skip("pyspark < 4.1 has no arrow_udf: order_changes refuses the index-value dispatcher (checked)")
    prepared = order_changes(df, sink)
    assert prepared.rdd.getNumPartitions() == 3  # one Spark partition per Kafka partition
    prepared.write.format("ticdc").mode("append").options(**sink).save()
    found = chains_in_topic_order(broker, topic, KEYS * CHANGES_PER_KEY)
    assert found == {key: [0, 1, 2, 3] for key in range(KEYS)}


@pytest.mark.spark
@pytest.mark.broker
def test_order_changes_on_a_stream(spark, broker, topic, tmp_path):
    rows = chains()
    half = len(rows) // 2
    for number, part in enumerate((rows[:half], rows[half:])):
        spark.createDataFrame(part, SCHEMA).repartition(3).write.parquet(str(tmp_path / "feed" / f"b={number}"))
    sink = options(broker, topic, partition="index-value", **{"order-check": "error"})
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 3) \
        .option("recursiveFileLookup", "true").parquet(str(tmp_path / "feed"))
    if not HAS_ARROW_UDF:
        with pytest.raises(ConfigError, match="order_changes needs pyspark 4.1 or newer for this dispatcher"):
            order_changes(stream, sink)
        pytest.skip("pyspark < 4.1 has no arrow_udf: order_changes refuses the index-value dispatcher (checked)")
    query = order_changes(stream, sink).writeStream.format("ticdc").options(**sink) \
        .option("checkpointLocation", str(tmp_path / "chk")).trigger(availableNow=True).start()
    query.awaitTermination(180)
    assert query.exception() is None
    found = chains_in_topic_order(broker, topic, KEYS * CHANGES_PER_KEY)
    assert found == {key: [0, 1, 2, 3] for key in range(KEYS)}


def test_order_changes_refuses_bad_options_before_spark_runs(spark):
    df = spark.createDataFrame([], SCHEMA)
    with pytest.raises(Exception, match="partition-columns"):
        order_changes(df, {"kafka.bootstrap.servers": "h:1", "protocol": "canal-json", "topic": "t",
                           "database": "d", "table": "t", "partition": "columns", "partition-columns": "nope"})
