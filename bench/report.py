"""The write-side report: the encode-only, Spark-to-Kafka and memory tables of RESULTS.md, the ratios against the
targets, and for each missed target what the measured costs leave of a way to meet it; with the helpers every
section's text uses (the command, the machine, the verdicts)."""

from __future__ import annotations

import os
import platform
import sys
import time

import pyarrow as pa
from common import CORES, TOPIC_PARTITIONS, Result, title
from handwritten import STANDARD_SERIALIZER
from limits import BARE, NATIVE_BATCH, PRODUCE_CALLS, bare_limit, processes_text
from spark_kafka_sink import BASELINE_SHAPE, SHAPES, baseline_name
from spark_to_kafka import DRAIN, E2E_TURNS, EMBEDDED, STAGE_ROWS, TURNED

from ticdc_sink.kafka import native_produce
from ticdc_sink.sink.costs import LIBRDKAFKA, STAGES

# Each protocol's encode-only vs its hand-written encode step (STANDARD_SERIALIZER): 10x for the JSON protocols,
# 5x where the hand-written one has a compiled serialiser (Avro's AvroSerializer, Simple's fastavro).
ENCODE_TARGETS = {"canal-json": 10.0, "open-protocol": 10.0, "debezium": 10.0, "simple": 10.0, "avro": 5.0,
                  "simple-avro": 5.0}
# End-to-end at-least-once vs the bare producer limit, where a target is set.
OUTPUT_TARGETS = {"canal-json": 0.8, "open-protocol": 0.8}
TRANSACTIONS_TARGET = 0.9  # exactly-once vs at-least-once
# Exactly-once end to end on real Kafka vs Spark's Kafka sink writing the shape it is held against: (target,
# stretch); and vs the limit (receive plus produce, ``receive_and_produce``).
KAFKA_SINK_TARGETS = {"canal-json": (1.0, 1.3)}
LIMIT_TARGETS = {"canal-json": 0.85}
LIMIT = "the limit (receive plus produce)"
RSS_TARGET_MB = 500
WORKER = "worker outside the task"


def command_text() -> str:
    return " ".join(["python", "bench/run.py", *sys.argv[1:]])


def now_text() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def machine() -> str:
    import pyspark

    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    import confluent_kafka

    return (f"{CORES} cores ({cpu}), {memory:.0f} GiB; Python {platform.python_version()}, "
            f"pyspark {pyspark.__version__}, pyarrow {pa.__version__}, "
            f"confluent-kafka {confluent_kafka.version()[0]} (librdkafka {confluent_kafka.libversion()[0]}); "
            + ("ticdc-sink-native installed: the sink hands each batch to librdkafka in one call "
               "(native-producer=auto), but in the runs named native-producer=off, and every encoder joins its text "
               "with the package's C join, in those runs too" if native_produce.installed()
               else "ticdc-sink-native not installed: a produce() call per message, and Arrow's text join"))


def verdict(value: float, target: float) -> str:
    if value >= target:
        return f"met ({value:.2f} >= {target:g})"
    return f"missed by {(1 - value / target) * 100:.0f}% ({value:.2f} < {target:g})"


def result_table(results: list[Result]) -> list[str]:
    """The results as a table with rows/s and MB/s (an empty cell where no size was measured)."""
    lines = ["| what | rows | seconds | rows/s | MB/s | note |", "|---|---:|---:|---:|---:|---|"]
    for r in results:
        mb = f"{r.megabytes / r.seconds:.1f}" if r.megabytes else ""
        lines.append(f"| {r.name} | {r.rows:,} | {r.seconds:.2f} | {r.rows_per_second:,.0f} | {mb} | {r.note} |")
    return lines


def find_result(results: list[Result], section: str, name: str, exact: bool = True) -> Result | None:
    """The first result of ``section`` named ``name`` (or, not ``exact``, whose name starts with it)."""
    return next((r for r in results if r.section == section and (r.name == name if exact else
                                                                  r.name.startswith(name))), None)


