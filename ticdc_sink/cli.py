"""``python -m ticdc_sink demo|tail``: see the sink work, and read what it wrote.

``demo`` streams a synthetic change feed (inserts, updates with old values,
deletes and a DDL, in a few micro-batches) through Spark into Kafka (the
embedded broker unless ``--bootstrap-servers`` is given), reads the topic
back, decodes every message and prints it.  ``tail`` prints the decoded
events of any topic.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import sys
import tempfile
import time
from decimal import Decimal

from .codec import IMPLEMENTED_PROTOCOLS, decoder_for
from .codec.base import DDLEvent, RowEvent, WatermarkEvent
from .kafka_io import iter_messages, read_messages


def say(text: str) -> None:
    print(f"[ticdc-sink] {text}", flush=True)


def _show(value) -> str:
    if isinstance(value, (str, bytes)):
        return repr(value)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    return str(value)


def format_event(event) -> str:
    """One readable line per decoded event."""
    if isinstance(event, WatermarkEvent):
        return f"WATERMARK  ts={event.ts}"
    if isinstance(event, DDLEvent):
        return f"DDL {event.type:<9} {event.database}.{event.table}: {event.query} (commit ts {event.commit_ts})"
    assert isinstance(event, RowEvent)

    def row(values: dict) -> str:
        return "{" + ", ".join(f"{k}={_show(v)}" for k, v in values.items()) + "}"

    where = f"{event.database}.{event.table}"
    if event.type == "UPDATE" and event.old is not None:
        changed = {k: f"{_show(event.old.get(k))} -> {_show(v)}" for k, v in event.columns.items()
                   if k in event.old and event.old[k] != v}
        keys = {k: event.columns[k] for k in event.primary_keys}
        return f"UPDATE {where} {row(keys)} " + ", ".join(f"{k}: {c}" for k, c in changed.items())
    return f"{event.type:<6} {where} {row(event.columns)}"


def print_topic(bootstrap_servers: str, topic: str, protocol: str, idle_seconds: float,
                max_messages: int | None = None, in_partition_order: bool = False) -> int:
    """Decode and print a topic's messages; returns how many were read.

    Messages are printed as they arrive, or all at the end in partition order.
    """
    decoder = decoder_for(protocol)
    reader = read_messages if in_partition_order else iter_messages
    messages = reader(bootstrap_servers, topic, idle_seconds=idle_seconds, max_messages=max_messages)
    count = 0
    for message in messages:
        count += 1
        for event in decoder.decode(message.key(), message.value()):
            print(f"  p{message.partition()}@{message.offset():<4} {format_event(event)}", flush=True)
    return count


# ---------------------------------------------------------------------------
# demo

DEMO_DATABASE, DEMO_TABLE = "shop", "orders"


def demo_feed() -> list[list[dict]]:
    """Three micro-batches of changes to shop.orders, with commit timestamps that increase."""
    base = int(dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc).timestamp() * 1000) << 18

    def order(i: int, status: str, amount: str) -> dict:
        return {"id": i, "customer": f"customer-{i % 3}", "amount": Decimal(amount), "status": status,
                "updated_at": dt.datetime(2026, 1, 1, 12, i % 60, tzinfo=dt.timezone.utc)}

    def change(op: str, ts: int, row: dict | None, before: dict | None = None, ddl: str | None = None) -> dict:
        empty = dict.fromkeys(["id", "customer", "amount", "status", "updated_at"])
        return {"_op": op, "_commit_ts": base + ts, "_before": before, "_ddl": ddl, **(row or empty)}

    first = [change("INSERT", i, order(i, "new", f"{10 * i}.50")) for i in range(1, 6)]
    second = [change("UPDATE", 10 + i, order(i, "paid", f"{10 * i}.50"), before=order(i, "new", f"{10 * i}.50"))
              for i in (1, 2)]
    second.append(change("INSERT", 13, order(6, "new", "99.99")))
    third = [change("DELETE", 20, order(3, "new", "30.50")),
             change("UPDATE", 21, order(6, "shipped", "99.99"), before=order(6, "new", "99.99")),
             change("DDL", 22, None, ddl="ALTER TABLE orders ADD COLUMN note VARCHAR(64)")]
    return [first, second, third]


def demo_schema():
    from pyspark.sql import types as T

    # Nullable because the DDL row leaves the table columns empty; primary-key makes id NOT NULL anyway.
    columns = [
        T.StructField("id", T.IntegerType()),
        T.StructField("customer", T.StringType()),
        T.StructField("amount", T.DecimalType(10, 2)),
        T.StructField("status", T.StringType()),
        T.StructField("updated_at", T.TimestampType()),
    ]
    return T.StructType([
        T.StructField("_op", T.StringType()),
        T.StructField("_commit_ts", T.LongType()),
        T.StructField("_before", T.StructType(columns)),
        T.StructField("_ddl", T.StringType()),
        *columns,
    ])


def run_demo(protocol: str, bootstrap_servers: str | None, topic: str) -> int:
    from .broker import EmbeddedBroker

    broker = None
    if bootstrap_servers is None:
        say("starting the embedded Kafka broker (Tansu) ...")
        broker = EmbeddedBroker().start()
        bootstrap_servers = broker.bootstrap_servers
        say(f"broker ready at {bootstrap_servers}")
    workdir = tempfile.mkdtemp(prefix="ticdc-demo-")
    try:
        spark = _local_spark()
        schema = demo_schema()
        feed_dir = os.path.join(workdir, "feed")
        for number, batch in enumerate(demo_feed()):
            spark.createDataFrame(batch, schema).coalesce(1).write.parquet(os.path.join(feed_dir, f"batch={number}"))
        say(f"wrote a change feed of {sum(len(b) for b in demo_feed())} changes in 3 files; streaming it, "
            "one file per micro-batch")
        changes = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1) \
            .option("recursiveFileLookup", "true").parquet(feed_dir)
        query = (changes.writeStream.format("ticdc")
                 .option("kafka.bootstrap.servers", bootstrap_servers)
                 .option("protocol", protocol)
                 .option("topic", topic)
                 .option("database", DEMO_DATABASE)
                 .option("table", DEMO_TABLE)
                 .option("primary-key", "id")
                 .option("partition", "index-value")
                 .option("column-types", "status ENUM('new','paid','shipped')")
                 .option("enable-tidb-extension", "true")
                 .option("checkpointLocation", os.path.join(workdir, "checkpoint"))
                 .trigger(availableNow=True)
                 .start())
        reported = 0
        while query.isActive or reported < len(query.recentProgress):
            progress = query.recentProgress
            for p in progress[reported:]:
                say(f"micro-batch {p['batchId']}: {p['numInputRows']} change(s) written to Kafka")
            reported = len(progress)
            if not query.isActive:
                break
            time.sleep(0.5)
        query.awaitTermination()
        say(f"reading topic {topic!r} back and decoding it as {protocol}:")
        count = print_topic(bootstrap_servers, topic, protocol, idle_seconds=3, in_partition_order=True)
        say(f"{count} message(s) decoded")
        spark.stop()
        return 0 if count else 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if broker is not None:
            broker.stop()
            say("embedded broker stopped")


def _local_spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    say("starting a local Spark session ...")
    spark = (SparkSession.builder.master("local[2]").appName("ticdc-sink-demo")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# ---------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ticdc_sink", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="stream a synthetic change feed through Spark into Kafka and show it")
    demo.add_argument("--protocol", default="canal-json", choices=IMPLEMENTED_PROTOCOLS)
    demo.add_argument("--bootstrap-servers", help="an existing Kafka cluster (default: start the embedded broker)")
    demo.add_argument("--topic", default=f"ticdc-demo-{int(time.time())}")

    tail = commands.add_parser("tail", help="print the decoded events of a topic")
    tail.add_argument("--bootstrap-servers", required=True)
    tail.add_argument("--topic", required=True)
    tail.add_argument("--protocol", required=True, choices=IMPLEMENTED_PROTOCOLS)
    tail.add_argument("--idle-seconds", type=float, default=5.0,
                      help="stop after this long without a new message (default 5)")
    tail.add_argument("--max-messages", type=int, help="stop after this many messages")

    args = parser.parse_args(argv)
    if args.command == "demo":
        return run_demo(args.protocol, args.bootstrap_servers, args.topic)
    count = print_topic(args.bootstrap_servers, args.topic, args.protocol, args.idle_seconds, args.max_messages)
    say(f"{count} message(s) decoded")
    return 0
