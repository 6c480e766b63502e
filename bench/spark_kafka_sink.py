"""What users write without the sink, in Spark alone: Spark's own Kafka sink (``df.write.format("kafka")``, the
JVM's producer, from spark-sql-kafka) fed by Spark SQL expressions, no Python UDF, that build per row a
Canal-JSON-shaped value or a Debezium-shaped one with ``to_json(struct(...))``, from the cached feed the sink's
jobs read.

- Canal-JSON-shaped: ``id``, ``database``, ``table``, ``pkNames``, ``isDdl``, ``type`` (the feed's ``_op``), ``es``
  (the commit's physical milliseconds, ``_commit_ts >> 18``), ``ts`` (the job's clock), ``sql``, ``sqlType`` and
  ``mysqlType`` (literal JSON text, but for BIGINT UNSIGNED's ``sqlType``, which depends on the value), ``old``
  (the before-image of an update, else null) and ``data``, each column rendered as text as Canal-JSON renders it;
  the key is the primary key's ``to_json`` (the sink's Canal-JSON messages have none: its dispatcher picks their
  partition by the key's hash, where Spark's Kafka sink can only hash a key).
- Debezium-shaped: ``{"payload": {source, ts_ms, transaction, op, before, after}, "schema": ...}`` with the
  TiDB extension's source fields (``commit_ts``, ``cluster_id``) as the bench runs the sink, the columns typed as
  Debezium types them; the schema (the same for every row) is the hand-written baseline's text, appended with
  ``concat`` as TiCDC's messages carry it; the key likewise ``{"payload": {"id": ..}, "schema": ...}``.

Neither is byte-equal to the sink's messages (Spark's JSON writer escapes fewer characters than Go's, and writes
numbers as Java does), but each carries the same fields and values per row: ``check_shapes`` compares them,
parsed, with the sink's on the feed's first rows before anything is timed, and measures their sizes.

The producer is tuned as the sink's librdkafka runs (``TUNED``): the Java producer's defaults (no linger, 16 KiB
batches) are slow, and a slow baseline flatters; ``DEFAULTS`` runs it untuned once, for the note.
"""

from __future__ import annotations

import contextlib
import json
from decimal import Decimal

import pyarrow as pa
from common import TOPIC_PARTITIONS, create_topic, delete_topic, unique_topic
from encode import sink_messages
from feed import DATABASE, TABLE, sink_options
from handwritten_json import (DEBEZIUM_CLUSTER, DEBEZIUM_COLUMNS, DEBEZIUM_KEY_TAIL, DEBEZIUM_VALUE_TAIL,
                              MYSQL_TYPES, SQL_TYPES)

SPARK_KAFKA_SINK = "Spark Kafka sink"  # how the name of a baseline's row begins
SHAPES = {"canal-json": "Canal-JSON", "debezium": "Debezium"}
# The baseline each protocol is held against: the Debezium protocols carry Debezium's envelope and schemas
# (about 5 KB a message); every other protocol a row's values and a few fields, as Canal-JSON does.
BASELINE_SHAPE = {"canal-json": "canal-json", "open-protocol": "canal-json", "avro": "canal-json",
                  "simple": "canal-json", "simple-avro": "canal-json", "debezium": "debezium",
                  "debezium-avro": "debezium"}
# As the sink produces (librdkafka: linger.ms=5, batches up to 1 MB, acks=all, idempotence).
TUNED = {"kafka.linger.ms": "5", "kafka.batch.size": "1048576", "kafka.acks": "all", "kafka.enable.idempotence": "true"}
DEFAULTS: dict[str, str] = {}  # the Java producer's own (kafka-clients 3.9: linger.ms=0, batch.size=16384)
CHECK_ROWS = 5_000  # of the feed's first rows: the shapes checked against the sink's messages, and sized
COLUMNS = [name for name, *_ in DEBEZIUM_COLUMNS]  # the table's columns, in its order
# java.sql.Types of TiCDC's Canal-JSON; BIGINT UNSIGNED's depends on the row (``canal_json_frame``).
CANAL_SQL_TYPES = SQL_TYPES
_TWO_63, _TWO_64 = Decimal(2**63), Decimal(2**64)


