"""The write pipeline shared by batch and streaming writes, on executors and on the driver.

A task: Arrow record batches -> ChangeBatch -> topic and partition per row ->
encoder -> producer -> every delivery acknowledged -> a ``TaskReport`` to the
driver.  The driver, once every task succeeded, emits the DDL rows of the
batch and then the watermark events (the batch's max commit ts, never
decreasing) to every partition of every topic the batch touched.
"""

from __future__ import annotations

import datetime
import logging
import time
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage

from .changes import ChangeBatchBuilder, InputLayout
from .codec import encoder_for
from .config import SinkConfig
from .ddl import DDLChange, classify
from .dispatch import PartitionDispatcher, TopicRouter
from .kafka_io import KafkaOutput, TransactionalOutput
from .mysql_types import now_tso

log = logging.getLogger(__name__)

PROGRESS_EVERY_ROWS = 500_000


@dataclass
class TaskReport(WriterCommitMessage):
    """What a task wrote, all of it acknowledged by the broker (and committed, in exactly-once mode)."""

    rows: int = 0
    messages: int = 0
    max_commit_ts: int = 0
    topics: dict[str, int] = field(default_factory=dict)  # topic -> partition count
    ddls: list[DDLChange] = field(default_factory=list)
    transactional_id_prefix: str | None = None
    replayed: bool = False  # the partition had committed this batch already: nothing was sent again
    unsorted: bool = False  # some Arrow batch started below the commit ts of an earlier one


@dataclass(frozen=True)
class TaskIdentity:
    """Who a task is, for exactly-once: its Spark partition, micro-batch and transactional prefix."""

    partition: int
    batch_id: int
    prefix: str

    @property
    def transactional_id(self) -> str:
        return f"{self.prefix}-{self.partition}"

    @classmethod
    def current(cls, config: SinkConfig, job_prefix: str | None) -> "TaskIdentity":
        """From Spark's TaskContext: ``streaming.sql.batchId`` and ``sql.streaming.queryId``.

        A streaming query's prefix derives from its query id, which survives restarts
        from the same checkpoint; a batch job has a prefix of its own.
        """
        from pyspark import TaskContext

        context = TaskContext.get()
        if context is None:
            raise RuntimeError("TaskIdentity.current() runs inside a Spark task")
        query_id = context.getLocalProperty("sql.streaming.queryId")
        batch_id = context.getLocalProperty("streaming.sql.batchId")
        prefix = config.transactional_id_prefix or (f"ticdc-sink-{query_id}" if query_id else job_prefix)
        if prefix is None:
            raise RuntimeError("a streaming task without sql.streaming.queryId: set transactional-id-prefix")
        return cls(context.partitionId(), int(batch_id) if batch_id is not None else 0, prefix)


