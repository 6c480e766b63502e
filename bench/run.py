"""The benchmark harness: the sink against what users would otherwise run, on the same data, in one run.

    python bench/run.py                 # the full run (1M-row feed, 5M-row partition for memory)
    python bench/run.py --small         # seconds: the CI smoke run, no verdicts about speed
    python bench/run.py --encode-only --protocols avro   # one protocol's encoders only, no broker or Spark
    python bench/run.py --encode-only --protocols debezium --rows 100000
    python bench/run.py --read-only     # only the reads: rewrites that section of bench/RESULTS.md, keeps the rest

Measures, on the standard change feed (``feed.py``):
  - encode-only rows/s and MB/s of every implemented protocol's encoder, and of
    the hand-written per-row encoder of the same messages (dict + json.dumps /
    orjson.dumps, or confluent-kafka's AvroSerializer, ``handwritten.py``; the
    Avro and Debezium ones are first checked to write the sink's bytes);
  - the bare output limit per protocol: its pre-encoded messages, in the
    partitions the sink gives them, produced by bare confluent-kafka loops
    with the fastest of the produce calls (compared first), in one process and
    in one per core;
  - the CPU per row of each stage of one task (receive, input contract,
    dispatch, encode, produce), by the task's own clock;
  - Spark jobs over the feed, per protocol: ``format("ticdc")`` in each delivery
    mode and the hand-written ``foreachPartition`` producer; and Spark's
    ``noop`` sink (the input limit);
  - per protocol, the peak RSS of the Python worker writing one large partition
    (to a broker that drops what it receives, unless ``--bootstrap-servers``);
  - reading: per protocol, ``spark.read.format("ticdc")`` over a topic the sink
    wrote, its schema inferred and given; on Canal-JSON, beside it in one
    session, Spark's Kafka source with ``from_json`` and with a per-row Python
    UDF; the worker's peak RSS reading one large partition; the reader outside
    Spark, under cProfile.  Against real Kafka (``integration/kafka_server.py``,
    unless ``--bootstrap-servers``), with Spark's Kafka source from Maven Central:
    so ``--small`` leaves the reads out (the CI smoke run starts neither) unless
    with ``--read-only``.
Results go to ``bench/RESULTS.md`` with the ratios, the targets, the machine and
the command.  The avro protocol needs a Schema Registry: ``--schema-registry URL``,
else the package's in-process TEST DOUBLE (``ticdc_sink/embedded/schema_registry.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import hashlib
import importlib.util
import io
import json
import multiprocessing
import os
import platform
import pstats
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from drain import DrainDataSource, drained  # noqa: E402
from feed import BENCHED, sink_options, spark_schema, topic_written, write_feed  # noqa: E402
from handwritten import HANDWRITTEN, STANDARD_SERIALIZER, AvroTarget, serializer_choices  # noqa: E402
from limits import PRODUCE_CALLS, produce_all  # noqa: E402
from read_baselines import canal_json_by_from_json, canal_json_by_python_udf  # noqa: E402

from ticdc_sink import order_changes
from ticdc_sink.changes.contract import ChangeBatchBuilder, InputLayout
from ticdc_sink.changes.dispatch import PartitionDispatcher, Routing, TopicRouter, route
from ticdc_sink.codec import encoder_for
from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.embedded.schema_registry import SchemaRegistryDouble
from ticdc_sink.kafka.producer import python_bytes
from ticdc_sink.redact import mask_url
from ticdc_sink.sink.costs import LIBRDKAFKA, STAGES
from ticdc_sink.sink.task import WritePlan

CORES = os.cpu_count() or 1
ENCODE_BATCH_ROWS = 10_000  # an encode-only run's Arrow batches
# Each protocol's encode-only vs its hand-written encode step (STANDARD_SERIALIZER): 10x for the JSON protocols,
# 5x where the hand-written one has a compiled serialiser (Avro's AvroSerializer, Simple's fastavro).
ENCODE_TARGETS = {"canal-json": 10.0, "open-protocol": 10.0, "debezium": 10.0, "simple": 10.0, "avro": 5.0,
                  "simple-avro": 5.0}
# End-to-end at-least-once vs the bare producer limit, where a target is set.
OUTPUT_TARGETS = {"canal-json": 0.8, "open-protocol": 0.8}
TRANSACTIONS_TARGET = 0.9  # exactly-once vs at-least-once
RSS_TARGET_MB = 500
TOPIC_PARTITIONS = 3  # of the topics the bench creates itself
TITLES = {"canal-json": "Canal-JSON", "open-protocol": "Open Protocol", "avro": "Avro", "debezium": "Debezium",
          "simple": "Simple (JSON)", "simple-avro": "Simple (Avro)"}
STAGE_ROWS = 300_000  # per protocol, of the per-stage runs: the costs per row settle well before the feed's end
BARE = "bare producer"
WORKER = "worker outside the task"
DRAIN = "Python sink that drops its input (bench-drain)"
RSS = "peak worker RSS"
CHECK_ROWS = 5_000  # rows whose hand-written Avro and Debezium messages must be the sink's, byte for byte
ENCODE_TOPIC = "bench"  # the topic (avro: its stem) of the encode-only runs, which write nowhere
# What the Spark workers import: the hand-written job's encoders, the drain and the UDF read baseline.
WORKER_MODULES = ("feed.py", "handwritten.py", "handwritten_values.py", "handwritten_json.py", "handwritten_avro.py",
                  "handwritten_simple.py", "drain.py", "read_baselines.py")
KAFKA_SERVER = BENCH.parent / "integration" / "kafka_server.py"
KAFKA_SOURCE = "org.apache.spark:spark-sql-kafka-0-10_2.13"  # Spark's Kafka source, at pyspark's version if served
KAFKA_SOURCE_SERVED = "4.2.0"  # else the newest Maven Central serves (in 2026-11: none for pyspark 4.3)
READER = "ticdc reader"
FROM_JSON = "Spark Kafka source + from_json, hand-written schema"
PYTHON_UDF = "Spark Kafka source + Python UDF, json.loads and a tuple per row"
READ_TARGETS = {FROM_JSON: 2.0, PYTHON_UDF: 5.0}  # the reader (schema inferred) vs each, on Canal-JSON
READ_TURNS = 3
READ_RSS_PROTOCOL = "canal-json"
READ_PROFILE_MESSAGES = 50_000  # of a partition, read by the reader outside Spark, timed and under cProfile
FLAT_GROWTH = 0.10  # the reader's peak RSS is flat when 5x the rows grow it by less
READ_SECTION_START = "<!-- read: bench/run.py --read-only rewrites this section -->"
READ_SECTION_END = "<!-- /read -->"


def title(protocol: str) -> str:
    return TITLES.get(protocol, protocol)


def say(text: str) -> None:
    print(f"[bench] {text}", flush=True)


@dataclass
class Result:
    section: str
    name: str
    rows: int
    seconds: float
    megabytes: float | None = None
    note: str = ""
    cpu: dict[str, float] | None = None  # CPU seconds per kind of process (Spark jobs)
    stages: dict[str, float] | None = None  # microseconds per row per stage of a task (ticdc_sink.costs)

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds else 0.0


def read_feed(path: Path) -> pa.Table:
    return pq.read_table(path)


# ---------------------------------------------------------------------------
# Encode-only


def one_partition(changes, topic: str) -> Routing:
    """Every row to partition 0 of one topic: the encoder's work without the dispatcher's."""
    zeros = np.zeros(changes.num_rows, dtype=np.int32)
    return Routing([topic], zeros, zeros, {topic: 1})


def encode_options(protocol: str, registry: str | None) -> dict[str, str]:
    """The options of the encode-only runs (no broker is reached; avro registers its schemas)."""
    return sink_options("127.0.0.1:1", ENCODE_TOPIC, protocol=protocol, schema_registry=registry)


def encode_sink(table: pa.Table, protocol: str, registry: str | None = None,
                profile: cProfile.Profile | None = None, extra: dict[str, str] | None = None,
                name: str | None = None) -> Result:
    """The sink's encode-only run of ``table`` (``extra``: more options, and the row's ``name`` says which)."""
    options = {**encode_options(protocol, registry), **(extra or {})}
    config, topic = parse_options(options), topic_written(options)
    layout = spark_layout(config)

    def fresh_encode():
        builder, encoder = ChangeBatchBuilder(layout, config), encoder_for(config, layout.table)

        def encode(batch: pa.RecordBatch) -> int:
            changes, _ = builder.build(batch)
            return int(encoder.encode_rows(changes, one_partition(changes, topic)).byte_lengths().sum())

        return encode

    batches = table.to_batches(max_chunksize=ENCODE_BATCH_ROWS)
    fresh_encode()(batches[0])  # a warm-up by an encoder of its own: first calls import and look up kernels
    encode = fresh_encode()
    if profile:
        profile.enable()
    started = time.perf_counter()
    size = sum(encode(batch) for batch in batches)
    elapsed = time.perf_counter() - started
    if profile:
        profile.disable()
    return Result("encode", name or f"ticdc-sink {protocol}", table.num_rows, elapsed, size / 1e6)


def encode_handwritten(table: pa.Table, protocol: str, name: str, serializer) -> Result:
    rows = table.to_pylist()  # the rows a foreachPartition loop gets, made before timing
    started = time.perf_counter()
    size = sum(len(value or b"") + len(key or b"") for _, key, value in HANDWRITTEN[protocol](rows, serializer))
    elapsed = time.perf_counter() - started
    return Result("encode", f"hand-written {protocol}, dict per row + {name}", table.num_rows, elapsed, size / 1e6)


def sink_messages(table: pa.Table, options: dict[str, str]) -> list[tuple[bytes | None, bytes | None]]:
    """The sink's ``(key, value)`` messages of the rows, as encode-only makes them, in Python bytes."""
    return [(key, value) for _, key, value in _encoded(table, options, one_partition)]


