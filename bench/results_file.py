"""RESULTS.md as a file of sections: a run of one section replaces it and keeps the others (the soak's among
them), and every run makes the five-line summary under the title again from the tables the file then holds."""

from __future__ import annotations

import re
from pathlib import Path

from common import TITLES
from read_report import READ_SECTION_START

SOAK_SECTION = "<!-- soak: integration/soak.py writes this section -->"  # soak.py's SECTION_START
SUMMARY_START, SUMMARY_END = "<!-- summary: bench/run.py writes it from the tables below -->", "<!-- /summary -->"


def kept_soak_section(output: Path) -> str:
    """The Soak section integration/soak.py wrote into ``output``: a new benchmark run keeps it."""
    existing = output.read_text() if output.exists() else ""
    return "\n" + existing[existing.index(SOAK_SECTION):] if SOAK_SECTION in existing else ""


def kept_section(existing: str, start: str, end: str) -> str:
    """The section of ``existing`` between ``start`` and ``end``, markers included, to follow a run's new ones
    (``--no-reads`` keeps the read section so); empty where it has none."""
    if start not in existing or end not in existing:
        return ""
    return "\n" + start + existing.partition(start)[2].partition(end)[0] + end + "\n"


def with_section(existing: str, section: str, start: str, end: str) -> str:
    """``existing`` results with ``section`` in place of the one between ``start`` and ``end`` (else before the
    Soak section, else last): a run of one section keeps every other."""
    if start in existing and end in existing:
        head, _, rest = existing.partition(start)
        return head + section + rest.partition(end + "\n")[2]
    if SOAK_SECTION in existing:
        head, _, soak = existing.partition(SOAK_SECTION)
        return head + section + "\n" + SOAK_SECTION + soak
    return (existing or "# Benchmark results\n") + "\n" + section


def with_summary(text: str) -> str:
    """``text`` with its five-line summary (the ranges across protocols, and the caveats) under the title, made
    again from the tables it holds: whichever sections the run rewrote, the summary matches them."""
    if SUMMARY_START in text and SUMMARY_END in text:
        head, _, rest = text.partition(SUMMARY_START)
        text = head.rstrip("\n") + "\n" + rest.partition(SUMMARY_END + "\n")[2]
    lines = summary_lines(text)
    if not lines:
        return text
    title, _, body = text.partition("\n")
    return f"{title}\n\n" + "\n".join([SUMMARY_START, *lines, SUMMARY_END]) + "\n\n" + body.lstrip("\n")


def summary_lines(text: str) -> list[str]:
    """The summary's lines, each a range read back from the tables of ``text`` (none for a missing section; the
    embedded broker's Spark-to-Kafka table, beside real Kafka's, is left out)."""
    text = re.sub(r"^## Spark to Kafka on the embedded broker .*?(?=^## |\Z)", "", text, flags=re.S | re.M)
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith("| ") and not line.startswith("| what |")]

    def values(column: int, cells: int, chosen) -> list[float]:
        """The number in ``column`` of the table rows of ``cells`` cells whose first cell is ``chosen``."""
        return [float(re.sub(r"[^\d.]", "", r[column])) for r in rows
                if len(r) == cells and chosen(r[0]) and re.search(r"\d", r[column])]

    def ratios(comparison: str) -> list[float]:
        return values(1, 3, lambda name: name.endswith(comparison) or f": {comparison}" in name)

    def span(numbers: list[float], form: str) -> str:
        low, high = form.format(min(numbers)), form.format(max(numbers))
        return low if low == high else f"{low} to {high}"

    lines = []
    encoders = values(3, 6, lambda name: name.startswith("ticdc-sink ") and "," not in name)
    by_hand = ratios("encode vs hand-written encode")
    if encoders and by_hand:
        lines.append(f"- **Encoding, one core:** the sink's encoders run {span(encoders, '{:,.0f}')} rows/s, "
                     f"{span(by_hand, '{:.1f}x')} a hand-written encoder of the same messages.")
    written = values(3, 6, lambda name: name.startswith("ticdc-sink ") and name.endswith(", at-least-once"))
    bare = ratios("at-least-once vs bare producer limit")
    jobs = ratios("at-least-once vs hand-written foreachPartition")
    transactions = ratios("exactly-once vs at-least-once (the cost of transactions)")
    if written and bare and jobs and transactions:
        spark = re.search(r"## Spark to Kafka \((local\[\d+\])\)", text)
        kafka_sink = ratios("exactly-once vs Spark's Kafka sink")
        beside = (f" On Canal-JSON, exactly-once runs {span(kafka_sink, '{:.2f}x')} Spark's Kafka sink writing "
                  "Canal-JSON-shaped values." if kafka_sink else "")
        lines.append(f"- **Spark to Kafka{', ' + spark[1] if spark else ''}:** {span(written, '{:,.0f}')} rows/s "
                     "at-least-once, "
                     f"{span(jobs, '{:.1f}x')} a hand-written foreachPartition producer and {span(bare, '{:.2f}')} "
                     f"of the bare producer's best (the limit); exactly-once runs at {span(transactions, '{:.2f}')} "
                     "of at-least-once." + beside)
    protocols = set(TITLES.values())
    reads = values(2, 4, protocols.__contains__) + values(3, 4, protocols.__contains__)
    sources = [(r[0], r[2]) for r in rows if len(r) == 6 and r[0].startswith("Spark Kafka source")]
    if reads:
        beside = " and ".join(f'{ratio} "{source}"' for source, ratio in sources)
        lines.append(f"- **Reading into Spark:** {span(reads, '{:,.0f}')} rows/s per protocol"
                     + (f"; on Canal-JSON the reader runs {beside}." if beside else "."))
    writing = [float(r[5].split()[0]) for r in rows
               if len(r) == 6 and r[0].startswith("peak worker RSS ") and r[5].endswith(" MB")]
    reading = [float(r[4].split()[0]) for r in rows
               if len(r) == 5 and r[0].startswith("peak worker RSS reading") and r[4].endswith(" MB")]
    if writing:
        lines.append(f"- **Memory:** a Python worker's peak RSS over one large partition is "
                     f"{span(writing, '{:.0f} MB')} writing" + (f", {span(reading, '{:.0f} MB')} reading." if reading
                                                               else "."))
    if not lines:  # a file of other sections only (a partial run's): nothing to sum up
        return []
    writes = text.partition(READ_SECTION_START)[0]
    machine = re.search(r"Machine: (\d+) cores", writes)
    broker = ("the embedded Tansu broker (in memory), not Apache Kafka" if "Broker: the embedded Tansu broker" in writes
              else "one node of Apache Kafka on loopback (and, in a table of their own, to the embedded broker)"
              if "Broker: Apache Kafka" in writes else "the Kafka its section names")
    lines.append(f"- **Caveats:** a {machine[1] + '-core ' if machine else ''}machine that Spark, its Python workers "
                 f"and the broker share; the writes went to {broker}, with a test double for Avro's registry; each "
                 "section names its own run. Compare the ratios, not the rows/s; the targets missed are listed "
                 "below, with why.")
    return lines