@dataclass(frozen=True)
class WritePlan:
    """Everything a task needs, validated on the driver and shipped to executors."""

    config: SinkConfig
    layout: InputLayout
    job_prefix: str | None = None  # transactional prefix of a batch (non-streaming) write

    @classmethod
    def for_schema(cls, config: SinkConfig, spark_schema, job_prefix: str | None = None) -> "WritePlan":
        plan = cls(config, InputLayout.from_spark_schema(spark_schema, config), job_prefix)
        # Building the codec and dispatcher here surfaces their option errors before any task runs.
        encoder_for(config, plan.layout.table)
        PartitionDispatcher(config, plan.layout.table)
        return plan

    def write(self, batches: Iterable[pa.RecordBatch], task: TaskIdentity | None = None) -> TaskReport:
        """Write one task's record batches; returns only when Kafka acknowledged (and committed) all."""
        config = self.config
        report = TaskReport()
        if config.delivery == "at-least-once":
            output = KafkaOutput(config)
            try:
                self._send(batches, report, output, produce=True)
                output.flush()
            finally:
                output.close()
            return report
        task = task or TaskIdentity.current(config, self.job_prefix)
        report.transactional_id_prefix = task.prefix
        output = TransactionalOutput(config, task.transactional_id)
        try:
            committed = output.start()
            report.replayed = committed is not None and committed >= task.batch_id
            if report.replayed:
                log.info("ticdc sink: %s committed batch %d already; replaying it sends nothing",
                         task.transactional_id, task.batch_id)
            else:
                output.begin()
            self._send(batches, report, output, produce=not report.replayed)
            if not report.replayed:
                output.commit(task.batch_id)
        finally:
            output.close()
        return report

    def _send(self, batches: Iterable[pa.RecordBatch], report: TaskReport, output: KafkaOutput,
              produce: bool) -> None:
        """Validate, route and (when ``produce``) encode and send every row change; fill ``report``."""
        config, table = self.config, self.layout.table
        builder = ChangeBatchBuilder(self.layout, config)
        encoder = encoder_for(config, table)
        router = TopicRouter(config)
        dispatcher = PartitionDispatcher(config, table)
        deadline_check = getattr(output, "check_deadline", None)
        started, next_progress = time.monotonic(), PROGRESS_EVERY_ROWS
        for record_batch in batches:
            changes, ddls = builder.build(record_batch)
            for ddl in ddls:
                encoder.encode_ddl(ddl)  # a bad _ddl_type fails this task, before the batch commits
            report.ddls.extend(ddls)
            if changes is None or changes.num_rows == 0:
                continue
            if report.rows and int(changes.commit_ts.min()) < report.max_commit_ts and not report.unsorted:
                report.unsorted = True
                log.warning("ticdc sink: the input is not sorted by commit ts across Arrow batches of a "
                            "partition; rows are sorted within each batch only. Sort the DataFrame with "
                            "sortWithinPartitions(%r) to keep each key's changes in order",
                            config.commit_ts_column)
            topics, topic_of_row = router.topics(changes)
            counts = np.array([output.partition_count(t) for t in topics], dtype=np.uint64)
            report.topics.update(zip(topics, counts.tolist()))
            if produce:
                partition_of_row = (dispatcher.routing_values(changes) % counts[topic_of_row]).astype(np.int32)
                report.messages += output.produce_rows(
                    encoder.encode_rows(changes, topics, topic_of_row, partition_of_row))
            report.rows += changes.num_rows
            report.max_commit_ts = max(report.max_commit_ts, changes.max_commit_ts)
            if deadline_check is not None:
                deadline_check()
            if report.rows >= next_progress:
                elapsed = time.monotonic() - started
                log.info("ticdc sink: %d rows encoded (%.0f rows/s), %d acknowledged",
                         report.rows, report.rows / max(elapsed, 1e-9), output.delivered)
                next_progress += PROGRESS_EVERY_ROWS
        if report.ddls:
            report.max_commit_ts = max(report.max_commit_ts, max(d.commit_ts for d in report.ddls))

    def commit(self, reports: list[TaskReport | None], batch_id: int = 0, last_watermark: int = 0) -> int:
        """Emit the batch's DDL events, then its watermark events; returns the watermark sent."""
        reports = [r for r in reports if r is not None]
        ddls = sorted((d for r in reports for d in r.ddls), key=lambda d: d.commit_ts)
        topics: dict[str, int] = {}
        for r in reports:
            topics.update(r.topics)
        watermark = max([last_watermark] + [r.max_commit_ts for r in reports])
        prefix = next((r.transactional_id_prefix for r in reports if r.transactional_id_prefix), None)
        transaction = ControlTransaction(f"{prefix}-driver", batch_id) if prefix else None
        return emit_control_events(self.config, self.layout, ddls, topics, watermark, transaction)

    def abort(self, reports: list[TaskReport | None]) -> None:
        """Fence the failed partitions' transactional ids, so none of their transactions stays open."""
        prefix = self.config.transactional_id_prefix or next(
            (r.transactional_id_prefix for r in reports if r is not None and r.transactional_id_prefix), None)
        if self.config.delivery != "exactly-once" or prefix is None:
            return
        for partition, report in enumerate(reports):
            if report is None:
                output = TransactionalOutput(self.config, f"{prefix}-{partition}")
                try:
                    output.start()
                finally:
                    output.close()


@dataclass(frozen=True)
class ControlTransaction:
    """The driver's transactional id for a batch's control events, and the batch."""

    transactional_id: str
    batch_id: int


