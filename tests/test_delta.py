"""``from_delta_cdf``: a Delta change data feed (its columns and change types as Delta writes them) as the sink's
input, written to Kafka and read back."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import types as T

from ticdc_sink import from_delta_cdf
from ticdc_sink.errors import ConfigError

pytestmark = [pytest.mark.spark]

CDF = T.StructType([T.StructField("id", T.IntegerType()), T.StructField("status", T.StringType()),
                    T.StructField("_change_type", T.StringType()), T.StructField("_commit_version", T.LongType()),
                    T.StructField("_commit_timestamp", T.TimestampType())])
AT = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
MS = int(AT.timestamp() * 1000)


def feed(spark, rows):
    return spark.createDataFrame(rows, CDF)


def test_a_feed_becomes_inserts_updates_with_their_old_row_and_deletes(spark):
    later = AT + dt.timedelta(milliseconds=5)
    cdf = feed(spark, [
        (1, "new", "insert", 1, AT), (2, "new", "insert", 1, AT),
        (1, "new", "update_preimage", 2, AT), (1, "paid", "update_postimage", 2, AT),  # the same millisecond
        (2, "new", "delete", 3, later),
    ])
    rows = sorted(from_delta_cdf(cdf, "id").collect(), key=lambda r: (r["_commit_ts"], r["id"]))
    assert [(r["_op"], r["_commit_ts"], r["id"], r["status"]) for r in rows] == [
        ("INSERT", MS << 18, 1, "new"), ("INSERT", MS << 18, 2, "new"),
        ("UPDATE", MS << 18 | 1, 1, "paid"), ("DELETE", (MS + 5) << 18, 2, "new")]
    assert rows[2]["_before"].asDict() == {"id": 1, "status": "new"}
    assert rows[0]["_before"] is None and rows[3]["_before"] is None


def test_an_update_of_the_key_becomes_a_delete_and_an_insert(spark):
    cdf = feed(spark, [(1, "new", "update_preimage", 4, AT), (7, "new", "update_postimage", 4, AT)])
    rows = sorted((r["_op"], r["id"]) for r in from_delta_cdf(cdf, ["id"]).collect())
    assert rows == [("DELETE", 1), ("INSERT", 7)]


def test_a_key_deleted_and_inserted_in_one_version_is_an_update(spark):
    # An overwrite's feed: the old rows deleted and the new inserted by one commit. Two changes of one key at one
    # commit ts would have no order; TiDB records such a transaction as an update.
    cdf = feed(spark, [(1, "new", "delete", 4, AT), (1, "paid", "insert", 4, AT), (2, "new", "delete", 4, AT)])
    rows = sorted(from_delta_cdf(cdf, "id").collect(), key=lambda r: r["id"])
    assert [(r["_op"], r["id"], r["status"], r["_before"] and r["_before"]["status"]) for r in rows] == [
        ("UPDATE", 1, "paid", "new"), ("DELETE", 2, "new", None)]


def test_the_commit_ts_grows_with_the_version_where_the_timestamps_do_not(spark):
    # File times from clocks that differ: version 3 is stamped before version 2.
    cdf = feed(spark, [(1, "a", "insert", 1, AT), (2, "b", "insert", 2, AT + dt.timedelta(milliseconds=9)),
                       (3, "c", "insert", 3, AT + dt.timedelta(milliseconds=4)),
                       (4, "d", "insert", 4, AT + dt.timedelta(milliseconds=10))])
    rows = sorted(from_delta_cdf(cdf, "id").collect(), key=lambda r: r["id"])
    assert [r["_commit_ts"] for r in rows] == [MS << 18, (MS + 9) << 18, (MS + 9) << 18 | 1, (MS + 10) << 18]


def test_a_range_of_versions_continues_above_the_commit_ts_of_the_range_before(spark):
    # The range before ended at (MS+9)<<18 | 1, later than this range's first commit (a clock that went back).
    cdf = feed(spark, [(1, "a", "insert", 5, AT + dt.timedelta(milliseconds=3)),
                       (2, "b", "insert", 6, AT + dt.timedelta(milliseconds=20))])
    rows = sorted(from_delta_cdf(cdf, "id", after_commit_ts=(MS + 9) << 18 | 1).collect(), key=lambda r: r["id"])
    assert [r["_commit_ts"] for r in rows] == [(MS + 9) << 18 | 2, (MS + 20) << 18]


def test_a_frame_that_is_no_change_data_feed_or_a_missing_key_is_refused(spark):
    with pytest.raises(ConfigError, match="readChangeFeed=true"):
        from_delta_cdf(spark.createDataFrame([(1,)], "id int"), "id")
    with pytest.raises(ConfigError, match="primary_key.*among id, status"):
        from_delta_cdf(feed(spark, []), "order_id")


@pytest.mark.broker
def test_the_feed_written_by_the_sink_reads_back_as_the_changes(spark, broker, topic):
    cdf = feed(spark, [(1, "new", "insert", 1, AT), (1, "new", "update_preimage", 2, AT),
                       (1, "paid", "update_postimage", 2, AT), (1, "paid", "delete", 3, AT)])
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "protocol": "canal-json", "topic": topic,
               "database": "shop", "table": "orders", "primary-key": "id", "enable-tidb-extension": "true"}
    from_delta_cdf(cdf, "id").coalesce(1).write.format("ticdc").mode("append").options(**options).save()
    back = spark.read.format("ticdc").options(**options, **{"kafka.isolation.level": broker.isolation}).load()
    assert [(r["_op"], r["id"], r["status"]) for r in back.orderBy("_commit_ts").collect()] == [
        ("INSERT", 1, "new"), ("UPDATE", 1, "paid"), ("DELETE", 1, "paid")]
