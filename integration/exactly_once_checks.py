"""The exactly-once checks the fault suites share: a change feed, the query that writes it, and its read-back.

The feed has ``KEYS`` keys, each with one change per micro-batch (an INSERT, then
UPDATEs), one Parquet file per micro-batch.  The query (exactly-once, Canal-JSON
with the TiDB extension) writes it in two Spark partitions by key.  After a
fault, every message is read back ``read_committed`` and counted by key: nothing
lost, nothing twice, each key's changes in commit order, and each micro-batch's
watermark once per Kafka partition.  ``Results`` keeps each fault's recovery and
what the user saw, for docs/delivery.md.

``test_faults.py`` runs the query in the suite's local Spark session;
``test_cluster_faults.py`` runs it on a standalone cluster through
``cluster_query.py``, a driver program of its own.
"""

from __future__ import annotations

import collections
import os
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pyspark.sql import functions as F
from pyspark.sql import types as T

KEYS = 1200
STEPS = ["INSERT", "UPDATE", "UPDATE", "UPDATE"]  # one per micro-batch
BASE_TS = 450_000_000_000_000_000
SCHEMA = T.StructType([T.StructField("_op", T.StringType()), T.StructField("_commit_ts", T.LongType()),
                       T.StructField("id", T.IntegerType()), T.StructField("step", T.IntegerType()),
                       T.StructField("pad", T.StringType())])
BROKER_TIMEOUT_MS = 10_000
# Small Arrow batches: the sink gets (and sends) rows while its task is still reading, so a fault at a row lands
# inside the task's transaction.
ARROW_BATCH_ROWS = 200
RESULTS = Path(__file__).parent / ".results"


@dataclass
class Run:
    """One faulted query: its topic, its transactional ids' prefix, and its folder (feed, checkpoint, fault files)."""

    tmp: Path
    topic: str
    prefix: str

    @property
    def feed(self) -> Path:
        return self.tmp / "feed"

    @property
    def checkpoint(self) -> Path:
        return self.tmp / "chk"

    @property
    def armed(self) -> Path:  # exists until the fault fires (once, whichever worker gets there)
        return self.tmp / "armed"

    @property
    def fired(self) -> Path:  # the time the fault fired
        return self.tmp / "fired"

    def fired_at(self) -> float:
        return float(self.fired.read_text())


def new_run(cluster, tmp_path: Path, partitions: int = 3) -> Run:
    """A run with a topic of its own (replicated on up to three of the cluster's nodes) and its feed written."""
    from confluent_kafka.admin import AdminClient, NewTopic

    run = Run(tmp_path, f"faults-{uuid.uuid4().hex[:10]}", f"faults-{uuid.uuid4().hex[:8]}")
    admin = AdminClient(cluster.client_settings)
    for future in admin.create_topics([NewTopic(run.topic, partitions, min(3, len(cluster.nodes)))]).values():
        future.result()
    write_feed(run.feed)
    return run


