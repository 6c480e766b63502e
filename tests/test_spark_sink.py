"""The ``ticdc`` data source in Spark, writing to the embedded broker and read back with a plain consumer."""

from __future__ import annotations

import datetime as dt
import time
from decimal import Decimal

import pytest
from protocols import CANAL, ProtocolUnderTest
from pyspark.errors import PySparkException
from pyspark.sql import types as T

from ticdc_sink.codec import PROTOCOLS
from ticdc_sink.codec.base import DDLEvent, RowEvent, WatermarkEvent
from ticdc_sink.kafka.topic_reader import read_messages

pytestmark = [pytest.mark.spark, pytest.mark.broker]

COLUMNS = [
    T.StructField("id", T.IntegerType(), False),
    T.StructField("name", T.StringType()),
    T.StructField("amount", T.DecimalType(10, 2)),
    T.StructField("seen", T.TimestampType()),
]
CHANGES = T.StructType([
    T.StructField("_op", T.StringType()),
    T.StructField("_commit_ts", T.LongType()),
    T.StructField("_before", T.StructType(COLUMNS)),
    *COLUMNS,
])
BASE_TS = 450_000_000_000_000_000


def row_columns(change: dict) -> dict:
    """The table columns of a change as the decoders give them back (TIMESTAMP in UTC, naive)."""
    return {**{k: v for k, v in change.items() if not k.startswith("_")},
            "seen": change["seen"].astimezone(dt.timezone.utc).replace(tzinfo=None)}


def row(i: int, name: str = "n", op: str = "INSERT", ts: int = 0, before: dict | None = None) -> dict:
    return {"_op": op, "_commit_ts": BASE_TS + ts, "_before": before, "id": i, "name": f"{name}{i}",
            "amount": Decimal(f"{i}.25"), "seen": dt.datetime(2024, 5, 1, 10, 0, i % 60, tzinfo=dt.timezone.utc)}


def sink_options(broker, topic: str, protocol: ProtocolUnderTest = CANAL, **extra) -> dict:
    return {"kafka.bootstrap.servers": broker.bootstrap_servers, **protocol.options(topic),
            "database": "shop", "table": "orders", "primary-key": "id", "broker-timeout-ms": "10000", **extra}


def decoded(broker, topic: str, expect: int, idle: float = 1.0, protocol: ProtocolUnderTest = CANAL,
            ) -> list[tuple[int, object]]:
    """(partition, event) for every event of the topic, in partition order; there must be ``expect`` events.

    Reads the topic until it has been quiet for ``idle`` seconds, and again while it holds fewer events than
    expected (a loaded machine may commit the last transaction late), for at most a minute.
    """
    decoder = protocol.decoder()
    deadline = time.monotonic() + 60
    while True:
        messages = broker.read(protocol.kafka_topic(topic), idle_seconds=idle, expect=min(expect, 1))
        events = [(m.partition(), e) for m in messages for e in decoder.decode(m.key(), m.value())]
        if len(events) >= expect or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert len(events) == expect, f"{len(events)} event(s) in {topic}, expected {expect}; " + _views(broker, topic,
                                                                                                     protocol)
    return events


def _views(broker, topic: str, protocol: ProtocolUnderTest) -> str:
    """Messages per partition as read_committed and read_uncommitted consumers see them, when a test reads
    too few: an open transaction hides messages from the first view only, a reader that skipped them from
    both."""
    counts = {}
    for isolation in ("read_committed", "read_uncommitted"):
        messages = read_messages(broker.bootstrap_servers, protocol.kafka_topic(topic), idle_seconds=1.0,
                                 settings={"isolation.level": isolation})
        counts[isolation] = {p: sum(m.partition() == p for m in messages) for p in {m.partition() for m in messages}}
    return f"messages per partition: {counts}"