def report_text(results: list[Result], args, profiles: dict[str, str], services: str, checks: list[str],
                e2e_broker: str | None = None, kafka_sink: str | None = None) -> str:
    """Every section of a run but claim-check and the reads, from the title to the encoders' profiles
    (``e2e_broker``: the broker of the Spark-to-Kafka table; ``kafka_sink``: the package of Spark's Kafka sink,
    where it was measured)."""
    def find(section: str, name: str, exact: bool = True) -> Result | None:
        return find_result(results, section, name, exact)

    def target(value: float, goal: float) -> str:
        return "" if args.small else verdict(value, goal)

    lines = [
        "# Benchmark results",
        "",
        f"Produced by `{command_text()}` on {now_text()}.",
        "",
        f"Machine: {machine()}. {services}",
        "",
        f"Feed: {args.rows:,} row changes of one 14-column table (`bench/feed.py`: every integer width, "
        "BIGINT UNSIGNED, DECIMAL, DOUBLE, VARCHAR, TEXT, VARBINARY, DATE, DATETIME(3), TIMESTAMP(6), JSON, "
        "10% NULLs; 80% inserts, 15% updates with old values, 5% deletes). Avro with the TiDB extension "
        "(`_tidb_op`, `_tidb_commit_ts`, `_tidb_commit_physical_time`), Debezium too (`tidb_type`, the source "
        "schema's `commit_ts` and `cluster_id`, watermarks).",
        "",
        *[line for check in checks for line in (check, "")],
    ]
    for section, title_text in (("encode", "Encode only (one core)"), ("e2e", f"Spark to Kafka (local[{CORES}])"),
                                (EMBEDDED, f"Spark to Kafka on the embedded broker (local[{CORES}])"),
                                ("memory", "Memory")):
        chosen = [r for r in results if r.section == section]
        if not chosen:
            continue
        lines += [f"## {title_text}", ""]
        if section == "e2e" and e2e_broker:
            lines += [f"On {e2e_broker}."
                      + (" MB/s: the messages' values, at the bytes per row of the feed's first rows (below)."
                         if any(r.megabytes for r in chosen) else ""), ""]
        lines += [*result_table(chosen), ""]
        if section == "e2e":
            lines += kafka_sink_table(results, args.protocols, kafka_sink, args.small)
        elif section == EMBEDDED:
            lines += embedded_table(results, args.protocols)

    lines += ["## Ratios and targets", "", "| comparison | ratio | target |", "|---|---:|---|"]
    noop = find("e2e", "Spark noop", exact=False)
    for protocol in args.protocols:
        name = title(protocol)
        sink = find("encode", f"ticdc-sink {protocol}")
        prefix = f"hand-written {protocol}, dict per row + "
        for hand in (r for r in results if r.section == "encode" and r.name.startswith(prefix)):
            serializer = hand.name[len(prefix):]
            if sink:
                ratio = sink.rows_per_second / hand.rows_per_second
                goal = target(ratio, ENCODE_TARGETS[protocol]) if serializer == STANDARD_SERIALIZER[protocol] else ""
                lines.append(f"| {name}: encode vs hand-written encode ({serializer}) | {ratio:.2f}x | {goal} |")
        alo = find("e2e", f"ticdc-sink {protocol}, at-least-once")
        eo = find("e2e", f"ticdc-sink {protocol}, exactly-once")
        bare = bare_limit(results, protocol)
        handwritten_job = find("e2e", f"hand-written foreachPartition {protocol},", exact=False)
        if alo and bare:
            ratio = alo.rows_per_second / bare.rows_per_second
            lines.append(f"| {name}: end-to-end at-least-once vs bare producer limit | {ratio:.2f} | "
                         f"{target(ratio, OUTPUT_TARGETS[protocol]) if protocol in OUTPUT_TARGETS else ''} |")
        if eo and alo:
            ratio = eo.rows_per_second / alo.rows_per_second
            lines.append(f"| {name}: exactly-once vs at-least-once (the cost of transactions) | {ratio:.2f} | "
                         f"{target(ratio, TRANSACTIONS_TARGET)} |")
        if alo and handwritten_job:
            lines.append(f"| {name}: end-to-end at-least-once vs hand-written foreachPartition | "
                         f"{alo.rows_per_second / handwritten_job.rows_per_second:.2f}x | |")
        if alo and noop:
            lines.append(f"| {name}: end-to-end at-least-once vs Spark noop (input limit) | "
                         f"{alo.rows_per_second / noop.rows_per_second:.2f} | |")
        spark_sink = find("e2e", baseline_name(BASELINE_SHAPE[protocol]))
        if eo and spark_sink and protocol in KAFKA_SINK_TARGETS:
            ratio, (goal, stretch) = eo.rows_per_second / spark_sink.rows_per_second, KAFKA_SINK_TARGETS[protocol]
            verdicts = "" if args.small else f"{target(ratio, goal)}; stretch {stretch:g}: {target(ratio, stretch)}"
            lines.append(f"| {name}: exactly-once vs Spark's Kafka sink ({SHAPES[BASELINE_SHAPE[protocol]]}-shaped "
                         f"values) | {ratio:.2f}x | {verdicts} |")
        limit = receive_and_produce(results, protocol)
        if eo and limit and protocol in LIMIT_TARGETS:
            ratio = eo.rows_per_second / limit
            lines.append(f"| {name}: exactly-once vs {LIMIT} | {ratio:.2f} | "
                         f"{target(ratio, LIMIT_TARGETS[protocol])} |")
    for memory in (r for r in results if r.section == "memory"):
        peak = float(memory.note.split()[0])
        goal = "" if args.small else f"{'met' if peak < RSS_TARGET_MB else 'missed'} (< {RSS_TARGET_MB} MB)"
        lines.append(f"| {memory.name} | {peak:.0f} MB | {goal} |")
    lines.append("")
    if noop:
        lines += ["The CPU notes of the Spark jobs add up the CPU seconds of the Python workers, the Spark JVM and "
                  "the broker during each job: near 100% of the cores means the job is bound by CPU, shared by all "
                  "three on this machine.", ""]
    if any(r.name.startswith(BARE) for r in results):
        own = NATIVE_BATCH if NATIVE_BATCH in PRODUCE_CALLS else "produce"
        lines += [f"The sink produces with {PRODUCE_CALLS[own]}, whichever call the bare producer found "
                  "fastest: a task may report only rows the broker acknowledged, and its order check compares the "
                  "offsets each task's messages landed at, which only a delivery counted per message carries (with "
                  "failure reports only, librdkafka reports no success, and so no offset, for any message). "
                  "`produce_batch()` takes a dict per message and reports each as `produce()` does.", ""]
    lines += stage_table(results, find("e2e", DRAIN))
    if not args.small:
        lines += missed_targets(results, args.protocols)
    lines += ["## Where the encoder's time goes", ""]
    for protocol, profile_text in profiles.items():
        lines += [f"cProfile of the {title(protocol)} encode-only run (a run of its own), by cumulative time:", "",
                  "```", profile_text.rstrip(), "```", ""]
    return "\n".join(lines)


