"""``from_delta_cdf`` on a real Delta Lake table: its change data feed, written by the sink and read back, is the
table's history in commit order, and replays to the table Delta has at the end.

Delta's jars must be on Spark's classpath when its JVM starts, so the table, the write and the read run in a
process of their own (``delta_change_feed.py``); it fetches them from Maven Central the first time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from delta_change_feed import DELTA_FOR_SPARK, SPARK_LINE

pytestmark = [pytest.mark.spark, pytest.mark.broker]

PROGRAM = Path(__file__).with_name("delta_change_feed.py")

# Per version of the table (1 to 6, as delta_change_feed.change_the_table makes them): (op, id, status, old status).
HISTORY = [
    [("INSERT", 1, "new", None), ("INSERT", 2, "new", None), ("INSERT", 3, "new", None)],
    [("UPDATE", 1, "paid", "new")],
    [("DELETE", 2, "new", None)],
    [("UPDATE", 3, "shipped", "new"), ("INSERT", 4, "new", None)],                   # MERGE
    [("DELETE", 4, "new", None), ("INSERT", 5, "new", None)],                        # the key changed: split
    [("UPDATE", 3, "returned", "shipped")],                                          # replaceWhere: delete + insert
]


@pytest.fixture(scope="module")
def delta_feed(request):
    if SPARK_LINE not in DELTA_FOR_SPARK:
        pytest.skip(f"Delta Lake publishes no delta-spark for Spark {SPARK_LINE} (it builds for "
                    f"{', '.join(DELTA_FOR_SPARK)}); CI runs this test on pyspark 4.0")
    broker = request.getfixturevalue("broker")
    run = subprocess.run([sys.executable, str(PROGRAM), broker.bootstrap_servers, f"delta-cdf-{os.getpid()}",
                          broker.isolation], capture_output=True, text=True, timeout=900,
                         env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    if run.returncode and "unresolved dependency" in run.stderr:
        pytest.skip(f"Delta's jars could not be fetched from Maven Central: {DELTA_FOR_SPARK[SPARK_LINE]}")
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_the_feed_reads_back_as_the_tables_history_in_commit_order(delta_feed):
    changes = delta_feed["read_back"]
    by_version = [[(c["op"], c["id"], c["status"], c["before"]) for c in changes if c["commit_ts"] == ts]
                  for ts in dict.fromkeys(c["commit_ts"] for c in changes)]
    assert by_version == HISTORY
    assert changes[0]["amount"] == "10.00" and changes[-1]["amount"] == "30.00"


def test_the_commit_ts_is_each_versions_millisecond_and_grows_with_the_version(delta_feed):
    commit_ts = list(dict.fromkeys(c["commit_ts"] for c in delta_feed["read_back"]))
    assert commit_ts == sorted(set(commit_ts))
    latest = 0
    for version, ts in zip(delta_feed["versions"], commit_ts, strict=True):
        latest = max(latest, version["millis"])
        assert ts >> 18 == latest


def test_replaying_the_topic_gives_the_table_delta_has(delta_feed):
    replayed = {}
    for change in delta_feed["read_back"]:
        if change["op"] == "DELETE":
            del replayed[change["id"]]
        else:
            replayed[change["id"]] = {"id": change["id"], "status": change["status"], "amount": change["amount"]}
    assert [replayed[k] for k in sorted(replayed)] == delta_feed["table"]