def baseline_name(shape: str, tuned: bool = True) -> str:
    """The row of Spark's Kafka sink with values of ``shape`` (``canal-json`` or ``debezium``)."""
    producer = "linger.ms=5, batch.size=1 MiB" if tuned else "the Java producer's defaults"
    return f"{SPARK_KAFKA_SINK}, {SHAPES[shape]}-shaped values (to_json), {producer}"


def _datetime_ms(column):
    """DATETIME(3)'s epoch milliseconds, rounded half up from the feed's microseconds as TiDB stores them."""
    from pyspark.sql import functions as F

    return F.floor((F.unix_micros(column.cast("timestamp")) + 500) / 1000)


def _canal_text(name: str, column):
    """A column's value as Canal-JSON's text (the session's time zone is UTC)."""
    from pyspark.sql import functions as F

    if name == "c_varbinary":
        return F.decode(column, "ISO-8859-1")  # each byte a character, as TiCDC writes binary
    if name == "c_datetime":  # DATETIME(3)
        return F.date_format(F.timestamp_millis(_datetime_ms(column)), "yyyy-MM-dd HH:mm:ss.SSS")
    if name == "c_timestamp":  # TIMESTAMP(6)
        return F.date_format(column, "yyyy-MM-dd HH:mm:ss.SSSSSS")
    if name in ("c_varchar", "c_text", "c_json"):
        return column
    return column.cast("string")


def _debezium_value(name: str, column):
    """A column's value as Debezium types it (``handwritten_json.DEBEZIUM_COLUMNS``)."""
    from pyspark.sql import functions as F

    if name == "c_ubigint":  # int64, wrapped as the unsigned value's bits read signed
        return F.when(column >= F.lit(_TWO_63), column - F.lit(_TWO_64)).otherwise(column).cast("bigint")
    if name == "c_decimal":
        return column.cast("double")
    if name == "c_varbinary":
        return F.base64(column)
    if name == "c_date":  # io.debezium.time.Date: days since the epoch
        return F.unix_date(column)
    if name == "c_datetime":  # io.debezium.time.Timestamp: epoch milliseconds
        return _datetime_ms(column)
    if name == "c_timestamp":  # io.debezium.time.ZonedTimestamp
        return F.date_format(column, "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'")
    return column


def _row(render, image: str | None = None):
    """A struct of every column rendered by ``render``, from the row (``image`` None) or from ``_before``."""
    from pyspark.sql import functions as F

    return F.struct(*[render(name, F.col(name) if image is None else F.col(image)[name]).alias(name)
                      for name in COLUMNS])


def canal_json_frame(df, *kept: str):
    """``df`` (the feed) as Spark's Kafka sink takes it: a Canal-JSON-shaped ``value`` and the key's JSON (after
    the columns ``kept``).  What is the same in every row (the table's names and types) is literal JSON text,
    joined in with ``concat``, as a user who cares for speed writes it: built per row with ``create_map`` the two
    type maps alone cost about 9 µs of JVM time a row, and a slow baseline flatters."""
    from pyspark.sql import functions as F

    def text(document) -> str:
        return json.dumps(document, separators=(",", ":"))

    op = F.col("_op")
    # BIGINT UNSIGNED's sqlType is DECIMAL's (3) where the row's value is over BIGINT's range, as TiCDC gives it,
    # else BIGINT's: two literal texts, one per case.
    sql_types = F.when(F.col("c_ubigint") >= F.lit(_TWO_63), F.lit(text({**CANAL_SQL_TYPES, "c_ubigint": 3}))) \
        .otherwise(F.lit(text(CANAL_SQL_TYPES)))
    nulls_kept = {"ignoreNullFields": "false"}
    old = F.when((op == "UPDATE") & F.col("_before").isNotNull(),
                 F.to_json(F.array(_row(_canal_text, "_before")), nulls_kept)).otherwise(F.lit("null"))
    value = F.concat(
        F.lit(f'{{"id":0,"database":{text(DATABASE)},"table":{text(TABLE)},"pkNames":["id"],"isDdl":false,'
              '"type":"'), op,
        F.lit('","es":'), F.shiftright(F.col("_commit_ts"), 18).cast("string"),
        F.lit(',"ts":'), F.unix_millis(F.current_timestamp()).cast("string"),
        F.lit(',"sql":"","sqlType":'), sql_types,
        F.lit(f',"mysqlType":{text(MYSQL_TYPES)},"old":'), old,
        F.lit(',"data":'), F.to_json(F.array(_row(_canal_text)), nulls_kept), F.lit("}"))
    return df.select(*kept, F.to_json(F.struct("id")).alias("key"), value.alias("value"))


