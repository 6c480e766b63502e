"""TiCDC's own example messages (tests/golden/, from the protocol documents and TiCDC's tests), produced into a
topic as they are and read by the ``ticdc`` format into the rows the documents describe.

Avro's examples are left out: their frames name schema ids of the registry TiCDC's tests ran against; the sink's
Avro messages are read back in test_reader.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import types as T

from test_reader_rules import Topic

pytestmark = [pytest.mark.spark, pytest.mark.broker]

GOLDEN = Path(__file__).parent / "golden"


def golden(path: str) -> bytes:
    return (GOLDEN / path).read_bytes().strip()


def read(spark, topic: Topic, protocol: str, **options) -> tuple[list, list[dict]]:
    frame = spark.read.format("ticdc").options(**{**topic.options(), "protocol": protocol, **options}).load()
    table = [f for f in frame.schema.fields if not f.name.startswith("_")]
    return [(f.name, f.dataType) for f in table], [r.asDict(recursive=True) for r in frame.collect()]


def test_canal_jsons_example_insert(spark, broker, topic):
    messages = Topic(broker, topic, partitions=1)
    messages.send(0, golden("canal-json/dml-insert.json"))

    columns, [row] = read(spark, messages, "canal-json")

    # The document's mysqlType names: Canal-JSON carries no widths, so each integer is its kind's Spark type.
    assert columns == [("c_bigint", T.LongType()), ("c_int", T.IntegerType()), ("c_mediumint", T.IntegerType()),
                       ("c_smallint", T.ShortType()), ("c_tinyint", T.ByteType()), ("id", T.IntegerType())]
    # Without the TiDB extension the commit ts is the message's es (the commit's physical ms) as a TSO.
    assert row == {"_op": "INSERT", "_commit_ts": 1639633141221 << 18, "_schema": "test", "_table": "tp_int",
                   "c_bigint": 9223372036854775807, "c_int": 2147483647, "c_mediumint": 8388607,
                   "c_smallint": 32767, "c_tinyint": 127, "id": 2, "_before": None, "_ddl": None}


def test_open_protocols_example_insert(spark, broker, topic):
    messages = Topic(broker, topic, partitions=1)
    # The document's event as it is on the wire: in a frame (tests/golden/open-protocol/make_frames.py).
    messages._producer.produce(topic, key=(GOLDEN / "open-protocol/frame-row-insert.key.bin").read_bytes(),
                               value=(GOLDEN / "open-protocol/frame-row-insert.value.bin").read_bytes(), partition=0)
    messages._producer.flush(30)

    columns, [row] = read(spark, messages, "open-protocol")

    assert columns == [("id", T.IntegerType()), ("val", T.StringType())]
    assert row == {"_op": "INSERT", "_commit_ts": 415508878783938562, "_schema": "test", "_table": "t1", "id": 1,
                   "val": "aa", "_before": None, "_ddl": None}


def test_debeziums_example_insert(spark, broker, topic):
    messages = Topic(broker, topic, partitions=1)
    messages._producer.produce(topic, key=golden("debezium/dml-insert.key.json"),
                               value=golden("debezium/dml-insert.value.json"), partition=0)
    messages._producer.flush(30)

    columns, [row] = read(spark, messages, "debezium")

    # Without the TiDB extension the field schema says int16: TiCDC's type for a TINYINT.
    assert columns == [("tiny", T.ShortType())]
    assert row == {"_op": "INSERT", "_commit_ts": 429918007904436226, "_schema": "test", "_table": "table1",
                   "tiny": 1, "_before": None, "_ddl": None}


def test_simples_example_rows_are_typed_by_the_schema_its_ddl_brings(spark, broker, topic):
    messages = Topic(broker, topic, partitions=1)
    messages.send(0, golden("simple/ddl-alter-add-column.json"), golden("simple/dml-insert.json"))

    columns, rows = read(spark, messages, "simple", database="simple", table="user")

    assert columns == [("id", T.IntegerType()), ("name", T.StringType()), ("age", T.IntegerType()),
                       ("score", T.FloatType())]
    ddl, insert = sorted(rows, key=lambda r: r["_op"])
    assert (ddl["_op"], ddl["_commit_ts"], ddl["_ddl"]) == (
        "DDL", 447987408682614795, "ALTER TABLE `user` ADD COLUMN `createTime` TIMESTAMP")
    assert insert == {"_op": "INSERT", "_commit_ts": 447984084414103554, "_schema": "simple", "_table": "user",
                      "id": 1, "name": "John Doe", "age": 25, "score": 90.5, "_before": None, "_ddl": None}
