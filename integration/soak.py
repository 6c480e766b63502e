"""The soak run: millions of rows over many micro-batches, exactly-once, with tasks failing at random.

    python integration/soak.py [--rows 5000000] [--batches 100] [--failure-rate 0.01]
                               [--bootstrap-servers HOST:PORT,...] [--results bench/RESULTS.md]

starts a three-node Apache Kafka (``kafka_server.py``) unless given
``--bootstrap-servers``, writes a feed of ``--rows`` INSERTs (one per key) in
``--batches`` parquet files, and streams it into a topic with the sink
(exactly-once, Canal-JSON, one file per micro-batch) in a Spark session of its
own, ``local[2,4]`` (``spark.task.maxFailures=4``).  A filter before the sink
fails ``--failure-rate`` of the task attempts at a random row, after the sink
sent rows.  It samples the Python workers' RSS every second and times every
micro-batch, then reads the topic back ``read_committed`` and counts every key.

Required: 0 lost, 0 duplicates, worker RSS flat (the last tenth of the batches
within 10% of the second tenth's peak), a steady time per batch.  The figures
go to the ``## Soak`` section of ``--results`` (kept apart from the benchmark's
own sections), and the exit status is 1 when a requirement fails.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
SECTION_START, SECTION_END = "<!-- soak: integration/soak.py writes this section -->", "<!-- /soak -->"
BASE_TS = 450_000_000_000_000_000


def worker_rss_sampler(stop: threading.Event, samples: list[tuple[float, int]]) -> threading.Thread:
    """Every second, the largest RSS among pyspark's Python workers (their command lines name pyspark.daemon)."""

    def sample():
        while not stop.wait(1.0):
            largest = 0
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    if b"pyspark.daemon" not in (entry / "cmdline").read_bytes():
                        continue
                    status = (entry / "status").read_text()
                except OSError:
                    continue
                for line in status.splitlines():
                    if line.startswith("VmRSS:"):
                        largest = max(largest, int(line.split()[1]) * 1024)
            samples.append((time.time(), largest))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    return thread


def run(args) -> dict:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    work = Path(tempfile.mkdtemp(prefix=f"ticdc-sink-soak-{os.getpid()}-"))
    spark = (SparkSession.builder.master("local[2,4]").appName("ticdc-sink-soak")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("OFF")  # the injected failures would fill the terminal with stack traces
    print(f"soak: writing the feed, {args.rows:,} rows in {args.batches} files", file=sys.stderr, flush=True)
    (spark.range(args.rows).select((F.lit(BASE_TS) + F.col("id")).alias("_commit_ts"),
                                   F.col("id").cast("long").alias("id"),
                                   F.concat(F.lit("name-"), F.col("id").cast("string")).alias("name"))
     .repartitionByRange(args.batches, "_commit_ts").sortWithinPartitions("_commit_ts")
     .write.parquet(str(work / "feed")))
    schema = spark.read.parquet(str(work / "feed")).schema
    rate, seed = args.failure_rate, random.randrange(1 << 30)
    failures = work / "failures"  # one file per failed attempt
    failures.mkdir()
    failures_path = str(failures)

    def keep(key, draws={}):
        from pyspark import TaskContext

        context = TaskContext.get()
        attempt = context.taskAttemptId()
        if attempt not in draws:  # one draw per task attempt: whether it fails, and at which keys
            chance = random.Random(f"{seed}-{attempt}")
            draws[attempt] = (chance.random() < rate, chance.randrange(1000))
        fails, at = draws[attempt]
        if fails and key % 1000 == at:
            open(os.path.join(failures_path, str(context.taskAttemptId())), "w").close()
            raise RuntimeError("soak: injected task failure")
        return True

    failing = F.udf(keep, T.BooleanType(), useArrow=False).asNondeterministic()
    topic = f"soak-{uuid.uuid4().hex[:8]}"
    options = {"kafka.bootstrap.servers": args.bootstrap_servers, "topic": topic, "protocol": "canal-json",
               "database": "shop", "table": "orders", "primary-key": "id", "partition": "index-value",
               "partition-num": "3", "order-check": "off"}
    stop, rss = threading.Event(), []
    worker_rss_sampler(stop, rss)
    started = time.time()
    query = (spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(work / "feed"))
             .repartition(2, "id").filter(failing(F.col("id")))
             .writeStream.format("ticdc").options(**options).option("checkpointLocation", str(work / "chk"))
             .trigger(availableNow=True).start())
    while query.isActive:
        query.awaitTermination(30)
        progress = query.lastProgress
        if progress:
            print(f"soak: micro-batch {progress['batchId'] + 1} of {args.batches} committed, "
                  f"{time.time() - started:.0f} s", file=sys.stderr, flush=True)
    stop.set()
    if query.exception() is not None:
        raise SystemExit(f"soak: the query failed: {str(query.exception()).splitlines()[0]}")
    elapsed = time.time() - started
    # Spark keeps the last 100 progress reports: the count comes from the last batch id, the times from those kept.
    batches = max(p["batchId"] for p in query.recentProgress if p["numInputRows"]) + 1
    times = [p["durationMs"]["triggerExecution"] / 1000 for p in query.recentProgress if p["numInputRows"]]
    spark.stop()
    counts = read_back(args, topic)
    return {"rows": args.rows, "batches": batches, "elapsed": elapsed, "times": times, "rss": rss,
            "lost": counts["lost"], "duplicates": counts["duplicates"], "read": counts["read"],
            "failed_attempts": len(list(failures.iterdir())), "failure_rate": rate}


