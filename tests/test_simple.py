"""protocol=simple: TiCDC's Simple messages byte for byte (golden/simple/, the document's examples)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from pyspark.sql import types as T

from changefeed import build, schema
from ticdc_sink.codec.simple import SimpleEncoder
from ticdc_sink.codec.simple_schema import simple_table, table_id
from ticdc_sink.dispatch import Routing

GOLDEN = Path(__file__).resolve().parent / "golden" / "simple"
# The document's table: simple.user, tableID 148, at schema version 447984074911121426.
USER = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("id", T.IntegerType(), False),
              ("name", T.StringType()), ("age", T.IntegerType()), ("score", T.FloatType()),
              ("_before", T.StructType([T.StructField("id", T.IntegerType(), False),
                                        T.StructField("name", T.StringType()), T.StructField("age", T.IntegerType()),
                                        T.StructField("score", T.FloatType())])))
USER_OPTIONS = {"database": "simple", "table": "user", "primary_key": "id",
                "column_types": "id INT, name VARCHAR(255), age INT, score FLOAT"}
TABLE_ID, VERSION = 148, 447984074911121426
JOHN = {"id": 1, "name": "John Doe", "age": 25, "score": 90.5}


def golden(name: str) -> str:
    return (GOLDEN / f"{name}.json").read_text(encoding="utf-8")


def encoder(rows: list[dict], clock_ms: int = 0, **options):
    config, layout, changes, _ = build(USER, rows, **USER_OPTIONS)
    config = dataclasses.replace(config, protocol="simple", **{"table_id": TABLE_ID, "schema_version": VERSION,
                                                               **options})
    return SimpleEncoder(config, layout.table, clock=lambda: clock_ms), changes


def encode(rows: list[dict], clock_ms: int = 0, **options) -> list[str]:
    simple, changes = encoder(rows, clock_ms, **options)
    n = changes.num_rows
    messages = simple.encode_rows(changes, Routing(["t"], np.zeros(n, np.int32), np.zeros(n, np.int32), {"t": 1}))
    assert messages.keys is None  # TiCDC sends Simple messages without a key
    return messages.values.to_pylist()


@pytest.mark.parametrize("name, row, clock_ms", [
    ("dml-insert", {"_op": "INSERT", "_commit_ts": 447984084414103554, **JOHN}, 1708923662983),
    ("dml-update", {"_op": "UPDATE", "_commit_ts": 447984099186180098, **JOHN, "score": 95.0, "_before": JOHN},
     1708923719184),
    ("dml-delete", {"_op": "DELETE", "_commit_ts": 447984114259722243, **JOHN, "score": 95.0}, 1708923776484),
])
def test_the_documents_row_events_are_ticdcs_bytes(name, row, clock_ms):
    assert encode([row], clock_ms) == [golden(name)]


def test_the_documents_watermark_goes_to_every_partition():
    simple, _ = encoder([])
    simple.clock = lambda: 1708923816911
    messages = simple.encode_watermark(447984124732375041, ["t"])
    assert messages.values.to_pylist() == [golden("watermark")] and messages.keys is None
    assert messages.partitions.tolist() == [-1]  # BROADCAST


def test_the_documents_table_schema_column_and_index():
    simple, _ = encoder([])
    text = simple.shape.json("simple", "user", TABLE_ID)
    assert text == golden("table-schema")
    assert golden("column") in text and golden("index") in text


def test_an_update_without_old_values_is_an_insert():
    no_old = schema(*[(f.name, f.dataType, f.nullable) for f in USER.fields if f.name != "_before"])
    config, layout, changes, _ = build(no_old, [{"_op": "UPDATE", "_commit_ts": 447984084414103554, **JOHN}],
                                       **USER_OPTIONS)
    config = dataclasses.replace(config, protocol="simple", table_id=TABLE_ID, schema_version=VERSION)
    [value] = SimpleEncoder(config, layout.table, clock=lambda: 1708923662983).encode_values(changes).to_pylist()
    assert value == golden("dml-insert")


def test_derived_ids_are_stable_positive_and_the_version_follows_the_shape():
    config, layout, _, _ = build(USER, [], **USER_OPTIONS)
    version = simple_table(layout.table, config).version
    assert version == simple_table(layout.table, config).version and 0 < version < 2**63
    wider = build(USER, [], **{**USER_OPTIONS, "column_types": "id BIGINT, name VARCHAR(255), age INT, score FLOAT"})
    assert simple_table(wider[1].table, wider[0]).version != version
    assert table_id("simple", "user", config) == table_id("simple", "user", config) > 0
    assert table_id("simple", "user", config) != table_id("simple", "new_user", config)
    assert table_id("simple", "user", dataclasses.replace(config, table_id=148)) == 148


def test_values_render_as_ticdcs_simple_encoder_renders_them():
    import datetime as dt
    from decimal import Decimal

    types = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("id", T.IntegerType(), False),
                   ("ts", T.TimestampType()), ("bin", T.BinaryType()), ("big", T.DecimalType(20, 0)),
                   ("b", T.LongType()), ("e", T.StringType()), ("s", T.StringType()), ("d", T.DecimalType(5, 2)),
                   ("day", T.DateType()), ("t", T.StringType()), ("j", T.StringType()), ("txt", T.StringType()),
                   ("nothing", T.StringType()))
    row = {"_op": "INSERT", "_commit_ts": 1, "id": 1, "ts": dt.datetime(2024, 2, 26, 0, 32, 23, 120000),
           "bin": b"\x00\x01\x02", "big": Decimal(2**64 - 1), "b": 683, "e": "b", "s": "a,c", "d": Decimal("90.5"),
           "day": dt.date(2024, 2, 26), "t": "-01:02:03.5", "j": '{"a":1}', "txt": "x<y&\b\f\u2028", "nothing": None}
    config, layout, changes, _ = build(types, [row], database="d", table="t", primary_key="id",
                                       time_zone="Asia/Shanghai",
                                       column_types="ts TIMESTAMP(3), bin VARBINARY(8), big BIGINT UNSIGNED, "
                                       "b BIT(10), e ENUM('a','b','c'), s SET('a','b','c'), d DECIMAL(5,2), "
                                       "t TIME(1), j JSON, txt TEXT")
    config = dataclasses.replace(config, protocol="simple")
    [value] = SimpleEncoder(config, layout.table, clock=lambda: 0).encode_values(changes).to_pylist()
    data = value[value.index('"data":') + 7:-1]
    assert data == ('{"b":"683","big":"18446744073709551615","bin":"AAEC","d":"90.50","day":"2024-02-26",'
                    '"e":"2","id":"1","j":"{\\"a\\": 1}","nothing":null,"s":"5","t":"-01:02:03.5",'
                    '"ts":{"location":"Asia/Shanghai","value":"2024-02-26 08:32:23.120"},'
                    '"txt":"x\\u003cy\\u0026\\b\\f\\u2028"}')