def write_batch(spark, rows, options, schema=CHANGES, partitions=2):
    spark.createDataFrame(rows, schema).repartition(partitions).write.format("ticdc").mode("append") \
        .options(**options).save()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_batch_write_found_by_name_round_trips(spark, broker, topic, under_test):
    rows = [row(i, ts=i) for i in range(1, 41)]
    options = sink_options(broker, topic, under_test, **{"enable-tidb-extension": "true", "partition": "index-value"})
    write_batch(spark, rows, options)
    marks = 3 if under_test.carries.watermarks else 0  # one per partition
    events = decoded(broker, topic, expect=40 + marks, protocol=under_test)
    dml = [(p, e) for p, e in events if isinstance(e, RowEvent)]
    assert sorted(e.columns["id"] for _, e in dml) == list(range(1, 41))
    first = next(e for _, e in dml if e.columns["id"] == 7)
    assert first.columns == {"id": 7, "name": "n7", "amount": Decimal("7.25"),
                             "seen": dt.datetime(2024, 5, 1, 10, 0, 7)}
    assert first.commit_ts == BASE_TS + 7 and first.primary_keys == ["id"]
    # One watermark per partition, after that partition's rows, with the batch's max commit ts.
    for partition in range(marks):
        in_partition = [e for p, e in events if p == partition]
        assert isinstance(in_partition[-1], WatermarkEvent) and in_partition[-1].ts == BASE_TS + 40
        assert sum(isinstance(e, WatermarkEvent) for e in in_partition) == 1
    # The same key always lands on the same partition.
    write_batch(spark, [row(7, name="again", ts=100)], options)
    sevens = {p for p, e in decoded(broker, topic, expect=2 * marks + 41, protocol=under_test)
              if isinstance(e, RowEvent) and e.columns["id"] == 7}
    assert len(sevens) == 1


def test_register_is_safe_where_spark_already_found_the_source(spark, broker, topic):
    import ticdc_sink

    # Before pyspark 4.1 registering a source Spark found by name raises DATA_SOURCE_ALREADY_EXISTS.
    ticdc_sink.register(spark)
    ticdc_sink.register(spark)
    write_batch(spark, [row(1)], sink_options(broker, topic), partitions=1)
    assert [e.columns["id"] for _, e in decoded(broker, topic, expect=1)] == [1]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_streaming_micro_batches_with_updates_deletes_and_ddl(spark, broker, topic, tmp_path, under_test):
    # DDL rows leave the table columns null, so they are nullable here; the primary key is NOT NULL anyway.
    nullable = [T.StructField(f.name, f.dataType) for f in COLUMNS]
    schema = T.StructType([*CHANGES.fields[:2], T.StructField("_before", T.StructType(nullable)), *nullable,
                           T.StructField("_ddl", T.StringType())])
    batches = [
        [row(i, ts=i) for i in range(1, 6)],
        [row(1, name="paid", op="UPDATE", ts=10, before={k: v for k, v in row(1).items() if not k.startswith("_")}),
         row(2, op="DELETE", ts=11)],
        [{**dict.fromkeys(r for r in row(0)), "_op": "DDL", "_commit_ts": BASE_TS + 20,
          "_ddl": "ALTER TABLE orders ADD COLUMN note TEXT"}, row(6, ts=19)],
    ]
    for number, batch in enumerate(batches):
        records = [{**r, "_ddl": r.get("_ddl")} for r in batch]
        spark.createDataFrame(records, schema).coalesce(1).write.parquet(str(tmp_path / "feed" / f"b={number}"))
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1) \
        .option("recursiveFileLookup", "true").parquet(str(tmp_path / "feed"))
    query = stream.writeStream.format("ticdc").options(**sink_options(broker, topic, under_test, **{
        "enable-tidb-extension": "true", "partition-num": "2"})) \
        .option("checkpointLocation", str(tmp_path / "chk")).trigger(availableNow=True).start()
    query.awaitTermination(120)
    assert query.exception() is None
    assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [5, 2, 2]

    carries = under_test.carries
    ddl_partitions, ddl_type = carries.ddl or ([], None)
    # the rows, the DDL where the protocol sends it, a watermark per partition and batch
    events = decoded(broker, topic, expect=8 + len(ddl_partitions) + 3 * 2 * carries.watermarks, protocol=under_test)
    rows = [e for _, e in events if isinstance(e, RowEvent)]
    assert sorted((e.type, e.columns["id"]) for e in rows) == sorted(
        [("INSERT", i) for i in range(1, 7)] + [("UPDATE", 1), ("DELETE", 2)])
    update = next(e for e in rows if e.type == "UPDATE")
    assert update.columns["name"] == "paid1"
    assert update.old["name"] == "n1" if carries.old_values else update.old is None
    delete = next(e for e in rows if e.type == "DELETE")
    assert delete.columns == (row_columns(row(2)) if carries.whole_deleted_row else {"id": 2})
    ddl = [(p, e) for p, e in events if isinstance(e, DDLEvent)]
    assert [(p, e.type, e.query, e.commit_ts) for p, e in ddl] == [
        (p, ddl_type, "ALTER TABLE orders ADD COLUMN note TEXT", BASE_TS + 20) for p in ddl_partitions]
    # Watermarks: after every micro-batch, on both partitions, never decreasing.
    for partition in (0, 1):
        marks = [e.ts for p, e in events if p == partition and isinstance(e, WatermarkEvent)]
        assert marks == ([BASE_TS + 5, BASE_TS + 11, BASE_TS + 20] if carries.watermarks else [])
    # The DDL follows the DML of its micro-batch in partition 0: the ts+19 row is there, once, before it.
    if carries.ddl:
        partition0 = [e for p, e in events if p == 0]
        ddl_at = next(i for i, e in enumerate(partition0) if isinstance(e, DDLEvent))
        row_at = [i for i, e in enumerate(partition0) if isinstance(e, RowEvent) and e.commit_ts == BASE_TS + 19]
        assert len(row_at) == 1 and row_at[0] < ddl_at, (row_at, ddl_at)