def debezium_frame(df, *kept: str):
    """``df`` (the feed) as Spark's Kafka sink takes it: a Debezium-shaped ``value`` and ``key``, their schemas
    appended (after the columns ``kept``)."""
    from pyspark.sql import functions as F

    op, commit_ts = F.col("_op"), F.col("_commit_ts")
    null_string = F.lit(None).cast("string")
    source = F.struct(
        F.lit("2.4.0.Final").alias("version"), F.lit("TiCDC").alias("connector"),
        F.lit(DEBEZIUM_CLUSTER).alias("name"), F.shiftright(commit_ts, 18).alias("ts_ms"),
        F.lit("false").alias("snapshot"), F.lit(DATABASE).alias("db"), F.lit(TABLE).alias("table"),
        F.lit(0).alias("server_id"), null_string.alias("gtid"), F.lit("").alias("file"), F.lit(0).alias("pos"),
        F.lit(0).alias("row"), F.lit(0).alias("thread"), null_string.alias("query"), commit_ts.alias("commit_ts"),
        F.lit(DEBEZIUM_CLUSTER).alias("cluster_id"))
    row, before = _row(_debezium_value), _row(_debezium_value, "_before")
    payload = F.struct(
        source.alias("source"), F.unix_millis(F.current_timestamp()).alias("ts_ms"),
        null_string.alias("transaction"),
        F.when(op == "INSERT", "c").when(op == "UPDATE", "u").otherwise("d").alias("op"),
        F.when(op == "DELETE", row).when(op == "UPDATE", before).alias("before"),
        F.when(op != "DELETE", row).alias("after"))

    def enveloped(document, tail: bytes):
        return F.concat(F.lit('{"payload":'), document, F.lit(tail.decode()))

    return df.select(*kept, enveloped(F.to_json(F.struct("id")), DEBEZIUM_KEY_TAIL).alias("key"),
                     enveloped(F.to_json(payload, {"ignoreNullFields": "false"}), DEBEZIUM_VALUE_TAIL).alias("value"))


FRAMES = {"canal-json": canal_json_frame, "debezium": debezium_frame}


@contextlib.contextmanager
def baseline_topic(bootstrap_servers: str, shape: str):
    """A topic of its own for a run of Spark's Kafka sink, made first with the sink's topics' partition count
    (the sink makes its own), and dropped after."""
    topic = unique_topic(f"bench-spark-kafka-{shape}")
    create_topic(bootstrap_servers, topic, TOPIC_PARTITIONS)
    try:
        yield topic
    finally:
        delete_topic(bootstrap_servers, topic)


def write_baseline(df, bootstrap_servers: str, topic: str, shape: str, producer: dict[str, str]) -> None:
    """``df``'s rows as ``shape``'s messages through ``df.write.format("kafka")`` to ``topic``."""
    (FRAMES[shape](df).write.format("kafka").mode("append").option("kafka.bootstrap.servers", bootstrap_servers)
     .option("topic", topic).options(**producer).save())


