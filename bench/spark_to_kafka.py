"""The Spark-to-Kafka path: what one task of the sink spends per stage, the Spark jobs (``format("ticdc")`` in
each delivery mode beside the hand-written ``foreachPartition`` producer, Spark's own Kafka sink fed by ``to_json``
expressions and the input limits), and the peak RSS of a worker writing one large partition: the sink as users
run it, against what they would run instead. On real Kafka, in a session with Spark's Kafka connector; then the
sink's jobs and the limits again on the embedded broker, a second table."""

from __future__ import annotations

import contextlib
import functools
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import pyarrow as pa
from common import (CORES, TOPIC_PARTITIONS, Result, apache_kafka, create_topic, delete_topic, in_turns,
                    kafka_connector_spark, local_spark, read_feed, say, timed, unique_topic)
from drain import DrainDataSource, drained
from feed import sink_options, spark_schema, topic_written, write_feed
from handwritten import STANDARD_SERIALIZER, AvroTarget
from limits import bare_producer_runs
from process_meters import RSS, WorkerMemory, cpu_note, timed_with_cpu
from spark_kafka_sink import (BASELINE_SHAPE, CHECK_ROWS, DEFAULTS, TUNED, baseline_name, baseline_topic,
                              check_shapes, sink_sizes, write_baseline)

from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.kafka import native_produce
from ticdc_sink.sink.task import WritePlan

STAGE_ROWS = 300_000  # per protocol, of the per-stage runs: the costs per row settle well before the feed's end
DRAIN = "Python sink that drops its input (bench-drain)"
DELIVERIES = ("at-least-once", "exactly-once")
E2E_TURNS = 5  # of the jobs Canal-JSON's targets compare (TURNED): its sink's, each mode, Spark's Kafka sink's and
# both halves of its limit, the drain job's and the bare producer's; a job of a few seconds varied by a quarter
# from turn to turn
TURNED = ("canal-json",)
PYTHON_PATH = ", native-producer=off"  # the name's tail of a run on the Python path
EMBEDDED = "e2e-embedded"  # the section of the second Spark-to-Kafka table, on the embedded broker
EMBEDDED_NAME = "the embedded Tansu broker (in memory)"


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


def cached_feed(spark, path: Path):
    """The feed in ``CORES`` partitions, read once and cached, so that every job measures its writing."""
    df = spark.read.parquet(str(path)).repartition(CORES)
    df.cache().count()
    return df


def measured(name: str, rows: int, action, section: str = "e2e") -> Result:
    """A Spark job (``action``) timed, with the CPU each kind of process spent during it."""
    seconds, used = timed_with_cpu(action)
    return Result(section, name, rows, seconds, note=cpu_note(used, seconds), cpu=used)


def ticdc_job(df, rows: int, bootstrap_servers: str, protocol: str, delivery: str, registry: str | None,
              section: str = "e2e", python_path: bool = False) -> Result:
    """``format("ticdc")`` writing ``df`` in ``protocol`` and ``delivery`` to a topic of its own (``python_path``:
    with ``native-producer=off``, a ``produce()`` call per message, where ticdc-sink-native is installed)."""
    options = sink_options(bootstrap_servers, unique_topic(f"bench-{protocol}-{delivery}"), delivery, protocol,
                           registry)
    if python_path:
        options["native-producer"] = "off"
    result = measured(f"ticdc-sink {protocol}, {delivery}{PYTHON_PATH if python_path else ''}", rows,
                      lambda: df.write.format("ticdc").mode("append").options(**options).save(), section)
    delete_topic(bootstrap_servers, topic_written(options))
    return result


def baseline_job(df, rows: int, bootstrap_servers: str, shape: str, tuned: bool = True) -> Result:
    """Spark's Kafka sink writing ``df`` as ``shape``'s messages (``spark_kafka_sink.py``) to a topic made before
    and dropped after the timing."""
    with baseline_topic(bootstrap_servers, shape) as topic:
        return measured(baseline_name(shape, tuned), rows,
                        lambda: write_baseline(df, bootstrap_servers, topic, shape, TUNED if tuned else DEFAULTS))


def warm_up(spark, df, bootstrap_servers: str, shapes: list[str] = ()) -> None:
    """Every task slot starts its Python worker, each Python sink's first job imports it, and Spark's Kafka sink
    (``shapes``) loads and compiles its classes, on a 2% sample."""
    say("Spark warm-up (every task slot starts its Python worker; each Python sink's first job imports it"
        + ("; Spark's Kafka sink loads)" if shapes else ")"))
    sample = df.sample(fraction=0.02, seed=1)
    sample.write.format("ticdc").mode("append").options(
        **sink_options(bootstrap_servers, unique_topic("bench-warmup"))).save()
    spark.dataSource.register(DrainDataSource)
    with tempfile.TemporaryDirectory() as report_dir:
        sample.write.format("bench-drain").mode("append").option("report-dir", report_dir).save()
    for shape in shapes:
        with baseline_topic(bootstrap_servers, shape) as topic:
            write_baseline(sample, bootstrap_servers, topic, shape, TUNED)


