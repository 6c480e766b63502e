"""The documented streaming programs, run as written: docs/usage.md's write (a folder of JSON files to Kafka,
stopped and restarted from its checkpoint) and docs/reading.md's read (a topic to Parquet files, stopped).

They run in a process of their own, as a user runs them, so that what they print on stderr is what a user
sees: Spark's WARN lines, no error and no traceback.  Only the broker, the topics and the embedded broker's
isolation level are swapped in; the read example's topic is filled with the demo's changes first, as
docs/reading.md says to (by one batch write, not the demo's three micro-batches).

    python tests/test_documented_streams.py BOOTSTRAP_SERVERS ISOLATION WRITE_TOPIC READ_TOPIC
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.broker]

DOCS = Path(__file__).resolve().parents[1] / "docs"
DOCUMENTED_SERVERS, DOCUMENTED_ISOLATION = "127.0.0.1:9092", "read_uncommitted"


def documented_block(document: str, heading: str) -> str:
    section = (DOCS / document).read_text().split(f"## {heading}\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def swapped(block: str, servers: str, isolation: str, topic_from: str, topic_to: str) -> str:
    for documented in (DOCUMENTED_SERVERS, DOCUMENTED_ISOLATION, f'"{topic_from}"'):
        assert documented in block, f"the documented block no longer has {documented!r}"
    return block.replace(DOCUMENTED_SERVERS, servers).replace(DOCUMENTED_ISOLATION, isolation) \
        .replace(f'"{topic_from}"', f'"{topic_to}"')


def fill_with_the_demo(spark, servers: str, topic: str) -> None:
    """The demo's changes to shop.orders, written as the demo writes them (in one batch)."""
    from ticdc_sink.cli.demo import DEMO_COLUMN_TYPES, DEMO_OPTIONS, demo_feed, demo_schema

    changes = spark.createDataFrame([change for batch in demo_feed() for change in batch], demo_schema())
    changes.coalesce(1).write.format("ticdc").mode("append").options(**DEMO_OPTIONS).options(**{
        "kafka.bootstrap.servers": servers, "protocol": "canal-json", "topic": topic, "database": "shop",
        "table": "orders", "primary-key": "id", "column-types": DEMO_COLUMN_TYPES}).save()


def main(servers: str, isolation: str, write_topic: str, read_topic: str) -> None:
    write = swapped(documented_block("usage.md", "A streaming query, end to end"), servers, isolation,
                    "shop_orders_stream", write_topic)
    exec(compile(write, str(DOCS / "usage.md"), "exec"), {})
    print("--- the read", flush=True)
    from pyspark.sql import SparkSession

    fill_with_the_demo(SparkSession.getActiveSession(), servers, read_topic)
    read = swapped(documented_block("reading.md", "A streaming read, end to end"), servers, isolation,
                   "tidb_shop_orders", read_topic)
    exec(compile(read, str(DOCS / "reading.md"), "exec"), {})


def shown_rows(text: str) -> list[list[str]]:
    """The rows of a DataFrame.show() table, each cell stripped."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[1:]]


@pytest.fixture(scope="module")
def documented_runs(broker, tmp_path_factory):
    write_topic, read_topic = f"documented-write-{os.getpid()}", f"documented-read-{os.getpid()}"
    run = subprocess.run([sys.executable, __file__, broker.bootstrap_servers, broker.isolation, write_topic,
                          read_topic], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYSPARK_PYTHON": sys.executable,
                              "TMPDIR": str(tmp_path_factory.mktemp("documented-streams"))})
    assert run.returncode == 0, run.stderr[-4000:]
    written, read = run.stdout.split("--- the read\n")
    return {"written": shown_rows(written), "read": shown_rows(read), "stderr": run.stderr,
            "write_topic": [json.loads(m.value()) for m in broker.read(write_topic)]}


def test_the_streaming_write_sends_each_change_once_across_its_restart(documented_runs):
    assert documented_runs["written"] == [
        ["INSERT", "450000000000000000", "1", "new", "NULL"],
        ["INSERT", "450000000000000001", "2", "new", "NULL"],
        ["UPDATE", "450000000000000002", "1", "paid", "{1, new}"],
        ["DELETE", "450000000000000003", "2", "new", "NULL"],
    ]
    rows = [m for m in documented_runs["write_topic"] if m["data"]]  # the topic itself: no row twice
    assert sorted((m["_tidb"]["commitTs"], m["type"]) for m in rows) == [
        (450000000000000000, "INSERT"), (450000000000000001, "INSERT"), (450000000000000002, "UPDATE"),
        (450000000000000003, "DELETE")]


def test_the_streaming_read_writes_the_demos_changes_in_commit_order(documented_runs):
    read = documented_runs["read"]
    assert [r[0] for r in read] == ["INSERT"] * 5 + ["UPDATE", "UPDATE", "INSERT", "DELETE", "UPDATE", "DDL"]
    assert [r[3] for r in read] == ["new"] * 5 + ["paid", "paid", "new", "new", "shipped", "NULL"]
    assert read[0][4] == "10.50"


def test_the_stopped_queries_leave_no_error_on_stderr(documented_runs):
    troubles = [line for line in documented_runs["stderr"].splitlines()
                if re.search(r"\bERROR\b|Traceback|Exception", line)]
    assert troubles == []


if __name__ == "__main__":
    main(*sys.argv[1:])