def test_sql_temporary_view_and_insert_with_options(spark, broker, topic):
    options = sink_options(broker, topic)
    quoted = ", ".join(f"'{k}'='{v}'" for k, v in options.items())
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW ticdc_out (id INT, name STRING) USING ticdc OPTIONS ({quoted})")
    spark.sql("INSERT INTO ticdc_out SELECT 1 AS id, 'a' AS name")
    spark.sql("DROP TABLE IF EXISTS ticdc_target")
    spark.sql("CREATE TABLE ticdc_target (id INT, name STRING) USING ticdc")
    spark.sql(f"INSERT INTO ticdc_target WITH ({quoted}) SELECT 2 AS id, 'b' AS name")
    got = sorted((e.columns["id"], e.columns["name"]) for _, e in decoded(broker, topic, expect=2))
    assert got == [(1, "a"), (2, "b")]


def test_insert_with_options_into_a_view_are_not_seen_by_the_sink(spark, broker, topic):
    """Spark hands a Python data source only the view's OPTIONS; docs/usage.md says to put every option there."""
    options = sink_options(broker, topic)
    quoted = ", ".join(f"'{k}'='{v}'" for k, v in options.items())
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW ticdc_with (id INT, name STRING) USING ticdc OPTIONS ({quoted})")
    spark.sql(f"INSERT INTO ticdc_with WITH ('topic'='{topic}-with', 'table'='other') SELECT 1 AS id, 'a' AS name")
    [(_, event)] = decoded(broker, topic, expect=1)
    assert event.table == "orders"  # the view's options, not the statement's
    assert not broker.read(f"{topic}-with", idle_seconds=1)


def test_sql_create_table_without_options_explains_how_to_pass_them(spark):
    spark.sql("DROP TABLE IF EXISTS ticdc_no_options")
    spark.sql("CREATE TABLE ticdc_no_options (id INT) USING ticdc OPTIONS ('protocol'='canal-json')")
    with pytest.raises(PySparkException, match="CREATE TEMPORARY VIEW"):
        spark.sql("INSERT INTO ticdc_no_options SELECT 1")


def test_sql_view_without_columns_is_a_read_and_says_which_option_it_lacks(spark):
    # Without a column list Spark asks the source for the schema: the reader's, from the topic it reads.
    with pytest.raises(PySparkException, match="option 'topic' is not set: give the topics to read"):
        spark.sql("CREATE OR REPLACE TEMPORARY VIEW ticdc_bare USING ticdc OPTIONS ('protocol'='canal-json')")


def test_a_bad_option_fails_before_any_task_and_names_it(spark, broker, topic):
    with pytest.raises(PySparkException, match="unknown option 'partition-nmu'; did you mean 'partition-num'"):
        write_batch(spark, [row(1)], sink_options(broker, topic, **{"partition-nmu": "3"}))
    with pytest.raises(PySparkException, match="'max-message-bytes': bad value 'lots'"):
        write_batch(spark, [row(1)], sink_options(broker, topic, **{"max-message-bytes": "lots"}))