def routed_messages(table: pa.Table, options: dict[str, str]) -> list[tuple[int, bytes | None, bytes | None]]:
    """The sink's ``(partition, key, value)`` messages of the rows, each in the partition the sink's dispatcher
    gives it on a topic of ``TOPIC_PARTITIONS`` partitions."""
    config = parse_options(options)
    router, dispatcher = TopicRouter(config), PartitionDispatcher(config, spark_layout(config).table)
    return _encoded(table, options, lambda changes, _topic: route(changes, router, dispatcher,
                                                                  lambda _name: TOPIC_PARTITIONS))


def spark_layout(config) -> InputLayout:
    return InputLayout.from_spark_schema(spark_schema(), config)


def _encoded(table: pa.Table, options: dict[str, str], routing_of) -> list[tuple[int, bytes | None, bytes | None]]:
    config = parse_options(options)
    layout = spark_layout(config)
    builder = ChangeBatchBuilder(layout, config)
    encoder = encoder_for(config, layout.table)
    messages = []
    for batch in table.to_batches(max_chunksize=10_000):
        changes, _ = builder.build(batch)
        encoded = encoder.encode_rows(changes, routing_of(changes, topic_written(options)))
        keys = python_bytes(encoded.keys) if encoded.keys is not None else [None] * len(encoded)
        messages += zip(encoded.partitions.tolist(), keys, python_bytes(encoded.values))
    return messages


# ---------------------------------------------------------------------------
# The hand-written Avro encoder writes the sink's bytes


def avro_target(table: pa.Table, registry: str) -> AvroTarget:
    """The encode-only topic's subjects and the schema texts the sink registers there, read back from the
    registry after the sink has encoded a row, so that the hand-written serialisers register the very same."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    options = encode_options("avro", registry)
    topic = topic_written(options)
    sink_messages(table.slice(0, 1), options)
    client = SchemaRegistryClient({"url": registry})
    key, value = (client.get_latest_version(f"{topic}-{part}").schema.schema_str for part in ("key", "value"))
    return AvroTarget(registry, topic, key, value)


def _same_messages(what: str, sink: list, hand: list) -> None:
    """Fails unless the hand-written ``(key, value)`` messages are the sink's, naming the first difference."""
    different = [i for i, (ours, theirs) in enumerate(zip(sink, hand)) if ours != theirs]
    if len(sink) != len(hand) or different:
        row = different[0] if different else min(len(sink), len(hand))
        raise RuntimeError(f"the {what} are not the sink's: {len(hand)} messages for the sink's {len(sink)}, "
                           f"{len(different)} differ (row {row}: sink {sink[row:row + 1]!r}, "
                           f"hand-written {hand[row:row + 1]!r})")


def _op_counts(sample: pa.Table) -> str:
    ops = sample.column("_op").value_counts().to_pylist()
    return ", ".join(f"{c['counts']:,} {c['values'].lower()}s" for c in ops)


def check_avro_baseline(table: pa.Table, target: AvroTarget, rows: int = CHECK_ROWS) -> str:
    """Fails unless the hand-written AvroSerializer's keys and values equal the sink's on the feed's first
    ``rows`` rows (inserts, updates, deletes' tombstones): then the two encode-only speeds compare like for like."""
    sample = table.slice(0, rows)
    sink = sink_messages(sample, encode_options("avro", target.registry_url))
    serializer = serializer_choices("avro", target)[STANDARD_SERIALIZER["avro"]]
    hand = [(key, value) for _, key, value in HANDWRITTEN["avro"](sample.to_pylist(), serializer)]
    _same_messages("hand-written Avro messages", sink, hand)
    return (f"The hand-written Avro messages (AvroSerializer) equal the sink's byte for byte, keys and values, on "
            f"the feed's first {sample.num_rows:,} rows ({_op_counts(sample)}; a delete's value is a tombstone).")


# The payload's own ts_ms, the encoding clock: the first ts_ms followed by transaction (source.ts_ms, the commit
# time, is followed by snapshot).
_ENCODING_CLOCK = re.compile(rb'"ts_ms":-?[0-9]+,"transaction":')


def without_encoding_clock(messages: list[tuple[bytes | None, bytes | None]]) -> list:
    """Debezium messages with the payload's ``ts_ms`` (the wall clock when encoded) set to 0."""
    return [(key, value if value is None else _ENCODING_CLOCK.sub(b'"ts_ms":0,"transaction":', value, count=1))
            for key, value in messages]


def check_debezium_baseline(table: pa.Table, rows: int = CHECK_ROWS) -> str:
    """Fails unless each hand-written Debezium encoder's keys and values equal the sink's on the feed's first
    ``rows`` rows (inserts, updates, deletes), schemas included, the payload's encoding clock aside (neither
    has a fixed clock): then the encode-only speeds compare like for like."""
    sample = table.slice(0, rows)
    sink = without_encoding_clock(sink_messages(sample, encode_options("debezium", None)))
    choices = serializer_choices("debezium")
    for name, serializer in choices.items():
        hand = [(key, value) for _, key, value in HANDWRITTEN["debezium"](sample.to_pylist(), serializer)]
        _same_messages(f"hand-written Debezium messages ({name})", sink, without_encoding_clock(hand))
    return (f"The hand-written Debezium messages ({', '.join(choices)}) equal the sink's byte for byte, keys and "
            f"values with their schemas, on the feed's first {sample.num_rows:,} rows ({_op_counts(sample)}), "
            "the payload's ts_ms (the clock when encoded, not source.ts_ms) set to 0 in both.")


_BUILD_TS = re.compile(rb'"buildTs":[0-9]+,')


def _without_build_ts(protocol: str, messages: list[tuple[bytes | None, bytes | None]]) -> list:
    """Simple messages with the encoding clock (``buildTs``) set to 0: JSON's text, Avro's decoded fields
    and byte length (the clock's varint has the same width in both)."""
    if protocol == "simple":
        return [(key, _BUILD_TS.sub(b'"buildTs":0,', value, count=1)) for key, value in messages]
    from ticdc_sink.codec.simple.avro_wire import SimpleAvro

    return [(key, len(value), {**SimpleAvro.read(value), "buildTs": 0}) for key, value in messages]


def check_simple_baseline(table: pa.Table, protocol: str, rows: int = CHECK_ROWS) -> str:
    """Fails unless each hand-written Simple encoder's messages are the sink's on the feed's first ``rows``
    rows, the encoding clock aside: then the encode-only speeds compare like for like."""
    sample = table.slice(0, rows)
    sink = _without_build_ts(protocol, sink_messages(sample, encode_options(protocol, None)))
    choices = serializer_choices(protocol)
    for name, serializer in choices.items():
        hand = [(key, value) for _, key, value in HANDWRITTEN[protocol](sample.to_pylist(), serializer)]
        _same_messages(f"hand-written {title(protocol)} messages ({name})", sink, _without_build_ts(protocol, hand))
    same = "byte for byte" if protocol == "simple" else "field for field, and in length"
    return (f"The hand-written {title(protocol)} messages ({', '.join(choices)}) equal the sink's {same} on the "
            f"feed's first {sample.num_rows:,} rows ({_op_counts(sample)}), buildTs (the encoding clock) aside.")


# ---------------------------------------------------------------------------
# The bare output limit


