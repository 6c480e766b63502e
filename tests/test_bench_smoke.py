"""The benchmark harness in its small mode, so that it cannot rot (no assertion about speed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.broker]

ROOT = Path(__file__).resolve().parents[1]


def test_the_harness_runs_every_measurement_and_writes_its_table(tmp_path):
    output = tmp_path / "RESULTS.md"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--small", "--output", str(output),
                           "--data-dir", str(tmp_path / "data")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    table = output.read_text()
    for line in ("| ticdc-sink canal-json |", "| hand-written, dict per row + json.dumps |",
                 "| bare confluent-kafka loop", "| Spark noop sink (input limit) |",
                 "| ticdc-sink canal-json, at-least-once |", "| ticdc-sink canal-json, exactly-once |",
                 "| hand-written foreachPartition", "| peak worker RSS, one partition of 20,000 rows |",
                 "| exactly-once vs at-least-once", "Machine: ", "cProfile of the Canal-JSON encode-only run"):
        assert line in table, line
