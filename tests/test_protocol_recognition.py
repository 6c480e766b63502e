"""A message read as a protocol it is not in is named as such (``codec/recognition.py``), by a read's task and by
the decoder ``tail`` uses: never read as nothing, never a bare ``KeyError``.  Every protocol's messages (rows, DDL,
watermarks, Simple's BOOTSTRAP, Avro's tombstone), made by the sink's encoders, are read as every other protocol;
what is not a row but is the protocol's own is no error (Debezium's tombstone after a delete, too)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pyarrow as pa
import pytest
from changefeed import build, schema
from consumed import Message
from pyspark.sql import types as T

from ticdc_sink.changes.dispatch import Routing
from ticdc_sink.codec import PROTOCOLS, SendsTableSchemas, decoder_for, encoder_for, recognition
from ticdc_sink.codec.base import RowEvent
from ticdc_sink.codec.recognition import NotOfProtocol
from ticdc_sink.codec.shared.compression import compress
from ticdc_sink.config.reader import parse_read_options
from ticdc_sink.ddl.statements import DDLChange
from ticdc_sink.errors import ReadError
from ticdc_sink.source.layout import ReadLayout
from ticdc_sink.source.partition_read import KafkaRange, _RangeRead

CONFLUENT = ("avro", "debezium-avro")
JSON_PROTOCOLS = ("canal-json", "debezium", "simple")
ORDERS = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("id", T.LongType(), False),
                ("name", T.StringType()),
                ("_before", T.StructType([T.StructField("id", T.LongType(), False),
                                          T.StructField("name", T.StringType())])))
ROWS = [{"_op": "INSERT", "_commit_ts": 1 << 18, "id": 1, "name": "a", "_before": None},
        {"_op": "UPDATE", "_commit_ts": 2 << 18, "id": 1, "name": "b", "_before": {"id": 1, "name": "a"}},
        {"_op": "DELETE", "_commit_ts": 3 << 18, "id": 1, "name": "b", "_before": None}]


def _bytes(data) -> bytes | None:
    return data.encode() if isinstance(data, str) else data


def _first(messages) -> tuple[bytes | None, bytes | None]:
    keys = messages.keys.to_pylist() if messages.keys is not None else [None]
    return _bytes(keys[0]), _bytes(messages.values[0].as_py())


def written(protocol: str, registry: str | None, topic: str = "t") -> list[tuple[str, bytes | None, bytes | None]]:
    """(what, key, value) of each message the sink writes of shop.orders in ``protocol``, with the TiDB extension:
    Simple's BOOTSTRAP, an insert, an update and a delete (Avro's a tombstone), a DDL and a watermark where the
    protocol sends them."""
    options = {"database": "shop", "table": "orders", "primary-key": "id", "protocol": protocol,
               "topic": topic + "_{schema}_{table}" if protocol == "avro" else topic,
               "enable-tidb-extension": "true", "avro-enable-watermark": "true" if protocol == "debezium-avro" else None}
    if protocol in CONFLUENT:
        options["schema-registry"] = registry
    config, layout, changes, _ = build(ORDERS, ROWS, **{k: v for k, v in options.items() if v is not None})
    encoder = encoder_for(config, layout.table)
    kafka_topic = topic + "_shop_orders" if protocol == "avro" else topic
    messages = []
    if isinstance(encoder, SendsTableSchemas):
        messages.append(("bootstrap", *_first(encoder.bootstrap_messages("shop", "orders", kafka_topic))))
    rows = encoder.encode_rows(changes, Routing([kafka_topic], np.zeros(3, np.int32), np.zeros(3, np.int32),
                                                {kafka_topic: 1}))
    keys = rows.keys.to_pylist() if rows.keys is not None else [None] * len(rows)
    messages += [(f"row {i}", _bytes(k), _bytes(v)) for i, (k, v) in enumerate(zip(keys, rows.values.to_pylist()))]
    if protocol != "avro":
        ddl = DDLChange("shop", "orders", "ALTER TABLE orders ADD COLUMN x INT", 4 << 18, "add column")
        messages.append(("ddl", *_first(encoder.encode_ddl(ddl, kafka_topic))))
        messages.append(("watermark", *_first(encoder.encode_watermark(5 << 18, [kafka_topic]))))
    return messages


@pytest.fixture(scope="module")
def registry():
    from ticdc_sink.embedded.schema_registry import SchemaRegistryDouble

    with SchemaRegistryDouble() as double:
        yield double.url


@pytest.fixture(scope="module")
def messages(registry) -> dict[str, list]:
    return {protocol: written(protocol, registry, topic=protocol) for protocol in PROTOCOLS}


def decoder(protocol: str, registry: str):
    return decoder_for(protocol, schema_registry=registry if protocol in CONFLUENT else None)


def looks(writer: str, reader: str, value: bytes | None) -> str:
    """What the message of ``writer`` looks like to a reader of ``reader``."""
    if value is None:
        return "a tombstone: a key without a value, as avro writes a delete"
    if writer in CONFLUENT and reader not in CONFLUENT:
        return "it looks like avro or debezium-avro"  # no registry to tell them apart
    return f"it looks like {writer}"


@pytest.mark.parametrize("writer, reader", list(itertools.permutations(PROTOCOLS, 2)))
def test_every_message_of_another_protocol_is_named_not_of_the_protocol_read(writer, reader, messages, registry):
    read = decoder(reader, registry)
    for what, key, value in messages[writer]:
        if value is None and reader == "debezium-avro":
            assert recognition.decode(read, key, value) == [], what  # a tombstone is no error in either Avro
            continue
        with pytest.raises(NotOfProtocol) as error:
            recognition.decode(read, key, value)
        article = "an" if reader[0] in "ao" else "a"
        assert str(error.value) == f"not {article} {reader} message ({looks(writer, reader, value)})", what


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_what_is_no_row_but_the_protocols_own_is_no_error(protocol, messages, registry):
    read = decoder(protocol, registry)
    events = [e for _, key, value in messages[protocol] for e in recognition.decode(read, key, value)]
    assert [e.type for e in events if isinstance(e, RowEvent)] == ["INSERT", "UPDATE", "DELETE"]


@pytest.mark.parametrize("reader", JSON_PROTOCOLS)
def test_json_of_no_ticdc_protocol_is_named(reader):
    maxwell = json.dumps({"database": "shop", "table": "orders", "type": "insert", "ts": 1,
                          "data": {"id": 1}}).encode()
    with pytest.raises(NotOfProtocol, match=rf"^not a {reader} message \(JSON of no TiCDC protocol\)$"):
        recognition.decode(decoder_for(reader), None, maxwell)


def test_a_broken_or_compressed_message_of_the_protocol_keeps_the_decoders_error():
    """Bytes that cannot tell their protocol (not JSON; an LZ4 frame the reader was not told of) are not called
    another protocol's: the decoder's error and the compression hint name them."""
    canal = decoder_for("canal-json")
    with pytest.raises(ValueError) as error:
        recognition.decode(canal, None, b'{"id":0,"database":"sh')
    assert not isinstance(error.value, NotOfProtocol)
    with pytest.raises(ValueError) as error:
        recognition.decode(canal, None, compress(b'{"id":0,"isDdl":false,"type":"INSERT"}', "lz4"))
    assert not isinstance(error.value, NotOfProtocol)



def task(protocol: str, on_error: str = "fail", registry: str | None = None) -> _RangeRead:
    """A read's task of partition 0 of topic t, reading shop.orders as ``protocol``."""
    config = parse_read_options({"kafka.bootstrap.servers": "127.0.0.1:1", "topic": "t", "protocol": protocol,
                                 "enable-tidb-extension": "true", "database": "shop", "table": "orders",
                                 "on-error": on_error, **({"schema-registry": registry} if registry else {})})
    columns = T.StructType([T.StructField("_op", T.StringType()), T.StructField("_commit_ts", T.LongType()),
                            T.StructField("id", T.LongType()), T.StructField("name", T.StringType())])
    return _RangeRead(ReadLayout.from_schema(config, columns), KafkaRange("t:0", 0, 100))