def test_a_batch_with_one_bad_row_marks_nothing_done(spark, broker, topic):
    rows = [row(i, ts=i) for i in range(1, 5)] + [row(99, op="MERGE", ts=50)]
    with pytest.raises(PySparkException,
                       match=r"column '_op': value 'MERGE' in row \{id=99\} \(position \d+ in Spark partition 0\)"):
        write_batch(spark, rows, sink_options(broker, topic, **{"enable-tidb-extension": "true"}), partitions=1)
    # The task failed before anything was produced and the driver committed nothing: no watermark.
    assert not any(isinstance(e, WatermarkEvent) for _, e in decoded(broker, topic, expect=0, idle=2.0))


def test_unreachable_broker_fails_the_task_in_bounded_time_naming_the_brokers(spark, topic):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{s.getsockname()[1]}"
    options = {"kafka.bootstrap.servers": closed, "protocol": "canal-json", "topic": topic, "database": "d",
               "table": "t", "broker-timeout-ms": "3000"}
    started = time.monotonic()
    # The line names the client's own error, which says what to fix.
    with pytest.raises(PySparkException, match=f"cannot reach the Kafka brokers {closed}.*Connection refused"):
        write_batch(spark, [row(1)], options, partitions=1)
    assert time.monotonic() - started < 60


def test_missing_topic_creation_and_refusal(spark, broker, topic):
    write_batch(spark, [row(1)], sink_options(broker, topic, **{"partition-num": "5"}), partitions=1)
    from confluent_kafka.admin import AdminClient

    metadata = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10)
    assert len(metadata.topics[topic].partitions) == 5
    with pytest.raises(PySparkException, match=f"'{topic}-absent'.*does not exist.*auto-create-topic"):
        write_batch(spark, [row(1)], sink_options(broker, f"{topic}-absent", **{"auto-create-topic": "false"}),
                    partitions=1)


def test_per_row_tables_route_to_their_topics(spark, broker, topic):
    schema = T.StructType([T.StructField("_schema", T.StringType()), T.StructField("_table", T.StringType()),
                           T.StructField("id", T.IntegerType(), False)])
    rows = [{"_schema": "db", "_table": f"shard_{i % 2}", "id": i} for i in range(6)]
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "protocol": "canal-json",
               "topic": f"{topic}_{{schema}}_{{table}}", "primary-key": "id"}
    write_batch(spark, rows, options, schema=schema)
    for shard in (0, 1):
        events = [e for _, e in decoded(broker, f"{topic}_db_shard_{shard}", expect=3)]
        assert sorted(e.columns["id"] for e in events) == [i for i in range(6) if i % 2 == shard]
        assert {e.table for e in events} == {f"shard_{shard}"}


def test_kafka_settings_reach_librdkafka(spark, broker, topic):
    # An invalid librdkafka setting must surface from librdkafka itself, proving it was passed through.
    with pytest.raises(PySparkException, match='"batch.num.messages" value -5 is outside allowed range'):
        write_batch(spark, [row(1)], sink_options(broker, topic, **{"kafka.batch.num.messages": "-5"}),
                    partitions=1)


def test_row_writer_of_pyspark_4_0_feeds_the_same_pipeline(broker, topic):
    """pyspark 4.0 has no Arrow stream writer: Rows are re-batched into Arrow (driven here directly)."""
    from pyspark.sql import Row

    from ticdc_sink.config.sink_options import parse_options
    from ticdc_sink.datasource import TiCDCStreamRowWriter
    from ticdc_sink.sink.task import WritePlan

    config = parse_options(sink_options(broker, topic, **{"enable-tidb-extension": "true",
                                                          "delivery": "at-least-once"}))
    writer = TiCDCStreamRowWriter(WritePlan.for_schema(config, CHANGES), CHANGES)
    # Spark hands zoned timestamps to Row writers as naive local time.
    local_seen = dt.datetime(2024, 5, 1, 10, 0, 3, tzinfo=dt.timezone.utc).astimezone().replace(tzinfo=None)
    rows = [Row(**{**row(i, ts=i), "seen": local_seen}) for i in range(1, 4)]
    report = writer.write(iter(rows))
    writer.commit([report], batchId=0)
    events = decoded(broker, topic, expect=3 + 3)  # the rows and a watermark on each of the 3 partitions
    assert sorted(e.columns["id"] for _, e in events if isinstance(e, RowEvent)) == [1, 2, 3]
    assert {e.columns["seen"] for _, e in events if isinstance(e, RowEvent)} == {dt.datetime(2024, 5, 1, 10, 0, 3)}
    assert report.rows == 3 and report.max_commit_ts == BASE_TS + 3
    assert [e.ts for _, e in events if isinstance(e, WatermarkEvent)] == [BASE_TS + 3] * report.topics[topic]


