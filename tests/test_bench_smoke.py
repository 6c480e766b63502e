"""The benchmark harness in its small mode, so that it cannot rot (no assertion about speed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.broker]

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from baselines import PRODUCE_CALLS  # noqa: E402


def test_the_harness_runs_every_measurement_and_writes_its_table(tmp_path):
    output = tmp_path / "RESULTS.md"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--small", "--output", str(output),
                           "--data-dir", str(tmp_path / "data")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    table = output.read_text()
    for line in ("| Spark noop sink (input limit) |", "Machine: ",
                 "| Python sink that drops its input (bench-drain) |", "## Where a row's CPU goes (one task)",
                 *(f"| bare producer canal-json, {call}, 1 process |" for call in PRODUCE_CALLS.values())):
        assert line in table, line
    for protocol, title, serializer in (("canal-json", "Canal-JSON", "json.dumps"),
                                        ("open-protocol", "Open Protocol", "json.dumps"),
                                        ("avro", "Avro", "AvroSerializer"),
                                        ("debezium", "Debezium", "json.dumps")):
        for line in (f"| ticdc-sink {protocol} |", f"| hand-written {protocol}, dict per row + {serializer} |",
                     f"| bare producer {protocol},", f"| ticdc-sink {protocol}, at-least-once |",
                     f"| ticdc-sink {protocol}, exactly-once |",
                     f"| hand-written foreachPartition {protocol}, dict per row + {serializer} |",
                     f"| {title}: encode vs hand-written encode ({serializer}) |",
                     f"| {title}: end-to-end at-least-once vs bare producer limit |",
                     f"| {title}: exactly-once vs at-least-once",
                     f"| {title}: end-to-end at-least-once vs hand-written foreachPartition |",
                     f"cProfile of the {title} encode-only run", f"| {title} | ",
                     f"| peak worker RSS {protocol}, one partition of 20,000 rows |"):
            assert line in table, line
    assert "The hand-written Avro messages (AvroSerializer) equal the sink's byte for byte" in table
    assert "The hand-written Debezium messages (json.dumps" in table
    assert ") equal the sink's byte for byte, keys and values with their schemas" in table
    assert "Schema Registry: the tests' in-process TEST DOUBLE" in table