def rows_of(read: _RangeRead, messages: list[Message]) -> list[dict]:
    return pa.Table.from_batches([*read.chunk(messages), *read.finish()]).to_pylist()


@pytest.mark.parametrize("writer, reader", [("debezium", "canal-json"), ("simple", "canal-json"),
                                            ("canal-json", "open-protocol"), ("canal-json", "simple"),
                                            ("open-protocol", "simple"), ("avro", "canal-json"), ("avro", "simple"),
                                            ("canal-json", "debezium")])
def test_a_task_fails_on_another_protocols_message_in_one_line_or_skips_and_counts_it(writer, reader, messages):
    """Read a chunk at a time (Canal-JSON, Open Protocol, Simple's JSON) as message by message: Arrow's reader of
    Canal-JSON finds no row in a Debezium message, and used to give nothing for it; a tombstone failed the
    chunk's reader with a TypeError that named no message."""
    own = [m for m in messages[reader] if m[0] == "row 0"]
    foreign = [m for m in messages[writer] if m[0].startswith("row")]
    chunk = [Message(key, value, offset) for offset, (_, key, value) in enumerate(own + foreign)]
    with pytest.raises(ReadError) as error:
        rows_of(task(reader), chunk)
    assert str(error.value) == (f"topic 't' partition 0 offset 1: not a{'n' if reader[0] == 'o' else ''} "
                                f"{reader} message ({looks(writer, reader, foreign[0][2])}); check the protocol "
                                "option")
    skipping = task(reader, on_error="skip")
    assert rows_of(skipping, chunk) == rows_of(task(reader), chunk[:len(own)])
    assert skipping.counts[f"not {reader}"] == len(foreign)


