"""The baselines beside the hand-written encoders (``handwritten.py``): reading without the reader, and the
bare limit of the output path.

Reading a Canal-JSON topic into Spark without the reader, over Spark's Kafka
source, into the reader's columns: ``canal_json_by_from_json`` (``from_json``
with a hand-written schema, each column cast to its Spark type) and
``canal_json_by_python_udf`` (per message ``json.loads`` and a tuple per row
built by hand, in a Python UDF).

``produce_all`` is a bare confluent-kafka loop over pre-encoded messages.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from decimal import Decimal
from pathlib import Path

from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage


# ---------------------------------------------------------------------------
# Reading Canal-JSON without the reader


def canal_json_read_schema(columns: T.StructType) -> T.StructType:
    """What both hand-written reads give, as the reader does: op, commit ts, database, table, the table's
    columns in their Spark types, and an update's old row."""
    return T.StructType([T.StructField("_op", T.StringType()), T.StructField("_commit_ts", T.LongType()),
                         T.StructField("_schema", T.StringType()), T.StructField("_table", T.StringType()),
                         *columns, T.StructField("_before", columns)])


def canal_json_message_schema(columns: T.StructType) -> T.StructType:
    """A Canal-JSON message as a user declares it for ``from_json``: every column value a string."""
    row = T.ArrayType(T.StructType([T.StructField(f.name, T.StringType()) for f in columns]))
    text = T.StringType()
    return T.StructType([
        T.StructField("id", T.LongType()), T.StructField("database", text), T.StructField("table", text),
        T.StructField("pkNames", T.ArrayType(text)), T.StructField("isDdl", T.BooleanType()),
        T.StructField("type", text), T.StructField("es", T.LongType()), T.StructField("ts", T.LongType()),
        T.StructField("sql", text), T.StructField("sqlType", T.MapType(text, T.IntegerType())),
        T.StructField("mysqlType", T.MapType(text, text)), T.StructField("old", row), T.StructField("data", row),
        T.StructField("_tidb", T.StructType([T.StructField("commitTs", T.LongType())])),
    ])


def _typed_column(text, spark_type: T.DataType):
    """A Canal-JSON value (a string) as its column's Spark type: binary values are ISO-8859-1 text."""
    return F.encode(text, "ISO-8859-1") if isinstance(spark_type, T.BinaryType) else text.cast(spark_type)


def canal_json_by_from_json(kafka, columns: T.StructType):
    """Spark's Kafka source read as Canal-JSON with ``from_json`` and a hand-written schema: a row per element
    of ``data`` (watermarks have none), each column cast to its Spark type, ``old`` as the update's old row."""
    message = F.from_json(F.col("value").cast("string"), canal_json_message_schema(columns)).alias("m")
    rows = kafka.select(message).select("m.type", "m._tidb.commitTs", "m.database", "m.table", "m.old",
                                        F.posexplode("m.data").alias("at", "row"))

    def typed(row) -> list:
        return [_typed_column(row[f.name], f.dataType).alias(f.name) for f in columns]

    old = F.col("old")[F.col("at")]
    return rows.select(F.col("type").alias("_op"), F.col("commitTs").alias("_commit_ts"),
                       F.col("database").alias("_schema"), F.col("table").alias("_table"), *typed(F.col("row")),
                       F.when(old.isNotNull(), F.struct(*typed(old))).alias("_before"))


def _utc_datetime(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc)


CANAL_JSON_VALUES = {  # the feed's columns, each Canal-JSON string to its Python value, by hand
    "id": int, "c_tinyint": int, "c_smallint": int, "c_int": int, "c_ubigint": Decimal, "c_decimal": Decimal,
    "c_double": float, "c_varchar": str, "c_text": str, "c_varbinary": lambda text: text.encode("latin-1"),
    "c_date": dt.date.fromisoformat, "c_datetime": dt.datetime.fromisoformat, "c_timestamp": _utc_datetime,
    "c_json": str,
}


def canal_json_values(row: dict) -> tuple:
    return tuple(None if (text := row.get(name)) is None else value(text) for name, value in CANAL_JSON_VALUES.items())


def canal_json_rows(value: bytes) -> list[tuple]:
    """One Canal-JSON message the per-row Python way: ``json.loads``, then each row's values converted by hand
    (a watermark has none)."""
    message = json.loads(value)
    olds = message["old"] or ()
    return [(message["type"], message["_tidb"]["commitTs"], message["database"], message["table"],
             *canal_json_values(data), canal_json_values(olds[at]) if at < len(olds) else None)
            for at, data in enumerate(message["data"] or ())]