def receive_and_produce(results: list[Result], protocol: str, section: str = "e2e") -> float | None:
    """The rows/s of the limit (receive plus produce): a sink that spent nothing on encoding would still receive
    the rows from Spark (the job whose Python sink drops them, ``DRAIN``) and produce the protocol's messages (the
    bare producer's best, ``bare_limit``); one after the other, a row costs the sum of the two times."""
    drain, bare = find_result(results, section, DRAIN), bare_limit(results, protocol, section)
    if not (drain and bare):
        return None
    return 1 / (1 / drain.rows_per_second + 1 / bare.rows_per_second)


def value_bytes(result: Result | None) -> str:
    """A job's message value bytes per row (``megabytes`` holds them for the rows), else an empty cell."""
    return f"{result.megabytes * 1e6 / result.rows:,.0f}" if result and result.megabytes else ""


def kafka_sink_table(results: list[Result], protocols: list[str], package: str | None, small: bool) -> list[str]:
    """Per protocol, the sink's jobs against Spark's Kafka sink writing the shape the protocol is held against and
    against the limit (receive plus produce), with the bytes of both sides' values; then what was compared."""
    def find(name: str) -> Result | None:
        return find_result(results, "e2e", name)

    def ratio(ours: Result | None, theirs: float | None, form: str) -> str:
        return form.format(ours.rows_per_second / theirs) if ours and theirs else ""

    rows = []
    for protocol in protocols:
        shape = BASELINE_SHAPE[protocol]
        spark_sink = find(baseline_name(shape))
        if spark_sink is None:
            continue
        limit = receive_and_produce(results, protocol)
        alo, eo = (find(f"ticdc-sink {protocol}, {delivery}") for delivery in ("at-least-once", "exactly-once"))
        rows.append(f"| {title(protocol)} | {SHAPES[shape]}-shaped | {value_bytes(alo)} | {value_bytes(spark_sink)} | "
                    f"{spark_sink.rows_per_second:,.0f} | {f'{limit:,.0f}' if limit else ''} | "
                    + " | ".join(f"{r.rows_per_second:,.0f} | {ratio(r, spark_sink.rows_per_second, '{:.2f}x')} | "
                                 f"{ratio(r, limit, '{:.2f}')}" if r else " | | " for r in (alo, eo)) + " |")
    if not rows:
        return []
    untuned, tuned = find(baseline_name("canal-json", tuned=False)), find(baseline_name("canal-json"))
    defaults = (f" With the Java producer's defaults (linger.ms=0, batch.size=16 KiB) the Canal-JSON-shaped job ran "
                f"{untuned.rows_per_second:,.0f} rows/s, {untuned.rows_per_second / tuned.rows_per_second:.2f} of "
                "the tuned one." if untuned and tuned else "")
    turned = ", ".join(title(p) for p in TURNED if p in protocols)
    turns = (f" {turned}'s sink jobs, its Spark Kafka sink job and both halves of its limit (the drain job, the bare "
             f"producer's runs with the fastest call) are the medians of {E2E_TURNS} turns taken in rotation; the "
             "other jobs ran once." if turned and not small else "")
    return [
        "### The sink beside Spark's Kafka sink", "",
        "| protocol | held against | value bytes per row: the sink | Spark's Kafka sink | Spark's Kafka sink rows/s "
        f"| {LIMIT} rows/s | at-least-once rows/s | vs Spark's Kafka sink | vs the limit | exactly-once rows/s | "
        "vs Spark's Kafka sink | vs the limit |",
        "|---|---|" + "---:|" * 10,
        *rows, "",
        f"Spark's Kafka sink: `df.write.format(\"kafka\")` from {package or 'spark-sql-kafka'}, fed by Spark SQL "
        "expressions only (no Python UDF; `bench/spark_kafka_sink.py`) over the same cached feed: "
        "`to_json(struct(...))` of a Canal-JSON-shaped value (id, database, table, pkNames, isDdl, type from `_op`, "
        "es from `_commit_ts >> 18`, ts, sql, sqlType and mysqlType maps, old, data with every column as text) "
        "keyed by the primary key's JSON, or of a Debezium-shaped one (payload with source, ts_ms, op, before and "
        "after typed as Debezium types them) with the schema's text appended by `concat`, as TiCDC's messages "
        "carry it (the key likewise). Not byte-equal to the sink's messages (Spark's JSON writer escapes less and "
        "writes numbers as Java does; the sink's Canal-JSON messages have no key, as TiCDC's have none) but, "
        "parsed, the same fields and values per row (the checks above). Each run writes to a topic of its own "
        f"made first, outside the timing, with the {TOPIC_PARTITIONS} partitions the sink gives its topics (the sink "
        "makes its own within its job); the producer runs with linger.ms=5, batch.size=1 "
        "MiB, acks=all and idempotence on, as the sink's librdkafka does (batches up to 1 MB, linger.ms=5)."
        + defaults,
        "",
        f"The limit (receive plus produce) is what a sink that spent nothing on encoding would still pay: receiving "
        "the rows from Spark (the job of the Python sink that drops its input, `bench-drain`) and producing the "
        "messages (the bare producer's best); one after the other, a row costs the sum of the two times, "
        "1 / (1 / receive rows/s + 1 / produce rows/s). Both run CPU-bound on shared cores, so it is a yardstick, "
        "not a ceiling." + turns,
        "",
    ]


