"""Reading TiCDC topics into Spark: per protocol, ``spark.read.format("ticdc")`` over a topic the sink wrote,
its schema inferred and given; on Canal-JSON, in the same session, what users would write instead
(``read_baselines.py``); the worker's peak RSS over one large partition; the reader outside Spark, under
cProfile. On real Kafka when it starts: the embedded broker's high watermarks are wrong."""

from __future__ import annotations

import contextlib
import cProfile
import functools
import json
import pstats
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from common import (CORES, Result, apache_kafka, create_topic, delete_topic, in_turns, kafka_connector_spark,
                    local_spark, package_revision, profile_text, say, timed, unique_topic)
from feed import sink_options, spark_schema, topic_written, write_feed
from process_meters import RSS, WorkerMemory, cpu_note, timed_with_cpu
from read_baselines import canal_json_by_from_json, canal_json_by_python_udf

from ticdc_sink import order_changes

READER = "ticdc reader"
FROM_JSON = "Spark Kafka source + from_json, hand-written schema"
PYTHON_UDF = "Spark Kafka source + Python UDF, json.loads and a tuple per row"
READ_TURNS = 3
READ_RSS_PROTOCOL = "canal-json"
READ_PROFILE_MESSAGES = 50_000  # of a partition, read by the reader outside Spark, timed and under cProfile


@dataclass
class ReadRuns:
    """What the read section measured, and with what."""

    results: list[Result]
    broker: str
    kafka_source: str  # the Maven package of Spark's Kafka source
    outside_spark: dict[str, tuple[str, str]]  # per protocol: the reader's speed in this process, and its profile
    revision: str  # of the package when the reads began (package_revision)


@contextlib.contextmanager
def read_broker(args):
    """``(bootstrap servers, description, read settings)`` of the broker the reads run against: --bootstrap-servers,
    else real Apache Kafka (``integration/kafka_server.py``), else the embedded broker, a fallback only: its high
    watermarks are wrong, which the reader confirms by reading past them and Spark's Kafka source does not."""
    with apache_kafka(args, "the reads") as (bootstrap_servers, description):
        if bootstrap_servers is not None:
            yield bootstrap_servers, description, {}
            return
        from ticdc_sink.embedded.broker import EmbeddedBroker

        with EmbeddedBroker() as broker:
            yield (broker.bootstrap_servers, f"the embedded Tansu broker, as real Kafka did not start ({description}); "
                   "its high watermarks are wrong, which Spark's Kafka source may trip over",
                   {"kafka.isolation.level": "read_uncommitted"})


def write_read_topic(spark, path: Path, bootstrap_servers: str, protocol: str, registry: str | None,
                     partitions: int) -> dict[str, str]:
    """The feed written by the sink to a topic of its own as TiCDC writes one: with the TiDB extension (commit ts
    and ops), each partition in commit order (``order_changes``), its watermark last. The write's options."""
    options = {**sink_options(bootstrap_servers, unique_topic(f"bench-read-{protocol}"), protocol=protocol,
                              schema_registry=registry),
               "enable-tidb-extension": "true",
               "partition-num": str(partitions)}  # order_changes's count where the topic is an expression (avro)
    create_topic(bootstrap_servers, topic_written(options), partitions)
    order_changes(spark.read.parquet(str(path)), options).write.format("ticdc").mode("append").options(**options).save()
    return options


def read_options(options: dict[str, str], settings: dict[str, str]) -> dict[str, str]:
    """A read of the topic a write made: the write's options (one map serves both directions), but not its choice
    of table and partitions, naming the topic written."""
    kept = {key: value for key, value in options.items() if key not in ("database", "table", "partition")}
    return {**kept, "topic": topic_written(options), **settings}


def table_columns():
    """The feed's table columns in their Spark types, each nullable, as read back."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(f.name, f.dataType) for f in spark_schema().fields
                         if not f.name.startswith("_")])


def noop_rows(frame) -> int:
    """Every row of ``frame`` into Spark's noop sink (the whole DataFrame materialised); the rows, counted on the
    way."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    observation = Observation("rows")
    frame.observe(observation, F.count(F.lit(1)).alias("rows")).write.format("noop").mode("overwrite").save()
    return observation.get["rows"]