def spark_jobs(spark, path: Path, rows: int, bootstrap_servers: str, protocols: list[str],
               registry: str | None, avro: AvroTarget | None, baselines: bool = False,
               turns: int = E2E_TURNS) -> list[Result]:
    """Spark's noop sink, then per protocol ``format("ticdc")`` in each delivery mode and the hand-written
    ``foreachPartition`` producer (avro: the schemas of ``avro``, under its own topic's subjects); with
    ``baselines``, Spark's Kafka sink writing the shapes the protocols are held against (``BASELINE_SHAPE``),
    and Canal-JSON's once more with the Java producer's defaults. The jobs Canal-JSON's targets compare (its sink
    jobs, its baseline, and with the baselines the drain job) run ``turns`` times in rotation (``in_turns``); the
    other jobs once."""
    df = cached_feed(spark, path)
    shapes = sorted({BASELINE_SHAPE[protocol] for protocol in protocols}) if baselines else []
    warm_up(spark, df, bootstrap_servers, shapes)
    results = []
    say("Spark noop sink (the input limit)")
    results.append(measured("Spark noop sink (input limit)", rows,
                            lambda: df.write.format("noop").mode("overwrite").save()))

    def drain_job() -> Result:
        with tempfile.TemporaryDirectory() as report_dir:
            drain = measured(DRAIN, rows, lambda: df.write.format("bench-drain").mode("append")
                             .option("report-dir", report_dir).save())
            taken, seconds = drained(Path(report_dir))
        return replace(drain, stages={"receive": seconds * 1e6 / max(taken, 1)})

    results += in_turns({DRAIN: drain_job}, turns if baselines else 1,
                        "Python sink that drops its input (what receiving the Arrow batches costs)")
    measured_shapes = set()
    for protocol in protocols:
        runs = {f"ticdc-sink {protocol}, {delivery}": functools.partial(
            ticdc_job, df, rows, bootstrap_servers, protocol, delivery, registry) for delivery in DELIVERIES}
        if protocol in TURNED and native_produce.installed():  # the path without the native package, beside it
            runs.update({f"ticdc-sink {protocol}, {delivery}{PYTHON_PATH}": functools.partial(
                ticdc_job, df, rows, bootstrap_servers, protocol, delivery, registry, python_path=True)
                for delivery in DELIVERIES})
        if protocol in shapes:
            runs[baseline_name(protocol)] = functools.partial(baseline_job, df, rows, bootstrap_servers, protocol)
            measured_shapes.add(protocol)
        results += in_turns(runs, turns if protocol in TURNED and baselines else 1, f"Spark {protocol}")
        say(f"Spark hand-written foreachPartition producer {protocol}")
        topic = unique_topic(f"bench-handwritten-{protocol}")
        create_topic(bootstrap_servers, topic)
        send = _handwritten_partition(bootstrap_servers, topic, protocol, TOPIC_PARTITIONS,
                                      replace(avro, topic=topic) if protocol == "avro" else None)
        results.append(measured(f"hand-written foreachPartition {protocol}, dict per row + "
                                f"{STANDARD_SERIALIZER[protocol]}", rows, lambda: df.foreachPartition(send)))
        delete_topic(bootstrap_servers, topic)
    for shape in shapes:
        if shape not in measured_shapes:
            say(f"Spark's Kafka sink, {shape}-shaped values")
            results.append(baseline_job(df, rows, bootstrap_servers, shape))
    if "canal-json" in shapes:
        say("Spark's Kafka sink, canal-json-shaped values, the Java producer's defaults")
        results.append(baseline_job(df, rows, bootstrap_servers, "canal-json", tuned=False))
    df.unpersist()
    return results


def sink_jobs(spark, path: Path, rows: int, bootstrap_servers: str, protocols: list[str], registry: str | None,
              section: str) -> list[Result]:
    """Only ``format("ticdc")`` per protocol in each delivery mode, once each, as ``section``'s rows."""
    df = cached_feed(spark, path)
    warm_up(spark, df, bootstrap_servers)
    results = []
    for protocol in protocols:
        for delivery in DELIVERIES:
            say(f"Spark format('ticdc') {protocol} {delivery} ({section})")
            results.append(ticdc_job(df, rows, bootstrap_servers, protocol, delivery, registry, section))
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


@dataclass
class OutputRuns:
    """What the runs that write to Kafka measured, and with what."""

    results: list[Result]
    broker: str  # every broker the runs wrote to, for the services line
    e2e_broker: str  # the broker of the Spark-to-Kafka table
    checks: list[str] = field(default_factory=list)  # Spark's Kafka sink's messages against the sink's
    kafka_sink: str | None = None  # the Maven package of Spark's Kafka sink, where it was measured


@contextlib.contextmanager
def embedded_broker():
    from ticdc_sink.embedded.broker import EmbeddedBroker

    broker = EmbeddedBroker().start()
    try:
        yield broker.bootstrap_servers
    finally:
        broker.stop()