def embedded_table(results: list[Result], protocols: list[str]) -> list[str]:
    """Per protocol on the embedded broker: the sink's rows/s in each mode against the bare producer's best."""
    lines = ["| protocol | at-least-once rows/s | exactly-once rows/s | bare producer limit rows/s | "
             "at-least-once vs bare producer limit |", "|---|---:|---:|---:|---:|"]
    for protocol in protocols:
        alo, eo = (find_result(results, EMBEDDED, f"ticdc-sink {protocol}, {delivery}")
                   for delivery in ("at-least-once", "exactly-once"))
        bare = bare_limit(results, protocol, EMBEDDED)
        if alo and eo and bare:
            lines.append(f"| {title(protocol)} | {alo.rows_per_second:,.0f} | {eo.rows_per_second:,.0f} | "
                         f"{bare.rows_per_second:,.0f} | {alo.rows_per_second / bare.rows_per_second:.2f} |")
    return lines + ["", "The same jobs and bare producers as above, run once each on the embedded broker (in "
                        "memory, Tansu), as the figures before Apache Kafka were measured.", ""]


def per_row(result: Result, kind: str) -> float:
    """Microseconds of ``kind``'s CPU per row of a measured run."""
    return result.cpu[kind] * 1e6 / result.rows


def cpu_split(result: Result) -> str:
    """A job's CPU µs per row by kind of process."""
    return ", ".join(f"{kind} {per_row(result, kind):.1f} µs" for kind in ("Python", "JVM", "broker"))


