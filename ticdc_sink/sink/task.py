"""A task's path, on an executor: Arrow record batches -> Kafka, acknowledged (and committed) -> a ``TaskReport``.

Each record batch goes one way: the input contract makes it a ``ChangeBatch``
(``changes/``), the dispatcher gives every row its topic and partition
(``changes/dispatch.py``), the protocol's encoder makes the messages (``codec/``), and
the producer sends them (``kafka/``).  The driver's side of a write, once every
task reported, is ``driver.py``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Iterable

import pyarrow as pa

from ..changes.contract import ChangeBatch, ChangeBatchBuilder, InputLayout
from ..changes.dispatch import PartitionDispatcher, TopicRouter, route
from ..changes.key_updates import split_key_updates
from ..codec import Encoder, SendsTableSchemas, UsesSchemaRegistry, encoder_for, open_encoder
from ..config.sink import SinkConfig
from ..errors import ConfigError
from ..kafka.producer import KafkaOutput
from ..kafka.transactions import TransactionalOutput
from ..table.schema import TableSchema
from ..table.selectors import OPTION, ColumnSelection, parse_column_selectors
from .bootstrap import TaskBootstraps
from .costs import StageClock
from .report import TaskIdentity, TaskReport, task_spans

log = logging.getLogger(__name__)

PROGRESS_EVERY_ROWS = 500_000


@dataclass(frozen=True)
class WritePlan:
    """Everything a task needs, validated on the driver and shipped to executors."""

    config: SinkConfig
    layout: InputLayout
    job_id: str | None = None  # set for a batch (non-streaming) write: the names of its own job

    @classmethod
    def for_schema(cls, config: SinkConfig, spark_schema, job_id: str | None = None) -> "WritePlan":
        plan = cls(config, InputLayout.from_spark_schema(spark_schema, config), job_id)
        # Building the codec and dispatcher here surfaces their option errors before any task runs.
        encoder_for(config, plan.layout.table)
        PartitionDispatcher(config, plan.layout.table)
        selection = _column_selection(config, plan.layout.table)
        if selection is not None and not (plan.layout.has_schema or plan.layout.has_table):
            encoder_for(config, selection.table_for(config.database, config.table))
        return plan

    def write(self, batches: Iterable[pa.RecordBatch], task: TaskIdentity | None = None) -> TaskReport:
        """Write one task's record batches; returns only when Kafka acknowledged (and committed) all.

        In exactly-once mode the task's rows go in one transaction, committed with
        the batch id and the input row count.  An attempt whose input Spark cut
        short fails before it commits (``task_input.spark_batches``), but where
        that cannot be seen (outside pyspark's worker) such an attempt commits
        what it read.  So a marker of this batch left by an earlier attempt is
        trusted only as far as it can be checked: an earlier attempt that read at
        least as many input rows covered this one (Spark's replays give a
        partition the same rows, so this one is either the same or itself cut
        short), and this attempt's copy is discarded; one that read fewer was cut
        short, and this attempt commits every row, so the rows of that earlier
        attempt appear twice but none is lost.
        """
        config = self.config
        task = task or TaskIdentity.current(config, self.job_id)
        report = TaskReport(identity=task)
        transactional = config.delivery == "exactly-once"
        if transactional and task is None:
            raise RuntimeError("exactly-once writes run in Spark tasks, or with a TaskIdentity")
        output = (TransactionalOutput(config, task.transactional_id, task.marker_group) if transactional
                  else KafkaOutput(config))
        clock = StageClock()
        try:
            earlier = output.start() if transactional else None
            # Spark ran a later batch, so it had counted this one whole: send nothing.
            produce = earlier is None or earlier.batch_id is None or earlier.batch_id <= task.batch_id
            if transactional and produce:
                output.begin()
                clock.lap("produce")  # the transaction's start
            ts_spans = self._send(batches, report, output, clock, produce)
            if not produce:
                report.replayed = True
            elif transactional:
                _commit(output, task, earlier, report)
            else:
                output.flush()
            clock.lap("produce")
        finally:
            output.close()
            report.costs = clock.stop()
        if not report.replayed:  # a discarded copy's offsets were never visible
            report.spans = task_spans(ts_spans, output.offsets)
        return report

    def _send(self, batches: Iterable[pa.RecordBatch], report: TaskReport, output: KafkaOutput, clock: StageClock,
              produce: bool) -> dict[tuple[str, int], list[int]]:
        """Validate, route and (when ``produce``) encode and send every row change; fill ``report``.

        Returns the commit-ts range sent to each Kafka partition, for the driver's order check.
        """
        with open_encoder(self.config, self.layout.table) as encoder:
            due = None
            if produce and isinstance(encoder, SendsTableSchemas) and encoder.bootstrap_version is not None:
                bootstraps = TaskBootstraps(self.config, encoder.bootstrap_version, output,
                                            report.identity.marker_prefix if report.identity else None)
                due = bootstraps.due
                encoder.schedule_bootstraps(due)
                report.table_rows, report.bootstrapped = bootstraps.rows, bootstraps.sent
            with SelectedEncoders(self.config, self.layout.table, encoder, due) as encoders:
                return self._send_with(encoder, encoders, batches, report, output, clock, produce)

    def _send_with(self, encoder: Encoder, encoders: "SelectedEncoders", batches: Iterable[pa.RecordBatch],
                   report: TaskReport, output: KafkaOutput, clock: StageClock,
                   produce: bool) -> dict[tuple[str, int], list[int]]:
        config = self.config
        builder = ChangeBatchBuilder(self.layout, config)
        router = TopicRouter(config)
        dispatcher = PartitionDispatcher(config, self.layout.table)
        deadline_check = getattr(output, "check_deadline", None)
        started, next_progress = time.monotonic(), PROGRESS_EVERY_ROWS
        ts_spans: dict[tuple[str, int], list[int]] = {}
        clock.lap("input")  # the codec, dispatcher and builder made above
        for record_batch in batches:
            clock.lap("receive")
            report.input_rows += record_batch.num_rows
            changes, ddls = builder.build(record_batch)
            if changes is not None and not config.output_raw_change_event:
                changes = split_key_updates(changes)
            for ddl in ddls:
                encoder.check_ddl(ddl)  # a bad _ddl_type fails this task, before the batch commits
            report.ddls.extend(ddls)
            clock.lap("input")
            if changes is None:
                continue
            if report.rows and int(changes.commit_ts.min()) < report.max_commit_ts and not report.unsorted:
                report.unsorted = True
                log.warning("ticdc sink: the input is not sorted by commit ts across Arrow batches of a "
                            "partition; rows are sorted within each batch only. Sort the DataFrame with "
                            "sortWithinPartitions(%r) to keep each key's changes in order",
                            config.commit_ts_column)
            routing = route(changes, router, dispatcher, output.partition_count)
            report.topics.update(routing.partition_counts)
            clock.lap("dispatch")
            if produce:
                messages = encoders.of(changes).encode_rows(changes, routing)
                clock.lap("encode")
                report.messages += output.produce(messages)
                _widen(ts_spans, routing.commit_ts_spans)
            report.rows += changes.num_rows
            report.max_commit_ts = max(report.max_commit_ts, changes.max_commit_ts)
            if deadline_check is not None:
                deadline_check()
            clock.lap("produce")
            if report.rows >= next_progress:
                elapsed = time.monotonic() - started
                log.info("ticdc sink: %d rows encoded (%.0f rows/s), %d acknowledged; CPU %s",
                         report.rows, report.rows / max(elapsed, 1e-9), output.delivered,
                         clock.costs.describe(report.rows))
                next_progress += PROGRESS_EVERY_ROWS
        if report.ddls:
            report.max_commit_ts = max(report.max_commit_ts, max(d.commit_ts for d in report.ddls))
        return ts_spans


class SelectedEncoders:
    """The encoder of each shape the task's rows take under ``column-selectors``: the table's own, and one per
    selection met, made when first needed (with the table's bootstrap schedule) and closed with the task."""

    def __init__(self, config: SinkConfig, table: TableSchema, encoder: Encoder, due):
        self.config, self._due = config, due
        self._selection = _column_selection(config, table)
        self._main, self._by_shape = encoder, {table: encoder}
        self._opened: list[Encoder] = []

    def of(self, changes: ChangeBatch) -> Encoder:
        """The encoder of the batch's rows, whose tables must share one selection (a DataFrame, one shape)."""
        if self._selection is None:
            return self._main
        tables, _ = changes.tables_of_rows
        shapes = {table: self._selection.table_for(*table) for table in tables}
        shape = next(iter(shapes.values()))
        if any(s != shape for s in shapes.values()):
            described = "; ".join(f"{d}.{t}: {', '.join(s.names)}" for (d, t), s in shapes.items())
            raise ConfigError(OPTION, self.config.column_selectors, f"the DataFrame's tables get different columns "
                              f"({described}): a DataFrame's rows take one shape; write them separately")
        if shape not in self._by_shape:
            encoder = encoder_for(self.config, shape)
            if self._due is not None:
                encoder.schedule_bootstraps(self._due)
            self._by_shape[shape] = encoder
            self._opened.append(encoder)
        return self._by_shape[shape]

    def __enter__(self) -> "SelectedEncoders":
        return self

    def __exit__(self, *exc) -> None:
        for encoder in self._opened:
            if isinstance(encoder, UsesSchemaRegistry):
                encoder.close_registry()


def _column_selection(config: SinkConfig, table: TableSchema) -> ColumnSelection | None:
    """The table's column selection under ``column-selectors``, or None without them."""
    if not config.column_selectors:
        return None
    return ColumnSelection(parse_column_selectors(config.column_selectors), table, config.partition_columns)


def _commit(output: TransactionalOutput, task: TaskIdentity, earlier, report: TaskReport) -> None:
    """Commit the task's transaction with its marker, or discard it where an earlier attempt covered it."""
    same_batch = earlier.batch_id == task.batch_id
    if same_batch and earlier.input_rows is not None and earlier.input_rows >= report.input_rows:
        # The earlier attempt covered this one (which, with fewer rows, was cut short itself).
        output.discard()
        report.replayed, report.messages = True, 0
        log.info("ticdc sink: %s had committed batch %d from %d input rows already; this attempt read %d "
                 "and its copy is discarded", task.transactional_id, task.batch_id, earlier.input_rows,
                 report.input_rows)
        return
    if same_batch:  # the earlier attempt was cut short (or, without a count, may have been)
        report.repeated_rows = report.input_rows if earlier.input_rows is None else earlier.input_rows
        log.warning("ticdc sink: %s", report.repeat_note())
    output.commit(task.batch_id, input_rows=report.input_rows)


def _widen(ts_spans: dict[tuple[str, int], list[int]], batch_spans: dict[tuple[str, int], tuple[int, int]]) -> None:
    """Widen the task's commit-ts range per Kafka partition by a batch's."""
    for where, (low, high) in batch_spans.items():
        span = ts_spans.setdefault(where, [low, high])
        span[0], span[1] = min(span[0], low), max(span[1], high)
