"""The reader without Spark or a broker: its options, the MySQL types read back as Spark's, and the two ways a
task decodes (a message at a time, and Canal-JSON's chunk at a time) giving the same record batches."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from changefeed import build
from consumed import Message
from pyspark.sql import types as T
from test_round_trip import MATRIX, NULLS, OPTIONS, VALUES, changed, row

from ticdc_sink.changes.dispatch import Routing
from ticdc_sink.codec import decoder_for, encoder_for
from ticdc_sink.codec.base import RowEvent, learned_table_schemas
from ticdc_sink.codec.open_protocol.frames import frame
from ticdc_sink.config.reader import parse_read_options
from ticdc_sink.errors import ConfigError, ReadError
from ticdc_sink.source.layout import ReadLayout
from ticdc_sink.source.partition_read import KafkaRange, _RangeRead
from ticdc_sink.table.mysql_types import tidb_arrow_type
from ticdc_sink.table.spark_types import arrow_schema_of, spark_column, spark_type_of
from ticdc_sink.table.type_grammar import carried_type, parse_mysql_type

BASE = {"kafka.bootstrap.servers": "127.0.0.1:1", "protocol": "canal-json"}


def read_config(**options):
    return parse_read_options({**BASE, **{k.replace("_", "-"): v for k, v in options.items()}})


def test_topics_come_as_a_list_or_a_pattern_and_offsets_as_words_or_json():
    config = read_config(topic="a, b")
    assert (config.topics, config.starting_offsets, config.ending_offsets) == (("a", "b"), "earliest", "latest")
    config = read_config(topic_pattern="tidb_.*", starting_offsets='{"t": {"0": 5, "1": -2}}')
    assert (config.topics, config.topic_pattern, config.starting_offsets) == ((), "tidb_.*", {"t": {"0": 5, "1": -2}})
    assert read_config(topic="t", max_offsets_per_trigger="1000").max_offsets_per_trigger == 1000
    # An avro topic is read by its name: the sink's {schema}/{table} rule is a writer's.
    assert read_config(topic="t", protocol="avro", schema_registry="http://r:8081").topics == ("t",)
    assert read_config(topic="t").consumer_settings["isolation.level"] == "read_committed"


@pytest.mark.parametrize("options, message", [
    ({}, "option 'topic' is not set: give the topics to read"),
    ({"topic": "a", "topic_pattern": "b"}, "not both"),
    ({"topic": "a/b"}, "one Kafka topic name or several joined by commas"),
    ({"topic_pattern": "(unclosed"}, "not a regular expression"),
    ({"topic": "t", "starting_offsets": "first"}, "earliest, latest, or JSON per topic and partition"),
    ({"topic": "t", "on_error": "ignore"}, "expected one of fail, skip"),
    ({"topic": "t", "max_offsets_per_trigger": "0"}, "max-offsets-per-trigger"),
    ({"topic": "t", "ending_offset": "latest"}, "unknown option 'ending-offset'; did you mean 'ending-offsets'"),
    ({"topic": "t", "protocl": "simple"}, "unknown option 'protocl'; did you mean 'protocol'"),
])
def test_a_bad_read_option_is_named(options, message):
    with pytest.raises(ConfigError, match=message):
        read_config(**options)


@pytest.mark.parametrize("text, spark_type", [
    ("tinyint(1)", T.BooleanType()), ("tinyint", T.ByteType()), ("tinyint unsigned", T.ShortType()),
    ("smallint", T.ShortType()), ("mediumint", T.IntegerType()), ("int unsigned", T.LongType()),
    ("bigint", T.LongType()), ("bigint unsigned", T.DecimalType(20, 0)), ("decimal(12,3)", T.DecimalType(12, 3)),
    ("decimal", T.DecimalType(38, 18)), ("decimal(65,30)", T.DecimalType(38, 30)), ("float", T.FloatType()),
    ("double", T.DoubleType()), ("bit(12)", T.LongType()), ("year", T.IntegerType()), ("date", T.DateType()),
    ("datetime(3)", T.TimestampNTZType()), ("timestamp", T.TimestampType()), ("time(2)", T.StringType()),
    ("json", T.StringType()), ("varchar(10)", T.StringType()), ("varbinary", T.BinaryType()),
    ("blob", T.BinaryType()), ("enum('a','b')", T.StringType()), ("enum", T.LongType()), ("set", T.LongType()),
])
def test_a_mysql_type_reads_as_the_spark_type_the_sink_writes_it_from(text, spark_type):
    assert spark_type_of(carried_type(text)) == spark_type


def spark_values(text: str, values: list, zone: str = "UTC") -> list:
    t = parse_mysql_type(text)
    arrow_type = arrow_schema_of(T.StructType([T.StructField("v", spark_type_of(t))])).field("v").type
    return spark_column(pa.array(values, tidb_arrow_type(t)), t, zone, arrow_type).to_pylist()


def test_tidb_values_become_the_spark_types_values():
    assert spark_values("ENUM('a','b')", [1, 2, 0, None]) == ["a", "b", "", None]
    assert spark_values("SET('r','g','b')", [5, 0, None]) == ["r,b", "", None]
    assert spark_values("BIT(64)", [2**64 - 1, 5]) == [-1, 5]
    assert spark_values("TINYINT(1)", [1, 0, 7]) == [True, False, True]
    assert spark_values("BIGINT UNSIGNED", [2**64 - 1]) == [Decimal(2**64 - 1)]
    # A TIMESTAMP is rendered in the time-zone option's wall clock; read back, it is that instant.
    assert spark_values("TIMESTAMP", [dt.datetime(2024, 1, 2, 11, 4, 5)], "Asia/Shanghai") == [
        dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)]


def matrix_messages(protocol: str, batch: int = 1) -> tuple[list, list, object]:
    """The round-trip matrix (every type, inserts, updates with old values, deletes, NULLs) as the protocol's
    messages (keys, values), with a watermark at ts 3 after the third and the first row again after it; with
    ``batch`` (Open Protocol's max-batch-size) above 1, its messages as they are."""
    rows = [row("INSERT", 1, VALUES), row("INSERT", 2, changed(NULLS, id=2)),
            row("UPDATE", 3, changed(VALUES, id=2), changed(NULLS, id=2)), row("DELETE", 4, VALUES)]
    config, layout, changes, _ = build(MATRIX, rows, **{**OPTIONS, "protocol": protocol,
                                                        "enable_tidb_extension": "true", "max_batch_size": str(batch)})
    routing = Routing(["t"], np.zeros(len(rows), dtype=np.int32), np.zeros(len(rows), dtype=np.int32), {"t": 1})
    messages = encoder_for(config, layout.table).encode_rows(changes, routing)
    keys = [None if k is None else k.encode() if isinstance(k, str) else k
            for k in (messages.keys.to_pylist() if messages.keys is not None else [None] * len(messages))]
    values = [v.encode() if isinstance(v, str) else v for v in messages.values.to_pylist()]
    if protocol == "open-protocol":
        watermark = (frame([b'{"ts":%d,"t":3}' % (3 << 18)]), frame([b""], versioned=False))
    elif protocol == "simple":
        watermark = (None, b'{"version":1,"type":"WATERMARK","commitTs":%d,"buildTs":0}' % (3 << 18))
    else:
        watermark = (None, json.dumps({"id": 0, "database": "", "table": "", "pkNames": None, "isDdl": False,
                                       "type": "TIDB_WATERMARK", "es": 0, "ts": 0, "sql": "", "sqlType": None,
                                       "mysqlType": None, "data": None, "old": None,
                                       "_tidb": {"watermarkTs": 3 << 18}}).encode())
    if batch > 1:
        return keys, values, config
    order = [0, 1, 2, None, 0, 3]
    return ([watermark[0] if i is None else keys[i] for i in order],
            [watermark[1] if i is None else values[i] for i in order], config)



@pytest.mark.parametrize("protocol, batch", [("canal-json", 1), ("open-protocol", 1), ("open-protocol", 8),
                                             ("simple", 1)])
def test_a_chunk_at_a_time_gives_the_rows_of_a_message_at_a_time(protocol, batch):
    keys, values, config = matrix_messages(protocol, batch)
    messages = [Message(key, value, i) for i, (key, value) in enumerate(zip(keys, values))]
    read_options = {**BASE, "protocol": protocol, "topic": "t", "column-types": OPTIONS["column_types"],
                    "time-zone": "Asia/Shanghai", "enable-tidb-extension": "true", "include-kafka-coordinates": "true"}
    read = parse_read_options(read_options)
    decoder = decoder_for(config)
    if protocol == "simple":  # its rows are typed by the table's schema, from a BOOTSTRAP before them
        decoder.decode(None, encoder_for(config, build(MATRIX, [], **OPTIONS)[1].table)
                       .bootstrap_messages("d", "m", "t").values[0].as_py().encode())
    first = next(e for e in decoder.decode(keys[0], values[0]) if isinstance(e, RowEvent))
    layout = ReadLayout.from_event(read, first, learned_table_schemas(decoder))

    chunked = _RangeRead(layout, KafkaRange("t:0", 0, 6))
    assert chunked.decoder.decode_columns(keys, values, chunked.types) is not None
    by_chunk = pa.Table.from_batches([*chunked.chunk(messages), *chunked.finish()])
    one_by_one = _RangeRead(layout, KafkaRange("t:0", 0, 6))
    for message in messages:
        one_by_one.message(message)
    by_message = pa.Table.from_batches(list(one_by_one.finish()))

    # The first row again after the watermark at its ts: a repeat, dropped both ways.
    repeats = 1 if batch == 1 else 0
    assert by_chunk.num_rows == 4 and chunked.counts["repeated"] == one_by_one.counts["repeated"] == repeats
    # One event a message (the watermark at 3, the repeat at 4), or all four events in one message.
    assert len(messages) == (6 if batch == 1 else 1)
    assert by_chunk.column("_offset").to_pylist() == ([0, 1, 2, 5] if batch == 1 else [0, 0, 0, 0])
    assert by_chunk.to_pylist() == by_message.to_pylist()


def test_a_simple_row_whose_schema_never_came_is_typed_by_the_columns_the_read_knows():
    """A read that starts after the BOOTSTRAP (a stream resumed, a given schema) still gives the table's rows."""
    from pathlib import Path

    golden = (Path(__file__).parent / "golden" / "simple" / "dml-insert.json").read_bytes().strip()
    read = parse_read_options({**BASE, "topic": "t", "protocol": "simple", "database": "simple", "table": "user"})
    layout = ReadLayout.from_schema(read, T.StructType([
        T.StructField("_op", T.StringType()), T.StructField("id", T.IntegerType()),
        T.StructField("name", T.StringType()), T.StructField("score", T.FloatType())]))
    task = _RangeRead(layout, KafkaRange("t:0", 0, 1))
    task.message(Message(None, golden, 0))

    assert pa.Table.from_batches(list(task.finish())).to_pylist() == [
        {"_op": "INSERT", "id": 1, "name": "John Doe", "score": 90.5}]


def test_a_writers_topic_expression_reads_as_its_topics():
    # The same options as the write: the table's topic, or with no table named every topic the expression makes.
    assert read_config(topic="tidb_{schema}_{table}", database="shop", table="orders").topics == ("tidb_shop_orders",)
    config = read_config(topic="tidb_{schema}_{table}")
    assert (config.topics, config.topic_pattern) == ((), r"tidb_.+_.+")


@pytest.mark.parametrize("on_error", ["fail", "skip"])
def test_a_handle_key_only_row_fails_the_read_or_is_skipped_and_counted(on_error):
    """Its other values are not in the topic (TiCDC's consumers read them from TiDB): a read never makes them
    NULLs, column at a time or message by message."""
    from pathlib import Path

    golden = Path(__file__).parent / "golden" / "canal-json"
    whole, small = ((golden / name).read_bytes() for name in ("dml-insert-tidb-extension.json",
                                                              "dml-insert-handle-key-only.json"))
    read = parse_read_options({**BASE, "topic": "t", "protocol": "canal-json", "enable-tidb-extension": "true",
                               "on-error": on_error})
    layout = ReadLayout.from_event(read, decoder_for("canal-json").decode(None, whole)[0])
    task = _RangeRead(layout, KafkaRange("t:0", 0, 2))
    messages = [Message(None, whole, 0), Message(None, small, 1)]
    assert task.decoder.decode_columns([None, None], [whole, small], task.types) is None
    if on_error == "fail":
        with pytest.raises(ReadError, match="offset 1 carries a row's handle key only.*on-error=skip"):
            list(task.chunk(messages))
        return
    rows = pa.Table.from_batches([*task.chunk(messages), *task.finish()]).to_pylist()
    assert [r["id"] for r in rows] == [2] and task.counts["handle-key-only"] == 1