def budget_text(job: Result, wanted: float) -> str:
    """What the cores allow per row at ``wanted`` rows/s, and what ``job``'s JVM and broker leave of it to Python."""
    budget = CORES * 1e6 / wanted
    others, python = per_row(job, "JVM") + per_row(job, "broker"), per_row(job, "Python")
    busy = sum(job.cpu.values()) / job.seconds / CORES * 100
    if budget <= others:
        left = "more than the whole budget: no Python cost, however small, reaches the target on this machine"
    elif python > budget - others:
        left = f"the sink's Python would have to fit in {budget - others:.1f} µs/row, where it takes {python:.1f}"
    else:
        left = (f"the {budget - others:.1f} µs/row left would hold the sink's Python ({python:.1f}): the job was not "
                f"bound by CPU ({busy:.0f}% of the cores busy), its time went to waiting (fixed costs per job, the "
                "broker's acknowledgements)")
    return (f"At {wanted:,.0f} rows/s the {CORES} cores allow {budget:.1f} µs of CPU per row; the job's JVM and broker "
            f"take {others:.1f} of it, so {left}.")


def missed_targets(results: list[Result], protocols: list[str]) -> list[str]:
    """One paragraph per missed target: by how much, and what the measured costs leave of a way to meet it."""
    def find(section: str, name: str) -> Result | None:
        return find_result(results, section, name)

    notes = []
    for protocol in protocols:
        name, goal = title(protocol), ENCODE_TARGETS[protocol]
        sink = find("encode", f"ticdc-sink {protocol}")
        hand = find("encode", f"hand-written {protocol}, dict per row + {STANDARD_SERIALIZER[protocol]}")
        staged = find("stages", protocol)
        stages = staged.stages if staged else None
        if sink and hand and sink.rows_per_second < goal * hand.rows_per_second:
            ours, theirs = sink.seconds * 1e6 / sink.rows, hand.seconds * 1e6 / hand.rows
            in_task = (f" In a task, the input contract takes {stages['input']:.1f} µs/row and the encoder "
                       f"{stages['encode']:.1f}." if stages else "")
            notes.append(f"- {name}, encode only: {theirs / ours:.2f}x, not {goal:g}x. The sink spends {ours:.2f} "
                         f"µs/row, the hand-written encoder {theirs:.2f}; {goal:g}x needs at most "
                         f"{theirs / goal:.2f}, {(1 - theirs / goal / ours) * 100:.0f}% less than today.{in_task} "
                         "The encoder's profile below shows where its time goes.")
        alo = find("e2e", f"ticdc-sink {protocol}, at-least-once")
        eo = find("e2e", f"ticdc-sink {protocol}, exactly-once")
        bare = bare_limit(results, protocol)
        if protocol in OUTPUT_TARGETS and alo and alo.cpu and bare and bare.cpu:
            wanted = OUTPUT_TARGETS[protocol] * bare.rows_per_second
            if alo.rows_per_second < wanted:
                budget = CORES * 1e6 / wanted
                python, others = per_row(alo, "Python"), per_row(alo, "JVM") + per_row(alo, "broker")
                left = budget - others
                verdict_text = (f"so Python would have to fit in {left:.1f} µs/row, where it takes {python:.1f}"
                                if left > 0 else "more than the whole budget: no Python cost, however small, "
                                "reaches the target on this machine")
                notes.append(
                    f"- {name}, end to end at-least-once: {alo.rows_per_second:,.0f} rows/s, "
                    f"{alo.rows_per_second / bare.rows_per_second:.2f} of the limit ({bare.rows_per_second:,.0f}, "
                    f"{bare.name}); {OUTPUT_TARGETS[protocol]:g} of it is {wanted:,.0f} rows/s. The job is bound "
                    f"by CPU ({CORES} cores shared by all its processes) and spent, per row, {python:.1f} µs of "
                    f"Python, {per_row(alo, 'JVM'):.1f} of the Spark JVM and {per_row(alo, 'broker'):.1f} of the "
                    f"broker. The bare producer pays neither Spark nor the input: {per_row(bare, 'Python'):.1f} "
                    f"µs/row in its process (librdkafka included) and {per_row(bare, 'broker'):.1f} in the broker. "
                    f"At {wanted:,.0f} rows/s the cores allow {budget:.1f} µs of CPU per row; the JVM and the "
                    f"broker take {others:.1f} of it, {verdict_text}. The stage table above splits the Python part.")
        spark_sink = find("e2e", baseline_name(BASELINE_SHAPE[protocol]))
        if protocol in KAFKA_SINK_TARGETS and eo and eo.cpu and spark_sink and spark_sink.cpu:
            goal, stretch = KAFKA_SINK_TARGETS[protocol]
            missed = [g for g in (goal, stretch) if eo.rows_per_second < g * spark_sink.rows_per_second]
            if missed:
                wanted = missed[0] * spark_sink.rows_per_second
                which = "the stretch " if missed[0] == stretch else ""
                ratio = eo.rows_per_second / spark_sink.rows_per_second
                notes.append(
                    f"- {name}, exactly-once vs Spark's Kafka sink: {ratio:.2f}x, not {which}{missed[0]:g}x: "
                    f"{wanted:,.0f} rows/s would be, where it ran {eo.rows_per_second:,.0f} and Spark's Kafka sink "
                    f"{spark_sink.rows_per_second:,.0f}. CPU per row, the sink's job: {cpu_split(eo)}; Spark's Kafka "
                    f"sink's: {cpu_split(spark_sink)}. {budget_text(eo, wanted)}")
        limit = receive_and_produce(results, protocol)
        if protocol in LIMIT_TARGETS and eo and eo.cpu and limit \
                and eo.rows_per_second < LIMIT_TARGETS[protocol] * limit:
            wanted, drain = LIMIT_TARGETS[protocol] * limit, find("e2e", DRAIN)
            notes.append(
                f"- {name}, exactly-once vs {LIMIT}: {eo.rows_per_second / limit:.2f}, not "
                f"{LIMIT_TARGETS[protocol]:g}: {wanted:,.0f} rows/s would be, where it ran {eo.rows_per_second:,.0f}. "
                f"The limit, {limit:,.0f} rows/s, is receiving at {drain.rows_per_second:,.0f} rows/s (the drain "
                f"job) then producing at {bare.rows_per_second:,.0f} ({bare.name}). CPU per row, the sink's job: "
                f"{cpu_split(eo)}. {budget_text(eo, wanted)}")
        if eo and alo and eo.rows_per_second < TRANSACTIONS_TARGET * alo.rows_per_second:
            notes.append(f"- {name}, exactly-once: {eo.rows_per_second / alo.rows_per_second:.2f} of at-least-once, "
                         f"not {TRANSACTIONS_TARGET:g} ({eo.note}; at-least-once: {alo.note}).")
    for memory in (r for r in results if r.section == "memory"):
        if float(memory.note.split()[0]) >= RSS_TARGET_MB:
            notes.append(f"- {memory.name}: {memory.note}, not under {RSS_TARGET_MB} MB.")
    if not notes:
        return []
    return ["## Targets missed, and why", "", *notes, ""]


