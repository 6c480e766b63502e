"""Partition dispatchers and topic expressions, checked against the partitions TiCDC's own
dispatcher tests expect (16 partitions) and the rules of TiCDC's dispatchers
(``downstreamadapter/sink/eventrouter/``)."""

from __future__ import annotations

import datetime as dt
import zlib

import numpy as np
import pytest
from changefeed import build, schema
from pyspark.sql import types as T

from ticdc_sink.changes.dispatch import PartitionDispatcher, TopicRouter
from ticdc_sink.errors import ConfigError

T1 = schema(("a", T.IntegerType(), False), ("b", T.IntegerType()))
T2 = schema(("a", T.IntegerType(), False), ("b", T.IntegerType(), False))


def partitions(spark_schema, rows, count=16, **options):
    config, layout, changes, _ = build(spark_schema, rows, database="test", **options)
    dispatcher = PartitionDispatcher(config, layout.table)
    return (dispatcher.routing_values(changes) % np.uint64(count)).astype(int).tolist()


def test_index_value_single_primary_key_matches_ticdc():
    rows = [{"a": 11, "b": 12}, {"a": 22, "b": 22}, {"a": 11, "b": 33}]
    assert partitions(T1, rows, table="t1", primary_key="a", partition="index-value") == [2, 11, 2]


def test_index_value_composite_primary_key_matches_ticdc():
    rows = [{"a": 11, "b": 22}, {"a": 11, "b": 0}, {"a": 11, "b": 33}]
    assert partitions(T2, rows, table="t2", primary_key="a,b", partition="index-value") == [5, 14, 2]


COLS = schema(("COL2", T.IntegerType(), False), ("Col1", T.IntegerType(), False), ("col3", T.IntegerType()))


def test_index_value_with_a_named_index_matches_ticdc():
    row = [{"COL2": 22, "Col1": 11, "col3": 33}]
    for name in ("index1", "INDEX1"):
        assert partitions(COLS, row, table="t1", unique_keys="index1(COL2,Col1)", partition="index-value",
                          partition_index=name) == [5]
    # Without an index name the handle is that NOT NULL unique key: the same partition.
    assert partitions(COLS, row, table="t1", unique_keys="index1(COL2,Col1)", partition="index-value") == [5]


def test_index_value_with_an_unknown_index_is_a_config_error():
    with pytest.raises(ConfigError, match="partition-index.*index2.*no such index.*index1"):
        partitions(COLS, [], table="t1", unique_keys="index1(COL2,Col1)", partition="index-value",
                   partition_index="index2")


def test_columns_dispatcher_matches_ticdc_case_insensitively():
    row = [{"COL2": 22, "Col1": 11, "col3": 33}]
    for columns in ("col2,col1", "COL2,Col1"):
        assert partitions(COLS, row, table="t1", partition="columns", partition_columns=columns) == [5]


def test_columns_dispatcher_names_an_unknown_column():
    with pytest.raises(ConfigError, match="partition-columns.*'col-2' is not a table column"):
        partitions(COLS, [], table="t1", partition="columns", partition_columns="col-2,col-not-found")


def test_table_and_default_hash_schema_and_table():
    expected = zlib.crc32(b"testorders") % 7
    for rule in ("table", "default"):
        assert partitions(T1, [{"a": 1, "b": 2}, {"a": 3, "b": 4}], count=7, table="orders",
                          partition=rule) == [expected, expected]


def test_ts_dispatcher_is_commit_ts_modulo_partitions():
    s = schema(("_commit_ts", T.LongType()), ("a", T.IntegerType()))
    rows = [{"_commit_ts": 1000, "a": 1}, {"_commit_ts": 1003, "a": 1}]
    assert partitions(s, rows, count=4, table="t", partition="ts") == [0, 3]


def test_null_values_are_skipped_like_newer_ticdc():
    s = schema(("a", T.IntegerType()), ("b", T.StringType()))
    only_a = zlib.crc32(b"testt") ^ zlib.crc32(b"a5")
    assert partitions(s, [{"a": 5, "b": None}], count=1000, table="t", partition="columns",
                      partition_columns="a,b") == [only_a % 1000]


