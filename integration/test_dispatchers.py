"""Each dispatcher through Spark into a topic of several partitions: where each key's changes land, and that
they are in commit-ts order there (the input partitioned by key and sorted by commit ts, as docs/input.md, "Order"
asks)."""

from __future__ import annotations

from collections import defaultdict

import pytest
from pyspark.sql import types as T

from ticdc_sink.codec import decoder_for
from ticdc_sink.codec.base import RowEvent

pytestmark = [pytest.mark.spark, pytest.mark.broker]

BASE_TS = 450_000_000_000_000_000
SCHEMA = T.StructType([T.StructField("_op", T.StringType()), T.StructField("_commit_ts", T.LongType()),
                       T.StructField("id", T.IntegerType(), False), T.StructField("region", T.StringType()),
                       T.StructField("n", T.IntegerType())])


@pytest.mark.parametrize("dispatcher, extra", [
    ("table", {}), ("index-value", {}), ("ts", {}), ("columns", {"partition-columns": "region"}),
])
def test_each_dispatcher_keeps_a_keys_changes_together_and_in_order(spark, broker, topic, dispatcher, extra):
    # 12 keys, each changed 5 times; ts: 3 keys share each commit ts.
    rows = [{"_op": "INSERT" if n == 0 else "UPDATE", "_commit_ts": BASE_TS + 10 * n + i // 3, "id": i,
             "region": f"r{i % 4}", "n": n} for n in range(5) for i in range(12)]
    df = spark.createDataFrame(rows, SCHEMA).repartition(2, "id").sortWithinPartitions("_commit_ts")
    df.write.format("ticdc").mode("append").options(**{
        "kafka.bootstrap.servers": broker.bootstrap_servers, "protocol": "canal-json", "topic": topic,
        "enable-tidb-extension": "true", "database": "shop", "table": "orders", "primary-key": "id",
        "partition": dispatcher, "partition-num": "3", "broker-timeout-ms": "10000", **extra}).save()

    decoder = decoder_for("canal-json")
    events = [(m.partition(), e) for m in broker.read(topic, expect=60) for e in decoder.decode(m.key(), m.value())]
    rows_read = [(p, e) for p, e in events if isinstance(e, RowEvent)]
    assert len(rows_read) == 60
    # What decides the partition: the commit ts for ts, the region for columns, else the key.
    decides = {"ts": lambda e: e.commit_ts, "columns": lambda e: e.columns["region"]}.get(
        dispatcher, lambda e: e.columns["id"])
    partitions_of, by_key = defaultdict(set), defaultdict(list)
    for partition, event in rows_read:
        partitions_of[decides(event)].add(partition)
        by_key[(partition, event.columns["id"])].append((event.commit_ts, event.columns["n"]))
    assert all(len(p) == 1 for p in partitions_of.values())  # the same value, the same partition
    assert all(changes == sorted(changes) for changes in by_key.values())  # a key's changes in commit order
    used = set().union(*partitions_of.values())
    assert len(used) == 1 if dispatcher == "table" else len(used) > 1  # else spread over the partitions