def test_emit_ddl_sends_one_event_to_partition_zero(broker, topic):
    from ticdc_sink import emit_ddl

    emit_ddl(sink_options(broker, topic), "CREATE TABLE orders (id INT PRIMARY KEY)", database="shop",
             table="orders", commit_ts=BASE_TS)
    # Canal-JSON without the TiDB extension carries the commit's physical millisecond (es) alone.
    commit_ms = BASE_TS >> 18 << 18
    assert [(p, e) for p, e in decoded(broker, topic, expect=1)] == [
        (0, DDLEvent("shop", "orders", "CREATE TABLE orders (id INT PRIMARY KEY)", "CREATE", commit_ms))]


@pytest.mark.parametrize("form", ["view", "table"])
def test_the_documented_sql_keeps_each_keys_changes_in_commit_ts_order(spark, broker, topic, form):
    run_the_documented_sql(spark, broker, topic, form)


def run_the_documented_sql(spark, broker, topic: str, form: str) -> None:
    """docs/usage.md's Spark SQL statements, run as written (only the broker and the topic swapped in): a view
    with OPTIONS and INSERT INTO it, or a table without OPTIONS and INSERT INTO it WITH the options; each key's
    changes must arrive in commit-ts order."""
    import pathlib
    import re

    usage = (pathlib.Path(__file__).parent.parent / "docs" / "usage.md").read_text()
    block = re.search(r"## Spark SQL\n\n.*?```sql\n(.*?)```", usage, re.S).group(1)
    statements = [" ".join(line for line in s.strip().splitlines() if not line.lstrip().startswith("--"))
                  for s in block.split(";") if s.strip()]
    create, insert = statements[:2] if form == "view" else statements[2:4]
    assert create.startswith("CREATE TEMPORARY VIEW orders_cdc" if form == "view" else "CREATE TABLE orders_out")
    assert "SORT BY commit_ts" in insert
    statement = (create if form == "view" else insert).replace("'broker:9092'", f"'{broker.bootstrap_servers}'") \
        .replace("'topic'='orders'", f"'topic'='{topic}'")
    create, insert = (statement, insert) if form == "view" else (create, statement)
    keys, steps = 30, ["INSERT", "UPDATE", "DELETE"]
    changes = [(op, BASE_TS + step * keys + key, key, f"{op.lower()}{key}")
               for step, op in enumerate(steps) for key in range(keys)]
    spark.createDataFrame(changes, "op STRING, commit_ts BIGINT, id INT, name STRING").repartition(4) \
        .createOrReplaceTempView("changes")  # the changes arrive spread over Spark partitions
    spark.sql("DROP TABLE IF EXISTS orders_out")
    spark.sql(create.replace("CREATE TEMPORARY VIEW", "CREATE OR REPLACE TEMPORARY VIEW"))
    spark.sql(insert)
    chains: dict[int, list[str]] = {}
    for _, event in decoded(broker, topic, expect=len(changes)):  # without _before an UPDATE is sent as INSERT
        chains.setdefault(event.columns["id"], []).append(event.columns["name"])
    assert chains == {key: [f"{op.lower()}{key}" for op in steps] for key in range(keys)}


