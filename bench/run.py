"""The benchmark harness: the sink against what users would otherwise run, on the same data, in one run.

    python bench/run.py                 # the full run (1M-row feed, 5M-row partition for memory)
    python bench/run.py --small         # seconds: the CI smoke run, no verdicts about speed
    python bench/run.py --encode-only --protocols avro   # one protocol's encoders only, no broker or Spark
    python bench/run.py --encode-only --protocols debezium --rows 100000
    python bench/run.py --read-only     # only the reads: rewrites that section of bench/RESULTS.md, keeps the rest
    python bench/run.py --no-reads      # all but the reads: rewrites the rest, keeps the read section

Measures, on the standard change feed (``feed.py``):
  - encode-only rows/s and MB/s of every implemented protocol's encoder, and of
    the hand-written per-row encoder of the same messages (dict + json.dumps /
    orjson.dumps, confluent-kafka's AvroSerializer or fastavro, ``handwritten.py``;
    each first checked to write the sink's messages);
  - the bare output limit per protocol: its pre-encoded messages, in the
    partitions the sink gives them, produced by bare confluent-kafka loops
    with the fastest of the produce calls (compared first), in one process and
    in one per core;
  - the CPU per row of each stage of one task (receive, input contract,
    dispatch, encode, produce), by the task's own clock;
  - Spark jobs over the feed, per protocol: ``format("ticdc")`` in each delivery
    mode and the hand-written ``foreachPartition`` producer; Spark's own Kafka
    sink (``format("kafka")``) fed by ``to_json`` expressions that build
    Canal-JSON- and Debezium-shaped values (``spark_kafka_sink.py``); and Spark's
    ``noop`` sink (the input limit). On real Kafka (``integration/kafka_server.py``,
    unless ``--bootstrap-servers``), with the limits; then the sink's jobs and the
    limits again on the embedded broker, in a table of their own. ``--small``
    writes to the embedded broker only, without Spark's Kafka sink, unless with
    ``--spark-kafka-sink``;
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
This file is the entry point; each kind of measurement has a module of its own
(``bench/README.md`` lists them).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the bench's modules, which are no package

from claim_check import CLAIM_CHECK_SECTION_END, CLAIM_CHECK_SECTION_START, claim_check_section  # noqa: E402
from common import BENCH, Result, read_feed, say, schema_registry, title  # noqa: E402
from encode import ENCODE_TURNS, encode_runs  # noqa: E402
from feed import BENCHED, write_feed  # noqa: E402
from handwritten_checks import (CHECK_ROWS, avro_target, check_avro_baseline, check_debezium_baseline,  # noqa: E402
                                check_simple_baseline)
from read_report import READ_SECTION_END, READ_SECTION_START, read_section  # noqa: E402
from reads import read_runs  # noqa: E402
from report import report_text  # noqa: E402
from results_file import kept_section, kept_soak_section, with_section, with_summary  # noqa: E402
from spark_to_kafka import output_runs  # noqa: E402


def protocol_list(text: str) -> list[str]:
    """``--protocols``: protocols (``simple-avro``: Simple in Avro), separated by commas."""
    protocols = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in protocols if p not in BENCHED]
    if unknown or not protocols:
        raise argparse.ArgumentTypeError(f"expected some of {', '.join(BENCHED)}, got {text!r}")
    return protocols


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
    parser.add_argument("--no-reads", action="store_true",
                        help="every section but the reads (which name their own run): they replace those of --output "
                             "and its read section stays")
    parser.add_argument("--claim-check-only", action="store_true",
                        help="only the claim-check section (encode-only, no broker): it replaces that section of "
                             "--output and keeps the others")
    parser.add_argument("--spark-kafka-sink", action="store_true",
                        help="with --small: the Spark-to-Kafka runs on real Kafka beside Spark's Kafka sink, then on "
                             "the embedded broker, as a complete run makes them (Java and Maven Central needed); "
                             "the smoke run otherwise writes to the embedded broker only")
    parser.add_argument("--output", type=Path,
                        help="default: bench/RESULTS.md for a complete run, bench/.data/PARTIAL.md for any other")
    parser.add_argument("--data-dir", type=Path, default=BENCH / ".data")
    args = parser.parse_args(argv)
    if sum((args.read_only, args.encode_only, args.claim_check_only, args.no_reads)) > 1:
        parser.error("--read-only, --encode-only, --claim-check-only and --no-reads exclude each other")
    if args.small:
        args.rows, args.rss_rows = min(args.rows, 20_000), min(args.rss_rows, 20_000)
    if args.output is None:  # only a complete run replaces the committed results
        complete = (not (args.small or args.encode_only or args.claim_check_only) and args.rows == 1_000_000
                    and args.rss_rows == 5_000_000 and args.protocols == list(BENCHED))
        args.output = BENCH / "RESULTS.md" if complete else args.data_dir / "PARTIAL.md"
    return args


def encode_turns(args) -> int:
    """Encode-only turns per run: one in the smoke run, which makes no verdicts."""
    return 1 if args.small else ENCODE_TURNS


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
        protocol_results, profiles[protocol] = encode_runs(table, protocol, registry, avro, encode_turns(args))
        results += protocol_results
    del table
    broker_name, e2e_broker, kafka_sink = "none (--encode-only)", None, None
    if not args.encode_only:
        output = output_runs(args, path, registry, avro)
        results += output.results
        checks += output.checks
        broker_name, e2e_broker, kafka_sink = output.broker, output.e2e_broker, output.kafka_sink
    services = f"Broker: {broker_name}." + (f" Schema Registry: {registry_name}." if registry_name else "")
    claim_check = ""
    if "canal-json" in args.protocols:
        say("encode-only canal-json with claim-check to a local directory")
        claim_check = "\n" + claim_check_section(read_feed(path), turns=encode_turns(args))
    reads = "\n" + read_text if read_text else ""
    return report_text(results, args, profiles, services, checks, e2e_broker, kafka_sink) + claim_check + reads


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    say(f"writing the feed ({args.rows:,} rows) to {args.data_dir}")
    path = write_feed(args.data_dir / f"feed-{args.rows}.parquet", args.rows)
    existing = args.output.read_text() if args.output.exists() else ""
    with schema_registry(args) as (registry, registry_name):
        # The reads first: Spark's Kafka source is on the classpath only of a JVM its session starts.
        reading = args.read_only or not (args.small or args.encode_only or args.claim_check_only or args.no_reads)
        read_text = read_section(read_runs(args, path, registry), args, registry_name) if reading else ""
        if args.claim_check_only:  # one section replaced, the others kept
            shown = claim_check_section(read_feed(path), turns=encode_turns(args))
            text = with_section(existing, shown, CLAIM_CHECK_SECTION_START, CLAIM_CHECK_SECTION_END)
        elif args.read_only:
            shown = read_text
            text = with_section(existing, shown, READ_SECTION_START, READ_SECTION_END)
        else:
            shown = measured_report(args, path, registry, registry_name, read_text)
            if args.no_reads:
                shown += kept_section(existing, READ_SECTION_START, READ_SECTION_END)
            text = shown + kept_soak_section(args.output)
    args.output.write_text(with_summary(text))
    print(shown)
    say(f"written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