def _bare_producer_worker(args) -> tuple[float, float]:
    """The seconds of producing one share of the messages, and the CPU the process (librdkafka's threads
    included) spent on it."""
    options, path, part, parts, call = args
    table = read_feed(path)
    rows = table.num_rows
    mine = table.slice(part * rows // parts, (part + 1) * rows // parts - part * rows // parts)
    messages = routed_messages(mine, options)
    cpu = time.process_time()
    seconds = produce_all({"bootstrap.servers": options["kafka.bootstrap.servers"]}, topic_written(options),
                          messages, call)
    return seconds, time.process_time() - cpu


def processes_text(processes: int) -> str:
    """How a bare producer run's name ends: its process count."""
    return f"{processes} process{'es' * (processes > 1)}"


def _broker_cpu() -> float:
    return sum(seconds for kind, seconds in _cpu_by_process().values() if kind == "broker")


def bare_producer(bootstrap_servers: str, protocol: str, path: Path, rows: int, registry: str | None,
                  call: str, processes: int) -> Result:
    """The protocol's messages (the sink's, in the partitions its dispatcher gives them), encoded before timing,
    produced by bare loops making ``call`` (``limits.PRODUCE_CALLS``), in ``processes`` processes, each
    with its share of the rows, to a topic of ``TOPIC_PARTITIONS`` partitions."""
    options = sink_options(bootstrap_servers, f"bench-bare-{protocol}-{uuid.uuid4().hex[:8]}", protocol=protocol,
                           schema_registry=registry)
    _create_topic(bootstrap_servers, topic_written(options))
    context = multiprocessing.get_context("spawn")
    with context.Pool(processes) as pool:
        started, broker_cpu = time.perf_counter(), _broker_cpu()  # the broker idles while the messages are encoded
        shares = pool.map(_bare_producer_worker, [(options, path, p, processes, call) for p in range(processes)])
        wall, broker_cpu = time.perf_counter() - started, _broker_cpu() - broker_cpu
    _delete_topic(bootstrap_servers, topic_written(options))
    used = {"Python": sum(cpu for _, cpu in shares), "JVM": 0.0, "broker": broker_cpu}
    return Result("e2e", f"{BARE} {protocol}, {PRODUCE_CALLS[call]}, {processes_text(processes)}",
                  rows, max(seconds for seconds, _ in shares), cpu=used,
                  note=f"produce time only (the whole step, encoding included, took {wall:.1f} s); CPU s while "
                       f"producing: Python and librdkafka {used['Python']:.1f}, broker {broker_cpu:.1f}")


def bare_producer_runs(bootstrap_servers: str, protocols: list[str], path: Path, rows: int,
                       registry: str | None) -> list[Result]:
    """The produce calls compared in one process on Canal-JSON's messages (one per row), or the first protocol's;
    then with the fastest call, every protocol in one process and in one per core. The limit is the faster."""
    first = "canal-json" if "canal-json" in protocols else protocols[0]
    say(f"bare producer: the produce calls compared ({first}, one process)")
    compared = {call: bare_producer(bootstrap_servers, first, path, rows, registry, call, 1)
                for call in PRODUCE_CALLS}
    best = min(compared, key=lambda call: compared[call].seconds)
    results = list(compared.values())
    for protocol in protocols:
        for processes in sorted({1, CORES}):
            if protocol == first and processes == 1:
                continue  # measured among the calls
            say(f"bare producer limit {protocol}, {processes} process(es)")
            results.append(bare_producer(bootstrap_servers, protocol, path, rows, registry, best, processes))
    return results


def _create_topic(bootstrap_servers: str, topic: str, partitions: int = TOPIC_PARTITIONS) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap_servers})  # alive until the future resolves
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def _delete_topic(bootstrap_servers: str, topic: str) -> None:
    """Drop a measured step's topic: the embedded broker keeps messages in memory, and Debezium's (about
    5 KB each with their schemas) would otherwise fill it over the steps and slow the later ones."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    admin.delete_topics([topic])[topic].result(30)


# ---------------------------------------------------------------------------
# Per-stage costs of one task


def task_stages(bootstrap_servers: str, table: pa.Table, protocol: str, registry: str | None) -> Result:
    """One task's pipeline (``WritePlan.write``, at-least-once, to the broker) over the feed's first rows in
    Spark's Arrow batches of 10,000, in this process: its CPU per stage, by the task's own clock."""
    options = sink_options(bootstrap_servers, f"bench-stages-{protocol}-{uuid.uuid4().hex[:8]}", "at-least-once",
                           protocol, registry)
    plan = WritePlan.for_schema(parse_options(options), spark_schema())
    sample = table.slice(0, STAGE_ROWS)
    started = time.perf_counter()
    report = plan.write(sample.to_batches(max_chunksize=10_000))
    seconds = time.perf_counter() - started
    _delete_topic(bootstrap_servers, topic_written(options))
    return Result("stages", protocol, report.rows, seconds, stages=report.costs.per_row(report.rows))


# ---------------------------------------------------------------------------
# Spark jobs


def local_spark(extra: dict[str, str] | None = None):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(f"local[{CORES}]").appName("ticdc-sink-bench")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC").config("spark.driver.memory", "4g"))
    for key, value in (extra or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    for module in WORKER_MODULES:
        spark.sparkContext.addPyFile(str(BENCH / module))
    return spark


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


_PROCESS_KINDS = ((b"tansu", "broker"), (b"kafka.Kafka", "broker"), (b"org.apache.spark", "JVM"),
                  (b"pyspark.daemon", "Python"), (b"multiprocessing", "Python"))


def own_processes() -> set[str]:
    """The pids of this process and its descendants (Spark's JVM and workers, the brokers it started): another
    user's Spark or Kafka on the machine is not measured."""
    parents = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                parents[pid] = f.read().rsplit(")", 1)[1].split()[1]
        except OSError:
            continue
    own, found = set(), {str(os.getpid())}
    while found:
        own |= found
        found = {pid for pid, parent in parents.items() if parent in found} - own
    return own


def _cpu_by_process() -> dict[tuple[str, str], tuple[str, float]]:
    """(pid, start time) -> (kind, CPU seconds of its own so far) for the live processes of each kind."""
    tick = os.sysconf("SC_CLK_TCK")
    found = {}
    for pid in own_processes():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read()
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        kind = next((name for marker, name in _PROCESS_KINDS if marker in command), None)
        if kind:
            found[(pid, fields[19])] = (kind, (int(fields[11]) + int(fields[12])) / tick)  # utime + stime
    return found


class CpuMeter:
    """CPU seconds per kind of process (broker, Spark JVM, Python workers) used during a block.

    Every process is sampled each half second, so one that exits during the block (pyspark's daemon
    ends idle workers) counts up to its last sample instead of vanishing from the sum.
    """

    def __enter__(self) -> CpuMeter:
        self._first = _cpu_by_process()
        self._last = dict(self._first)
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.5):
            self._last.update(_cpu_by_process())

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._sampler.join()
        self._last.update(_cpu_by_process())

    def used(self) -> dict[str, float]:
        totals = dict.fromkeys(("Python", "JVM", "broker"), 0.0)
        for process, (kind, seconds) in self._last.items():
            totals[kind] += seconds - self._first.get(process, (kind, 0.0))[1]
        return totals


def cpu_note(used: dict[str, float], wall: float) -> str:
    total = sum(used.values())
    return (f"CPU s: Python {used['Python']:.1f}, JVM {used['JVM']:.1f}, broker {used['broker']:.1f} "
            f"= {total / wall / CORES * 100:.0f}% of {CORES} cores")


def timed_with_cpu(action) -> tuple[float, dict[str, float]]:
    with CpuMeter() as meter:
        seconds = timed(action)
    return seconds, meter.used()


def spark_jobs(spark, path: Path, rows: int, bootstrap_servers: str, protocols: list[str],
               registry: str | None, avro: AvroTarget | None) -> list[Result]:
    """Spark's noop sink, then per protocol ``format("ticdc")`` in each delivery mode and the hand-written
    ``foreachPartition`` producer (avro: the schemas of ``avro``, under its own topic's subjects)."""
    df = spark.read.parquet(str(path)).repartition(CORES)
    df.cache().count()  # the input is read once, so that every job measures its writing
    results = []

    def ticdc(protocol: str, delivery: str) -> Result:
        options = sink_options(bootstrap_servers, f"bench-{protocol}-{delivery}-{uuid.uuid4().hex[:8]}", delivery,
                               protocol, registry)
        result = measured(f"ticdc-sink {protocol}, {delivery}",
                          lambda: df.write.format("ticdc").mode("append").options(**options).save())
        _delete_topic(bootstrap_servers, topic_written(options))
        return result

    say("Spark warm-up (every task slot starts its Python worker; each Python sink's first job imports it)")
    sample = df.sample(fraction=0.02, seed=1)
    sample.write.format("ticdc").mode("append").options(
        **sink_options(bootstrap_servers, f"bench-warmup-{uuid.uuid4().hex[:8]}")).save()
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
        topic = f"bench-handwritten-{protocol}-{uuid.uuid4().hex[:8]}"
        _create_topic(bootstrap_servers, topic)
        send = _handwritten_partition(bootstrap_servers, topic, protocol, TOPIC_PARTITIONS,
                                      replace(avro, topic=topic) if protocol == "avro" else None)
        results.append(measured(f"hand-written foreachPartition {protocol}, dict per row + "
                                f"{STANDARD_SERIALIZER[protocol]}", lambda: df.foreachPartition(send)))
        _delete_topic(bootstrap_servers, topic)
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


# ---------------------------------------------------------------------------
# Memory of the Python worker


class WorkerMemory:
    """Samples the RSS of Spark's Python workers (processes of ``pyspark.daemon``) that this process started."""

    def __init__(self, interval: float = 0.2):
        self.interval, self.peak_kb = interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for pid in own_processes():
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        if b"pyspark.daemon" not in f.read():
                            continue
                    with open(f"/proc/{pid}/status") as f:
                        for line in f:
                            if line.startswith("VmHWM:"):
                                self.peak_kb = max(self.peak_kb, int(line.split()[1]))
                except OSError:
                    continue
            self._stop.wait(self.interval)

    def __enter__(self) -> "WorkerMemory":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def worker_rss(path: Path, rows: int, bootstrap_servers: str, protocol: str, registry: str | None) -> Result:
    """One partition of ``rows`` changes in ``protocol`` through a fresh Spark session; the worker's peak RSS."""
    spark = local_spark({"spark.python.worker.reuse": "true"})
    try:
        df = spark.read.parquet(str(path)).coalesce(1)
        options = sink_options(bootstrap_servers, f"bench-rss-{protocol}-{uuid.uuid4().hex[:8]}", "at-least-once",
                               protocol, registry)
        with WorkerMemory() as memory:
            seconds = timed(lambda: df.write.format("ticdc").mode("append").options(**options).save())
        return Result("memory", f"{RSS} {protocol}, one partition of {rows:,} rows", rows, seconds,
                      note=f"{memory.peak_kb / 1024:.0f} MB")
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


