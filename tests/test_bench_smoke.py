"""The benchmark harness in its small mode, so that it cannot rot (no assertion about speed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from limits import NATIVE_BATCH, PRODUCE_CALLS  # noqa: E402

SMOKED = (("canal-json", "Canal-JSON", "json.dumps"), ("avro", "Avro", "AvroSerializer"),
          ("debezium", "Debezium", "json.dumps"))  # protocol, title, the hand-written baseline's serializer


@pytest.mark.spark
@pytest.mark.broker
def test_the_harness_runs_every_measurement_and_writes_its_table(tmp_path):
    output = tmp_path / "RESULTS.md"
    # Three protocols: a JSON one with a dict-per-row baseline, Avro through the registry, and Debezium's own
    # baseline check; the others take the same paths through the harness.
    protocols = ",".join(protocol for protocol, _, _ in SMOKED)
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--small", "--output", str(output),
                           "--data-dir", str(tmp_path / "data"), "--protocols", protocols],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    table = output.read_text()
    own_call = PRODUCE_CALLS[NATIVE_BATCH if NATIVE_BATCH in PRODUCE_CALLS else "produce"]
    for line in ("| Spark noop sink (input limit) |", "Machine: ", f"The sink produces with {own_call}",
                 "| Python sink that drops its input (bench-drain) |", "## Where a row's CPU goes (one task)",
                 *(f"| bare producer canal-json, {call}, 1 process |" for call in PRODUCE_CALLS.values())):
        assert line in table, line
    for protocol, title, serializer in SMOKED:
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
    assert "Schema Registry: the package's in-process TEST DOUBLE" in table
    assert "## Claim-check (one core)" in table and "| ticdc-sink canal-json, enable-tidb-extension, claim-check" in table
    summary = table.partition("<!-- summary:")[2].partition("<!-- /summary -->")[0]
    assert [line.split(":**")[0] for line in summary.strip().splitlines()[1:]] == [
        "- **Encoding, one core", f"- **Spark to Kafka, local[{os.cpu_count()}]", "- **Memory", "- **Caveats"]  # --small: no reads


def test_the_summary_is_made_from_the_tables_and_made_again_in_place():
    from results_file import with_summary

    results = (ROOT / "bench" / "RESULTS.md").read_text()
    summary = results.partition("<!-- summary:")[2].partition("<!-- /summary -->")[0].strip().splitlines()[1:]
    assert len(summary) == 5 and results.startswith("# Benchmark results\n\n<!-- summary:")
    assert with_summary(results) == results
    encode = next(line for line in results.splitlines() if line.startswith("| ticdc-sink canal-json | "))
    rows = encode.split(" | ")[1]
    faster = with_summary(results.replace(encode, f"| ticdc-sink canal-json | {rows} | 0.10 | 99,999,999 | 1.0 | |"))
    assert "rows/s" in summary[0] and " to 99,999,999 rows/s" in faster


def test_each_missed_target_is_explained_with_the_figures_that_measured_it(monkeypatch):
    import report
    from common import Result
    from limits import BARE
    from report import missed_targets

    monkeypatch.setattr(report, "CORES", 2)
    rows = 1_000_000
    results = [
        Result("encode", "ticdc-sink canal-json", rows, 4.0),  # 4 µs/row
        Result("encode", "hand-written canal-json, dict per row + json.dumps", rows, 20.0),  # 5x, not 10x
        Result("stages", "canal-json", 300_000, 1.0, stages={"input": 1.5, "encode": 2.5}),
        Result("e2e", f"{BARE} canal-json, produce, 1 process", rows, 5.0,
               cpu={"Python": 4.0, "JVM": 0.0, "broker": 5.0}),  # the limit: 200,000 rows/s
        Result("e2e", "ticdc-sink canal-json, at-least-once", rows, 10.0, note="n-alo",
               cpu={"Python": 12.0, "JVM": 4.0, "broker": 4.0}),  # 0.5 of the limit
        Result("e2e", "ticdc-sink canal-json, exactly-once", rows, 20.0, note="n-eo",
               cpu={"Python": 12.0, "JVM": 4.0, "broker": 4.0}),  # 0.5 of at-least-once
        Result("memory", "peak worker RSS canal-json, one partition of 5,000,000 rows", 5 * rows, 60.0,
               note="612 MB"),
    ]

    text = "\n".join(missed_targets(results, ["canal-json"]))

    assert text.startswith("## Targets missed, and why")
    assert "Canal-JSON, encode only: 5.00x, not 10x. The sink spends 4.00 µs/row, the hand-written encoder " \
           "20.00; 10x needs at most 2.00, 50% less than today." in text
    assert "the input contract takes 1.5 µs/row and the encoder 2.5" in text
    # 0.8 of 200,000 rows/s = 160,000 rows/s: 12.5 µs/row on two cores, of which JVM and broker take 8.0
    assert "100,000 rows/s, 0.50 of the limit (200,000" in text
    assert "12.0 µs of Python, 4.0 of the Spark JVM and 4.0 of the broker" in text
    assert "4.0 µs/row in its process (librdkafka included) and 5.0 in the broker" in text
    assert "the cores allow 12.5 µs of CPU per row; the JVM and the broker take 8.0 of it, so Python would " \
           "have to fit in 4.5 µs/row, where it takes 12.0" in text
    assert "Canal-JSON, exactly-once: 0.50 of at-least-once, not 0.9 (n-eo; at-least-once: n-alo)" in text
    assert "peak worker RSS canal-json, one partition of 5,000,000 rows: 612 MB, not under 500 MB." in text
    met = [r for r in results if r.section != "memory"]
    met[0] = Result("encode", "ticdc-sink canal-json", rows, 1.0)
    assert "encode only" not in "\n".join(missed_targets(met, ["canal-json"]))


def test_the_stage_table_notes_what_sharing_the_cores_costs(monkeypatch):
    import report
    from common import Result
    from limits import BARE
    from report import shared_cores_note

    monkeypatch.setattr(report, "CORES", 2)
    results = [Result("e2e", f"{BARE} canal-json, produce, 1 process", 1_000_000, 5.0,
                      cpu={"Python": 4.0, "JVM": 0.0, "broker": 3.0}),
               Result("e2e", f"{BARE} canal-json, produce, 2 processes", 1_000_000, 5.0,
                      cpu={"Python": 6.0, "JVM": 0.0, "broker": 3.0})]

    text = "\n".join(shared_cores_note(results))

    assert "canal-json, produce spent 4.0 µs/row of CPU (Python and librdkafka) in one process and 6.0 in 2 " \
           "at once (1.50x)" in text
    assert shared_cores_note(results[:1]) == []


def test_a_turned_protocols_limit_is_the_median_of_its_turns_not_a_lucky_comparison_run(monkeypatch):
    import limits
    from common import Result

    seconds = iter([1.0, 2.0, 3.0, 4.0][:len(PRODUCE_CALLS)]  # the comparison: the first call is the fastest
                   + [5.0, 9.0, 5.0, 9.0, 7.0, 7.0] + [8.0] * 2)  # canal-json's turns (1 then CORES processes), avro

    def run(bootstrap_servers, protocol, path, rows, registry, call, processes):
        return Result("e2e", f"{limits.BARE} {protocol}, {limits.PRODUCE_CALLS[call]}, "
                             f"{limits.processes_text(processes)}", 1_000_000, next(seconds))

    monkeypatch.setattr(limits, "bare_producer", run)
    monkeypatch.setattr(limits, "CORES", 2)
    monkeypatch.setattr(limits, "say", lambda text: None)
    monkeypatch.setattr("common.say", lambda text: None)
    results = limits.bare_producer_runs("kafka:9092", ["canal-json", "avro"], ROOT, 1_000_000, None, 3,
                                        ("canal-json",))
    assert [r.name.endswith(limits.CHOOSING) for r in results].count(True) == len(PRODUCE_CALLS)
    limit = limits.bare_limit(results, "canal-json")
    assert limit.seconds == 5.0  # 1 process: 5, 5, 7 -> 5 s; 2 processes: 9, 9, 7 -> 9 s; not the compared 1 s
    assert limit.name.endswith("1 process") and "median of 3 turns (5.00, 5.00, 7.00 s)" in limit.note
    assert limits.bare_limit(results, "avro").seconds == 8.0


def test_a_run_without_reads_keeps_the_read_section_it_did_not_measure():
    from read_report import READ_SECTION_END, READ_SECTION_START
    from results_file import kept_section

    results = (ROOT / "bench" / "RESULTS.md").read_text()
    kept = kept_section(results, READ_SECTION_START, READ_SECTION_END)
    assert kept.startswith("\n" + READ_SECTION_START + "\n## Reading TiCDC topics into Spark\n")
    assert kept.endswith(READ_SECTION_END + "\n") and kept.strip() in results
    assert "Measured by `python bench/run.py" in kept  # the section names its own run
    assert kept_section("# Benchmark results\n", READ_SECTION_START, READ_SECTION_END) == ""
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--no-reads", "--read-only"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "exclude each other" in done.stderr


def test_the_claim_check_section_is_rewritten_alone(tmp_path):
    output = tmp_path / "RESULTS.md"
    output.write_text("# Benchmark results\n\n## Encode only (one core)\n\nkept\n")
    for _ in range(2):  # a second run replaces the section the first one added
        done = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--small", "--claim-check-only",
                               "--output", str(output), "--data-dir", str(tmp_path / "data")],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    table = output.read_text()
    assert table.startswith("# Benchmark results\n\n## Encode only (one core)\n\nkept\n")
    assert table.count("## Claim-check (one core)") == 1
    assert "kept every row whole: one object per row" in table and "| ticdc-sink canal-json, enable-tidb-extension |" in table
