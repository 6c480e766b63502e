"""The Spark-to-Kafka path: what one task of the sink spends per stage, the Spark jobs (``format("ticdc")`` in
each delivery mode beside the hand-written ``foreachPartition`` producer and the input limits), and the peak RSS
of a worker writing one large partition: the sink as users run it, against what they would run instead."""

from __future__ import annotations

import contextlib
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
from common import (CORES, TOPIC_PARTITIONS, Result, create_topic, delete_topic, local_spark, read_feed, say, timed,
                    unique_topic)
from drain import DrainDataSource, drained
from feed import sink_options, spark_schema, topic_written, write_feed
from handwritten import STANDARD_SERIALIZER, AvroTarget
from limits import bare_producer_runs
from process_meters import RSS, WorkerMemory, cpu_note, timed_with_cpu

from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.sink.task import WritePlan

STAGE_ROWS = 300_000  # per protocol, of the per-stage runs: the costs per row settle well before the feed's end
DRAIN = "Python sink that drops its input (bench-drain)"


def task_stages(bootstrap_servers: str, table: pa.Table, protocol: str, registry: str | None) -> Result:
    """One task's pipeline (``WritePlan.write``, at-least-once, to the broker) over the feed's first rows in
    Spark's Arrow batches of 10,000, in this process: its CPU per stage, by the task's own clock."""
    options = sink_options(bootstrap_servers, unique_topic(f"bench-stages-{protocol}"), "at-least-once",
                           protocol, registry)
    plan = WritePlan.for_schema(parse_options(options), spark_schema())
    sample = table.slice(0, STAGE_ROWS)
    started = time.perf_counter()
    report = plan.write(sample.to_batches(max_chunksize=10_000))
    seconds = time.perf_counter() - started
    delete_topic(bootstrap_servers, topic_written(options))
    return Result("stages", protocol, report.rows, seconds, stages=report.costs.per_row(report.rows))


def spark_jobs(spark, path: Path, rows: int, bootstrap_servers: str, protocols: list[str],
               registry: str | None, avro: AvroTarget | None) -> list[Result]:
    """Spark's noop sink, then per protocol ``format("ticdc")`` in each delivery mode and the hand-written
    ``foreachPartition`` producer (avro: the schemas of ``avro``, under its own topic's subjects)."""
    df = spark.read.parquet(str(path)).repartition(CORES)
    df.cache().count()  # the input is read once, so that every job measures its writing
    results = []

    def ticdc(protocol: str, delivery: str) -> Result:
        options = sink_options(bootstrap_servers, unique_topic(f"bench-{protocol}-{delivery}"), delivery,
                               protocol, registry)
        result = measured(f"ticdc-sink {protocol}, {delivery}",
                          lambda: df.write.format("ticdc").mode("append").options(**options).save())
        delete_topic(bootstrap_servers, topic_written(options))
        return result

    say("Spark warm-up (every task slot starts its Python worker; each Python sink's first job imports it)")
    sample = df.sample(fraction=0.02, seed=1)
    sample.write.format("ticdc").mode("append").options(
        **sink_options(bootstrap_servers, unique_topic("bench-warmup"))).save()
    spark.dataSource.register(DrainDataSource)
    with tempfile.TemporaryDirectory() as report_dir:
        sample.write.format("bench-drain").mode("append").option("report-dir", report_dir).save()

    def measured(name: str, action) -> Result:
        seconds, used = timed_with_cpu(action)
        return Result("e2e", name, rows, seconds, note=cpu_note(used, seconds), cpu=used)

    say("Spark noop sink (the input limit)")
    results.append(measured("Spark noop sink (input limit)", lambda: df.write.format("noop").mode("overwrite").save()))
    say("Python sink that drops its input (what receiving the Arrow batches costs)")
    with tempfile.TemporaryDirectory() as report_dir:
        drain = measured(DRAIN, lambda: df.write.format("bench-drain").mode("append")
                         .option("report-dir", report_dir).save())
        taken, seconds = drained(Path(report_dir))
    results.append(replace(drain, stages={"receive": seconds * 1e6 / max(taken, 1)}))
    for protocol in protocols:
        for delivery in ("at-least-once", "exactly-once"):
            say(f"Spark format('ticdc') {protocol} {delivery}")
            results.append(ticdc(protocol, delivery))
        say(f"Spark hand-written foreachPartition producer {protocol}")
        topic = unique_topic(f"bench-handwritten-{protocol}")
        create_topic(bootstrap_servers, topic)
        send = _handwritten_partition(bootstrap_servers, topic, protocol, TOPIC_PARTITIONS,
                                      replace(avro, topic=topic) if protocol == "avro" else None)
        results.append(measured(f"hand-written foreachPartition {protocol}, dict per row + "
                                f"{STANDARD_SERIALIZER[protocol]}", lambda: df.foreachPartition(send)))
        delete_topic(bootstrap_servers, topic)
    df.unpersist()
    return results