def canal_json_by_python_udf(kafka, columns: T.StructType):
    """Spark's Kafka source read as Canal-JSON by ``canal_json_rows`` in a Python UDF, its rows exploded.
    (``mapInPandas`` and ``mapInArrow`` need pandas, which this venv lacks.)"""
    rows = F.udf(canal_json_rows, T.ArrayType(canal_json_read_schema(columns)))
    return kafka.select(F.explode(rows("value")).alias("row")).select("row.*")


# ---------------------------------------------------------------------------
# The bare output limit


PRODUCE_CALLS = {  # the ways confluent-kafka takes messages, each timed by ``produce_all``
    "produce": "produce() per message, a delivery callback each",
    "produce, error reports only": "produce() per message, delivery reports of failures only",
    "produce_batch": "produce_batch() per partition, a dict per message",
}


def produce_all(settings: dict, topic: str, messages: list[tuple[int, bytes | None, bytes | None]],
                call: str = "produce") -> float:
    """Produce ``(partition, key, value)`` messages with a bare idempotent producer, by one of
    ``PRODUCE_CALLS``; the seconds until all are acknowledged (none may fail)."""
    from confluent_kafka import Producer

    failures, delivered = [], [0]

    def on_delivery(error, _message):
        if error is not None:
            failures.append(error)
        else:
            delivered[0] += 1

    settings = {**settings, "enable.idempotence": True, "acks": "all", "linger.ms": 5}
    if call == "produce, error reports only":
        settings.update({"delivery.report.only.error": True, "on_delivery": on_delivery})
    producer = Producer(settings)
    started = time.perf_counter()
    if call == "produce_batch":
        _produce_batches(producer, topic, messages, on_delivery)
    else:
        callback = on_delivery if call == "produce" else None
        for count, (partition, key, value) in enumerate(messages):
            while True:
                try:
                    producer.produce(topic, value, key, partition, on_delivery=callback)
                    break
                except BufferError:
                    producer.poll(0.05)
            if count % 1000 == 0:
                producer.poll(0)
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - started
    if call != "produce, error reports only" and delivered[0] != len(messages):
        raise RuntimeError(f"bare producer ({call}): {delivered[0]} of {len(messages)} acknowledged")
    if failures or remaining:
        raise RuntimeError(f"bare producer ({call}): {len(failures)} failed, {remaining} unacknowledged")
    return elapsed


def _produce_batches(producer, topic: str, messages: list[tuple[int, bytes | None, bytes | None]],
                     on_delivery, size: int = 10_000) -> None:
    """``produce_batch`` over runs of up to ``size`` messages per partition, as a task would hand over an
    Arrow batch's messages; the messages a full queue refused go again once it has room."""
    from confluent_kafka import KafkaError

    for start in range(0, len(messages), size):
        by_partition: dict[int, list[dict]] = {}
        for partition, key, value in messages[start:start + size]:
            by_partition.setdefault(partition, []).append({"key": key, "value": value})
        for partition, batch in by_partition.items():
            while batch:
                taken = producer.produce_batch(topic, batch, partition=partition, on_delivery=on_delivery)
                refused = [m for m in batch if "_error" in m] if taken < len(batch) else []
                for message in refused:
                    if message.pop("_error").code() != KafkaError._QUEUE_FULL:
                        raise RuntimeError("bare producer (produce_batch): a message was refused")
                if refused:
                    producer.poll(0.05)
                batch = refused
            producer.poll(0)


# ---------------------------------------------------------------------------
# What receiving the input costs


class DrainWriter(DataSourceArrowWriter):
    def __init__(self, report_dir: str):
        self.report_dir = report_dir

    def write(self, iterator) -> WriterCommitMessage:
        started, rows = time.thread_time(), 0
        for batch in iterator:
            rows += batch.num_rows
        seconds = time.thread_time() - started
        (Path(self.report_dir) / f"{uuid.uuid4().hex}.txt").write_text(f"{rows} {seconds}")
        return WriterCommitMessage()


class DrainDataSource(DataSource):
    """``format("bench-drain")``: a Python sink that takes Spark's Arrow batches and drops them.

    Each task writes the rows it took and its Python thread's CPU seconds in taking them to a file in
    the ``report-dir`` option's folder: what a task of the sink spends on receiving its input (the
    first stage of the per-stage costs), without the worker's start.
    """

    @classmethod
    def name(cls) -> str:
        return "bench-drain"

    def writer(self, schema, overwrite: bool) -> DrainWriter:
        return DrainWriter(self.options["report-dir"])


def drained(report_dir: Path) -> tuple[int, float]:
    """Rows and CPU seconds the drain's tasks reported in ``report_dir``."""
    reports = [path.read_text().split() for path in report_dir.glob("*.txt")]
    return sum(int(rows) for rows, _ in reports), sum(float(seconds) for _, seconds in reports)
