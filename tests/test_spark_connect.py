"""The ``ticdc`` source through Spark Connect, as Databricks' serverless and shared clusters run it: a client
without a SparkContext, and a server in a JVM of its own (connect_server.py) whose Python workers run the sink.

The server finds the source by name, checks the options, runs the tasks and sends the control events; the client
builds plans (``order_changes`` among them) and gets results and errors (docs/usage.md, Spark Connect).  One
server and session for the module.
"""

from __future__ import annotations

import sys

import pytest
from pyspark.errors import PySparkException

from connect_server import ConnectServer
from test_exactly_once import restart_after_a_micro_batch_failed_between_partitions
from test_reader_rules import Topic, canal_row, canal_watermark, ids
from test_spark_sink import BASE_TS, CHANGES, decoded, row, run_the_documented_sql, sink_options, write_batch
from ticdc_sink.codec.base import WatermarkEvent

pytestmark = [pytest.mark.spark, pytest.mark.broker]


@pytest.fixture(scope="module")
def connect():
    """A Spark Connect session on a local server of its own, stopped with the server after the module."""
    from pyspark.sql import SparkSession

    conf = {"spark.sql.shuffle.partitions": "2", "spark.sql.session.timeZone": "UTC", "spark.log.level": "WARN"}
    with ConnectServer(sys.executable, conf=conf) as server, pytest.MonkeyPatch.context() as env:
        # create(): getOrCreate() refuses a Connect session beside the classic one that the other Spark tests
        # keep in this process (SESSION_ALREADY_EXIST).  A Connect session marks the process as Connect's
        # (SPARK_CONNECT_MODE_ENABLED, which pyspark.sql.functions follows); set here, the mark goes with the module.
        env.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
        session = SparkSession.builder.remote(server.url).create()
        try:
            yield session
        finally:
            session.stop()


def test_a_batch_write_finds_the_source_by_name_and_spark_read_gives_the_rows_back(connect, broker, topic):
    from ticdc_sink import order_changes

    options = sink_options(broker, topic, **{"enable-tidb-extension": "true"})
    changes = [row(i, ts=i) for i in range(1, 21)]
    # order_changes runs in the client: it reads the topic's partition count from the brokers there.
    order_changes(connect.createDataFrame(changes, CHANGES), options).write.format("ticdc").mode("append") \
        .options(**options).save()

    # The server's driver committed the write: a watermark after the rows in each of the topic's 3 partitions.
    events = decoded(broker, topic, expect=len(changes) + 3)
    assert [(p, e.ts) for p, e in events if isinstance(e, WatermarkEvent)] == [(p, BASE_TS + 20) for p in range(3)]
    back = connect.read.format("ticdc").options(**options).option("kafka.isolation.level", broker.isolation).load()
    columns = ("_op", "_commit_ts", "id", "name", "amount")
    assert sorted(tuple(r[c] for c in columns) for r in back.collect()) == [tuple(c[k] for k in columns)
                                                                             for c in changes]


def test_register_sends_the_source_to_the_server_where_it_was_found_by_name_already(connect, broker, topic):
    import ticdc_sink

    ticdc_sink.register(connect)  # the class, pickled by reference: the server imports ticdc_sink
    ticdc_sink.register(connect)
    write_batch(connect, [row(1)], sink_options(broker, topic), partitions=1)
    assert [e.columns["id"] for _, e in decoded(broker, topic, expect=1)] == [1]


def test_the_options_are_checked_on_the_server_before_any_task_and_the_client_gets_the_line(connect, broker, topic):
    with pytest.raises(PySparkException, match="unknown option 'partition-nmu'; did you mean 'partition-num'"):
        write_batch(connect, [row(1)], sink_options(broker, topic, **{"partition-nmu": "3"}))


def test_a_streaming_write_is_exactly_once_across_a_failed_micro_batch_and_a_restart(
        connect, broker, topic, tmp_path, hides_aborted_transactions):
    """The query id and micro-batch id reach the server's tasks as in a classic session, so the restart's replay
    of the committed partition is discarded: read_committed, every key once (real Kafka)."""
    restart_after_a_micro_batch_failed_between_partitions(connect, broker, topic, tmp_path, "exactly-once",
                                                          hides_aborted_transactions)


def test_spark_read_stream_gives_consistent_cuts(connect, broker, topic, tmp_path):
    canal = Topic(broker, topic)
    canal.send(0, canal_row(10, 1), canal_watermark(20), canal_row(30, 2))
    canal.send(1, canal_row(15, 3), canal_watermark(20))
    stream = connect.readStream.format("ticdc").options(**canal.options()).load()
    # foreachBatch would run in the server's Python, away from this test: the memory sink keeps the rows there.
    query = (stream.select("_op", "_commit_ts", "id").writeStream.format("memory").queryName("ticdc_stream_read")
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    # Both partitions' last watermark is 20: the cut is at 20, and row 30 waits for the next one.
    assert ids(connect.table("ticdc_stream_read").collect()) == [("INSERT", 10, 1), ("INSERT", 15, 3)]


@pytest.mark.parametrize("form", ["view", "table"])
def test_the_documented_sql_keeps_each_keys_changes_in_commit_ts_order(connect, broker, topic, form):
    run_the_documented_sql(connect, broker, topic, form)
