"""Avro schema evolution through Spark, under the registry's default BACKWARD rule, read back by Confluent's
own AvroDeserializer: an added nullable column registers a new version; an added NOT NULL column without
a default is refused, and the write fails with the registry's message."""

from __future__ import annotations

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import types as T

pytestmark = [pytest.mark.spark, pytest.mark.broker]

BASE_TS = 450_000_000_000_000_000
ID, NAME = T.StructField("id", T.IntegerType(), False), T.StructField("name", T.StringType())
NOTE, MUST = T.StructField("note", T.StringType()), T.StructField("must", T.IntegerType(), False)


def write(spark, broker, registry, topic: str, columns: list, rows: list[dict]) -> None:
    schema = T.StructType([T.StructField("_op", T.StringType()), T.StructField("_commit_ts", T.LongType()),
                           *columns])
    spark.createDataFrame(rows, schema).write.format("ticdc").mode("append").options(**{
        "kafka.bootstrap.servers": broker.bootstrap_servers, "protocol": "avro",
        "topic": topic + "_{schema}_{table}", "schema-registry": registry.url, "database": "shop",
        "table": "orders", "primary-key": "id", "broker-timeout-ms": "10000"}).save()


def test_an_added_nullable_column_registers_and_a_not_null_one_is_refused(spark, broker, topic, schema_registry):
    kafka_topic, subject = f"{topic}_shop_orders", f"{topic}_shop_orders-value"
    write(spark, broker, schema_registry, topic, [ID, NAME], [{"_op": "INSERT", "_commit_ts": BASE_TS + 1,
                                                                "id": 1, "name": "a"}])
    write(spark, broker, schema_registry, topic, [ID, NAME, NOTE],
          [{"_op": "INSERT", "_commit_ts": BASE_TS + 2, "id": 2, "name": "b", "note": "added"}])
    client = SchemaRegistryClient({"url": schema_registry.url})
    assert len(client.get_versions(subject)) == 2

    deserialize = AvroDeserializer(client)
    context = SerializationContext(kafka_topic, MessageField.VALUE)
    values = [deserialize(m.value(), context) for m in broker.read(kafka_topic, expect=2)]
    assert sorted((v["id"], v["name"], v.get("note")) for v in values) == [(1, "a", None), (2, "b", "added")]

    with pytest.raises(Exception) as refused:
        write(spark, broker, schema_registry, topic, [ID, NAME, NOTE, MUST],
              [{"_op": "INSERT", "_commit_ts": BASE_TS + 3, "id": 3, "name": "c", "note": None, "must": 1}])
    message = str(refused.value)
    assert f"subject '{subject}'" in message and "is incompatible with an earlier schema" in message
    assert len(client.get_versions(subject)) == 2