# ---------------------------------------------------------------------------
# Reading TiCDC topics into Spark


@dataclass
class ReadRuns:
    """What the read section measured, and with what."""

    results: list[Result]
    broker: str
    kafka_source: str  # the Maven package of Spark's Kafka source
    outside_spark: dict[str, tuple[str, str]]  # per protocol: the reader's speed in this process, and its profile
    revision: str  # of the reader when the reads began (reader_revision)


@contextlib.contextmanager
def read_broker(args):
    """``(bootstrap servers, description, read settings)`` of the broker the reads run against: --bootstrap-servers,
    else real Apache Kafka (``integration/kafka_server.py``), else the embedded broker, a fallback only: its high
    watermarks are wrong, which the reader confirms by reading past them and Spark's Kafka source does not."""
    if args.bootstrap_servers:
        yield args.bootstrap_servers, f"Kafka at {args.bootstrap_servers} (--bootstrap-servers)", {}
        return
    kafka_server = module_at(KAFKA_SERVER)
    try:
        cluster, failure = kafka_server.KafkaCluster().start(), None
    except kafka_server.KafkaServerError as e:
        say(f"real Kafka did not start ({e}): reading from the embedded broker instead")
        cluster, failure = None, e
    if cluster is None:
        from ticdc_sink.embedded.broker import EmbeddedBroker

        with EmbeddedBroker() as broker:
            yield (broker.bootstrap_servers, f"the embedded Tansu broker, as real Kafka did not start ({failure}); "
                   "its high watermarks are wrong, which Spark's Kafka source may trip over",
                   {"kafka.isolation.level": "read_uncommitted"})
        return
    try:
        yield (cluster.bootstrap_servers,
               f"Apache Kafka {kafka_server.KAFKA_VERSION}, one node on loopback (`integration/kafka_server.py`)", {})
    finally:
        cluster.stop()


def kafka_source_spark():
    """A session with Spark's Kafka source, and its Maven package: of the running pyspark's version, else the newest
    Maven Central serves.  Packages are fixed when the JVM starts: this must be the process's first session."""
    import pyspark
    from pyspark.errors import PySparkRuntimeError

    for version in dict.fromkeys((pyspark.__version__, KAFKA_SOURCE_SERVED)):
        package = f"{KAFKA_SOURCE}:{version}"
        try:
            # Spark has slf4j-api already, and Ivy fails on the local Maven cache's copy (its pom without its jar).
            return local_spark({"spark.jars.packages": package, "spark.jars.excludes": "org.slf4j:slf4j-api"}), package
        except PySparkRuntimeError:
            say(f"{package} could not be fetched")
    raise RuntimeError(f"Spark's Kafka source ({KAFKA_SOURCE}) could not be fetched from Maven Central")