def _handwritten_partition(bootstrap_servers: str, topic: str, protocol: str, partitions: int,
                           avro: AvroTarget | None):
    def send(rows):
        from confluent_kafka import Producer
        from handwritten import HANDWRITTEN, STANDARD_SERIALIZER, serializer_choices

        producer = Producer({"bootstrap.servers": bootstrap_servers, "enable.idempotence": True, "acks": "all",
                             "linger.ms": 5})
        serializer = serializer_choices(protocol, avro)[STANDARD_SERIALIZER[protocol]]
        dicts = (row.asDict(recursive=True) for row in rows)
        for partition, key, value in HANDWRITTEN[protocol](dicts, serializer, partitions):
            while True:
                try:
                    producer.produce(topic, value, key, partition)
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
        if producer.flush(120):
            raise RuntimeError("hand-written producer: messages left unacknowledged")

    return send


def worker_rss(path: Path, rows: int, bootstrap_servers: str, protocol: str, registry: str | None) -> Result:
    """One partition of ``rows`` changes in ``protocol`` through a fresh Spark session; the worker's peak RSS."""
    spark = local_spark({"spark.python.worker.reuse": "true"})
    try:
        df = spark.read.parquet(str(path)).coalesce(1)
        options = sink_options(bootstrap_servers, unique_topic(f"bench-rss-{protocol}"), "at-least-once",
                               protocol, registry)
        with WorkerMemory() as memory:
            seconds = timed(lambda: df.write.format("ticdc").mode("append").options(**options).save())
        return Result("memory", f"{RSS} {protocol}, one partition of {rows:,} rows", rows, seconds,
                      note=memory.peak)
    finally:
        spark.stop()


def memory_runs(args, registry: str | None) -> list[Result]:
    """Every protocol's peak worker RSS on one large partition, to ``--bootstrap-servers`` or else to an embedded
    broker that drops what it receives: Debezium's 5M messages (about 25 GB) would not fit in memory."""
    path = write_feed(args.data_dir / f"feed-{args.rss_rows}.parquet", args.rss_rows)
    with contextlib.ExitStack() as stack:
        bootstrap_servers = args.bootstrap_servers
        if bootstrap_servers is None:
            from ticdc_sink.embedded.broker import EmbeddedBroker

            bootstrap_servers = stack.enter_context(EmbeddedBroker(storage="discard")).bootstrap_servers
        results = []
        for protocol in args.protocols:
            say(f"memory {protocol}: one partition of {args.rss_rows:,} rows")
            results.append(worker_rss(path, args.rss_rows, bootstrap_servers, protocol, registry))
    return results


def output_runs(args, path: Path, registry: str | None, avro: AvroTarget | None) -> tuple[list[Result], str]:
    """The runs that write to Kafka (bare producers, Spark jobs, memory) and the broker's description."""
    results = []
    broker = None
    bootstrap_servers, broker_name = args.bootstrap_servers, f"Kafka at {args.bootstrap_servers}"
    if bootstrap_servers is None:
        from ticdc_sink.embedded.broker import EmbeddedBroker

        broker = EmbeddedBroker().start()
        bootstrap_servers, broker_name = broker.bootstrap_servers, (
            "the embedded Tansu broker (in memory); for the memory runs, an embedded Tansu broker that "
            "acknowledges and drops what it receives")
    try:
        results += bare_producer_runs(bootstrap_servers, args.protocols, path, args.rows, registry)
        table = read_feed(path)
        for protocol in args.protocols:
            say(f"per-stage costs of one task {protocol} ({min(STAGE_ROWS, table.num_rows):,} rows)")
            results.append(task_stages(bootstrap_servers, table, protocol, registry))
        del table
        spark = local_spark()
        try:
            results += spark_jobs(spark, path, args.rows, bootstrap_servers, args.protocols, registry, avro)
        finally:
            spark.stop()
    finally:
        if broker is not None:
            broker.stop()
    results += memory_runs(args, registry)
    return results, broker_name