def stage_table(results: list[Result], drain: Result | None) -> list[str]:
    """Microseconds of CPU per row in each stage of a task, per protocol, beside the Spark job's own figure."""
    staged = [r for r in results if r.section == "stages"]
    if not staged:
        return []
    measured = {"receive": drain.stages["receive"], WORKER: per_row(drain, "Python") - drain.stages["receive"]
                } if drain else {WORKER: 0.0}
    columns = [WORKER, *STAGES, LIBRDKAFKA]
    lines = ["## Where a row's CPU goes (one task)", "",
             "| protocol | " + " | ".join(columns) + " | sum | Python workers in the Spark job, at-least-once |",
             "|---|" + "---:|" * (len(columns) + 2)]
    for r in staged:
        costs = {**r.stages, **measured}
        job = find_result(results, "e2e", f"ticdc-sink {r.name}, at-least-once")
        spark_python = f"{per_row(job, 'Python'):.1f}" if job and job.cpu else ""
        lines.append(f"| {title(r.name)} | " + " | ".join(f"{costs[c]:.1f}" for c in columns)
                     + f" | {sum(costs.values()):.1f} | {spark_python} |")
    lines += ["", "Microseconds of CPU per row. receive: the Python thread's CPU per row, taking the Arrow batches "
              "from Spark, in the tasks of a Spark job over the same feed whose sink drops them (`bench-drain`, "
              f"`drain.py`); {WORKER}: the rest of that job's Python worker CPU (starting workers, pyspark "
              "planning and committing the write), which any Python sink pays, mostly fixed per job and shown per "
              "row of the feed. The other stages: the task's own clock (`ticdc_sink/sink/costs.py`: the Python "
              "thread's CPU per stage; librdkafka: the process's other threads), running the sink's task pipeline in "
              f"the harness's process over the feed's first {STAGE_ROWS:,} rows in Arrow batches of 10,000, "
              "at-least-once to the broker. The last column is the whole job's Python worker CPU per row, to hold "
              "the sum against.", ""]
    return lines + shared_cores_note(results)


def shared_cores_note(results: list[Result]) -> list[str]:
    """Why the Spark job's Python CPU per row exceeds the one-task sum: the same work costs more CPU on shared
    cores, as the bare producer shows in one process and in one per core."""
    if CORES == 1:
        return []  # no bare run shares the core
    bare = {r.name: r for r in results if r.cpu and r.name.startswith(BARE)}
    for name, together in bare.items():
        run_of = name.removesuffix(f", {processes_text(CORES)}")
        alone = bare.get(f"{run_of}, {processes_text(1)}")
        if run_of != name and alone is not None:
            one, many = per_row(alone, "Python"), per_row(together, "Python")
            return [f"The one-task run has a core to itself; in the Spark job two tasks, the JVM and the broker "
                    f"share the {CORES} cores, and the same work then costs more CPU. The bare producer shows it on "
                    f"its own: {run_of[len(BARE) + 1:]} spent {one:.1f} µs/row of CPU (Python and librdkafka) in "
                    f"one process and {many:.1f} in {CORES} at once ({many / one:.2f}x).", ""]
    return []
