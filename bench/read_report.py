"""The read section of RESULTS.md, which ``--read-only`` rewrites alone between its markers: the reader's rows/s
per protocol, its ratios to the Canal-JSON baselines against their targets, its memory and its profile."""

from __future__ import annotations

from common import CORES, Result, package_revision, title
from reads import FROM_JSON, PYTHON_UDF, READ_RSS_PROTOCOL, READ_TURNS, READER, ReadRuns
from report import command_text, find_result, machine, now_text, per_row, verdict

READ_TARGETS = {FROM_JSON: 2.0, PYTHON_UDF: 5.0}  # the reader (schema inferred) vs each, on Canal-JSON
FLAT_GROWTH = 0.10  # the reader's peak RSS is flat when 5x the rows grow it by less
READ_SECTION_START = "<!-- read: bench/run.py --read-only rewrites this section -->"
READ_SECTION_END = "<!-- /read -->"


def revision_change(started: str) -> str:
    """What the reader became during the reads, if it changed."""
    now = package_revision()
    return "" if now == started else f" when the reads began, {now} when they ended"


def read_ratio(reads: list[Result], schema: str, baseline: Result) -> float:
    """The reader's rows/s on Canal-JSON (schema ``inferred`` or ``given``) over a baseline's."""
    reader = find_result(reads, "read", f"{READER} canal-json, {schema} schema")
    return reader.rows_per_second / baseline.rows_per_second


def read_tables(results: list[Result], args) -> list[str]:
    """Per protocol the reader's rows/s; Canal-JSON's baselines, the reader's ratios to them and their targets."""
    reads = [r for r in results if r.section == "read"]
    lines = ["| protocol | rows | ticdc reader, schema inferred: rows/s | schema given: rows/s |",
             "|---|---:|---:|---:|"]
    for protocol in args.protocols:
        inferred = find_result(reads, "read", f"{READER} {protocol}, inferred schema")
        given = find_result(reads, "read", f"{READER} {protocol}, given schema")
        lines.append(f"| {title(protocol)} | {inferred.rows:,} | {inferred.rows_per_second:,.0f} | "
                     f"{given.rows_per_second:,.0f} |")
    baselines = [r for r in reads if r.name in READ_TARGETS]
    if baselines:
        lines += ["", "| Canal-JSON read by | rows/s | the reader's ratio to it, schema inferred | schema given | "
                      "target | verdict |", "|---|---:|---:|---:|---:|---|"]
        for baseline in baselines:
            inferred, given = (read_ratio(reads, schema, baseline) for schema in ("inferred", "given"))
            goal = READ_TARGETS[baseline.name]
            lines.append(f"| {baseline.name} | {baseline.rows_per_second:,.0f} | {inferred:.2f}x | {given:.2f}x | "
                         f"{goal:g}x | {'' if args.small else verdict(inferred, goal)} |")
    lines += ["", "| what | rows | seconds | rows/s | note |", "|---|---:|---:|---:|---|"]
    lines += [f"| {r.name} | {r.rows:,} | {r.seconds:.2f} | {r.rows_per_second:,.0f} | {r.note} |" for r in reads]
    return lines + [""]


def read_memory_table(results: list[Result], args) -> list[str]:
    """The worker's peak RSS at a fifth of the partition and at all of it, and whether it stayed flat."""
    runs = [r for r in results if r.section == "read-memory"]
    lines = ["| what | rows | seconds | rows/s | peak RSS |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {r.name} | {r.rows:,} | {r.seconds:.2f} | {r.rows_per_second:,.0f} | {r.note} |" for r in runs]
    first, last = (float(r.note.split()[0]) for r in (runs[0], runs[-1]))
    growth = (last - first) / first
    goal = "" if args.small else (f"{'met' if growth < FLAT_GROWTH else 'missed'} (flat: under "
                                  f"{FLAT_GROWTH * 100:.0f}% more)")
    return lines + ["", f"From {runs[0].rows:,} rows to {runs[-1].rows:,} the peak went from {first:.0f} MB to "
                        f"{last:.0f} MB ({growth * 100:+.0f}%). {goal}".rstrip(), ""]


