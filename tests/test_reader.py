"""The ``ticdc`` format read back: ``spark.read`` and ``spark.readStream`` over topics the sink wrote, for every
protocol, against the session's broker.

A DataFrame of every type, written by the sink and read back with the same
options, equals its input: values, Spark types, ``_op``, ``_commit_ts`` and
``_before`` (Avro carries no old values and a delete's key only, as its
document says, unless with ``avro-include-before-value``).  The consumer rules (consistent cuts, repeated rows, DDL,
tables, undecodable messages) are in ``test_reader_rules.py``.
"""

from __future__ import annotations

import datetime as dt
import random
import string
from decimal import Decimal

import pytest
from pyspark.sql import types as T

from protocols import ProtocolUnderTest

pytestmark = [pytest.mark.spark, pytest.mark.broker]

READ_PROTOCOLS = ["open-protocol", "canal-json", "avro", "avro-before-value", "debezium", "simple", "simple-avro",
                  "debezium-avro"]
REGISTRY_PROTOCOLS = ("avro", "avro-before-value", "debezium-avro")
COLUMNS = [
    T.StructField("id", T.IntegerType(), False),
    T.StructField("b", T.BooleanType()),
    T.StructField("i8", T.ByteType()),
    T.StructField("i16", T.ShortType()),
    T.StructField("big", T.LongType()),
    T.StructField("u32", T.LongType()),
    T.StructField("u64", T.DecimalType(20, 0)),
    T.StructField("f", T.FloatType()),
    T.StructField("d", T.DoubleType()),
    T.StructField("dec", T.DecimalType(12, 3)),
    T.StructField("s", T.StringType()),
    T.StructField("txt", T.StringType()),
    T.StructField("vb", T.BinaryType()),
    T.StructField("day", T.DateType()),
    T.StructField("ts", T.TimestampType()),
    T.StructField("ntz", T.TimestampNTZType()),
    T.StructField("tm", T.StringType()),
    T.StructField("yr", T.IntegerType()),
    T.StructField("js", T.StringType()),
    T.StructField("en", T.StringType()),
    T.StructField("st", T.StringType()),
    T.StructField("bits", T.LongType()),
]
# Declared for writing and reading alike: what the Spark types alone do not say, and what some protocols do not
# carry (Open Protocol has no widths, scales or members; Canal-JSON without content-compatible no widths; Avro
# one INT for every integer narrower than BIGINT).
COLUMN_TYPES = ("b TINYINT(1), i8 TINYINT, i16 SMALLINT, u32 INT UNSIGNED, u64 BIGINT UNSIGNED, dec DECIMAL(12,3), txt TEXT, "
                "ts TIMESTAMP(6), ntz DATETIME(6), tm TIME(2), yr YEAR, js JSON, en ENUM('small','Medium','large'), "
                "st SET('r','g','b'), bits BIT(12)")
CHANGES = T.StructType([T.StructField("_op", T.StringType()), T.StructField("_commit_ts", T.LongType()),
                        *COLUMNS, T.StructField("_before", T.StructType(COLUMNS))])
VALUES = {
    "id": 1, "b": True, "i8": -128, "i16": 32767, "big": -(2**63), "u32": 4294967295,
    "u64": Decimal("18446744073709551615"), "f": 3.25, "d": -1.5e-7, "dec": Decimal("-123456789.125"),
    "s": 'héllo <"quoted"> & \\ \u2028', "txt": "line1\nline2 测试", "vb": b"a\"b\\\x89\x00",
    "day": dt.date(2024, 2, 29), "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=dt.timezone.utc),
    "ntz": dt.datetime(1999, 12, 31, 23, 59, 59, 999999), "tm": "-838:59:58.99", "yr": 2155,
    "js": '{"a": "x", "b": [1, 2.5]}', "en": "Medium", "st": "r,b", "bits": 4095,
}
NULLS = {name: None for name in VALUES}
TS = 450_000_000_000_000_000


def protocol_of(name: str, registry) -> tuple[ProtocolUnderTest, dict]:
    """The protocol under test and its extra options (Simple's Avro encoding is ``simple`` with
    ``encoding-format=avro``, ``avro-before-value`` Avro with ``avro-include-before-value``); every protocol with
    the TiDB extension, which carries commit ts and ops."""
    if name == "simple-avro":
        return ProtocolUnderTest("simple"), {"encoding-format": "avro"}
    if name == "avro-before-value":
        return ProtocolUnderTest("avro", registry.url), {"avro-include-before-value": "true"}
    if name == "debezium-avro":
        return ProtocolUnderTest(name, registry.url), {"avro-bigint-unsigned-handling-mode": "string"}
    return ProtocolUnderTest(name, registry.url if name == "avro" else None), {}


@pytest.fixture(params=READ_PROTOCOLS)
def read_protocol(request):
    registry = request.getfixturevalue("schema_registry") if request.param in REGISTRY_PROTOCOLS else None
    return protocol_of(request.param, registry)


def change(op: str, ts: int, values: dict, before: dict | None = None) -> dict:
    return {"_op": op, "_commit_ts": TS + ts, **values, "_before": before}


def changes() -> list[dict]:
    second = {**VALUES, "id": 2, "s": "second", "en": "large", "st": "", "bits": 0}
    return [
        change("INSERT", 1, VALUES),
        change("INSERT", 2, {**NULLS, "id": 2}),
        change("UPDATE", 3, second, {**NULLS, "id": 2}),
        change("DELETE", 4, VALUES),
        change("INSERT", 5, {**VALUES, "id": 3, "b": False, "i8": 127, "d": 1e300, "dec": Decimal("0.001")}),
    ]


