"""The hand-written Avro encoder: confluent-kafka's ``AvroSerializer`` per row, with the schemas the sink
registers (``AvroTarget``), so that its bytes are the sink's; a delete is the key and no value (a tombstone)."""

from __future__ import annotations

from dataclasses import dataclass

from handwritten_values import ANY_PARTITION, datetime3, signed64, text


@dataclass(frozen=True)
class AvroTarget:
    """What the hand-written Avro encoder writes for: the registry, the topic (subjects ``<topic>-key`` and
    ``<topic>-value``) and the schema texts the sink registers, so that both make the same bytes."""

    registry_url: str
    topic: str
    key_schema: str
    value_schema: str


class AvroSerializers:
    """confluent-kafka's ``AvroSerializer`` of the key and of the value, each called per row with its context."""

    def __init__(self, target: AvroTarget):
        from confluent_kafka.schema_registry import SchemaRegistryClient, topic_subject_name_strategy
        from confluent_kafka.schema_registry.avro import AvroSerializer
        from confluent_kafka.serialization import MessageField, SerializationContext

        client = SchemaRegistryClient({"url": target.registry_url})
        conf = {"subject.name.strategy": topic_subject_name_strategy}  # TiCDC's subjects, <topic>-key and -value
        self._key = AvroSerializer(client, target.key_schema, conf=conf)
        self._value = AvroSerializer(client, target.value_schema, conf=conf)
        self._key_context = SerializationContext(target.topic, MessageField.KEY)
        self._value_context = SerializationContext(target.topic, MessageField.VALUE)

    def key(self, record: dict) -> bytes:
        return self._key(record, self._key_context)

    def value(self, record: dict) -> bytes:
        return self._value(record, self._value_context)


def avro_value(row: dict) -> dict:
    """An insert's or update's value record: each column as TiCDC's Avro types it, then the TiDB extension."""
    ubigint, date, c_datetime, timestamp = row["c_ubigint"], row["c_date"], row["c_datetime"], row["c_timestamp"]
    return {
        "id": row["id"], "c_tinyint": row["c_tinyint"], "c_smallint": row["c_smallint"], "c_int": row["c_int"],
        "c_ubigint": None if ubigint is None else signed64(ubigint), "c_decimal": row["c_decimal"],
        "c_double": row["c_double"], "c_varchar": row["c_varchar"], "c_text": row["c_text"],
        "c_varbinary": row["c_varbinary"], "c_date": None if date is None else str(date),
        "c_datetime": None if c_datetime is None else datetime3(c_datetime),
        "c_timestamp": None if timestamp is None else text(timestamp), "c_json": row["c_json"],
        "_tidb_op": "u" if row["_op"] == "UPDATE" else "c", "_tidb_commit_ts": row["_commit_ts"],
        "_tidb_commit_physical_time": row["_commit_ts"] >> 18,
    }


def handwritten_avro(rows, serializers: AvroSerializers, partitions: int = 1):
    """Avro messages: one per row, keyed by its primary key (the producer's partitioner hashes it); a delete
    is the key and no value, a tombstone."""
    for row in rows:
        key = serializers.key({"id": row["id"]})
        value = None if row["_op"] == "DELETE" else serializers.value(avro_value(row))
        yield ANY_PARTITION, key, value