SELECT_ALL_BUT_AMOUNT = ("[{matcher = ['shop.orders'], columns = ['*', '!amount']}, "
                         "{matcher = ['*.*'], columns = ['id']}]")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_column_selectors_leave_the_columns_out_of_every_protocols_rows(spark, broker, topic, under_test):
    rows = [row(1), row(2, op="UPDATE", ts=1, before=row_columns(row(2, name="old"))), row(3, op="DELETE", ts=2)]
    options = sink_options(broker, topic, under_test, **{"column-selectors": SELECT_ALL_BUT_AMOUNT,
                                                           "enable-tidb-extension": "true"})
    write_batch(spark, rows, options, partitions=1)
    marks = 3 if under_test.carries.watermarks else 0  # one per partition
    events = [e for _, e in decoded(broker, topic, expect=len(rows) + marks, protocol=under_test)
              if isinstance(e, RowEvent)]
    assert [e.type for e in events] == ["INSERT", "UPDATE", "DELETE"]
    for event in events:  # the first selector matching shop.orders applies, the catch-all after it does not
        kept = {"id", "name", "seen"} if event.type != "DELETE" or under_test.carries.whole_deleted_row else {"id"}
        assert set(event.columns) == kept  # left out, not written as null
    assert events[0].columns["name"] == "n1"


def test_column_selectors_that_drop_the_handle_key_fail_before_any_task(spark, broker, topic):
    selectors = "[{matcher = ['shop.*'], columns = ['name', 'amount']}]"
    with pytest.raises(PySparkException, match="column-selectors.*shop.orders.*handle-key column.*id"):
        write_batch(spark, [row(1)], sink_options(broker, topic, **{"column-selectors": selectors}))


def test_column_selectors_that_give_a_dataframes_tables_different_columns_fail_the_task(spark, broker, topic):
    schema = T.StructType([T.StructField("_schema", T.StringType()), T.StructField("_table", T.StringType()),
                           T.StructField("id", T.IntegerType(), False), T.StructField("name", T.StringType())])
    rows = [{"_schema": "db", "_table": f"shard_{i}", "id": i, "name": "x"} for i in range(2)]
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "protocol": "canal-json", "topic": topic,
               "primary-key": "id", "column-selectors": "[{matcher = ['db.shard_0'], columns = ['id']}]"}
    with pytest.raises(PySparkException, match="different columns.*db.shard_0: id.*db.shard_1: id, name"):
        write_batch(spark, rows, options, schema=schema, partitions=1)


@pytest.mark.parametrize("protocol", ["debezium-avro"])
def test_debezium_avro_reads_back_through_avro_deserializer_as_the_input_rows(spark, broker, topic, under_test):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    rows = [row(1), row(2, ts=1), row(1, op="UPDATE", ts=2, name="m", before=row_columns(row(1))),
            row(2, op="DELETE", ts=3)]
    write_batch(spark, rows, sink_options(broker, topic, under_test, partition="index-value"), partitions=1)
    client = SchemaRegistryClient({"url": under_test.registry_url})
    values = AvroDeserializer(client)
    read = [values(m.value(), SerializationContext(topic, MessageField.VALUE))
            for m in broker.read(topic, idle_seconds=1.0, expect=4)]
    assert sorted((r["source"]["commit_ts"], r["op"]) for r in read) == [
        (BASE_TS, "c"), (BASE_TS + 1, "c"), (BASE_TS + 2, "u"), (BASE_TS + 3, "d")]
    by_op = {r["op"] + str(r["source"]["commit_ts"] - BASE_TS): r for r in read}
    seen = lambda change: change["seen"].astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    expected = {k: v for k, v in row(1).items() if not k.startswith("_")} | {"seen": seen(row(1))}
    assert by_op["c0"]["after"] == expected and by_op["c0"]["before"] is None
    assert by_op["u2"]["before"] == expected and by_op["u2"]["after"] == {**expected, "name": "m1"}
    assert by_op["d3"]["before"]["id"] == 2 and by_op["d3"]["after"] is None


@pytest.mark.parametrize("protocol", ["canal-json", "open-protocol"])
def test_delete_only_output_handle_key_columns_sends_deletes_by_their_key(spark, broker, topic, under_test):
    rows = [row(1), row(1, op="DELETE", ts=1)]
    options = sink_options(broker, topic, under_test, **{"delete-only-output-handle-key-columns": "true",
                                                           "enable-tidb-extension": "true"})
    write_batch(spark, rows, options, partitions=1)
    insert, delete = [e for _, e in decoded(broker, topic, expect=5, protocol=under_test) if isinstance(e, RowEvent)]
    assert insert.columns == row_columns(row(1)) and (delete.type, delete.columns) == ("DELETE", {"id": 1})