def write_feed(directory: Path) -> None:
    """One Parquet file per micro-batch, modified in step order: Spark's file source takes them oldest first."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_schema

    now = time.time()
    for step, op in enumerate(STEPS):
        columns = {"_op": [op] * KEYS, "_commit_ts": [BASE_TS + step * KEYS + key for key in range(KEYS)],
                   "id": list(range(KEYS)), "step": [step] * KEYS, "pad": ["x" * 400] * KEYS}
        path = directory / f"b={step}" / "part-0.parquet"
        path.parent.mkdir(parents=True)
        pq.write_table(pa.table(columns, schema=to_arrow_schema(SCHEMA)), path)
        os.utime(path, (now - len(STEPS) + step,) * 2)


def sink_options(cluster, run: Run, **extra) -> dict:
    return {"kafka.bootstrap.servers": cluster.bootstrap_servers, "topic": run.topic, "protocol": "canal-json",
            "enable-tidb-extension": "true", "database": "shop", "table": "orders", "primary-key": "id",
            "partition": "index-value", "transactional-id-prefix": run.prefix, "marker-topic": f"{run.topic}-markers",
            "broker-timeout-ms": str(BROKER_TIMEOUT_MS),
            # Both Spark partitions write to every Kafka partition, but each key stays in one Spark partition
            # (repartition by id), so its order holds; the suite checks that itself, key by key.
            "order-check": "off", **extra}


def start_query(spark, run: Run, options: dict, keep=None):
    """The feed's micro-batches (a file each) into the sink, ``availableNow``, in two Spark partitions by key;
    ``keep`` (a UDF of id and step) filters the rows before the sink, where a fault can fire."""
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).option("recursiveFileLookup", "true") \
        .parquet(str(run.feed)).repartition(2, "id")
    if keep is not None:
        stream = stream.filter(keep(F.col("id"), F.col("step")))
    return stream.writeStream.format("ticdc").options(**options) \
        .option("checkpointLocation", str(run.checkpoint)).trigger(availableNow=True).start()


def batch_committed_at(progress: list, batch_id: int) -> float:
    """When micro-batch ``batch_id`` committed (its trigger's start plus its duration), from a query's progress
    (``query.recentProgress``, or the same as JSON)."""
    for p in progress:
        if p["batchId"] == batch_id:
            started = datetime.strptime(p["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ") \
                .replace(tzinfo=timezone.utc).timestamp()
            return started + p["durationMs"]["triggerExecution"] / 1000
    raise AssertionError(f"micro-batch {batch_id} never committed: {[p['batchId'] for p in progress]}")


def watermark_of(step: int) -> int:
    """The watermark of a step's micro-batch: its highest commit ts."""
    return BASE_TS + (step + 1) * KEYS - 1


def read_back(cluster, run: Run, isolation: str = "read_committed") -> list:
    """Every message of the run's topic as a reader of ``isolation`` sees it, in partition and offset order."""
    from ticdc_sink.kafka.topic_reader import read_messages

    settings = {**cluster.client_settings, "isolation.level": isolation}
    settings.pop("bootstrap.servers")
    return read_messages(cluster.bootstrap_servers, run.topic, idle_seconds=3, expect=KEYS * len(STEPS),
                         settings=settings)


def assert_exactly_once_in_order(cluster, run: Run) -> int:
    """Every key's changes once each, in commit order within its partition, and each micro-batch's watermark once
    in every partition; returns the messages read."""
    from ticdc_sink.codec import decoder_for
    from ticdc_sink.codec.base import RowEvent, WatermarkEvent

    messages = read_back(cluster, run)
    decoder = decoder_for("canal-json")
    chains: dict[int, list[tuple[int, int]]] = collections.defaultdict(list)
    partition_of: dict[int, set[int]] = collections.defaultdict(set)
    watermarks: dict[int, list[int]] = collections.defaultdict(list)
    for message in messages:
        assert message.value() != b"zombie", "a fenced zombie's message became visible"
        for event in decoder.decode(message.key(), message.value()):
            if isinstance(event, RowEvent):
                key = int(event.columns["id"])
                chains[key].append((int(event.columns["step"]), event.commit_ts))
                partition_of[key].add(message.partition())
            elif isinstance(event, WatermarkEvent):
                watermarks[message.partition()].append(event.ts)
    lost = sorted(set(range(KEYS)) - set(chains))
    assert not lost, f"{len(lost)} keys lost, e.g. {lost[:5]}"
    repeated = {key: chain for key, chain in chains.items() if len(chain) != len(STEPS)}
    assert not repeated, f"{len(repeated)} keys with a change missing or twice, e.g. {list(repeated.items())[:3]}"
    for key, chain in chains.items():
        assert len(partition_of[key]) == 1, (key, partition_of[key])
        assert [step for step, _ in chain] == list(range(len(STEPS))), (key, chain)  # commit order
    each_batch = [watermark_of(step) for step in range(len(STEPS))]
    for partition in {message.partition() for message in messages}:
        assert watermarks[partition] == each_batch, (partition, watermarks[partition], each_batch)
    return len(messages)


class Results:
    """A suite's fault table (fault, recovery, what the user sees), written to ``.results/<name>.md`` for
    docs/delivery.md."""

    def __init__(self, name: str):
        self.path = RESULTS / f"{name}.md"
        self.rows: list[tuple[str, str, str, str]] = []

    def record(self, fault: str, recovery: str, seen: str) -> None:
        self.rows.append((fault, recovery, seen.replace("|", "\\|")[:300], "0 lost, 0 duplicates, in order"))

    def write(self) -> None:
        if self.rows:
            self.path.parent.mkdir(exist_ok=True)
            self.path.write_text("| fault | recovery | what the user sees | result |\n|---|---|---|---|\n"
                                 + "".join(f"| {' | '.join(row)} |\n" for row in self.rows))