def measured_read(name: str, frame_of, section: str = "read") -> Result:
    """``frame_of()`` (the reader's ``load()``, inferring its schema or not, or a query over Spark's Kafka source)
    and its rows into the noop sink, timed as a whole."""
    counted = []
    seconds, used = timed_with_cpu(lambda: counted.append(noop_rows(frame_of())))
    return Result(section, name, counted[0], seconds, note=cpu_note(used, seconds), cpu=used)


def canal_json_baselines(spark, bootstrap_servers: str, topic: str) -> dict[str, Callable]:
    """The queries a user would write over Spark's Kafka source without the reader (``read_baselines.py``)."""
    def kafka():
        return (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap_servers)
                .option("subscribe", topic).option("startingOffsets", "earliest").load())

    columns = table_columns()
    return {FROM_JSON: lambda: canal_json_by_from_json(kafka(), columns),
            PYTHON_UDF: lambda: canal_json_by_python_udf(kafka(), columns)}


def check_rows(results: list[Result], rows: int) -> None:
    """Fails unless every read gave the feed's rows: then they compare like for like."""
    wrong = [f"{r.name}: {r.rows:,}" for r in results if r.rows != rows]
    if wrong:
        raise RuntimeError(f"reads that did not give the feed's {rows:,} rows: {'; '.join(wrong)}")


def protocol_reads(spark, options: dict[str, str], protocol: str, rows: int, bootstrap_servers: str,
                   turns: int) -> list[Result]:
    """The reader over a protocol's topic, inferring the schema and given it (``in_turns``); over Canal-JSON the
    baselines too, in the same rotation, after a warm-up turn: the ratios compare warm code."""
    def ticdc(schema=None):
        reader = spark.read.format("ticdc").options(**options)
        return (reader.schema(schema) if schema else reader).load()

    schema = ticdc().schema
    frames = {f"{READER} {protocol}, inferred schema": ticdc,
              f"{READER} {protocol}, given schema": lambda: ticdc(schema)}
    if protocol == "canal-json":
        frames |= canal_json_baselines(spark, bootstrap_servers, options["topic"])
        for name, frame_of in frames.items():  # the first query over Spark's Kafka source loads and compiles it
            say(f"read {protocol}: {name}, warm-up")
            noop_rows(frame_of())
    results = in_turns({name: functools.partial(measured_read, name, frame_of) for name, frame_of in frames.items()},
                       turns, f"read {protocol}")
    check_rows(results, rows)
    return results


def reader_rss(options: dict[str, str], rows: int) -> Result:
    """The reader over the first ``rows`` offsets of the topic's one partition, in a fresh session: the Python
    worker's peak RSS."""
    spark = local_spark({"spark.python.worker.reuse": "true"})
    try:
        ending = json.dumps({options["topic"]: {"0": rows}})
        name = f"{RSS} reading {READ_RSS_PROTOCOL}, one partition, first {rows:,} rows"
        with WorkerMemory() as memory:
            result = measured_read(name, lambda: spark.read.format("ticdc").options(**options)
                                   .option("ending-offsets", ending).load(), "read-memory")
        return replace(result, note=memory.peak)
    finally:
        spark.stop()