@pytest.mark.parametrize("protocol", ["canal-json", "open-protocol", "simple"])
def test_a_row_over_max_message_bytes_arrives_as_its_handle_key_only(spark, broker, topic, under_test):
    rows = [row(1), {**row(2, ts=1), "name": "x" * 3000}]
    options = sink_options(broker, topic, under_test, **{"large-message-handle-option": "handle-key-only",
                                                           "max-message-bytes": "2000", "enable-tidb-extension": "true"})
    write_batch(spark, rows, options, partitions=1)
    events = [e for _, e in decoded(broker, topic, expect=2 + (3 if under_test.carries.watermarks else 0),
                                    protocol=under_test) if isinstance(e, RowEvent)]
    small, large = sorted(events, key=lambda e: e.columns["id"])
    assert not small.handle_key_only and small.columns == row_columns(row(1))
    assert large.handle_key_only and large.columns == {"id": 2}


def test_an_unusable_claim_check_storage_fails_the_write_in_one_line_before_any_task(spark, broker, topic, tmp_path):
    (tmp_path / "file").write_text("")
    options = sink_options(broker, topic, **{"large-message-handle-option": "claim-check",
                                             "claim-check-storage-uri": f"file://{tmp_path}/file/claims",
                                             "enable-tidb-extension": "true"})
    with pytest.raises(PySparkException, match=r"claim-check-storage-uri=file://\S+/file/claims cannot be used: "):
        write_batch(spark, [row(1)], options)
    assert broker.read(topic, idle_seconds=0.5) == []


def test_large_message_handling_refuses_a_table_without_a_handle_key_before_any_task(spark, broker, topic):
    options = {**sink_options(broker, topic, **{"large-message-handle-option": "handle-key-only",
                                                "enable-tidb-extension": "true"}), "primary-key": ""}
    with pytest.raises(PySparkException, match="large-message-handle-option.*no handle key"):
        write_batch(spark, [row(1)], options)


@pytest.mark.parametrize("raw", [False, True])
def test_an_update_of_the_key_is_a_delete_and_an_insert_unless_output_raw_change_event(spark, broker, topic, raw):
    rows = [row(1), {**row(9, ts=1), "_op": "UPDATE", "_before": row_columns(row(1))}]
    write_batch(spark, rows, sink_options(broker, topic, **{"output-raw-change-event": str(raw).lower()}),
                partitions=1)
    events = [e for _, e in decoded(broker, topic, expect=2 if raw else 3)]
    if raw:
        assert [(e.type, e.columns["id"]) for e in events] == [("INSERT", 1), ("UPDATE", 9)]
    else:  # TiCDC's default: consumers keyed by the key drop the old row
        assert [(e.type, e.columns["id"]) for e in events] == [("INSERT", 1), ("DELETE", 1), ("INSERT", 9)]
        assert events[1].columns == row_columns(row(1))


def test_a_changefeed_files_dispatcher_and_column_selectors_take_effect(spark, broker, topic, tmp_path):
    changefeed = tmp_path / "changefeed.toml"
    changefeed.write_text(f"""
[filter]
rules = ['shop.*']

[sink]
protocol = "canal-json"
column-selectors = [{{matcher = ['shop.orders'], columns = ['*', '!amount']}}]
dispatchers = [{{matcher = ['shop.*'], topic = "{topic}_{{table}}", partition = "columns", columns = ['id']}}]

[sink.kafka-config.codec-config]
enable-tidb-extension = true
""")
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "changefeed-config": str(changefeed),
               "database": "shop", "table": "orders", "primary-key": "id"}
    write_batch(spark, [row(1), row(2, ts=1)], options, partitions=1)
    events = [e for _, e in decoded(broker, f"{topic}_orders", expect=2 + 3) if isinstance(e, RowEvent)]
    assert [set(e.columns) for e in events] == [{"id", "name", "seen"}] * 2
    assert sorted(e.commit_ts for e in events) == [BASE_TS, BASE_TS + 1]  # the TiDB extension is on