def emit_control_events(config: SinkConfig, layout: InputLayout | None, ddls: list[DDLChange],
                        topics: dict[str, int], watermark: int,
                        transaction: ControlTransaction | None = None) -> int:
    """Send DDL events (each protocol's partitioning) and then watermarks to every partition.

    With a ``transaction`` (exactly-once) they are sent once per batch: a replayed
    batch whose control events were committed sends nothing.
    """
    encoder = encoder_for(config, layout.table if layout else None)
    router = TopicRouter(config)
    watermark_event = encoder.encode_watermark(watermark) if watermark else None
    if not ddls and (watermark_event is None or not topics):
        return watermark
    topics = dict(topics)
    if transaction is None:
        output = KafkaOutput(config)
    else:
        output = TransactionalOutput(config, transaction.transactional_id)
        committed = output.start()
        if committed is not None and committed >= transaction.batch_id:
            output.close()
            log.info("ticdc sink: control events of batch %d were committed already", transaction.batch_id)
            return watermark
        output.begin()
    try:
        for ddl in ddls:
            event = encoder.encode_ddl(ddl)
            if event is None:
                continue
            topic = router.topic_for_ddl(ddl.database, ddl.table)
            count = topics.setdefault(topic, output.partition_count(topic))
            targets = range(count) if event.partition is None else [event.partition]
            for partition in targets:
                output.produce(topic, partition, event.key, event.value)
        if watermark_event is not None:
            for topic, count in sorted(topics.items()):
                for partition in range(count):
                    output.produce(topic, partition, watermark_event.key, watermark_event.value)
        if transaction is None:
            output.flush()
        else:
            output.commit(transaction.batch_id)
    finally:
        output.close()
    log.info("ticdc sink: committed %d DDL event(s), watermark %d to %d topic(s)", len(ddls), watermark,
             len(topics))
    return watermark


def emit_ddl(options: dict[str, str], statement: str, *, database: str, table: str = "",
             commit_ts: int | None = None, ddl_type: str | None = None) -> None:
    """Send one DDL event now, outside any DataFrame (e.g. before replaying a table's history).

    ``options`` are the sink's options (protocol, topic, kafka.bootstrap.servers, ...).
    """
    from .config import parse_options

    config = parse_options(options)
    ddl = DDLChange(database, table, statement, commit_ts or now_tso(), classify(statement), ddl_type)
    emit_control_events(config, None, [ddl], {}, 0)


def _zone_fixer(arrow_type: pa.DataType):
    """Spark hands Rows' zoned timestamps over as naive local time; Arrow needs the instant."""
    if pa.types.is_timestamp(arrow_type) and arrow_type.tz:
        return lambda v: v.astimezone(datetime.timezone.utc) if v is not None and v.tzinfo is None else v
    if pa.types.is_struct(arrow_type):
        fixers = {f.name: fix for f in arrow_type if (fix := _zone_fixer(f.type))}
        if fixers:
            return lambda v: None if v is None else {**v, **{k: fix(v[k]) for k, fix in fixers.items()}}
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        fix = _zone_fixer(arrow_type.value_type)
        if fix:
            return lambda v: None if v is None else [fix(x) for x in v]
    if pa.types.is_map(arrow_type):
        fix = _zone_fixer(arrow_type.item_type)
        if fix:
            return lambda v: None if v is None else {k: fix(x) for k, x in v.items()}
    return None


def arrow_schema_of(spark_schema) -> pa.Schema:
    """The Arrow schema Spark uses for a DataFrame (zoned timestamps in UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        return to_arrow_schema(spark_schema, timezone="UTC")
    except TypeError:  # pyspark 4.0 has no timezone parameter and always uses UTC
        return to_arrow_schema(spark_schema)


def rows_to_record_batches(rows: Iterator, arrow_schema: pa.Schema, size: int = 10_000) -> Iterator[pa.RecordBatch]:
    """Re-batch Spark Rows into Arrow (pyspark 4.0 has no Arrow stream writer)."""
    fixers = {f.name: fix for f in arrow_schema if (fix := _zone_fixer(f.type))}
    chunk = []
    for row in rows:
        values = row.asDict(recursive=True)
        for name, fix in fixers.items():
            values[name] = fix(values[name])
        chunk.append(values)
        if len(chunk) >= size:
            yield pa.RecordBatch.from_pylist(chunk, schema=arrow_schema)
            chunk = []
    if chunk:
        yield pa.RecordBatch.from_pylist(chunk, schema=arrow_schema)