def read_missed_targets(results: list[Result]) -> list[str]:
    """Per missed read target: the ratio, and where each job's CPU went per row."""
    def cpu_per_row(r: Result) -> str:
        busy = sum(r.cpu.values()) / r.seconds / CORES * 100
        return ", ".join(f"{kind} {per_row(r, kind):.1f}" for kind in ("Python", "JVM", "broker")) + \
            f" ({busy:.0f}% of the cores busy)"

    reader = find_result(results, "read", f"{READER} canal-json, inferred schema")
    notes = []
    for name, goal in READ_TARGETS.items():
        baseline = find_result(results, "read", name)
        if reader and baseline and reader.rows_per_second < goal * baseline.rows_per_second:
            notes.append(f"- Canal-JSON, the reader (schema inferred) vs {name}: "
                         f"{reader.rows_per_second / baseline.rows_per_second:.2f}x, not {goal:g}x: "
                         f"{goal * baseline.rows_per_second:,.0f} rows/s would be. CPU µs per row, the reader's "
                         f"job: {cpu_per_row(reader)}; the baseline's: {cpu_per_row(baseline)}.")
    return ["Targets missed:", "", *notes, ""] if notes else []


def read_section(reads: ReadRuns, args, registry_name: str | None) -> str:
    """The section a ``--read-only`` run rewrites, between its markers."""
    import pyspark

    served = "" if reads.kafka_source.endswith(f":{pyspark.__version__}") else (
        f"; Maven Central has none for pyspark {pyspark.__version__} yet: the newest it has")
    registry = f" Schema Registry: {registry_name}." if registry_name else ""
    turns = 1 if args.small else READ_TURNS
    lines = [
        READ_SECTION_START, "## Reading TiCDC topics into Spark", "",
        f"Measured by `{command_text()}` on {now_text()}, "
        f"{reads.revision}{revision_change(reads.revision)}. Machine: {machine()}. Broker: {reads.broker}.{registry}",
        "",
        f"Each protocol's topic holds the feed ({args.rows:,} row changes) as the sink writes it with the bench's "
        "options (`feed.sink_options`) and `enable-tidb-extension=true` (commit ts and ops): in "
        f"{CORES} partitions, each in commit order (`order_changes`), a watermark last. The reader "
        "(`spark.read.format(\"ticdc\")`) takes the same options but `database`, `table` and `partition`, naming "
        f"the topic; its whole DataFrame goes to Spark's `noop` sink (`local[{CORES}]`, one task per Kafka "
        "partition), `load()` included in the time: it infers the schema from the topic's first row, or reads "
        "nothing when given it (`.schema(...)`). The baselines read the same Canal-JSON topic with Spark's Kafka "
        f"source (`{reads.kafka_source}`, `spark.jars.packages`{served}) in the same session, into the "
        "same columns (op, commit ts, database, table, each column in its Spark type, an update's old row; "
        "`read_baselines.py`): `from_json` with a hand-written schema; a Python UDF with `json.loads` and a tuple "
        "per row built by hand (no `mapInArrow` or `mapInPandas` version is measured). Every read gave "
        "the feed's rows (checked). " + (f"Each row is the median of {turns} turns in rotation (Canal-JSON's after a "
                                     "warm-up turn)." if turns > 1 else "Each row is one run."),
        "",
        *read_tables(reads.results, args),
        *([] if args.small else read_missed_targets(reads.results)),
        "### Memory", "",
        f"The reader over one partition of {args.rss_rows:,} {title(READ_RSS_PROTOCOL)} rows, a fresh session each "
        "(`ending-offsets` stops the first read early): the peak RSS of Spark's Python workers.", "",
        *read_memory_table(reads.results, args),
        "### Where the reader's time goes", "",
        *[line for protocol, (speeds, profile) in reads.outside_spark.items() for line in (
            f"{title(protocol)} outside Spark, in one process, {speeds} Its cProfile over the same messages (a run "
            "of its own), by cumulative time:", "", "```", profile.rstrip(), "```", "")],
        READ_SECTION_END,
    ]
    return "\n".join(lines) + "\n"