@pytest.mark.parametrize("reader", JSON_PROTOCOLS)
def test_a_tombstone_in_a_topic_of_a_json_protocol_is_named(reader, messages):
    [(key, tombstone)] = [(k, v) for _, k, v in messages["avro"] if v is None]
    with pytest.raises(ReadError, match=rf"^topic 't' partition 0 offset 0: not a {reader} message \(a tombstone: "
                                        r"a key without a value, as avro writes a delete\); check the protocol "
                                        r"option$"):
        rows_of(task(reader), [Message(key, tombstone, 0)])


def rows_one_by_one(read: _RangeRead, messages: list[Message]) -> list[dict]:
    for message in messages:
        read.message(message)
    return pa.Table.from_batches(list(read.finish())).to_pylist()


def tombstone_after_delete(protocol: str, messages) -> tuple[bytes, None]:
    """The tombstone Debezium writes after a delete, for log compaction: the delete's key and a null value."""
    [key] = [k for what, k, _ in messages[protocol] if what == "row 2"]
    return key, None


@pytest.mark.parametrize("protocol", ["debezium", "debezium-avro"])
def test_a_debezium_tombstone_after_a_delete_is_no_change(protocol, messages, registry):
    """Debezium (and Kafka Connect on TiCDC's Debezium topics) follows a delete with a tombstone: a read of the
    topic passes over it, a chunk and a message at a time, as ``tail`` does."""
    rows = [(key, value) for what, key, value in messages[protocol] if what.startswith("row")]
    topic = [Message(key, value, offset)
             for offset, (key, value) in enumerate([*rows, tombstone_after_delete(protocol, messages)])]
    assert recognition.decode(decoder(protocol, registry), *tombstone_after_delete(protocol, messages)) == []
    read = [path(task(protocol, registry=registry), topic) for path in (rows_of, rows_one_by_one)]
    assert read == [rows_of(task(protocol, registry=registry), topic[:-1])] * 2
    assert [r["_op"] for r in read[0]] == ["INSERT", "UPDATE", "DELETE"]


@pytest.mark.parametrize("reader", ["canal-json", "open-protocol", "simple", "debezium-avro"])
def test_a_debezium_tombstone_in_a_topic_of_another_protocol_is_named(reader, messages, registry):
    """A protocol whose topics hold no tombstones (and debezium-avro, whose keys are Avro) names one."""
    key, tombstone = tombstone_after_delete("debezium", messages)
    article = "an" if reader[0] in "aeiou" else "a"
    with pytest.raises(ReadError, match=rf"^topic 't' partition 0 offset 0: not {article} {reader} message \(a "
                                        r"tombstone: a key without a value, as debezium writes after a delete\); "
                                        r"check the protocol option$"):
        rows_of(task(reader, registry=registry), [Message(key, tombstone, 0)])


@pytest.mark.parametrize("reader", PROTOCOLS)
def test_a_tombstone_without_a_key_is_no_change_where_the_protocol_has_tombstones(reader, registry):
    read = decoder(reader, registry)
    if reader in ("avro", "debezium", "debezium-avro"):
        assert recognition.decode(read, None, None) == []
        return
    with pytest.raises(NotOfProtocol, match=r"\(a tombstone: a key without a value, as avro writes a delete, and "
                                            r"debezium after one\)$"):
        recognition.decode(read, None, None)


@pytest.mark.parametrize("reader", ["debezium", "canal-json"])
def test_a_compressed_tombstone_is_told_by_its_key_as_the_options_decompress_it(reader, messages):
    key, tombstone = tombstone_after_delete("debezium", messages)
    read = decoder_for(parse_read_options({"kafka.bootstrap.servers": "127.0.0.1:1", "topic": "t", "protocol": reader,
                                           "large-message-handle-compression": "lz4"}).sink)
    if reader == "debezium":
        assert recognition.decode(read, compress(key, "lz4"), tombstone) == []
        return
    with pytest.raises(NotOfProtocol, match=r"as debezium writes after a delete\)$"):
        recognition.decode(read, compress(key, "lz4"), tombstone)


def test_a_task_of_simple_no_longer_takes_canal_jsons_watermark_and_ddl_for_ddl(messages):
    control = [(key, value) for what, key, value in messages["canal-json"] if what in ("ddl", "watermark")]
    chunk = [Message(key, value, offset) for offset, (key, value) in enumerate(control)]
    with pytest.raises(ReadError, match=r"^topic 't' partition 0 offset 0: not a simple message \(it looks like "
                                        r"canal-json\); check the protocol option$"):
        rows_of(task("simple"), chunk)