def read_back(args, topic: str) -> dict:
    """Every key of the topic, read_committed, counted."""
    import numpy as np

    from ticdc_sink.kafka.topic_reader import iter_messages

    seen = np.zeros(args.rows, dtype=np.uint8)
    read = 0
    for message in iter_messages(args.bootstrap_servers, topic, idle_seconds=5, expect=args.rows,
                                 settings={"isolation.level": "read_committed"}):
        value = message.value()
        at = value.find(b'"data":[{"id":"') if value else -1  # a row's first column, as a string in Canal-JSON
        if at < 0:
            continue  # a watermark
        start = at + len(b'"data":[{"id":"')
        seen[int(value[start:value.index(b'"', start)])] += 1
        read += 1
    return {"read": read, "lost": int((seen == 0).sum()), "duplicates": int(seen[seen > 1].sum() - (seen > 1).sum())}


def verdict(figures: dict) -> tuple[list[str], list[str]]:
    """The report's lines, and the requirements that failed."""
    rss = [value for _, value in figures["rss"]]
    tenth = max(1, len(rss) // 10)
    early, late = max(rss[tenth:2 * tenth] or rss), max(rss[-tenth:])
    times = figures["times"]
    middle = statistics.median(times)
    late_median = statistics.median(times[-max(1, len(times) // 10):])
    lines = [
        f"- {figures['rows']:,} rows in {figures['batches']} micro-batches, exactly-once, Canal-JSON, 3-node "
        f"Apache Kafka (RF 3, min ISR 2), Spark `local[2,4]`: {figures['elapsed']:.0f} s, "
        f"{figures['rows'] / figures['elapsed']:,.0f} rows/s",
        f"- task attempts failed on purpose: {figures['failed_attempts']} (each attempt failed with probability "
        f"{figures['failure_rate']:.0%}, at a random row after the sink had sent rows)",
        f"- read back read_committed: {figures['read']:,} rows; lost {figures['lost']}, duplicates "
        f"{figures['duplicates']}",
        f"- peak Python worker RSS: {early / 2**20:.0f} MB in the second tenth of the run, {late / 2**20:.0f} MB in "
        f"the last tenth",
        f"- time per micro-batch ({len(times)} timed): median {middle:.2f} s, last tenth's median {late_median:.2f} s, "
        f"slowest "
        f"{max(times):.2f} s (a batch with a failed attempt pays its retry)",
    ]
    failed = []
    if figures["lost"] or figures["duplicates"]:
        failed.append("rows lost or duplicated")
    if late > early * 1.10:
        failed.append("worker RSS grew")
    if late_median > middle * 1.5:
        failed.append("batches got slower")
    return lines, failed


def write_section(results: Path, lines: list[str], command: str) -> None:
    text = results.read_text() if results.exists() else ""
    section = "\n".join([SECTION_START, "## Soak", "", f"`{command}`, {time.strftime('%Y-%m-%d')}:", "", *lines,
                         SECTION_END])
    if SECTION_START in text:
        before, rest = text.split(SECTION_START, 1)
        text = before + section + rest.split(SECTION_END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    results.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python integration/soak.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--failure-rate", type=float, default=0.01)
    parser.add_argument("--bootstrap-servers", help="an existing cluster (default: start three Kafka nodes)")
    parser.add_argument("--results", type=Path, default=HERE.parent / "bench" / "RESULTS.md")
    args = parser.parse_args(argv)
    command = "python integration/soak.py " + " ".join(argv if argv is not None else sys.argv[1:])
    cluster = None
    if args.bootstrap_servers is None:
        sys.path.insert(0, str(HERE))
        from kafka_server import KafkaCluster

        cluster = KafkaCluster(3).start()
        args.bootstrap_servers = cluster.bootstrap_servers
    try:
        figures = run(args)
    finally:
        if cluster is not None:
            cluster.stop()
        for work in Path(tempfile.gettempdir()).glob(f"ticdc-sink-soak-{os.getpid()}-*"):
            shutil.rmtree(work, ignore_errors=True)
    lines, failed = verdict(figures)
    print("\n".join(lines))
    write_section(args.results, lines, command.strip())
    if failed:
        print(f"soak: FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