def write_read_topic(spark, path: Path, bootstrap_servers: str, protocol: str, registry: str | None,
                     partitions: int) -> dict[str, str]:
    """The feed written by the sink to a topic of its own as TiCDC writes one: with the TiDB extension (commit ts
    and ops), each partition in commit order (``order_changes``), its watermark last. The write's options."""
    options = {**sink_options(bootstrap_servers, f"bench-read-{protocol}-{uuid.uuid4().hex[:8]}", protocol=protocol,
                              schema_registry=registry),
               "enable-tidb-extension": "true",
               "partition-num": str(partitions)}  # order_changes's count where the topic is an expression (avro)
    _create_topic(bootstrap_servers, topic_written(options), partitions)
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
        return replace(result, note=f"{memory.peak_kb / 1024:.0f} MB")
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
    outside, revision = {}, reader_revision()
    with read_broker(args) as (bootstrap_servers, broker_name, settings):
        spark, package = kafka_source_spark()
        try:
            results = []
            for protocol in args.protocols:
                say(f"read {protocol}: the feed written to a topic of {CORES} partitions")
                options = read_options(write_read_topic(spark, path, bootstrap_servers, protocol, registry, CORES),
                                       settings)
                results += protocol_reads(spark, options, protocol, args.rows, bootstrap_servers, turns)
                say(f"read {protocol}: the reader outside Spark, and under cProfile")
                outside[protocol] = outside_spark(options, READ_PROFILE_MESSAGES)
                _delete_topic(bootstrap_servers, options["topic"])
            say(f"read memory: {args.rss_rows:,} rows of {READ_RSS_PROTOCOL} written to one partition")
            big = write_feed(args.data_dir / f"feed-{args.rss_rows}.parquet", args.rss_rows)
            one = read_options(write_read_topic(spark, big, bootstrap_servers, READ_RSS_PROTOCOL, None, 1), settings)
        finally:
            spark.stop()
        for rows in (args.rss_rows // 5, args.rss_rows):
            say(f"read memory: the first {rows:,} rows of the partition")
            results.append(reader_rss(one, rows))
            check_rows(results[-1:], rows)
        _delete_topic(bootstrap_servers, one["topic"])
    return ReadRuns(results, broker_name, package, outside, revision)


# ---------------------------------------------------------------------------
# Report


def command_text() -> str:
    return " ".join(["python", "bench/run.py", *sys.argv[1:]])


def machine() -> str:
    import pyspark

    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    import confluent_kafka

    return (f"{CORES} cores ({cpu}), {memory:.0f} GiB; Python {platform.python_version()}, "
            f"pyspark {pyspark.__version__}, pyarrow {pa.__version__}, "
            f"confluent-kafka {confluent_kafka.version()[0]} (librdkafka {confluent_kafka.libversion()[0]})")


def verdict(value: float, target: float) -> str:
    if value >= target:
        return f"met ({value:.2f} >= {target:g})"
    return f"missed by {(1 - value / target) * 100:.0f}% ({value:.2f} < {target:g})"


def profile_shares(stats: pstats.Stats) -> str:
    """The encoder's time by concern, from its profile (cumulative seconds of the entry points)."""
    concerns = {
        "JSON columns as TiDB's JSON text (tidb_json.tidb_json_column)": "tidb_json_column",
        "input contract and canonical values (ChangeBatchBuilder.build, JSON included)": "build",
        "rendering and assembling messages (Encoder.encode_rows)": "encode_rows",
        "  of which Go-quoted binary strings (json_text.go_quoted_fragments)": "go_quoted_fragments",
        "  of which framing events per partition (open_protocol.pack_events)": "pack_events",
        "  of which Avro encodings of the columns (avro.column_binary)": "column_binary",
        "  of which joining fragments into records (avro._concat)": "_concat",
        "  of which Debezium column values, new and old rows (debezium_types.value_fragments)": "value_fragments",
        "  of which Debezium op and old rows, their values included (debezium._op_and_old_rows)": "_op_and_old_rows",
        "  of which Simple column values, new and old rows (simple_json/simple_avro column_fragments)":
            "column_fragments",
    }
    total = stats.total_tt or 1.0
    lines = [f"Encoder time {total:.2f} s (under the profiler), of which:"]
    for label, function in concerns.items():
        seconds = sum(entry[3] for (_, _, name), entry in stats.stats.items() if name == function)
        if seconds or not label.startswith(" "):
            lines.append(f"  {seconds / total * 100:5.1f}%  {label}")
    return "\n".join(lines)


def encoder_profile(table: pa.Table, protocol: str, registry: str | None) -> str:
    """cProfile of a run of its own (the profiler slows the encoder down), by cumulative time and by concern."""
    profile = cProfile.Profile()
    encode_sink(table, protocol, registry, profile)
    return profile_text(profile, profile_shares)


def profile_text(profile: cProfile.Profile, shares: Callable[[pstats.Stats], str]) -> str:
    """A profile's top entries by cumulative time (the bench's own calls aside, paths from the repository's root),
    then its time by concern (``shares``)."""
    stream = io.StringIO()
    stats = pstats.Stats(profile, stream=stream)
    stats.sort_stats("cumulative").print_stats(r"^(?!.*/bench/)", 14)
    lines = (line.replace(f"{BENCH.parent}/", "") for line in stream.getvalue().splitlines()[3:])
    return "\n".join(line for line in lines if line.strip() and "List reduced" not in line) + "\n\n" + shares(stats)


def find_result(results: list[Result], section: str, name: str, exact: bool = True) -> Result | None:
    """The first result of ``section`` named ``name`` (or, not ``exact``, whose name starts with it)."""
    return next((r for r in results if r.section == section and (r.name == name if exact else
                                                                  r.name.startswith(name))), None)


def bare_limit(results: list[Result], protocol: str) -> Result | None:
    """The fastest bare producer run of ``protocol``: the output limit."""
    return max((r for r in results if r.section == "e2e" and r.name.startswith(f"{BARE} {protocol},")),
               key=lambda r: r.rows_per_second, default=None)


def report(results: list[Result], args, profiles: dict[str, str], services: str, checks: list[str]) -> str:
    def find(section: str, name: str, exact: bool = True) -> Result | None:
        return find_result(results, section, name, exact)

    def target(value: float, goal: float) -> str:
        return "" if args.small else verdict(value, goal)

    lines = [
        "# Benchmark results",
        "",
        f"Produced by `{command_text()}` on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "",
        f"Machine: {machine()}. {services}",
        "",
        f"Feed: {args.rows:,} row changes of one 14-column table (`bench/feed.py`: every integer width, "
        "BIGINT UNSIGNED, DECIMAL, DOUBLE, VARCHAR, TEXT, VARBINARY, DATE, DATETIME(3), TIMESTAMP(6), JSON, "
        "10% NULLs; 80% inserts, 15% updates with old values, 5% deletes). Avro with the TiDB extension "
        "(`_tidb_op`, `_tidb_commit_ts`, `_tidb_commit_physical_time`), Debezium too (`tidb_type`, the source "
        "schema's `commit_ts` and `cluster_id`, watermarks).",
        "",
        *[line for check in checks for line in (check, "")],
    ]
    for section, title_text in (("encode", "Encode only (one core)"), ("e2e", f"Spark to Kafka (local[{CORES}])"),
                                ("memory", "Memory")):
        chosen = [r for r in results if r.section == section]
        if not chosen:
            continue
        lines += [f"## {title_text}", "", "| what | rows | seconds | rows/s | MB/s | note |",
                  "|---|---:|---:|---:|---:|---|"]
        for r in chosen:
            mb = f"{r.megabytes / r.seconds:.1f}" if r.megabytes else ""
            lines.append(f"| {r.name} | {r.rows:,} | {r.seconds:.2f} | {r.rows_per_second:,.0f} | {mb} | {r.note} |")
        lines.append("")

    lines += ["## Ratios and targets", "", "| comparison | ratio | target |", "|---|---:|---|"]
    noop = find("e2e", "Spark noop", exact=False)
    for protocol in args.protocols:
        name = title(protocol)
        sink = find("encode", f"ticdc-sink {protocol}")
        prefix = f"hand-written {protocol}, dict per row + "
        for hand in (r for r in results if r.section == "encode" and r.name.startswith(prefix)):
            serializer = hand.name[len(prefix):]
            if sink:
                ratio = sink.rows_per_second / hand.rows_per_second
                goal = target(ratio, ENCODE_TARGETS[protocol]) if serializer == STANDARD_SERIALIZER[protocol] else ""
                lines.append(f"| {name}: encode vs hand-written encode ({serializer}) | {ratio:.2f}x | {goal} |")
        alo = find("e2e", f"ticdc-sink {protocol}, at-least-once")
        eo = find("e2e", f"ticdc-sink {protocol}, exactly-once")
        bare = bare_limit(results, protocol)
        handwritten_job = find("e2e", f"hand-written foreachPartition {protocol},", exact=False)
        if alo and bare:
            ratio = alo.rows_per_second / bare.rows_per_second
            lines.append(f"| {name}: end-to-end at-least-once vs bare producer limit | {ratio:.2f} | "
                         f"{target(ratio, OUTPUT_TARGETS[protocol]) if protocol in OUTPUT_TARGETS else ''} |")
        if eo and alo:
            ratio = eo.rows_per_second / alo.rows_per_second
            lines.append(f"| {name}: exactly-once vs at-least-once (the cost of transactions) | {ratio:.2f} | "
                         f"{target(ratio, TRANSACTIONS_TARGET)} |")
        if alo and handwritten_job:
            lines.append(f"| {name}: end-to-end at-least-once vs hand-written foreachPartition | "
                         f"{alo.rows_per_second / handwritten_job.rows_per_second:.2f}x | |")
        if alo and noop:
            lines.append(f"| {name}: end-to-end at-least-once vs Spark noop (input limit) | "
                         f"{alo.rows_per_second / noop.rows_per_second:.2f} | |")
    for memory in (r for r in results if r.section == "memory"):
        peak = float(memory.note.split()[0])
        goal = "" if args.small else f"{'met' if peak < RSS_TARGET_MB else 'missed'} (< {RSS_TARGET_MB} MB)"
        lines.append(f"| {memory.name} | {peak:.0f} MB | {goal} |")
    lines.append("")
    if noop:
        lines += ["The CPU notes of the Spark jobs add up the CPU seconds of the Python workers, the Spark JVM and "
                  "the broker during each job: near 100% of the cores means the job is bound by CPU, shared by all "
                  "three on this machine.", ""]
    if any(r.name.startswith(BARE) for r in results):
        lines += [f"The sink produces with {PRODUCE_CALLS['produce']}, whichever call the bare producer found "
                  "fastest: a task may report only rows the broker acknowledged, and its order check compares the "
                  "offsets each task's messages landed at, which only a report per message carries (with failure "
                  "reports only, librdkafka reports no success, and so no offset, for any message). "
                  "`produce_batch()` takes a dict per message and reports each as `produce()` does.", ""]
    lines += stage_table(results, find("e2e", DRAIN))
    if not args.small:
        lines += missed_targets(results, args.protocols)
    lines += ["## Where the encoder's time goes", ""]
    for protocol, profile_text in profiles.items():
        lines += [f"cProfile of the {title(protocol)} encode-only run (a run of its own), by cumulative time:", "",
                  "```", profile_text.rstrip(), "```", ""]
    return "\n".join(lines)


def per_row(result: Result, kind: str) -> float:
    """Microseconds of ``kind``'s CPU per row of a measured run."""
    return result.cpu[kind] * 1e6 / result.rows


def missed_targets(results: list[Result], protocols: list[str]) -> list[str]:
    """One paragraph per missed target: by how much, and what the measured costs leave of a way to meet it."""
    def find(section: str, name: str) -> Result | None:
        return find_result(results, section, name)

    notes = []
    for protocol in protocols:
        name, goal = title(protocol), ENCODE_TARGETS[protocol]
        sink = find("encode", f"ticdc-sink {protocol}")
        hand = find("encode", f"hand-written {protocol}, dict per row + {STANDARD_SERIALIZER[protocol]}")
        staged = find("stages", protocol)
        stages = staged.stages if staged else None
        if sink and hand and sink.rows_per_second < goal * hand.rows_per_second:
            ours, theirs = sink.seconds * 1e6 / sink.rows, hand.seconds * 1e6 / hand.rows
            in_task = (f" In a task, the input contract takes {stages['input']:.1f} µs/row and the encoder "
                       f"{stages['encode']:.1f}." if stages else "")
            notes.append(f"- {name}, encode only: {theirs / ours:.2f}x, not {goal:g}x. The sink spends {ours:.2f} "
                         f"µs/row, the hand-written encoder {theirs:.2f}; {goal:g}x needs at most "
                         f"{theirs / goal:.2f}, {(1 - theirs / goal / ours) * 100:.0f}% less than today.{in_task} "
                         "The encoder's profile below shows where its time goes.")
        alo = find("e2e", f"ticdc-sink {protocol}, at-least-once")
        eo = find("e2e", f"ticdc-sink {protocol}, exactly-once")
        bare = bare_limit(results, protocol)
        if protocol in OUTPUT_TARGETS and alo and alo.cpu and bare and bare.cpu:
            wanted = OUTPUT_TARGETS[protocol] * bare.rows_per_second
            if alo.rows_per_second < wanted:
                budget = CORES * 1e6 / wanted
                python, others = per_row(alo, "Python"), per_row(alo, "JVM") + per_row(alo, "broker")
                left = budget - others
                verdict_text = (f"so Python would have to fit in {left:.1f} µs/row, where it takes {python:.1f}"
                                if left > 0 else "more than the whole budget: no Python cost, however small, "
                                "reaches the target on this machine")
                notes.append(
                    f"- {name}, end to end at-least-once: {alo.rows_per_second:,.0f} rows/s, "
                    f"{alo.rows_per_second / bare.rows_per_second:.2f} of the limit ({bare.rows_per_second:,.0f}, "
                    f"{bare.name}); {OUTPUT_TARGETS[protocol]:g} of it is {wanted:,.0f} rows/s. The job is bound "
                    f"by CPU ({CORES} cores shared by all its processes) and spent, per row, {python:.1f} µs of "
                    f"Python, {per_row(alo, 'JVM'):.1f} of the Spark JVM and {per_row(alo, 'broker'):.1f} of the "
                    f"broker. The bare producer pays neither Spark nor the input: {per_row(bare, 'Python'):.1f} "
                    f"µs/row in its process (librdkafka included) and {per_row(bare, 'broker'):.1f} in the broker. "
                    f"At {wanted:,.0f} rows/s the cores allow {budget:.1f} µs of CPU per row; the JVM and the "
                    f"broker take {others:.1f} of it, {verdict_text}. The stage table above splits the Python part.")
        if eo and alo and eo.rows_per_second < TRANSACTIONS_TARGET * alo.rows_per_second:
            notes.append(f"- {name}, exactly-once: {eo.rows_per_second / alo.rows_per_second:.2f} of at-least-once, "
                         f"not {TRANSACTIONS_TARGET:g} ({eo.note}; at-least-once: {alo.note}).")
    for memory in (r for r in results if r.section == "memory"):
        if float(memory.note.split()[0]) >= RSS_TARGET_MB:
            notes.append(f"- {memory.name}: {memory.note}, not under {RSS_TARGET_MB} MB.")
    if not notes:
        return []
    return ["## Targets missed, and why", "", *notes, ""]


def stage_table(results: list[Result], drain: Result | None) -> list[str]:
    """Microseconds of CPU per row in each stage of a task, per protocol, beside the Spark job's own figure."""
    staged = [r for r in results if r.section == "stages"]
    if not staged:
        return []
    measured = {"receive": drain.stages["receive"], WORKER: per_row(drain, "Python") - drain.stages["receive"]
                } if drain else {WORKER: 0.0}
    columns = [WORKER, *STAGES, LIBRDKAFKA]
    lines = ["## Where a row's CPU goes (one task)", "",
             "| protocol | " + " | ".join(columns) + " | sum | Python workers in the Spark job, at-least-once |",
             "|---|" + "---:|" * (len(columns) + 2)]
    for r in staged:
        costs = {**r.stages, **measured}
        job = find_result(results, "e2e", f"ticdc-sink {r.name}, at-least-once")
        spark_python = f"{per_row(job, 'Python'):.1f}" if job and job.cpu else ""
        lines.append(f"| {title(r.name)} | " + " | ".join(f"{costs[c]:.1f}" for c in columns)
                     + f" | {sum(costs.values()):.1f} | {spark_python} |")
    lines += ["", "Microseconds of CPU per row. receive: the Python thread's CPU per row, taking the Arrow batches "
              "from Spark, in the tasks of a Spark job over the same feed whose sink drops them (`bench-drain`, "
              f"`drain.py`); {WORKER}: the rest of that job's Python worker CPU (starting workers, pyspark "
              "planning and committing the write), which any Python sink pays, mostly fixed per job and shown per "
              "row of the feed. The other stages: the task's "
              "own clock (`ticdc_sink/costs.py`: the Python thread's CPU per stage; librdkafka: the process's other "
              f"threads), running the sink's task pipeline in the harness's process over the feed's first "
              f"{STAGE_ROWS:,} rows in Arrow batches of 10,000, at-least-once to the broker. The last column is the "
              "whole job's Python worker CPU per row, to hold the sum against.", ""]
    return lines + shared_cores_note(results)


def shared_cores_note(results: list[Result]) -> list[str]:
    """Why the Spark job's Python CPU per row exceeds the one-task sum: the same work costs more CPU on shared
    cores, as the bare producer shows in one process and in one per core."""
    if CORES == 1:
        return []  # no bare run shares the core
    bare = {r.name: r for r in results if r.cpu and r.name.startswith(BARE)}
    for name, together in bare.items():
        run_of = name.removesuffix(f", {processes_text(CORES)}")
        alone = bare.get(f"{run_of}, {processes_text(1)}")
        if run_of != name and alone is not None:
            one, many = per_row(alone, "Python"), per_row(together, "Python")
            return [f"The one-task run has a core to itself; in the Spark job two tasks, the JVM and the broker "
                    f"share the {CORES} cores, and the same work then costs more CPU. The bare producer shows it on "
                    f"its own: {run_of[len(BARE) + 1:]} spent {one:.1f} µs/row of CPU (Python and librdkafka) in "
                    f"one process and {many:.1f} in {CORES} at once ({many / one:.2f}x).", ""]
    return []


def reader_revision() -> str:
    """The reader's commit, and whether ``ticdc_sink/`` has changes beyond it: Spark's workers import it anew, so
    a change made during a run reaches the reads after it."""
    def git(*words: str) -> str:
        return subprocess.run(["git", "-C", str(BENCH.parent), *words], capture_output=True, text=True).stdout.strip()

    changes = git("status", "--porcelain", "--", "ticdc_sink") + git("diff", "HEAD", "--", "ticdc_sink")
    changed = f" with uncommitted changes to ticdc_sink/ ({hashlib.sha1(changes.encode()).hexdigest()[:7]})" \
        if changes else ""
    return f"ticdc-sink at {git('rev-parse', '--short', 'HEAD')}{changed}"


def revision_change(started: str) -> str:
    """What the reader became during the reads, if it changed."""
    now = reader_revision()
    return "" if now == started else f" when the reads began, {now} when they ended"


def read_ratio(reads: list[Result], schema: str, baseline: Result) -> float:
    """The reader's rows/s on Canal-JSON (schema ``inferred`` or ``given``) over a baseline's."""
    reader = find_result(reads, "read", f"{READER} canal-json, {schema} schema")
    return reader.rows_per_second / baseline.rows_per_second


def read_tables(results: list[Result], args) -> list[str]:
    """Per protocol the reader's rows/s; Canal-JSON's baselines, the reader's ratios to them and their targets."""
    reads = [r for r in results if r.section == "read"]
    lines = ["| protocol | rows | ticdc reader, schema inferred: rows/s | schema given: rows/s |",
             "|---|---:|---:|---:|"]
    for protocol in args.protocols:
        inferred = find_result(reads, "read", f"{READER} {protocol}, inferred schema")
        given = find_result(reads, "read", f"{READER} {protocol}, given schema")
        lines.append(f"| {title(protocol)} | {inferred.rows:,} | {inferred.rows_per_second:,.0f} | "
                     f"{given.rows_per_second:,.0f} |")
    baselines = [r for r in reads if r.name in READ_TARGETS]
    if baselines:
        lines += ["", "| Canal-JSON read by | rows/s | the reader's ratio to it, schema inferred | schema given | "
                      "target | verdict |", "|---|---:|---:|---:|---:|---|"]
        for baseline in baselines:
            inferred, given = (read_ratio(reads, schema, baseline) for schema in ("inferred", "given"))
            goal = READ_TARGETS[baseline.name]
            lines.append(f"| {baseline.name} | {baseline.rows_per_second:,.0f} | {inferred:.2f}x | {given:.2f}x | "
                         f"{goal:g}x | {'' if args.small else verdict(inferred, goal)} |")
    lines += ["", "| what | rows | seconds | rows/s | note |", "|---|---:|---:|---:|---|"]
    lines += [f"| {r.name} | {r.rows:,} | {r.seconds:.2f} | {r.rows_per_second:,.0f} | {r.note} |" for r in reads]
    return lines + [""]


def read_memory_table(results: list[Result], args) -> list[str]:
    """The worker's peak RSS at a fifth of the partition and at all of it, and whether it stayed flat."""
    runs = [r for r in results if r.section == "read-memory"]
    lines = ["| what | rows | seconds | rows/s | peak RSS |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {r.name} | {r.rows:,} | {r.seconds:.2f} | {r.rows_per_second:,.0f} | {r.note} |" for r in runs]
    first, last = (float(r.note.split()[0]) for r in (runs[0], runs[-1]))
    growth = (last - first) / first
    goal = "" if args.small else (f"{'met' if growth < FLAT_GROWTH else 'missed'} (flat: under "
                                  f"{FLAT_GROWTH * 100:.0f}% more)")
    return lines + ["", f"From {runs[0].rows:,} rows to {runs[-1].rows:,} the peak went from {first:.0f} MB to "
                        f"{last:.0f} MB ({growth * 100:+.0f}%). {goal}".rstrip(), ""]


def read_missed_targets(results: list[Result]) -> list[str]:
    """Per missed read target: the ratio, and where each job's CPU went per row."""
    def cpu_per_row(r: Result) -> str:
        busy = sum(r.cpu.values()) / r.seconds / CORES * 100
        return ", ".join(f"{kind} {per_row(r, kind):.1f}" for kind in ("Python", "JVM", "broker")) + \
            f" ({busy:.0f}% of the cores busy)"

    reader = find_result(results, "read", f"{READER} canal-json, inferred schema")
    notes = []
    for name, goal in READ_TARGETS.items():
        baseline = find_result(results, "read", name)
        if reader and baseline and reader.rows_per_second < goal * baseline.rows_per_second:
            notes.append(f"- Canal-JSON, the reader (schema inferred) vs {name}: "
                         f"{reader.rows_per_second / baseline.rows_per_second:.2f}x, not {goal:g}x: "
                         f"{goal * baseline.rows_per_second:,.0f} rows/s would be. CPU µs per row, the reader's "
                         f"job: {cpu_per_row(reader)}; the baseline's: {cpu_per_row(baseline)}.")
    return ["Targets missed:", "", *notes, ""] if notes else []


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


def read_section(reads: ReadRuns, args, registry_name: str | None) -> str:
    """The section a ``--read-only`` run rewrites, between its markers."""
    import pyspark

    served = "" if reads.kafka_source.endswith(f":{pyspark.__version__}") else (
        f"; Maven Central has none for pyspark {pyspark.__version__} yet: the newest it has")
    registry = f" Schema Registry: {registry_name}." if registry_name else ""
    turns = 1 if args.small else READ_TURNS
    lines = [
        READ_SECTION_START, "## Reading TiCDC topics into Spark", "",
        f"Measured by `{command_text()}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{reads.revision}{revision_change(reads.revision)}. Machine: {machine()}. Broker: {reads.broker}.{registry}",
        "",
        f"Each protocol's topic holds the feed ({args.rows:,} row changes) as the sink writes it with the bench's "
        "options (`feed.sink_options`) and `enable-tidb-extension=true` (commit ts and ops): in "
        f"{CORES} partitions, each in commit order (`order_changes`), a watermark last. The reader "
        "(`spark.read.format(\"ticdc\")`) takes the same options but `database`, `table` and `partition`, naming "
        f"the topic; its whole DataFrame goes to Spark's `noop` sink (`local[{CORES}]`, one task per Kafka "
        "partition), `load()` included in the time: it infers the schema from the topic's first row, or reads "
        "nothing when given it (`.schema(...)`). The baselines read the same Canal-JSON topic with Spark's Kafka "
        f"source (`{reads.kafka_source}`, `spark.jars.packages`{served}) in the same session, into the "
        "same columns (op, commit ts, database, table, each column in its Spark type, an update's old row; "
        "`read_baselines.py`): `from_json` with a hand-written schema; a Python UDF with `json.loads` and a tuple per row "
        "built by hand (`mapInPandas` and `mapInArrow` need pandas, which this venv lacks). Every read gave the "
        "feed's rows (checked). " + (f"Each row is the median of {turns} turns in rotation (Canal-JSON's after a "
                                     "warm-up turn)." if turns > 1 else "Each row is one run."),
        "",
        *read_tables(reads.results, args),
        *([] if args.small else read_missed_targets(reads.results)),
        "### Memory", "",
        f"The reader over one partition of {args.rss_rows:,} {title(READ_RSS_PROTOCOL)} rows, a fresh session each "
        "(`ending-offsets` stops the first read early): the peak RSS of Spark's Python workers.", "",
        *read_memory_table(reads.results, args),
        "### Where the reader's time goes", "",
        *[line for protocol, (speeds, profile) in reads.outside_spark.items() for line in (
            f"{title(protocol)} outside Spark, in one process, {speeds} Its cProfile over the same messages (a run "
            "of its own), by cumulative time:", "", "```", profile.rstrip(), "```", "")],
        READ_SECTION_END,
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# The run


def protocol_list(text: str) -> list[str]:
    """``--protocols``: protocols (``simple-avro``: Simple in Avro), separated by commas."""
    protocols = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in protocols if p not in BENCHED]
    if unknown or not protocols:
        raise argparse.ArgumentTypeError(f"expected some of {', '.join(BENCHED)}, got {text!r}")
    return protocols


def module_at(path: Path):
    """The module of a file in ``tests`` or ``integration``, which are no packages the bench can import."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def schema_registry(args):
    """The URL and description of avro's registry, ``(None, None)`` without avro: ``--schema-registry``, else
    the package's TEST DOUBLE, served from this process for the whole run."""
    if "avro" not in args.protocols:
        yield None, None
    elif args.schema_registry:
        yield args.schema_registry, f"{mask_url(args.schema_registry)} (--schema-registry)"
    else:
        double = SchemaRegistryDouble().start()
        say(f"Schema Registry: a TEST DOUBLE (ticdc_sink/embedded/schema_registry.py) at {double.url}, not a real "
            "registry; --schema-registry URL to use one")
        try:
            yield double.url, "the package's in-process TEST DOUBLE (not a real registry)"
        finally:
            double.stop()


ENCODE_TURNS = 3


def in_turns(runs: dict[str, Callable[[], Result]], turns: int, what: str) -> list[Result]:
    """Each run ``turns`` times in rotation, each row its median turn: the host's speed drifts by tens of percent
    within minutes, and a ratio of two single runs taken one after the other measured that drift as much as the
    code."""
    measured: dict[str, list[Result]] = {name: [] for name in runs}
    for turn in range(1, turns + 1):
        for name, run in runs.items():
            say(f"{what}: {name}, turn {turn} of {turns}")
            measured[name].append(run())
    results = []
    for turns_of_one in measured.values():
        median = sorted(turns_of_one, key=lambda r: r.seconds)[len(turns_of_one) // 2]
        seconds = ", ".join(f"{r.seconds:.2f}" for r in turns_of_one)
        note = "; ".join(filter(None, (f"median of {turns} turns ({seconds} s)", median.note)))
        results.append(replace(median, note=note) if turns > 1 else median)
    return results


def encode_runs(table: pa.Table, protocol: str, registry: str | None, avro: AvroTarget | None,
                turns: int) -> tuple[list[Result], str]:
    """A protocol's encode-only rows (the sink, each hand-written serialiser, ``in_turns``) and the sink's
    profile."""
    runs = {"the sink": lambda: encode_sink(table, protocol, registry)}
    for name, serializer in serializer_choices(protocol, avro).items():
        runs[f"hand-written ({name})"] = lambda name=name, serializer=serializer: encode_handwritten(
            table, protocol, name, serializer)
    results = in_turns(runs, turns, f"encode-only {protocol}")
    say(f"encode-only {protocol} under cProfile")
    return results, encoder_profile(table, protocol, registry)


CLAIM_CHECK_SECTION_START = "<!-- claim-check: bench/run.py --claim-check-only rewrites this section -->"
CLAIM_CHECK_SECTION_END = "<!-- /claim-check -->"
# Over every feed row's Canal-JSON message (1.1 KB and more), above its claim-check message (about 450 bytes).
CLAIM_CHECK_LIMIT = 700
CLAIM_CHECK_ROWS = 100_000


def claim_check_section(feed: pa.Table, turns: int) -> str:
    """Canal-JSON encoded with its defaults and with claim-check to a local directory, every row over
    max-message-bytes, in turns: what keeping each row whole in the storage costs beside the default encoder.
    On the feed's first CLAIM_CHECK_ROWS rows: a million files in one directory would time the filesystem."""
    table = feed.slice(0, CLAIM_CHECK_ROWS)
    with_extension = {"enable-tidb-extension": "true"}
    kept: list[int] = []  # objects per claim-check turn

    def claim_check() -> Result:
        with tempfile.TemporaryDirectory(prefix="bench-claim-check-") as storage:  # a turn's own, then removed
            extra = {**with_extension, "large-message-handle-option": "claim-check",
                     "max-message-bytes": str(CLAIM_CHECK_LIMIT), "claim-check-storage-uri": f"file://{storage}"}
            name = (f"ticdc-sink canal-json, enable-tidb-extension, claim-check to file:// "
                    f"(max-message-bytes={CLAIM_CHECK_LIMIT}: every row kept whole)")
            result = encode_sink(table, "canal-json", extra=extra, name=name)
            kept.append(sum(1 for _ in Path(storage).iterdir()))
        return result

    results = in_turns({"default": lambda: encode_sink(table, "canal-json", extra=with_extension,
                                                         name="ticdc-sink canal-json, enable-tidb-extension"),
                        "claim-check": claim_check}, turns, "claim-check")
    default, claimed = results
    warm_up = min(table.num_rows, ENCODE_BATCH_ROWS)  # encode_sink's warm-up encodes one batch first
    every_row = all(objects == table.num_rows + warm_up for objects in kept)
    kept_text = ("kept every row whole: one object per row" if every_row else
                 f"wrote {', '.join(f'{objects:,}' for objects in kept)} objects (warm-up included)")
    lines = [
        CLAIM_CHECK_SECTION_START, "## Claim-check (one core)", "",
        f"Measured by `{command_text()}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{reader_revision()}. Machine: {machine()}. Encode-only, as the encode section, on the feed's first "
        f"{table.num_rows:,} rows (a file per row: more would time the directory's growth); the claim-check run "
        f"{kept_text}, as `<uuid>.json` `{{key, value}}` in base64, in the machine's temporary directory, before it "
        "returned each batch's messages; its MB/s are those of the Kafka messages it made. The comparison is the "
        "same encoder with its defaults, in the same run.", "",
        "| what | rows | seconds | rows/s | MB/s | note |", "|---|---:|---:|---:|---:|---|",
    ]
    for r in results:
        mb = f"{r.megabytes / r.seconds:.1f}" if r.megabytes else ""
        lines.append(f"| {r.name} | {r.rows:,} | {r.seconds:.2f} | {r.rows_per_second:,.0f} | {mb} | {r.note} |")
    lines += ["", f"Claim-check takes {default.rows_per_second / claimed.rows_per_second:.1f}x the default "
              "encoder's time per row when every row is kept whole; rows under max-message-bytes cost what they "
              "cost without it.", CLAIM_CHECK_SECTION_END]
    return "\n".join(lines) + "\n"


def with_section(existing: str, section: str, start: str, end: str) -> str:
    """``existing`` results with ``section`` in place of the one between ``start`` and ``end`` (else before the
    Soak section, else last): a run of one section keeps every other."""
    if start in existing and end in existing:
        head, _, rest = existing.partition(start)
        return head + section + rest.partition(end + "\n")[2]
    if SOAK_SECTION in existing:
        head, _, soak = existing.partition(SOAK_SECTION)
        return head + section + "\n" + SOAK_SECTION + soak
    return (existing or "# Benchmark results\n") + "\n" + section


SUMMARY_START, SUMMARY_END = "<!-- summary: bench/run.py writes it from the tables below -->", "<!-- /summary -->"


def with_summary(text: str) -> str:
    """``text`` with its five-line summary (the ranges across protocols, and the caveats) under the title, made
    again from the tables it holds: whichever sections the run rewrote, the summary matches them."""
    if SUMMARY_START in text and SUMMARY_END in text:
        head, _, rest = text.partition(SUMMARY_START)
        text = head.rstrip("\n") + "\n" + rest.partition(SUMMARY_END + "\n")[2]
    lines = summary_lines(text)
    if not lines:
        return text
    title, _, body = text.partition("\n")
    return f"{title}\n\n" + "\n".join([SUMMARY_START, *lines, SUMMARY_END]) + "\n\n" + body.lstrip("\n")


def summary_lines(text: str) -> list[str]:
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith("| ") and not line.startswith("| what |")]

    def values(column: int, cells: int, chosen) -> list[float]:
        """The number in ``column`` of the table rows of ``cells`` cells whose first cell is ``chosen``."""
        return [float(re.sub(r"[^\d.]", "", r[column])) for r in rows
                if len(r) == cells and chosen(r[0]) and re.search(r"\d", r[column])]

    def ratios(comparison: str) -> list[float]:
        return values(1, 3, lambda name: name.endswith(comparison) or f": {comparison}" in name)

    def span(numbers: list[float], form: str) -> str:
        low, high = form.format(min(numbers)), form.format(max(numbers))
        return low if low == high else f"{low} to {high}"

    lines = []
    encoders = values(3, 6, lambda name: name.startswith("ticdc-sink ") and "," not in name)
    by_hand = ratios("encode vs hand-written encode")
    if encoders and by_hand:
        lines.append(f"- **Encoding, one core:** the sink's encoders run {span(encoders, '{:,.0f}')} rows/s, "
                     f"{span(by_hand, '{:.1f}x')} a hand-written encoder of the same messages.")
    written = values(3, 6, lambda name: name.startswith("ticdc-sink ") and name.endswith(", at-least-once"))
    bare, jobs = ratios("at-least-once vs bare producer limit"), ratios("at-least-once vs hand-written foreachPartition")
    transactions = ratios("exactly-once vs at-least-once (the cost of transactions)")
    if written and bare and jobs and transactions:
        spark = re.search(r"## Spark to Kafka \((local\[\d+\])\)", text)
        lines.append(f"- **Spark to Kafka{', ' + spark[1] if spark else ''}:** {span(written, '{:,.0f}')} rows/s "
                     "at-least-once, "
                     f"{span(jobs, '{:.1f}x')} a hand-written foreachPartition producer and {span(bare, '{:.2f}')} "
                     f"of the bare producer's best (the limit); exactly-once runs at {span(transactions, '{:.2f}')} "
                     "of at-least-once.")
    protocols = set(TITLES.values())
    reads = values(2, 4, protocols.__contains__) + values(3, 4, protocols.__contains__)
    sources = [(r[0], r[2]) for r in rows if len(r) == 6 and r[0].startswith("Spark Kafka source")]
    if reads:
        beside = " and ".join(f'{ratio} "{source}"' for source, ratio in sources)
        lines.append(f"- **Reading into Spark:** {span(reads, '{:,.0f}')} rows/s per protocol"
                     + (f"; on Canal-JSON the reader runs {beside}." if beside else "."))
    writing = [float(r[5].split()[0]) for r in rows
               if len(r) == 6 and r[0].startswith("peak worker RSS ") and r[5].endswith(" MB")]
    reading = [float(r[4].split()[0]) for r in rows
               if len(r) == 5 and r[0].startswith("peak worker RSS reading") and r[4].endswith(" MB")]
    if writing:
        lines.append(f"- **Memory:** a Python worker's peak RSS over one large partition is "
                     f"{span(writing, '{:.0f} MB')} writing" + (f", {span(reading, '{:.0f} MB')} reading." if reading
                                                               else "."))
    if not lines:  # a file of other sections only (a partial run's): nothing to sum up
        return []
    writes = text.partition(READ_SECTION_START)[0]
    machine = re.search(r"Machine: (\d+) cores", writes)
    broker = ("the embedded Tansu broker (in memory), not Apache Kafka" if "Broker: the embedded Tansu broker" in writes
              else "the Kafka its section names")
    lines.append(f"- **Caveats:** a {machine[1] + '-core ' if machine else ''}machine that Spark, its Python workers "
                 f"and the broker share; the writes went to {broker}, with a test double for Avro's registry; each "
                 "section names its own run. Compare the ratios, not the rows/s; the targets missed are listed "
                 "below, with why.")
    return lines


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


def parse_args(argv: list[str] | None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="row changes in the feed (default 1M)")
    parser.add_argument("--rss-rows", type=int, default=5_000_000, help="rows of the one-partition memory run")
    parser.add_argument("--small", action="store_true", help="a seconds-long smoke run (CI): small sizes, no verdicts")
    parser.add_argument("--bootstrap-servers", help="an existing Kafka cluster (default: the embedded broker)")
    parser.add_argument("--schema-registry", metavar="URL",
                        help="a Schema Registry for avro (default: the package's in-process TEST DOUBLE)")
    parser.add_argument("--protocols", type=protocol_list, default=list(BENCHED),
                        help=f"comma-separated (default: {','.join(BENCHED)})")
    parser.add_argument("--encode-only", action="store_true", help="only the encode-only runs: no broker, no Spark")
    parser.add_argument("--read-only", action="store_true",
                        help="only the read section (real Kafka, Spark's Kafka source from Maven Central): it "
                             "replaces that section of --output and keeps the others")
    parser.add_argument("--claim-check-only", action="store_true",
                        help="only the claim-check section (encode-only, no broker): it replaces that section of "
                             "--output and keeps the others")
    parser.add_argument("--output", type=Path,
                        help="default: bench/RESULTS.md for a complete run, bench/.data/PARTIAL.md for any other")
    parser.add_argument("--data-dir", type=Path, default=BENCH / ".data")
    args = parser.parse_args(argv)
    if sum((args.read_only, args.encode_only, args.claim_check_only)) > 1:
        parser.error("--read-only, --encode-only and --claim-check-only exclude each other")
    if args.small:
        args.rows, args.rss_rows = min(args.rows, 20_000), min(args.rss_rows, 20_000)
    if args.output is None:  # only a complete run replaces the committed results
        complete = (not (args.small or args.encode_only or args.claim_check_only) and args.rows == 1_000_000
                    and args.rss_rows == 5_000_000 and args.protocols == list(BENCHED))
        args.output = BENCH / "RESULTS.md" if complete else args.data_dir / "PARTIAL.md"
    return args



SOAK_SECTION = "<!-- soak: integration/soak.py writes this section -->"  # soak.py's SECTION_START


def kept_soak_section(output: Path) -> str:
    """The Soak section integration/soak.py wrote into ``output``: a new benchmark run keeps it."""
    existing = output.read_text() if output.exists() else ""
    return "\n" + existing[existing.index(SOAK_SECTION):] if SOAK_SECTION in existing else ""


def measured_report(args, path: Path, registry: str | None, registry_name: str | None, read_text: str) -> str:
    """Every section but the read section's measurements (encode-only with the baselines' checks, then the runs
    that write to Kafka), and the report of them all, ``read_text`` the read section's."""
    table = read_feed(path)
    results: list[Result] = []
    profiles: dict[str, str] = {}
    checks: list[str] = []
    avro = None
    for protocol in args.protocols:
        if protocol == "avro":
            avro = avro_target(table, registry)
            say(f"checking the hand-written Avro messages against the sink's ({CHECK_ROWS:,} rows)")
            checks.append(check_avro_baseline(table, avro))
        elif protocol == "debezium":
            say(f"checking the hand-written Debezium messages against the sink's ({CHECK_ROWS:,} rows)")
            checks.append(check_debezium_baseline(table))
        elif protocol in ("simple", "simple-avro"):
            say(f"checking the hand-written {title(protocol)} messages against the sink's ({CHECK_ROWS:,} rows)")
            checks.append(check_simple_baseline(table, protocol))
        protocol_results, profiles[protocol] = encode_runs(table, protocol, registry, avro,
                                                           turns=1 if args.small else ENCODE_TURNS)
        results += protocol_results
    del table
    broker_name = "none (--encode-only)"
    if not args.encode_only:
        output_results, broker_name = output_runs(args, path, registry, avro)
        results += output_results
    services = f"Broker: {broker_name}." + (f" Schema Registry: {registry_name}." if registry_name else "")
    claim_check = ""
    if "canal-json" in args.protocols:
        say("encode-only canal-json with claim-check to a local directory")
        claim_check = "\n" + claim_check_section(read_feed(path), turns=1 if args.small else ENCODE_TURNS)
    return report(results, args, profiles, services, checks) + claim_check + ("\n" + read_text if read_text else "")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    say(f"writing the feed ({args.rows:,} rows) to {args.data_dir}")
    path = write_feed(args.data_dir / f"feed-{args.rows}.parquet", args.rows)
    existing = args.output.read_text() if args.output.exists() else ""
    with schema_registry(args) as (registry, registry_name):
        # The reads first: Spark's Kafka source is on the classpath only of a JVM its session starts.
        reading = args.read_only or not (args.small or args.encode_only or args.claim_check_only)
        read_text = read_section(read_runs(args, path, registry), args, registry_name) if reading else ""
        if args.claim_check_only:  # one section replaced, the others kept
            shown = claim_check_section(read_feed(path), turns=1 if args.small else ENCODE_TURNS)
            text = with_section(existing, shown, CLAIM_CHECK_SECTION_START, CLAIM_CHECK_SECTION_END)
        elif args.read_only:
            shown = read_text
            text = with_section(existing, shown, READ_SECTION_START, READ_SECTION_END)
        else:
            text = shown = measured_report(args, path, registry, registry_name, read_text) + \
                kept_soak_section(args.output)
    args.output.write_text(with_summary(text))
    print(shown)
    say(f"written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
