"""What every part of the bench shares: its result record, its turns, its topics, the Schema Registry, the
local Spark session and the profile text, so that each measurement is set up and reported the same way."""

from __future__ import annotations

import contextlib
import cProfile
import hashlib
import importlib.util
import io
import os
import pstats
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from ticdc_sink.embedded.schema_registry import SchemaRegistryDouble
from ticdc_sink.redact import mask_url

BENCH = Path(__file__).resolve().parent
CORES = os.cpu_count() or 1
TOPIC_PARTITIONS = 3  # of the topics the bench creates itself
TITLES = {"canal-json": "Canal-JSON", "open-protocol": "Open Protocol", "avro": "Avro", "debezium": "Debezium",
          "simple": "Simple (JSON)", "simple-avro": "Simple (Avro)"}
KAFKA_SERVER = BENCH.parent / "integration" / "kafka_server.py"  # real Apache Kafka, fetched by Maven
KAFKA_CONNECTOR = "org.apache.spark:spark-sql-kafka-0-10_2.13"  # Spark's Kafka source and sink, at pyspark's
KAFKA_CONNECTOR_SERVED = "4.2.0"  # version if served, else the newest Maven Central serves (2026-11: none for 4.3)
# Jars pyspark ships already, at the versions the connector asks for: Ivy fails on the local Maven cache's copies
# of them (their poms without their jars), and the session needs none of them again.
KAFKA_CONNECTOR_EXCLUDES = "at.yawk.lz4:lz4-java,org.xerial.snappy:snappy-java,org.slf4j:slf4j-api"
# What the Spark workers import: the hand-written job's encoders, the drain and the UDF read baseline.
WORKER_MODULES = ("feed.py", "handwritten.py", "handwritten_values.py", "handwritten_json.py", "handwritten_avro.py",
                  "handwritten_simple.py", "drain.py", "read_baselines.py")


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
    stages: dict[str, float] | None = None  # microseconds per row per stage of a task (ticdc_sink.sink.costs)

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds else 0.0


def read_feed(path: Path) -> pa.Table:
    return pq.read_table(path)


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


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


def unique_topic(stem: str) -> str:
    """A topic of a measured step's own: no step reads or counts another's messages."""
    return f"{stem}-{uuid.uuid4().hex[:8]}"


def create_topic(bootstrap_servers: str, topic: str, partitions: int = TOPIC_PARTITIONS) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap_servers})  # alive until the future resolves
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def delete_topic(bootstrap_servers: str, topic: str) -> None:
    """Drop a measured step's topic: the embedded broker keeps messages in memory, and Debezium's (about
    5 KB each with their schemas) would otherwise fill it over the steps and slow the later ones."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    admin.delete_topics([topic])[topic].result(30)


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


def local_spark(extra: dict[str, str] | None = None):
    """A ``local[CORES]`` session whose workers can import the bench's modules they run (``WORKER_MODULES``)."""
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


_CONNECTOR_LOADED: list[str] = []  # the connector package this process's JVM started with


def kafka_connector_spark(extra: dict[str, str] | None = None):
    """A ``local_spark`` session with Spark's Kafka connector (``format("kafka")`` to read and to write), and its
    Maven package: of the running pyspark's version, else ``KAFKA_CONNECTOR_SERVED``.  Packages are fixed when the
    JVM starts, so the process's first session must be made here; a later one (after ``stop()``) runs in the same
    JVM, which keeps the jars."""
    import pyspark
    from pyspark import SparkContext
    from pyspark.errors import PySparkRuntimeError

    if SparkContext._gateway is not None and not _CONNECTOR_LOADED:
        raise RuntimeError("this process's JVM started without Spark's Kafka connector: its first Spark session "
                           "must come from kafka_connector_spark")
    versions = [] if _CONNECTOR_LOADED else list(dict.fromkeys((pyspark.__version__, KAFKA_CONNECTOR_SERVED)))
    for version in versions or [_CONNECTOR_LOADED[0].rpartition(":")[2]]:
        package = f"{KAFKA_CONNECTOR}:{version}"
        try:
            spark = local_spark({"spark.jars.packages": package, "spark.jars.excludes": KAFKA_CONNECTOR_EXCLUDES,
                                 **(extra or {})})
        except PySparkRuntimeError:
            say(f"{package} could not be fetched")
            continue
        _CONNECTOR_LOADED[:] = [package]
        return spark, package
    raise RuntimeError(f"Spark's Kafka connector ({KAFKA_CONNECTOR}) could not be fetched from Maven Central")


def module_at(path: Path):
    """The module of a file in ``tests`` or ``integration``, which are no packages the bench can import."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def apache_kafka(args, what: str):
    """``(bootstrap servers, description)`` of real Kafka for ``what``: --bootstrap-servers, else one node of
    Apache Kafka on loopback (``integration/kafka_server.py``), else ``(None, why it did not start)``."""
    if args.bootstrap_servers:
        yield args.bootstrap_servers, f"Kafka at {args.bootstrap_servers} (--bootstrap-servers)"
        return
    kafka_server = module_at(KAFKA_SERVER)
    try:
        cluster, failure = kafka_server.KafkaCluster().start(), ""
    except kafka_server.KafkaServerError as e:
        cluster, failure = None, str(e)
    if cluster is None:
        say(f"REAL KAFKA DID NOT START ({failure}): {what} fall back to the embedded broker")
        yield None, failure
        return
    try:
        yield (cluster.bootstrap_servers,
               f"Apache Kafka {kafka_server.KAFKA_VERSION}, one node on loopback (`integration/kafka_server.py`)")
    finally:
        cluster.stop()


def profile_text(profile: cProfile.Profile, shares: Callable[[pstats.Stats], str]) -> str:
    """A profile's top entries by cumulative time (the bench's own calls aside, paths from the repository's root),
    then its time by concern (``shares``)."""
    stream = io.StringIO()
    stats = pstats.Stats(profile, stream=stream)
    stats.sort_stats("cumulative").print_stats(r"^(?!.*/bench/)", 14)
    lines = (line.replace(f"{BENCH.parent}/", "") for line in stream.getvalue().splitlines()[3:])
    return "\n".join(line for line in lines if line.strip() and "List reduced" not in line) + "\n\n" + shares(stats)


def package_revision() -> str:
    """The package's commit, and whether ``ticdc_sink/`` has changes beyond it, for a section to name the code it
    measured: Spark's workers import the package anew, so a change made during a run reaches the steps after it."""
    def git(*words: str) -> str:
        return subprocess.run(["git", "-C", str(BENCH.parent), *words], capture_output=True, text=True).stdout.strip()

    changes = git("status", "--porcelain", "--", "ticdc_sink") + git("diff", "HEAD", "--", "ticdc_sink")
    changed = f" with uncommitted changes to ticdc_sink/ ({hashlib.sha1(changes.encode()).hexdigest()[:7]})" \
        if changes else ""
    return f"ticdc-sink at {git('rev-parse', '--short', 'HEAD')}{changed}"