def e2e_runs(spark, bootstrap_servers: str, args, path: Path, table: pa.Table, registry: str | None,
             avro: AvroTarget | None, baselines: bool) -> list[Result]:
    """The Spark-to-Kafka table's runs: the bare producers (the limits), one task's stages, the Spark jobs."""
    results = bare_producer_runs(bootstrap_servers, args.protocols, path, args.rows, registry,
                                 1 if args.small else E2E_TURNS, TURNED)
    for protocol in args.protocols:
        say(f"per-stage costs of one task {protocol} ({min(STAGE_ROWS, table.num_rows):,} rows)")
        results.append(task_stages(bootstrap_servers, table, protocol, registry))
    return results + spark_jobs(spark, path, args.rows, bootstrap_servers, args.protocols, registry, avro,
                                baselines, 1 if args.small else E2E_TURNS)


def embedded_runs(spark, bootstrap_servers: str, args, path: Path, registry: str | None) -> list[Result]:
    """The second table's runs, on the embedded broker: the bare producers and the sink's jobs."""
    say("the embedded broker: the bare producers and format('ticdc') again")
    results = [replace(r, section=EMBEDDED)
               for r in bare_producer_runs(bootstrap_servers, args.protocols, path, args.rows, registry)]
    return results + sink_jobs(spark, path, args.rows, bootstrap_servers, args.protocols, registry, EMBEDDED)


def with_sizes(results: list[Result], sizes: dict[str, float]) -> list[Result]:
    """The Spark-to-Kafka jobs of the sink and of Spark's Kafka sink with the megabytes of their messages' values
    (``sizes``: value bytes per row, by protocol or by baseline name)."""
    def size_of(r: Result) -> float | None:
        if r.name.startswith("ticdc-sink "):
            return sizes.get(r.name.removeprefix("ticdc-sink ").partition(",")[0])
        return sizes.get(r.name)

    return [replace(r, megabytes=size_of(r) * r.rows / 1e6) if r.section == "e2e" and size_of(r) else r
            for r in results]


def output_runs(args, path: Path, registry: str | None, avro: AvroTarget | None) -> OutputRuns:
    """The runs that write to Kafka: on real Kafka, beside Spark's Kafka sink, then the sink's jobs and the limits
    again on the embedded broker; in the smoke run (``--small`` without ``--spark-kafka-sink``) the embedded
    broker only (no Maven, no Kafka). Then the memory runs."""
    table = read_feed(path)
    memory = ("for the memory runs too" if args.bootstrap_servers else
              "for the memory runs, an embedded Tansu broker that acknowledges and drops what it receives")
    if args.small and not args.spark_kafka_sink:
        with contextlib.ExitStack() as stack:
            bootstrap_servers = args.bootstrap_servers or stack.enter_context(embedded_broker())
            name = f"Kafka at {args.bootstrap_servers}" if args.bootstrap_servers else EMBEDDED_NAME
            spark = local_spark()
            try:
                results = e2e_runs(spark, bootstrap_servers, args, path, table, registry, avro, baselines=False)
            finally:
                spark.stop()
        return OutputRuns(results + memory_runs(args, registry), f"{name}; {memory}", name)
    spark, package = kafka_connector_spark()
    try:
        shapes = sorted({BASELINE_SHAPE[protocol] for protocol in args.protocols})
        say(f"checking Spark's Kafka sink's messages ({', '.join(shapes)}-shaped) against the sink's "
            f"({CHECK_ROWS:,} rows)")
        checks, shape_sizes = check_shapes(spark, path, table, shapes)
        sizes = {protocol: value for protocol, (value, _) in sink_sizes(table, args.protocols, registry).items()}
        sizes |= {baseline_name(shape, tuned): shape_sizes[shape][0] for shape in shapes for tuned in (True, False)}
        with apache_kafka(args, "the end-to-end runs") as (bootstrap_servers, kafka):
            if bootstrap_servers is not None:
                results = e2e_runs(spark, bootstrap_servers, args, path, table, registry, avro, baselines=True)
        if bootstrap_servers is None:
            e2e = (f"{EMBEDDED_NAME}, AS REAL KAFKA DID NOT START ({kafka}): Spark's Kafka sink and the sink "
                   "measured on it, not on Kafka")
            with embedded_broker() as bootstrap_servers:
                results = e2e_runs(spark, bootstrap_servers, args, path, table, registry, avro, baselines=True)
            name = f"{e2e}; {memory}"
        else:
            e2e = kafka
            with embedded_broker() as bootstrap_servers:
                results += embedded_runs(spark, bootstrap_servers, args, path, registry)
            name = f"{kafka}; {EMBEDDED_NAME} for the second Spark-to-Kafka table; {memory}"
    finally:
        spark.stop()
    del table
    return OutputRuns(with_sizes(results, sizes) + memory_runs(args, registry), name, e2e, checks, package)