def _differences(ours: object, theirs: object, path: str, found: dict[str, int]) -> None:
    """Counts, in ``found``, each leaf (by its path, list indices left out) where two parsed messages differ."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key in ours.keys() | theirs.keys():
            _differences(ours.get(key, "<missing>"), theirs.get(key, "<missing>"), f"{path}.{key}".lstrip("."), found)
    elif isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        for mine, other in zip(ours, theirs):
            _differences(mine, other, path, found)
    elif ours != theirs:
        found[path] = found.get(path, 0) + 1


def _clock_free(message: dict, shape: str) -> dict:
    """A parsed message without the encoding clock (``ts``, ``payload.ts_ms``), which no two runs share."""
    if shape == "canal-json":
        message.pop("ts", None)
    else:
        message["payload"].pop("ts_ms", None)
    return message


def mean_sizes(messages, rows: int) -> tuple[float, float]:
    """The value and key bytes per row of ``(key, value)`` messages of ``rows`` rows (a missing key counts 0;
    Open Protocol packs several rows in a message)."""
    messages = list(messages)
    return sum(len(value or b"") for _, value in messages) / rows, sum(len(key or b"") for key, _ in messages) / rows


def sink_sizes(table: pa.Table, protocols: list[str], registry: str | None) -> dict[str, tuple[float, float]]:
    """Per protocol, the value and key bytes per row of the sink's messages of the feed's first ``CHECK_ROWS``
    rows."""
    first = table.slice(0, CHECK_ROWS)
    return {protocol: mean_sizes(sink_messages(first, sink_options("127.0.0.1:1", "bench", protocol=protocol,
                                                                    schema_registry=registry)), first.num_rows)
            for protocol in protocols}


def check_shapes(spark, path, table: pa.Table, shapes: list[str]) -> tuple[list[str], dict[str, tuple[float, float]]]:
    """Each shape's messages built by Spark from the feed's first ``CHECK_ROWS`` rows, parsed and compared with the
    sink's messages of its protocol (the encoding clock aside): a sentence per shape for the report, and per shape
    the value and key bytes per row of its messages."""
    from pyspark.sql import functions as F

    first = table.slice(0, CHECK_ROWS)
    start = first.column("_commit_ts")[0].as_py()
    feed = spark.read.parquet(str(path)).where(F.col("_commit_ts") < start + first.num_rows)
    texts, sizes = [], {}
    for shape in shapes:
        built = {row["_commit_ts"]: (row["key"].encode(), row["value"].encode())
                 for row in FRAMES[shape](feed, "_commit_ts").collect()}
        theirs = sink_messages(first, sink_options("127.0.0.1:1", "bench", protocol=shape))
        found: dict[str, int] = {}
        for commit_ts, (key, value) in zip(first.column("_commit_ts").to_pylist(), theirs):
            ours = built[commit_ts]
            _differences(_clock_free(json.loads(ours[1]), shape), _clock_free(json.loads(value), shape), "", found)
            if key is not None:  # Canal-JSON's have none
                _differences(json.loads(ours[0]), json.loads(key), "key", found)
        sizes[shape] = mean_sizes(built.values(), len(built))
        (value_bytes, key_bytes), (sink_value, sink_key) = sizes[shape], mean_sizes(theirs, first.num_rows)
        leaves = "; ".join(f"{where} in {count:,} rows" for where, count in sorted(found.items())) or "none"
        texts.append(f"The {SHAPES[shape]}-shaped messages of Spark's Kafka sink (`bench/spark_kafka_sink.py`), "
                     f"parsed, against the sink's {SHAPES[shape]} messages on the feed's first {len(built):,} rows "
                     f"(the encoding clock aside; keys where the sink's have one): the fields that differ: {leaves}. "
                     f"Bytes per message: values {value_bytes:,.0f} against the sink's {sink_value:,.0f}, keys "
                     f"{key_bytes:,.0f} against {sink_key:,.0f}.")
    return texts, sizes