def write_options(broker, topic: str, protocol: ProtocolUnderTest, extra: dict) -> dict:
    return {"kafka.bootstrap.servers": broker.bootstrap_servers, **protocol.options(topic), **extra,
            "database": "shop", "table": "orders", "primary-key": "id", "column-types": COLUMN_TYPES,
            "enable-tidb-extension": "true", "partition": "index-value", "broker-timeout-ms": "10000"}


def read_options(broker, topic: str, protocol: ProtocolUnderTest, extra: dict) -> dict:
    """The write's options, as a user would pass them again, but the topic that was written and the reader's
    isolation level (the embedded broker is read uncommitted, see conftest)."""
    options = {k: v for k, v in write_options(broker, topic, protocol, extra).items()
               if k not in ("database", "table", "partition")}
    return {**options, "topic": protocol.kafka_topic(topic), "kafka.isolation.level": broker.isolation}


def expected_rows(protocol: ProtocolUnderTest, extra: dict) -> list[dict]:
    """The changes as the protocol carries them, in commit ts order (nulls first): Avro without
    avro-include-before-value has no old values, and a delete is its key alone (a tombstone, without commit ts)."""
    rows = changes()
    if protocol.name == "avro" and "avro-include-before-value" not in extra:
        for row in rows:
            row["_before"] = None
            if row["_op"] == "DELETE":
                row.update({**NULLS, "id": row["id"], "_commit_ts": None})
    return sorted(rows, key=lambda row: (row["_commit_ts"] is not None, row["_commit_ts"]))


def collected(rows: list[dict]) -> list[dict]:
    """``rows`` as ``collect()`` gives them back: a TIMESTAMP as a naive datetime in the local time zone."""
    def local(values: dict | None) -> dict | None:
        if values is None or values["ts"] is None:
            return values
        return {**values, "ts": values["ts"].astimezone().replace(tzinfo=None)}
    return [{**local(row), "_before": local(row["_before"])} for row in rows]


def as_dicts(rows) -> list[dict]:
    return [row.asDict(recursive=True) for row in rows]


def test_a_dataframe_written_by_the_sink_reads_back_equal(spark, broker, topic, read_protocol, tmp_path):
    protocol, extra = read_protocol
    spark.createDataFrame(changes(), CHANGES).repartition(2).write.format("ticdc").mode("append") \
        .options(**write_options(broker, topic, protocol, extra)).save()

    frame = spark.read.format("ticdc").options(**read_options(broker, topic, protocol, extra)).load()

    table_fields = [(f.name, f.dataType) for f in COLUMNS]
    assert [(f.name, f.dataType) for f in frame.schema.fields] == [
        ("_op", T.StringType()), ("_commit_ts", T.LongType()), ("_schema", T.StringType()),
        ("_table", T.StringType()), *table_fields, ("_before", T.StructType([T.StructField(n, t) for n, t in
                                                                             table_fields])),
        ("_ddl", T.StringType())]
    rows = as_dicts(frame.orderBy("_commit_ts").collect())
    assert [(r["_schema"], r["_table"], r["_ddl"]) for r in rows] == [("shop", "orders", None)] * 5
    assert changes_of(rows) == collected(expected_rows(protocol, extra))

    # And as a stream: every micro-batch a cut at the sink's watermark (Avro's: at the offsets available).
    streamed: list[dict] = []
    stream = spark.readStream.format("ticdc").options(**read_options(broker, topic, protocol, extra)).load()
    query = stream.writeStream.foreachBatch(lambda batch, _: streamed.extend(as_dicts(batch.collect()))) \
        .option("checkpointLocation", str(tmp_path / "checkpoint")).start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    in_order = sorted(streamed, key=lambda row: (row["_commit_ts"] is not None, row["_commit_ts"]))
    assert changes_of(in_order) == collected(expected_rows(protocol, extra))


def changes_of(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in ("_schema", "_table", "_ddl")} for r in rows]


@pytest.mark.parametrize("name", ["canal-json", "open-protocol", "simple", "simple-avro"])
def test_large_rows_kept_by_claim_check_and_compressed_read_back_whole(spark, broker, topic, name, tmp_path):
    protocol, extra = protocol_of(name, None)
    large = "".join(random.Random(7).choices(string.ascii_letters, k=3000))  # lz4 cannot shrink it below 2000
    rows = [change("INSERT", 1, {**VALUES, "txt": large}), change("INSERT", 2, {**NULLS, "id": 2}),
            change("UPDATE", 3, {**VALUES, "id": 2, "txt": large}, {**NULLS, "id": 2})]
    extra = {**extra, "large-message-handle-option": "claim-check", "large-message-handle-compression": "lz4",
             "claim-check-storage-uri": f"file://{tmp_path}/claims", "max-message-bytes": "2000"}
    spark.createDataFrame(rows, CHANGES).write.format("ticdc").mode("append") \
        .options(**write_options(broker, topic, protocol, extra)).save()
    assert len(list((tmp_path / "claims").iterdir())) == 2  # the two large rows, kept whole

    frame = spark.read.format("ticdc").options(**read_options(broker, topic, protocol, extra)).load()
    assert changes_of(as_dicts(frame.orderBy("_commit_ts").collect())) == collected(rows)
