"""TiCDC's consumer rules in the ``ticdc`` reader, on topics produced message by message (Canal-JSON with the
TiDB extension, as TiCDC writes it, see tests/golden/canal-json): consistent cuts at watermarks, repeated rows,
DDL, tables, undecodable messages, and a streaming query restarted from its checkpoint."""

from __future__ import annotations

import json

import pytest
from pyspark.errors import PySparkException

pytestmark = [pytest.mark.spark, pytest.mark.broker]


def canal_row(ts: int, id_: int, table: str = "orders", op: str = "INSERT", name: str = "n") -> bytes:
    return json.dumps({
        "id": 0, "database": "shop", "table": table, "pkNames": ["id"], "isDdl": False, "type": op,
        "es": ts >> 18, "ts": ts >> 18, "sql": "", "sqlType": {"id": 4, "name": 12},
        "mysqlType": {"id": "int", "name": "varchar"}, "old": None,
        "data": [{"id": str(id_), "name": f"{name}{id_}"}], "_tidb": {"commitTs": ts}}).encode()


def canal_watermark(ts: int) -> bytes:
    return json.dumps({
        "id": 0, "database": "", "table": "", "pkNames": None, "isDdl": False, "type": "TIDB_WATERMARK",
        "es": ts >> 18, "ts": ts >> 18, "sql": "", "sqlType": None, "mysqlType": None, "data": None, "old": None,
        "_tidb": {"watermarkTs": ts}}).encode()


def canal_ddl(ts: int, sql: str) -> bytes:
    return json.dumps({
        "id": 0, "database": "shop", "table": "orders", "pkNames": None, "isDdl": True, "type": "ALTER",
        "es": ts >> 18, "ts": ts >> 18, "sql": sql, "sqlType": None, "mysqlType": None, "data": None, "old": None,
        "_tidb": {"commitTs": ts}}).encode()


class Topic:
    """A topic of two partitions that the test fills message by message."""

    def __init__(self, broker, name: str, partitions: int = 2):
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient, NewTopic

        self.name, self.broker = name, broker
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
        self._producer = Producer({"bootstrap.servers": broker.bootstrap_servers})

    def send(self, partition: int, *values: bytes) -> None:
        for value in values:
            self._producer.produce(self.name, value=value, partition=partition)
        assert self._producer.flush(30) == 0

    def options(self, **extra) -> dict:
        return {"kafka.bootstrap.servers": self.broker.bootstrap_servers, "topic": self.name,
                "protocol": "canal-json", "enable-tidb-extension": "true", "broker-timeout-ms": "10000",
                "kafka.isolation.level": self.broker.isolation, **extra}


@pytest.fixture
def canal_topic(broker, topic):
    return Topic(broker, topic)


def ids(rows) -> list[tuple]:
    return sorted((row["_op"], row["_commit_ts"], row["id"]) for row in rows)


def test_a_batch_read_drops_the_rows_a_partition_repeated_below_its_watermark(spark, canal_topic):
    canal_topic.send(0, canal_row(10, 1), canal_watermark(20), canal_row(15, 1), canal_row(30, 2))
    canal_topic.send(1, canal_row(12, 3), canal_watermark(20), canal_row(25, 4))

    rows = spark.read.format("ticdc").options(**canal_topic.options()).load().collect()

    # (INSERT, 15, 1) came again below partition 0's watermark 20: TiCDC's at-least-once repeat.
    assert ids(rows) == [("INSERT", 10, 1), ("INSERT", 12, 3), ("INSERT", 25, 4), ("INSERT", 30, 2)]


def test_a_topic_of_several_tables_is_read_one_table_at_a_time(spark, canal_topic):
    canal_topic.send(0, canal_row(10, 1), canal_row(11, 7, table="payments"))
    canal_topic.send(1, canal_row(12, 2))

    with pytest.raises(PySparkException, match="several tables .shop.orders, and shop.payments at partition 0 "
                                               "offset 1.: choose one with the options database and table"):
        spark.read.format("ticdc").options(**canal_topic.options()).load().collect()
    orders = spark.read.format("ticdc").options(**canal_topic.options(database="shop", table="orders")).load()
    payments = spark.read.format("ticdc").options(**canal_topic.options(table="payments")).load()

    assert ids(orders.collect()) == [("INSERT", 10, 1), ("INSERT", 12, 2)]
    assert [(r["_table"], r["id"], r["name"]) for r in payments.collect()] == [("payments", 7, "n7")]


