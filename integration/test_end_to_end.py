"""Every protocol and encoding through Spark, in a batch write and in a streaming query, read back by the
project's decoders and, for Avro, by Confluent's AvroDeserializer with the schemas the sink registered."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from backend import chosen
from protocols import ProtocolUnderTest
from test_spark_sink import CHANGES, row, row_columns, sink_options, write_batch
from ticdc_sink.codec import PROTOCOLS
from ticdc_sink.codec.base import RowEvent

pytestmark = [pytest.mark.spark, pytest.mark.broker]

ENCODINGS = [(protocol, "json") for protocol in PROTOCOLS] + [("simple", "avro")]
ROWS = [row(i, ts=i) for i in range(1, 21)]
REGISTERED = ("avro", "debezium-avro")  # protocols whose schemas are in the Schema Registry


def write_stream(spark, rows: list[dict], options: dict, where) -> None:
    for number in range(2):  # two micro-batches
        feed = str(where / "feed" / f"b={number}")
        spark.createDataFrame(rows[number::2], CHANGES).repartition(2).write.parquet(feed)
    stream = spark.readStream.schema(CHANGES).option("maxFilesPerTrigger", 2) \
        .option("recursiveFileLookup", "true").parquet(str(where / "feed"))
    query = stream.writeStream.format("ticdc").options(**options) \
        .option("checkpointLocation", str(where / "chk")).trigger(availableNow=True).start()
    query.awaitTermination(120)
    assert query.exception() is None


def row_events(broker, under: ProtocolUnderTest, topic: str, expect: int) -> tuple[list, list[RowEvent]]:
    """The topic's messages and their row events, read again while there are fewer than ``expect`` rows (a loaded
    machine may commit the last transaction late), for at most a minute.  Rows are counted, not messages: Open
    Protocol packs several rows into a message, and a message count would wait for messages that never come."""
    deadline = time.monotonic() + 60
    while True:
        messages = broker.read(under.kafka_topic(topic), idle_seconds=1, expect=1)
        decoder = under.decoder()  # a fresh one per read: a decoder may hold rows back until their schema comes
        events = [e for m in messages for e in decoder.decode(m.key(), m.value()) if isinstance(e, RowEvent)]
        if len(events) >= expect or time.monotonic() > deadline:
            return messages, events
        time.sleep(0.5)


@pytest.mark.parametrize("mode", ["batch", "streaming"])
@pytest.mark.parametrize("protocol, encoding", ENCODINGS, ids=[f"{p}-{e}" for p, e in ENCODINGS])
def test_every_protocol_and_encoding_end_to_end(spark, broker, topic, tmp_path, schema_registry, protocol, encoding,
                                                mode):
    if chosen().kind == "embedded" and encoding == "json" and protocol != "avro":
        pytest.skip("the unit suite's batch and streaming tests write this protocol to the embedded broker already")
    under = ProtocolUnderTest(protocol, schema_registry.url if protocol in REGISTERED else None)
    options = sink_options(broker, topic, under, **{"enable-tidb-extension": "true", "partition": "index-value",
                                                    "encoding-format": encoding})
    if mode == "batch":
        write_batch(spark, ROWS, options)
    else:
        write_stream(spark, ROWS, options, tmp_path)

    messages, events = row_events(broker, under, topic, len(ROWS))
    assert sorted((e.columns["id"], e.columns) for e in events) == [(r["id"], row_columns(r)) for r in ROWS]
    assert all(e.commit_ts == r["_commit_ts"] for e, r in zip(sorted(events, key=lambda e: e.columns["id"]), ROWS))
    if protocol in REGISTERED:  # Confluent's own deserializer reads the same values with the registered schemas
        deserialize = AvroDeserializer(SchemaRegistryClient({"url": schema_registry.url}))
        context = SerializationContext(under.kafka_topic(topic), MessageField.VALUE)
        values = [deserialize(m.value(), context) for m in messages]
        if protocol == "debezium-avro":  # the envelope's new row
            values = [v["after"] for v in values]
        assert sorted((v["id"], v["name"]) for v in values) == [(r["id"], r["name"]) for r in ROWS]