def outside_spark(options: dict[str, str], most: int) -> tuple[str, str]:
    """In this process, over the first ``most`` messages of the topic's partition 0: the bare consumer's speed and
    the reader's (``read_range``, one core), and the reader's cProfile (a run of its own)."""
    from ticdc_sink.config.reader import parse_read_options
    from ticdc_sink.source.partition_read import KafkaRange, read_range
    from ticdc_sink.source.reader import find_layout
    from ticdc_sink.source.topics import TopicsView, partition_key

    config = parse_read_options(options)
    layout, key = find_layout(config), partition_key(options["topic"], 0)
    with TopicsView(config) as view:
        start, end = view.bounds([key])[key]
        part = KafkaRange(key, start, min(end, start + most))
        messages = part.end - part.start
        consumed = timed(lambda: sum(1 for _ in view.messages(part.key, part.start, part.end)))

    def rows_read() -> int:
        return sum(batch.num_rows for batch in read_range(layout, part))

    started = time.perf_counter()
    rows = rows_read()
    read = time.perf_counter() - started
    profile = cProfile.Profile()
    profile.runcall(rows_read)
    speeds = (f"over the first {messages:,} messages ({rows:,} rows) of one partition: librdkafka's consumer alone "
              f"(`TopicsView.messages`) took {consumed:.2f} s ({messages / consumed:,.0f} messages/s), the reader "
              f"(`read_range`: consume, decode, the consumer rules, Arrow batches) {read:.2f} s "
              f"({rows / read:,.0f} rows/s, one core).")
    return speeds, profile_text(profile, read_shares)


def read_runs(args, path: Path, registry: str | None) -> ReadRuns:
    """The read section: every protocol's topic read by the reader (and Canal-JSON's by the baselines) in one
    session, and by the reader outside Spark; then the worker's RSS over one large partition."""
    turns = 1 if args.small else READ_TURNS
    outside, revision = {}, package_revision()
    with read_broker(args) as (bootstrap_servers, broker_name, settings):
        spark, package = kafka_connector_spark()
        try:
            results = []
            for protocol in args.protocols:
                say(f"read {protocol}: the feed written to a topic of {CORES} partitions")
                options = read_options(write_read_topic(spark, path, bootstrap_servers, protocol, registry, CORES),
                                       settings)
                results += protocol_reads(spark, options, protocol, args.rows, bootstrap_servers, turns)
                say(f"read {protocol}: the reader outside Spark, and under cProfile")
                outside[protocol] = outside_spark(options, READ_PROFILE_MESSAGES)
                delete_topic(bootstrap_servers, options["topic"])
            say(f"read memory: {args.rss_rows:,} rows of {READ_RSS_PROTOCOL} written to one partition")
            big = write_feed(args.data_dir / f"feed-{args.rss_rows}.parquet", args.rss_rows)
            one = read_options(write_read_topic(spark, big, bootstrap_servers, READ_RSS_PROTOCOL, None, 1), settings)
        finally:
            spark.stop()
        for rows in (args.rss_rows // 5, args.rss_rows):
            say(f"read memory: the first {rows:,} rows of the partition")
            results.append(reader_rss(one, rows))
            check_rows(results[-1:], rows)
        delete_topic(bootstrap_servers, one["topic"])
    return ReadRuns(results, broker_name, package, outside, revision)


def read_shares(stats: pstats.Stats) -> str:
    """The reader's time by concern, from its profile (cumulative seconds of the entry points; where a name is
    nested in itself, as a decoder's ``decode_columns`` in its module's, the outermost)."""
    concerns = {
        "consuming (librdkafka's consume, the broker's fetches included: topic_reader.iter_range_batches)":
            "iter_range_batches",
        "decoding a chunk of messages a column at a time (decode_columns)": "decode_columns",
        "decoding a message at a time (Decoder.decode)": "decode",
        "gathering a message's row, its values converted (RowsBuilder.add_row)": "add_row",
        "the consumer rules, a column at a time (_kept)": "_kept",
        "Arrow batches of the read's schema (RowsBuilder.batch_of_columns, RowsBuilder.take)": ("batch_of_columns",
                                                                                              "take"),
    }
    total = stats.total_tt or 1.0
    lines = [f"Reader time {total:.2f} s (under the profiler), of which:"]
    for label, names in concerns.items():
        names = (names,) if isinstance(names, str) else names
        seconds = sum(max((entry[3] for (_, _, function), entry in stats.stats.items() if function == name),
                          default=0.0) for name in names)
        if seconds / total >= 0.0005:
            lines.append(f"  {seconds / total * 100:5.1f}%  {label}")
    return "\n".join(lines)