def test_an_undecodable_message_fails_the_read_naming_where_it_is_or_is_skipped(spark, canal_topic):
    canal_topic.send(0, canal_row(10, 1), b"{not json", canal_row(11, 2))
    options = canal_topic.options()
    schema = "_op STRING, _commit_ts BIGINT, id INT, name STRING"

    with pytest.raises(PySparkException, match=rf"canal-json message at {canal_topic.name} partition 0 offset 1.*"
                                               "on-error=skip"):
        spark.read.format("ticdc").options(**options).schema(schema).load().collect()
    rows = spark.read.format("ticdc").options(**options, **{"on-error": "skip"}).schema(schema).load().collect()

    assert ids(rows) == [("INSERT", 10, 1), ("INSERT", 11, 2)]


def test_a_topic_of_another_protocol_fails_the_read_saying_so_with_or_without_a_schema(spark, broker, topic,
                                                                                       tmp_path):
    """A Debezium topic read as Canal-JSON gave no row and no error with a schema, and without one blamed the
    schema ('found no row of table shop.orders'); now both name the first message and the protocol tried."""
    from test_protocol_recognition import written

    debezium = Topic(broker, topic, partitions=1)
    for _, key, value in written("debezium", None, topic):
        debezium._producer.produce(topic, value, key, partition=0)
    assert debezium._producer.flush(30) == 0
    options = debezium.options(database="shop", table="orders")  # protocol canal-json
    schema = "_op STRING, _commit_ts BIGINT, id BIGINT, name STRING"
    line = (rf"topic '{topic}' partition 0 offset 0: not a canal-json message \(it looks like debezium\); "
            r"check the protocol option(\n|$)")  # the whole line

    with pytest.raises(PySparkException, match=line):
        spark.read.format("ticdc").options(**options).schema(schema).load().collect()
    with pytest.raises(PySparkException, match=line):
        spark.read.format("ticdc").options(**options).load()
    skipping = {**options, "on-error": "skip"}
    assert spark.read.format("ticdc").options(**skipping).schema(schema).load().collect() == []  # counted, logged
    with pytest.raises(PySparkException, match=line):  # no row to learn the columns from: the cause is named
        spark.read.format("ticdc").options(**skipping).load()
    # A stream finds no watermark in such a topic: it used to wait for one, with no task to say why.
    stream = spark.readStream.format("ticdc").options(**options).schema(schema).load()
    query = stream.writeStream.format("noop").option("checkpointLocation", str(tmp_path / "checkpoint")).start()
    try:
        with pytest.raises(PySparkException, match=line):
            query.processAllAvailable()
    finally:
        query.stop()


def test_kafka_coordinates_and_offsets_bound_a_batch_read(spark, canal_topic):
    canal_topic.send(0, canal_row(10, 1), canal_row(11, 2), canal_row(12, 3))
    canal_topic.send(1, canal_row(13, 4))
    ending = json.dumps({canal_topic.name: {"0": 2, "1": -1}})

    rows = spark.read.format("ticdc").options(**canal_topic.options(**{
        "include-kafka-coordinates": "true", "starting-offsets": json.dumps({canal_topic.name: {"0": 1}}),
        "ending-offsets": ending})).load().collect()

    assert sorted((r["_topic"], r["_partition"], r["_offset"], r["id"]) for r in rows) == [
        (canal_topic.name, 0, 1, 2), (canal_topic.name, 1, 0, 4)]


def test_unknown_options_get_a_did_you_mean(spark, canal_topic):
    with pytest.raises(PySparkException, match="'starting-offset'.*did you mean 'starting-offsets'"):
        spark.read.format("ticdc").options(**canal_topic.options(**{"starting-offset": "latest"})).load()


