"""protocol=simple through Spark: BOOTSTRAP messages on the writer's rule, and a consumer that joins mid-stream.

The rule holds for the query, not for a task: tasks send a table's BOOTSTRAP
ahead of its first rows only while the query has not sent that schema version
(the state lives in the query's bootstrap group on the marker topic); the
driver sends the periodic ones after a micro-batch.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition

from test_spark_sink import BASE_TS, CHANGES, row
from ticdc_sink.codec.base import DDLEvent, RowEvent, WatermarkEvent
from ticdc_sink.codec.simple.avro_wire import SimpleAvro
from ticdc_sink.codec.simple.json_wire import SimpleJSON
from ticdc_sink.codec.simple.decoder import SimpleDecoder

pytestmark = [pytest.mark.spark, pytest.mark.broker]


def is_bootstrap(event) -> bool:
    return isinstance(event, DDLEvent) and event.type == "BOOTSTRAP"


def bootstrap_version(bootstrap_servers: str, group: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": group})
    try:
        return consumer.committed([TopicPartition("__ticdc_sink_markers", 0)], timeout=10)[0].offset
    finally:
        consumer.close()


@pytest.mark.parametrize("encoding_format", ["json", "avro"])
def test_a_consumer_that_joins_mid_stream_learns_the_schema_from_a_bootstrap(spark, broker, topic, tmp_path,
                                                                          encoding_format):
    # Three micro-batches of 6, 2 and 3 rows; a BOOTSTRAP is due every 4 rows.
    batches = [[row(i, ts=i) for i in range(1, 7)], [row(i, ts=i) for i in (7, 8)],
               [row(i, ts=i) for i in (9, 10, 11)]]
    for number, batch in enumerate(batches):
        spark.createDataFrame(batch, CHANGES).repartition(2).write.parquet(str(tmp_path / "feed" / f"b={number}"))
    stream = spark.readStream.schema(CHANGES).option("maxFilesPerTrigger", 2) \
        .option("recursiveFileLookup", "true").parquet(str(tmp_path / "feed"))
    query = stream.writeStream.format("ticdc").options(**{
        "kafka.bootstrap.servers": broker.bootstrap_servers, "protocol": "simple", "topic": topic,
        "encoding-format": encoding_format, "database": "shop", "table": "orders", "primary-key": "id",
        "partition": "index-value", "partition-num": "2", "send-bootstrap-in-msg-count": "4",
        "broker-timeout-ms": "10000"}) \
        .option("checkpointLocation", str(tmp_path / "chk")).trigger(availableNow=True).start()
    query.awaitTermination(120)
    assert query.exception() is None
    assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [6, 2, 3]

    messages = broker.read(topic, idle_seconds=1, expect=11)
    versions = set()
    for partition in (0, 1):
        values = [m.value() for m in messages if m.partition() == partition]
        # From the start: the partition opens with the table's schema (read off the wire, as a decoder
        # holds rows back until their schema), and every message decodes at once, where it arrived.
        types = [read(value)["type"] for value in values]
        from_start = SimpleDecoder()
        events = [e for value in values for e in from_start.decode(None, value)]
        assert types[0] == "BOOTSTRAP" and [t == "BOOTSTRAP" for t in types] == list(map(is_bootstrap, events))
        ends = [i for i, e in enumerate(events) if isinstance(e, WatermarkEvent)]
        assert [events[i].ts for i in ends] == [BASE_TS + 6, BASE_TS + 8, BASE_TS + 11]
        first, second, third = events[:ends[0]], events[ends[0] + 1:ends[1]], events[ends[1] + 1:ends[2]]
        # Batch 1: each task's BOOTSTRAP ahead of its rows, and the driver's after them all (6 rows reached 4).
        assert is_bootstrap(first[-1]) and sum(map(is_bootstrap, first)) >= 2
        # Batch 2: the query had sent this schema version, and 2 rows since are under the count: none.
        assert all(isinstance(e, RowEvent) for e in second)
        # Batch 3: 5 rows since the last one: the driver's BOOTSTRAP after the rows.
        assert is_bootstrap(third[-1]) and all(isinstance(e, RowEvent) for e in third[:-1])
        versions |= {read(v)["tableSchema"]["version"] for v, e in zip(values, events) if is_bootstrap(e)}

        # Joined after batch 1: rows wait for their schema, until the driver's BOOTSTRAP after batch 3.
        joined = SimpleDecoder()
        last_bootstrap = ends[2] - 1
        early = [e for value in values[ends[0] + 1:last_bootstrap] for e in joined.decode(None, value)]
        assert early == [events[ends[1]]] and joined.waiting == len(second) + len(third) - 1
        released = joined.decode(None, values[last_bootstrap])
        assert is_bootstrap(released[0]) and released[1:] == second + third[:-1]

    # The state is the query's: its bootstrap group on the marker topic holds the version sent.
    [version] = versions
    assert bootstrap_version(broker.bootstrap_servers, f"ticdc-sink-{query.id}-bootstrap-shop.orders") == version


def read(value: bytes) -> dict:
    return (SimpleAvro.read if value[:1] == b"\x16" else SimpleJSON.read)(value)