def test_same_key_same_partition_whatever_else_changes():
    rows = [{"a": 42, "b": i} for i in range(50)]
    assert len(set(partitions(T1, rows, table="t1", primary_key="a", partition="index-value"))) == 1


def test_value_text_hashing_uses_ticdc_renderings():
    # A DECIMAL hashes its text with scale, a DOUBLE its shortest 'f' text, NaN as 0.
    s = schema(("d", T.DecimalType(6, 2), False), ("f", T.DoubleType(), False))
    base = zlib.crc32(b"testt")
    got = partitions(s, [{"d": __import__("decimal").Decimal("1.5"), "f": float("nan")}], count=2**32,
                     table="t", partition="columns", partition_columns="d,f")
    assert got == [base ^ zlib.crc32(b"d1.50") ^ zlib.crc32(b"f0")]


def test_index_value_hashes_a_timestamp_key_as_wall_clock_time_in_the_time_zone():
    """TiCDC hashes a TIMESTAMP's text in the changefeed's time zone, with the column's fsp digits."""
    s = schema(("ts", T.TimestampType(), False), ("v", T.IntegerType()))
    rows = [{"ts": dt.datetime(2024, 1, 2, 18, 4, 5, 678000, tzinfo=dt.timezone.utc), "v": 1},
            {"ts": dt.datetime(2023, 6, 30, 4, 0, 0, 1000, tzinfo=dt.timezone.utc), "v": 2}]
    shanghai = [b"2024-01-03 02:04:05.678", b"2023-06-30 12:00:00.001"]  # UTC+8
    expected = [(zlib.crc32(b"testt") ^ zlib.crc32(b"ts" + text)) % 16 for text in shanghai]
    assert partitions(s, rows, table="t", primary_key="ts", partition="index-value", time_zone="Asia/Shanghai",
                      column_types="ts TIMESTAMP(3)") == expected


def test_topic_expression_substitutes_and_sanitizes_names():
    config, _, changes, _ = build(schema(("_schema", T.StringType()), ("_table", T.StringType()), ("a", T.IntegerType())),
                                  [{"_schema": "db", "_table": "t-1", "a": 1}, {"_schema": "db", "_table": "t 2", "a": 2},
                                   {"_schema": "db", "_table": "t-1", "a": 3}],
                                  topic="tidb_{schema}_{table}")
    router = TopicRouter(config)
    names, codes = router.topics(changes)
    assert [names[c] for c in codes] == ["tidb_db_t-1", "tidb_db_t_2", "tidb_db_t-1"]


def test_database_level_ddl_needs_a_default_topic_with_a_table_expression():
    config, *_ = build(T1, [], database="d", table="t", topic="x_{schema}_{table}")
    with pytest.raises(ConfigError, match="default-topic"):
        TopicRouter(config).topic_for_ddl("d", "")
    config, *_ = build(T1, [], database="d", table="t", topic="x_{schema}_{table}", default_topic="ddl")
    assert TopicRouter(config).topic_for_ddl("d", "") == "ddl"
    assert TopicRouter(config).topic_for_ddl("d", "t") == "x_d_t"


def test_index_value_of_a_table_without_a_handle_hashes_schema_and_table_like_ticdc():
    s = schema(("a", T.IntegerType()), ("b", T.StringType()))
    expected = zlib.crc32(b"testt") % 16
    assert partitions(s, [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}], table="t", partition="index-value") == \
        [expected, expected]


def test_topic_names_are_cut_to_kafkas_limits():
    config, *_ = build(T1, [], database="d", table="t", topic="{schema}{table}")
    router = TopicRouter(config)
    assert router.topic_for("x" * 200, "y" * 100) == "x" * 200 + "y" * 49
    assert router.topic_for(".", "") == "_" and router.topic_for(".", ".") == "__"