def test_a_stream_gives_consistent_cuts_and_resumes_from_its_checkpoint(spark, canal_topic, tmp_path):
    """Each micro-batch ends at the least of the partitions' last watermarks: every change up to it, none after;
    DDL once, after the rows it follows; a restarted query goes on where its checkpoint ends."""
    from pyspark.sql import functions as F

    batches: dict[int, list] = {}

    def run() -> None:
        def keep(frame, batch_id):
            batches[batch_id] = sorted((r["_op"], r["_commit_ts"], r["id"]) for r in frame.collect())

        stream = spark.readStream.format("ticdc").options(**canal_topic.options()).load()
        query = (stream.select("_op", "_commit_ts", F.col("id")).writeStream.foreachBatch(keep)
                 .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
        try:
            query.processAllAvailable()
        finally:
            query.stop()

    canal_topic.send(0, canal_row(10, 1), canal_watermark(20), canal_row(30, 2), canal_watermark(30))
    canal_topic.send(1, canal_row(15, 3), canal_watermark(20), canal_row(25, 4))
    run()
    # Partition 1's last watermark is 20: the cut is at 20, and rows 25 and 30 wait for the next one.
    assert list(batches.values()) == [[("INSERT", 10, 1), ("INSERT", 15, 3)]]

    canal_topic.send(1, canal_row(18, 3), canal_watermark(40))  # 18: a repeat, below partition 1's watermark
    canal_topic.send(0, canal_ddl(35, "ALTER TABLE orders ADD c INT"), canal_row(40, 5), canal_watermark(40))
    first = len(batches)
    run()
    after_restart = [rows for batch_id, rows in sorted(batches.items()) if batch_id >= first]
    assert after_restart == [[("DDL", 35, None), ("INSERT", 25, 4), ("INSERT", 30, 2), ("INSERT", 40, 5)]]


def test_a_read_is_read_committed_and_leaves_out_aborted_transactions(spark, broker, canal_topic,
                                                                       hides_aborted_transactions):
    if not hides_aborted_transactions:
        pytest.skip("this broker shows aborted transactions to read_committed consumers (the embedded one does); "
                    "CI runs this test on Apache Kafka")
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": canal_topic.name})
    producer.init_transactions(30)
    for commit, rows in ((True, [canal_row(10, 1)]), (False, [canal_row(11, 2), canal_row(12, 3)]),
                         (True, [canal_row(13, 4)])):
        producer.begin_transaction()
        for value in rows:
            producer.produce(canal_topic.name, value=value, partition=0)
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    options = {k: v for k, v in canal_topic.options().items() if k != "kafka.isolation.level"}  # the default

    rows = spark.read.format("ticdc").options(**options).load().collect()

    assert ids(rows) == [("INSERT", 10, 1), ("INSERT", 13, 4)]


def test_the_plan_reads_from_offset_0_where_the_brokers_report_a_later_start(canal_topic, monkeypatch):
    """The embedded broker answers "earliest" with the batch it stored first, which under concurrent producers is
    not always offset 0 (a read in CI lost the row before it): a start reported past 0 is confirmed by reading."""
    from confluent_kafka.admin import OffsetSpec

    from ticdc_sink.config.reader import parse_read_options
    from ticdc_sink.source.topics import TopicsView

    canal_topic.send(0, canal_row(10, 1), canal_row(11, 2), canal_row(12, 3))
    canal_topic.send(1, canal_row(13, 4))
    listed = TopicsView._list_offsets

    def earliest_too_late(view, parts, spec):
        offsets = listed(view, parts, spec)
        return {key: 2 for key in offsets} if spec is OffsetSpec.earliest() else offsets

    monkeypatch.setattr(TopicsView, "_list_offsets", earliest_too_late)
    with TopicsView(parse_read_options(canal_topic.options())) as view:
        assert view.bounds(view.partitions()) == {f"{canal_topic.name}:0": (0, 3), f"{canal_topic.name}:1": (0, 1)}
