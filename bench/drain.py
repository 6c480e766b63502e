"""``format("bench-drain")``: what receiving Spark's Arrow batches costs a Python sink, measured by one that
drops them. Kept apart from the rest of the bench: the Spark workers import it, and every import it made would
count in the job's worker CPU."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage


class DrainWriter(DataSourceArrowWriter):
    def __init__(self, report_dir: str):
        self.report_dir = report_dir

    def write(self, iterator) -> WriterCommitMessage:
        started, rows = time.thread_time(), 0
        for batch in iterator:
            rows += batch.num_rows
        seconds = time.thread_time() - started
        (Path(self.report_dir) / f"{uuid.uuid4().hex}.txt").write_text(f"{rows} {seconds}")
        return WriterCommitMessage()


class DrainDataSource(DataSource):
    """``format("bench-drain")``: a Python sink that takes Spark's Arrow batches and drops them.

    Each task writes the rows it took and its Python thread's CPU seconds in taking them to a file in
    the ``report-dir`` option's folder: what a task of the sink spends on receiving its input (the
    first stage of the per-stage costs), without the worker's start.
    """

    @classmethod
    def name(cls) -> str:
        return "bench-drain"

    def writer(self, schema, overwrite: bool) -> DrainWriter:
        return DrainWriter(self.options["report-dir"])


def drained(report_dir: Path) -> tuple[int, float]:
    """Rows and CPU seconds the drain's tasks reported in ``report_dir``."""
    reports = [path.read_text().split() for path in report_dir.glob("*.txt")]
    return sum(int(rows) for rows, _ in reports), sum(float(seconds) for _, seconds in reports)
