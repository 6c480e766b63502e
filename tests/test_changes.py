"""The input contract (docs/input.md): metadata columns, conversions and the errors for bad rows."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from changefeed import build, schema
from pyspark.sql import types as T

from ticdc_sink.changes.contract import OP_DELETE, OP_INSERT, OP_UPDATE, ChangeBatchBuilder, InputLayout
from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.errors import ConfigError, ContractError
from ticdc_sink.table.spark_types import arrow_schema_of

KEYED = dict(database="d", table="t", primary_key="id")
OPS = schema(("_op", T.StringType()), ("id", T.IntegerType(), False), ("v", T.StringType()))


def test_operations_in_every_accepted_spelling():
    rows = [{"_op": op, "id": i, "v": "x"} for i, op in enumerate(
        ["INSERT", "insert", "c", "I", "UPDATE", "u", "U", "DELETE", "d", " D "])]
    _, _, changes, _ = build(OPS, rows, **KEYED)
    assert changes.ops.tolist() == [OP_INSERT] * 4 + [OP_UPDATE] * 3 + [OP_DELETE] * 3


def test_every_row_is_an_insert_without_an_op_column():
    _, _, changes, _ = build(schema(("id", T.IntegerType(), False)), [{"id": 1}, {"id": 2}], **KEYED)
    assert changes.ops.tolist() == [OP_INSERT, OP_INSERT]


def test_unknown_operation_names_column_value_and_row_key():
    with pytest.raises(ContractError) as error:
        build(OPS, [{"_op": "INSERT", "id": 1, "v": "a"}, {"_op": "UPSERT", "id": 7, "v": "b"}], **KEYED)
    assert error.value.column == "_op" and error.value.value == "UPSERT" and error.value.row_key == "{id=7} (position 1 in the input)"
    assert "unknown operation" in str(error.value)


def test_null_operation_is_refused():
    with pytest.raises(ContractError, match=r"'_op'.*None.*\{id=3\}"):
        build(OPS, [{"_op": None, "id": 3, "v": "a"}], **KEYED)


TS = schema(("_commit_ts", T.LongType()), ("id", T.IntegerType(), False))


def test_null_commit_ts_is_refused():
    with pytest.raises(ContractError, match=r"'_commit_ts'.*\{id=5\}.*commit ts"):
        build(TS, [{"_commit_ts": 10, "id": 4}, {"_commit_ts": None, "id": 5}], **KEYED)


def test_non_positive_tso_is_refused():
    with pytest.raises(ContractError, match="positive"):
        build(TS, [{"_commit_ts": -1, "id": 4}], **KEYED)


def test_timestamp_commit_ts_becomes_a_tso():
    s = schema(("_commit_ts", T.TimestampType()), ("id", T.IntegerType(), False))
    when = dt.datetime(2021, 12, 16, 5, 38, 14, 670999, tzinfo=dt.timezone.utc)
    _, _, changes, _ = build(s, [{"_commit_ts": when, "id": 1}], **KEYED)
    assert changes.commit_ts.tolist() == [int(when.timestamp() * 1000) << 18]


def test_rows_are_sorted_by_commit_ts_stably():
    rows = [{"_commit_ts": ts, "id": i} for i, ts in enumerate([30, 10, 20, 10])]
    _, _, changes, _ = build(TS, rows, **KEYED)
    assert changes.commit_ts.tolist() == [10, 10, 20, 30]
    assert changes.columns["id"].to_pylist() == [1, 3, 2, 0]
    assert changes.row_key(0) == "{id=1} (position 1 in the input)"  # where it was in the input


START = schema(("_commit_ts", T.LongType()), ("_start_ts", T.LongType()), ("id", T.IntegerType(), False))


def test_start_ts_follows_its_row_and_a_missing_one_is_the_commit_ts():
    rows = [{"_commit_ts": 30, "_start_ts": 25, "id": 1}, {"_commit_ts": 10, "_start_ts": None, "id": 2}]
    _, _, changes, _ = build(START, rows, **KEYED)
    assert (changes.commit_ts.tolist(), changes.start_ts.tolist()) == ([10, 30], [10, 25])
    _, _, changes, _ = build(TS, [{"_commit_ts": 7, "id": 1}], **KEYED)
    assert changes.start_ts.tolist() == [7]


@pytest.mark.parametrize("start", [-1, 31])
def test_a_start_ts_after_its_commit_ts_or_negative_is_refused(start):
    with pytest.raises(ContractError, match=r"'_start_ts'.*\{id=1\}.*no later than its commit ts 30"):
        build(START, [{"_commit_ts": 30, "_start_ts": start, "id": 1}], **KEYED)


def test_generated_commit_ts_is_strictly_increasing_across_batches():
    s = schema(("id", T.IntegerType(), False))
    config = parse_options({"kafka.bootstrap.servers": "h:1", "protocol": "canal-json", "topic": "t",
                            "database": "d", "table": "t", "primary-key": "id"})
    builder = ChangeBatchBuilder(InputLayout.from_spark_schema(s, config), config)
    batch = pa.RecordBatch.from_pylist([{"id": i} for i in range(1000)], schema=arrow_schema_of(s))
    first, _ = builder.build(batch)
    second, _ = builder.build(batch)
    all_ts = np.concatenate([first.commit_ts, second.commit_ts]).astype(np.int64)
    assert np.all(np.diff(all_ts) > 0)
    now_ms = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    assert abs(int(all_ts[0] >> 18) - now_ms) < 60_000


BEFORE = schema(
    ("_op", T.StringType()),
    ("_before", T.StructType([T.StructField("id", T.IntegerType(), False), T.StructField("v", T.StringType())])),
    ("id", T.IntegerType(), False),
    ("v", T.StringType()),
)


def test_update_carries_its_old_row_and_other_rows_do_not():
    rows = [{"_op": "UPDATE", "_before": {"id": 1, "v": "old"}, "id": 1, "v": "new"},
            {"_op": "INSERT", "_before": {"id": 9, "v": "ignored"}, "id": 2, "v": "x"}]
    _, _, changes, _ = build(BEFORE, rows, **KEYED)
    assert changes.before["v"].to_pylist() == ["old", None]
    assert changes.columns["v"].to_pylist() == ["new", "x"]


def test_update_without_its_old_row_is_refused():
    with pytest.raises(ContractError, match=r"'_before'.*\{id=4\}.*old row"):
        build(BEFORE, [{"_op": "UPDATE", "_before": None, "id": 4, "v": "x"}], **KEYED)


def test_before_with_other_fields_is_refused():
    s = schema(("_op", T.StringType()), ("_before", T.StructType([T.StructField("id", T.IntegerType())])),
               ("id", T.IntegerType(), False), ("v", T.StringType()))
    with pytest.raises(ContractError, match=r"'_before'.*exactly the table columns.*struct<id:int,v:string>"):
        build(s, [], **KEYED)


def test_delete_without_key_values_is_refused():
    s = schema(("_op", T.StringType()), ("id", T.IntegerType()), ("v", T.StringType()))
    # A primary key column is NOT NULL, so its null is refused for every operation.
    with pytest.raises(ContractError, match=r"'id'.*\{id=None\} \(position \d+ in the input\).*NOT NULL"):
        build(s, [{"_op": "DELETE", "id": None, "v": "x"}], **KEYED)


def test_delete_of_a_keyless_table_needs_some_value():
    s = schema(("_op", T.StringType()), ("a", T.IntegerType()), ("b", T.StringType()))
    with pytest.raises(ContractError, match="DELETE needs"):
        build(s, [{"_op": "d", "a": None, "b": None}], database="d", table="t")
    _, layout, changes, _ = build(s, [{"_op": "d", "a": None, "b": "x"}], database="d", table="t")
    assert layout.table.keyless and changes.ops.tolist() == [OP_DELETE]


def test_not_null_column_with_a_null_is_refused():
    s = schema(("id", T.IntegerType(), False), ("v", T.StringType(), False))
    with pytest.raises(ContractError, match=r"'v'.*\{id=2\}.*NOT NULL"):
        build(s, [{"id": 2, "v": None}], **KEYED)


def test_renamed_metadata_columns():
    s = schema(("op", T.StringType()), ("ts", T.LongType()), ("db", T.StringType()), ("tbl", T.StringType()),
               ("id", T.IntegerType(), False))
    _, layout, changes, _ = build(s, [{"op": "d", "ts": 5, "db": "x", "tbl": "y", "id": 1}], primary_key="id",
                                  op_column="op", commit_ts_column="ts", schema_column="db", table_column="tbl")
    assert [c.name for c in layout.table.columns] == ["id"]
    assert changes.ops.tolist() == [OP_DELETE] and changes.commit_ts.tolist() == [5]
    assert changes.databases.to_pylist() == ["x"] and changes.tables.to_pylist() == ["y"]


def test_without_schema_and_table_columns_the_options_are_required():
    with pytest.raises(ConfigError, match="'database' is not set"):
        build(schema(("id", T.IntegerType())), [], table="t")
    with pytest.raises(ConfigError, match="'table' is not set"):
        build(schema(("id", T.IntegerType())), [], database="d")


def test_per_row_names_fall_back_to_the_options():
    s = schema(("_schema", T.StringType()), ("_table", T.StringType()), ("id", T.IntegerType()))
    _, _, changes, _ = build(s, [{"_schema": None, "_table": "a", "id": 1}], database="dflt", table="x")
    assert changes.databases.to_pylist() == ["dflt"] and changes.tables.to_pylist() == ["a"]
    with pytest.raises(ContractError, match="'_schema'.*needs a name"):
        build(s, [{"_schema": None, "_table": "a", "id": 1}])


def test_metadata_column_of_the_wrong_type_is_refused():
    with pytest.raises(ConfigError, match="commit-ts-column.*Spark string.*long"):
        build(schema(("_commit_ts", T.StringType()), ("id", T.IntegerType())), [], database="d", table="t")


DDL = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("_ddl", T.StringType()),
             ("id", T.IntegerType()))


def test_ddl_rows_are_taken_out_of_the_dml():
    rows = [{"_op": "INSERT", "_commit_ts": 5, "_ddl": None, "id": 1},
            {"_op": "DDL", "_commit_ts": 7, "_ddl": "ALTER TABLE t ADD COLUMN c INT", "id": None},
            {"_op": "INSERT", "_commit_ts": 6, "_ddl": None, "id": 2}]
    _, _, changes, ddls = build(DDL, rows, database="d", table="t")
    assert changes.columns["id"].to_pylist() == [1, 2]
    assert [(d.database, d.table, d.query, d.commit_ts, d.action) for d in ddls] == [
        ("d", "t", "ALTER TABLE t ADD COLUMN c INT", 7, "add column")]


def test_a_ddl_row_needs_the_ddl_column():
    with pytest.raises(ContractError, match="'_ddl'"):
        build(schema(("_op", T.StringType()), ("id", T.IntegerType())), [{"_op": "DDL", "id": 1}],
              database="d", table="t")


@pytest.mark.parametrize("column_type, spark_type, value, problem", [
    ("ENUM('a','b')", T.StringType(), "c", "not a member of ENUM"),
    ("SET('a','b')", T.StringType(), "a,z", "'z' is not a member of SET"),
    ("BIT(4)", T.LongType(), 16, "does not fit BIT(4)"),
    ("TIME", T.StringType(), "25 o'clock", "a TIME is"),
    ("TIME", T.StringType(), "839:00:00", "within -838:59:59"),
    ("JSON", T.StringType(), "{not json", "not valid JSON"),
    ("TINYINT", T.IntegerType(), 300, "out of range for tinyint"),
    ("INT UNSIGNED", T.LongType(), -1, "out of range for int unsigned"),
    ("BIGINT UNSIGNED", T.DecimalType(20, 0), Decimal("18446744073709551616"), "out of range"),
    ("DECIMAL(4,2)", T.DecimalType(10, 2), Decimal("123.45"), "does not fit DECIMAL(4,2)"),
    ("YEAR", T.IntegerType(), 1800, "a YEAR is"),
    ("VARCHAR(10)", T.BinaryType(), b"\xff\xfe", "needs UTF-8"),
    ("BINARY(2)", T.BinaryType(), b"abc", "longer than BINARY(2)"),
])
def test_bad_values_name_column_value_and_row_key(column_type, spark_type, value, problem):
    s = schema(("id", T.IntegerType(), False), ("c", spark_type))
    rows = [{"id": 1, "c": None}, {"id": 2, "c": value}]
    with pytest.raises(ContractError) as error:
        build(s, rows, column_types=f"c {column_type}", **KEYED)
    assert error.value.column == "c" and error.value.row_key == "{id=2} (position 1 in the input)" and error.value.value == value
    assert problem in str(error.value)


def test_canonical_forms():
    s = schema(("id", T.IntegerType(), False), ("e", T.StringType()), ("st", T.StringType()), ("b", T.BinaryType()),
               ("b64", T.LongType()), ("tm", T.StringType()), ("dt", T.TimestampType()), ("ts", T.TimestampNTZType()))
    types = ("e ENUM('x','y'), st SET('a','b','c'), b BIT(16), b64 BIT(64), tm TIME(1), dt DATETIME, "
             "ts TIMESTAMP(3)")
    row = {"id": 1, "e": "Y", "st": "c,a", "b": b"\x01\x02", "b64": -1, "tm": "01:02:03.45",
           "dt": dt.datetime(2024, 1, 1, 23, 30, 0, 600000, tzinfo=dt.timezone.utc),
           "ts": dt.datetime(2024, 1, 1, 8, 0, 0, 1500)}
    _, _, changes, _ = build(s, [row, {"id": 2, "e": "", "st": "", "b": None, "b64": None, "tm": None,
                                       "dt": None, "ts": None}],
                             column_types=types, time_zone="Asia/Shanghai", **KEYED)
    c = changes.columns
    assert c["e"].to_pylist() == [2, 0]
    assert c["st"].to_pylist() == [5, 0]
    assert c["b"].to_pylist() == [0x0102, None]
    assert c["b64"].to_pylist() == [2**64 - 1, None]
    assert c["tm"].to_pylist() == [3_723_500_000, None]  # rounded to TIME(1)
    # DATETIME from a zoned timestamp: wall clock in time-zone, rounded to whole seconds.
    assert c["dt"].to_pylist()[0] == dt.datetime(2024, 1, 2, 7, 30, 1)
    # TIMESTAMP from a naive timestamp: read in time-zone, kept as the UTC instant.
    assert c["ts"].to_pylist()[0] == dt.datetime(2024, 1, 1, 0, 0, 0, 2000, tzinfo=dt.timezone.utc)


def test_doubles_from_decimals_are_correctly_rounded():
    s = schema(("id", T.IntegerType(), False), ("d", T.DecimalType(10, 2)), ("f", T.DecimalType(10, 2)))
    _, _, changes, _ = build(s, [{"id": 1, "d": Decimal("8133821.18"), "f": Decimal("0.1")}],
                             column_types="d DOUBLE, f FLOAT", **KEYED)
    assert changes.columns["d"].to_pylist() == [8133821.18]
    assert changes.columns["f"].to_pylist() == [float(np.float32(0.1))]


@pytest.mark.parametrize("spark_type, value, text", [
    (T.MapType(T.StringType(), T.IntegerType()), {}, "{}"),
    (T.MapType(T.StringType(), T.IntegerType()), {"b": 1, "a": 2}, '{"a": 2, "b": 1}'),
    (T.StructType([T.StructField("price", T.DecimalType(10, 2))]), {"price": Decimal("1.50")}, '{"price": 1.5}'),
    (T.ArrayType(T.MapType(T.StringType(), T.StringType())), [{"k": "v"}, {}], '[{"k": "v"}, {}]'),
])
def test_nested_spark_values_become_tidb_json(spark_type, value, text):
    s = schema(("id", T.IntegerType(), False), ("j", spark_type))
    _, _, changes, _ = build(s, [{"id": 1, "j": value}], **KEYED)
    assert changes.columns["j"].to_pylist() == [text]


@pytest.mark.parametrize("value, text", [
    ('{"a":"x\u2028y"}', '{"a": "x\\u2028y"}'),
    ("10000000000000000000000", "1e+22"),
    ("18446744073709551615", "18446744073709551615"),
    ('"\\ud800"', '"\ufffd"'),
])
def test_json_text_follows_tidb(value, text):
    s = schema(("id", T.IntegerType(), False), ("j", T.StringType()))
    _, _, changes, _ = build(s, [{"id": 1, "j": value}], column_types="j JSON", **KEYED)
    assert changes.columns["j"].to_pylist() == [text]


@pytest.mark.parametrize("value, problem", [('{"a": NaN}', "JSON has no NaN"), ("Infinity", "JSON has no Infinity"),
                                            ("1e400", "out of range")])
def test_json_without_a_json_value_is_refused(value, problem):
    s = schema(("id", T.IntegerType(), False), ("j", T.StringType()))
    with pytest.raises(ContractError, match=problem):
        build(s, [{"id": 1, "j": value}], column_types="j JSON", **KEYED)


def test_json_texts_that_are_not_one_value_each_are_refused_not_regrouped():
    """Read as one column, '1,2' and '[3' with '4]' would give three values for three rows."""
    s = schema(("id", T.IntegerType(), False), ("j", T.StringType()))
    rows = [{"id": i, "j": text} for i, text in enumerate(['{"a":1}', "1,2", "[3", "4]"])]
    with pytest.raises(ContractError, match=r"'j'.*'1,2'.*\{id=1\}"):
        build(s, rows, column_types="j JSON", **KEYED)


def test_json_already_in_tidbs_form_is_kept_and_other_text_is_reprinted():
    s = schema(("id", T.IntegerType(), False), ("j", T.StringType()))
    canonical = [{"id": 1, "j": '{"a": [1, 2], "b": "x"}'}, {"id": 2, "j": "[]"}]
    _, _, changes, _ = build(s, canonical, column_types="j JSON", **KEYED)
    assert changes.columns["j"].to_pylist() == ['{"a": [1, 2], "b": "x"}', "[]"]
    compact = [{"id": 1, "j": '{"b":"x","a":[1,2]}'}, {"id": 2, "j": "[]"}]
    _, _, changes, _ = build(s, compact, column_types="j JSON", **KEYED)
    assert changes.columns["j"].to_pylist() == ['{"a": [1, 2], "b": "x"}', "[]"]


def test_invalid_utf8_in_a_spark_string_is_refused():
    s = schema(("id", T.IntegerType(), False), ("v", T.StringType()))
    batch = pa.RecordBatch.from_arrays(
        [pa.array([1, 2], pa.int32()), pa.array([b"ok", b"a\xffb"], pa.binary()).view(pa.string())],
        schema=arrow_schema_of(s))
    config = parse_options({"kafka.bootstrap.servers": "h:1", "protocol": "canal-json", "topic": "t",
                            "database": "d", "table": "t", "primary-key": "id"})
    with pytest.raises(ContractError, match=r"'v'.*\{id=2\}.*not valid UTF-8"):
        ChangeBatchBuilder(InputLayout.from_spark_schema(s, config), config).build(batch)


def test_a_database_level_ddl_row_has_no_table():
    rows = [{"_op": "DDL", "_commit_ts": 7, "_ddl": "CREATE DATABASE shop", "id": None},
            {"_op": "DDL", "_commit_ts": 8, "_ddl": "TRUNCATE TABLE t", "id": None}]
    _, _, _, ddls = build(DDL, rows, database="shop", table="t")
    assert [(d.database, d.table, d.action) for d in ddls] == [("shop", "", "create schema"),
                                                             ("shop", "t", "truncate table")]
    s = schema(("_op", T.StringType()), ("_table", T.StringType()), ("_ddl", T.StringType()), ("id", T.IntegerType()))
    _, _, _, ddls = build(s, [{"_op": "DDL", "_table": None, "_ddl": "DROP DATABASE shop", "id": None}],
                          database="shop")
    assert ddls[0].table == ""
    with pytest.raises(ContractError, match="option 'table'"):
        build(s, [{"_op": "INSERT", "_table": None, "_ddl": None, "id": 1}], database="shop")


@pytest.mark.parametrize("column_type, spark_type, value, expected", [
    ("BIT(64)", T.DecimalType(20, 0), Decimal(2**64 - 1), 2**64 - 1),
    ("BIT(64)", T.IntegerType(), 5, 5),
    ("SET(" + ",".join(f"'m{i}'" for i in range(64)) + ")", T.LongType(), 2**62, 2**62),
    ("ENUM('','a')", T.StringType(), "", 1),
    ("ENUM('x','a')", T.StringType(), "", 0),
    ("ENUM('new','shipped')", T.StringType(), "new    ", 1),  # as JDBC reads an ENUM: padded like CHAR(n)
])
def test_wide_bits_sets_and_enum_members(column_type, spark_type, value, expected):
    s = schema(("id", T.IntegerType(), False), ("c", spark_type))
    _, _, changes, _ = build(s, [{"id": 1, "c": value}], column_types=f"c {column_type}", **KEYED)
    assert changes.columns["c"].to_pylist() == [expected]


def test_a_set_bitmask_beyond_its_members_is_refused():
    s = schema(("id", T.IntegerType(), False), ("c", T.LongType()))
    with pytest.raises(ContractError, match=r"SET bitmask of 2 members is 0\.\.3"):
        build(s, [{"id": 1, "c": 4}], column_types="c SET('a','b')", **KEYED)


def test_positions_count_across_the_record_batches_of_a_task():
    config, layout, _, _ = build(schema(("id", T.IntegerType(), False)), [{"id": 1}], **KEYED)
    builder = ChangeBatchBuilder(layout, config)
    arrow = arrow_schema_of(schema(("id", T.IntegerType())))
    builder.build(pa.RecordBatch.from_pylist([{"id": 1}, {"id": 2}], schema=arrow))
    with pytest.raises(ContractError) as error:
        builder.build(pa.RecordBatch.from_pylist([{"id": 3}, {"id": None}], schema=arrow))
    assert error.value.row_key == "{id=None} (position 3 in the input)"
