"""The write pipeline shared by batch and streaming writes, on executors and on the driver.

A task: Arrow record batches -> ChangeBatch -> topic and partition per row ->
encoder -> producer -> every delivery acknowledged -> a ``TaskReport`` to the
driver.  The driver, once every task succeeded, emits the DDL rows of the
batch and then the watermark events (the batch's max commit ts, never
decreasing) to every partition of every topic the batch touched.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import time
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage

from .bootstrap import Table, TaskBootstraps, driver_bootstraps
from .changes import ChangeBatch, ChangeBatchBuilder, InputLayout
from .codec import Encoder, encoder_for
from .config import SinkConfig
from .costs import StageClock, StageCosts
from .ddl import DDLChange, classify
from .dispatch import PartitionDispatcher, TopicRouter, route
from .errors import MessageTooLargeError
from .kafka_io import KafkaOutput, TransactionalOutput, read_marker, write_marker
from .messages import Messages
from .mysql_types import now_tso
from .ordering import Span, add_batch_spans, check_order, task_spans

log = logging.getLogger(__name__)

PROGRESS_EVERY_ROWS = 500_000
DRIVER = -1  # the partition number of the driver's identity


@dataclass
class TaskReport(WriterCommitMessage):
    """What a task wrote, all of it acknowledged by the broker (and committed, in exactly-once mode)."""

    rows: int = 0
    messages: int = 0
    max_commit_ts: int = 0
    topics: dict[str, int] = field(default_factory=dict)  # topic -> partition count
    ddls: list[DDLChange] = field(default_factory=list)
    identity: TaskIdentity | None = None  # None outside Spark (at-least-once only)
    input_rows: int = 0  # every row the task read, DDL rows included
    replayed: bool = False  # an earlier attempt had committed this batch whole: nothing new became visible
    repeated_rows: int | None = None  # an earlier attempt, cut short, had committed this many input rows
    unsorted: bool = False  # some Arrow batch started below the commit ts of an earlier one
    spans: dict[tuple[str, int], Span] = field(default_factory=dict)  # what went into each Kafka partition
    table_rows: dict[Table, int] = field(default_factory=dict)  # row changes per table (protocols with BOOTSTRAP)
    bootstrapped: set[Table] = field(default_factory=set)  # tables whose BOOTSTRAP this task sent
    costs: StageCosts = field(default_factory=StageCosts)  # the task's CPU per stage of the pipeline

    def repeat_note(self) -> str:
        """What consumers see twice because an earlier attempt of this task was cut short."""
        where = f"Spark partition {self.identity.partition}" if self.identity else "a task"
        return (f"{where}: an earlier attempt committed {self.repeated_rows} of its {self.input_rows} input rows "
                "before an operator ahead of the sink failed and Spark retried it; this attempt committed all "
                f"{self.input_rows}, so read-committed consumers see up to {self.repeated_rows} rows twice (no row "
                "is lost)")


@dataclass(frozen=True)
class TaskIdentity:
    """Who a task is, for exactly-once: its Spark partition, its micro-batch and its names in Kafka.

    ``transactional_prefix`` names the tasks' ``transactional.id``s (stable across
    restarts, so that a new attempt fences the old one); ``marker_prefix`` names the
    consumer groups that record the committed batches, unique per streaming query
    or batch job, so that one query or job never reads another's markers.
    """

    partition: int
    batch_id: int
    transactional_prefix: str
    marker_prefix: str

    @property
    def transactional_id(self) -> str:
        return f"{self.transactional_prefix}-{self._who}"

    @property
    def marker_group(self) -> str:
        return f"{self.marker_prefix}-{self._who}"

    @property
    def _who(self) -> str:
        return "driver" if self.partition == DRIVER else str(self.partition)

    @classmethod
    def for_query(cls, config: SinkConfig, query_id: str, batch_id: int, partition: int) -> "TaskIdentity":
        """A streaming task: the query id survives restarts from the same checkpoint."""
        marker = f"ticdc-sink-{query_id}"
        return cls(partition, batch_id, config.transactional_id_prefix or marker, marker)

    @classmethod
    def for_job(cls, config: SinkConfig, job_id: str, partition: int) -> "TaskIdentity":
        """A task of a batch write (also one inside foreachBatch): names of its own job, batch 0."""
        marker = f"ticdc-sink-job-{job_id}"
        prefix = f"{config.transactional_id_prefix}-job-{job_id}" if config.transactional_id_prefix else marker
        return cls(partition, 0, prefix, marker)

    @classmethod
    def current(cls, config: SinkConfig, job_id: str | None) -> "TaskIdentity | None":
        """From Spark's TaskContext (``sql.streaming.queryId``, ``streaming.sql.batchId``); None outside Spark."""
        from pyspark import TaskContext

        context = TaskContext.get()
        if context is None:
            return None
        if job_id is not None:
            return cls.for_job(config, job_id, context.partitionId())
        query_id = context.getLocalProperty("sql.streaming.queryId")
        if query_id is None:
            raise RuntimeError("a streaming task without sql.streaming.queryId in its TaskContext")
        return cls.for_query(config, query_id, int(context.getLocalProperty("streaming.sql.batchId") or 0),
                             context.partitionId())

    def driver(self) -> "TaskIdentity":
        """The names of the driver's control-event transaction for the same query or job."""
        return dataclasses.replace(self, partition=DRIVER)


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
        return plan

    def write(self, batches: Iterable[pa.RecordBatch], task: TaskIdentity | None = None) -> TaskReport:
        """Write one task's record batches; returns only when Kafka acknowledged (and committed) all."""
        config = self.config
        task = task or TaskIdentity.current(config, self.job_id)
        report = TaskReport(identity=task)
        if config.delivery == "exactly-once":
            if task is None:
                raise RuntimeError("exactly-once writes run in Spark tasks, or with a TaskIdentity")
            self._write_in_a_transaction(batches, report, task)
            return report
        output = KafkaOutput(config)
        clock = StageClock()
        try:
            ts_spans = self._send(batches, report, output, clock, produce=True)
            output.flush()
            clock.lap("produce")
        finally:
            output.close()
        report.spans = task_spans(ts_spans, output.offsets)
        report.costs = clock.stop()
        return report

    def _write_in_a_transaction(self, batches: Iterable[pa.RecordBatch], report: TaskReport,
                                task: TaskIdentity) -> None:
        """Send the task's rows in one transaction and commit it with the batch id and the input row count.

        An attempt whose input Spark cut short fails before it commits
        (``task_input.spark_batches``), but where that cannot be seen (outside
        pyspark's worker) such an attempt commits what it read.  So a marker of
        this batch left by an earlier attempt is trusted only as far as it can be
        checked: an earlier attempt that read at least as many input rows covered
        this one (Spark's replays give a partition the same rows, so this one is
        either the same or itself cut short), and this attempt's copy is
        discarded; one that read fewer was cut short, and this attempt commits
        every row, so the rows of that earlier attempt appear twice but none is lost.
        """
        output = TransactionalOutput(self.config, task.transactional_id, task.marker_group)
        clock = StageClock()
        try:
            earlier = output.start()
            if earlier.batch_id is not None and earlier.batch_id > task.batch_id:
                # Spark ran a later batch, so it had counted this one whole: send nothing.
                self._send(batches, report, output, clock, produce=False)
                report.replayed = True
                return
            output.begin()
            clock.lap("produce")  # the transaction's start
            ts_spans = self._send(batches, report, output, clock, produce=True)
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
            clock.lap("produce")
        finally:
            output.close()
            report.costs = clock.stop()
        report.spans = task_spans(ts_spans, output.offsets)

    def _send(self, batches: Iterable[pa.RecordBatch], report: TaskReport, output: KafkaOutput, clock: StageClock,
              produce: bool) -> dict[tuple[str, int], list[int]]:
        """Validate, route and (when ``produce``) encode and send every row change; fill ``report``.

        Returns the commit-ts range sent to each Kafka partition, for the driver's order check.
        """
        encoder = encoder_for(self.config, self.layout.table)
        try:
            return self._send_with(encoder, batches, report, output, clock, produce)
        finally:
            encoder.close()

    def _send_with(self, encoder: Encoder, batches: Iterable[pa.RecordBatch], report: TaskReport,
                   output: KafkaOutput, clock: StageClock, produce: bool) -> dict[tuple[str, int], list[int]]:
        config, table = self.config, self.layout.table
        builder = ChangeBatchBuilder(self.layout, config)
        router = TopicRouter(config)
        dispatcher = PartitionDispatcher(config, table)
        deadline_check = getattr(output, "check_deadline", None)
        bootstraps = None
        if produce and encoder.bootstrap_version is not None:
            bootstraps = TaskBootstraps(config, encoder, output,
                                        report.identity.marker_prefix if report.identity else None)
        started, next_progress = time.monotonic(), PROGRESS_EVERY_ROWS
        ts_spans: dict[tuple[str, int], list[int]] = {}
        clock.lap("input")  # the codec, dispatcher and builder made above
        for record_batch in batches:
            clock.lap("receive")
            report.input_rows += record_batch.num_rows
            changes, ddls = builder.build(record_batch)
            for ddl in ddls:
                encoder.check_ddl(ddl)  # a bad _ddl_type fails this task, before the batch commits
            report.ddls.extend(ddls)
            clock.lap("input")
            if changes is None or changes.num_rows == 0:
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
                for schema in bootstraps.before(changes) if bootstraps is not None else ():
                    report.messages += output.produce(schema)
                messages = encoder.encode_rows(changes, routing)
                check_message_sizes(config, messages, changes)
                clock.lap("encode")
                report.messages += output.produce(messages)
                add_batch_spans(ts_spans, routing, changes.commit_ts)
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
        if bootstraps is not None:
            report.table_rows, report.bootstrapped = bootstraps.rows, bootstraps.sent
        pending = encoder.finish() if produce else None
        if pending is not None:
            check_message_sizes(config, pending, None)
            clock.lap("encode")
            report.messages += output.produce(pending)
        if report.ddls:
            report.max_commit_ts = max(report.max_commit_ts, max(d.commit_ts for d in report.ddls))
        return ts_spans

    def commit(self, reports: list[TaskReport | None]) -> int:
        """Check the tasks kept commit order, emit the batch's DDL events, then its watermark events.

        Returns the watermark sent.
        """
        reports = [r for r in reports if r is not None]
        ddls = sorted((d for r in reports for d in r.ddls), key=lambda d: d.commit_ts)
        topics: dict[str, int] = {}
        for r in reports:
            topics.update(r.topics)
        watermark = max([0] + [r.max_commit_ts for r in reports])
        identity = next((r.identity for r in reports if r.identity is not None), None)
        driver = identity.driver() if identity is not None else None
        what = "the batch write" if self.job_id is not None or identity is None else f"micro-batch {identity.batch_id}"
        task_of = {id(r): r.identity.partition if r.identity else i for i, r in enumerate(reports)}
        check_order(self.config, {task_of[id(r)]: r.spans for r in reports}, what,
                    [task_of[id(r)] for r in reports if r.unsorted])
        table_rows: dict[Table, int] = {}
        for r in reports:
            if r.repeated_rows is not None:
                log.warning("ticdc sink: in %s, %s", what, r.repeat_note())
            for table, count in r.table_rows.items():
                table_rows[table] = table_rows.get(table, 0) + count
        bootstrapped = set().union(*(r.bootstrapped for r in reports))
        rows, costs = sum(r.rows for r in reports), StageCosts()
        for r in reports:
            costs.add(r.costs)
        if rows:
            log.info("ticdc sink: %s wrote %d rows; the tasks' CPU: %s", what, rows, costs.describe(rows))
        return emit_control_events(self.config, self.layout, ddls, topics, watermark, driver,
                                   table_rows, bootstrapped)

    def abort(self, reports: list[TaskReport | None]) -> None:
        """Fence the failed partitions' transactional ids, so none of their transactions stays open.

        Their names come from a task that succeeded, or from the batch job; a
        streaming micro-batch whose every task failed leaves that to the retry
        (and to the broker's transaction timeout).  The whole fencing takes at
        most ``broker-timeout-ms`` and stops at the first failure: a broker that
        is away would only make every further attempt wait as long.
        """
        if self.config.delivery != "exactly-once":
            return
        identity = next((r.identity for r in reports if r is not None and r.identity is not None), None)
        if identity is None and self.job_id is not None:
            identity = TaskIdentity.for_job(self.config, self.job_id, 0)
        if identity is None:
            log.warning("ticdc sink: no task of the aborted batch reported its transactional ids; open "
                        "transactions end with the retry or after task-timeout-ms")
            return
        failed = [dataclasses.replace(identity, partition=p) for p, report in enumerate(reports) if report is None]
        deadline = time.monotonic() + self.config.broker_timeout_ms / 1000
        for done, task in enumerate(failed):
            try:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"broker-timeout-ms={self.config.broker_timeout_ms} passed")
                output = TransactionalOutput(self.config, task.transactional_id, task.marker_group)
                try:
                    output.fence(remaining)
                finally:
                    output.close()
            except Exception as e:  # abort() must not hide the task's own error
                log.warning("ticdc sink: fenced %d of %d failed partition(s), then %s: %s; the others' open "
                            "transactions end with the retry or after task-timeout-ms",
                            done, len(failed), task.transactional_id, e)
                return


def check_message_sizes(config: SinkConfig, messages: Messages, batch: ChangeBatch | None) -> None:
    """Refuse a message over ``max-message-bytes`` (TiCDC's ErrMessageTooLarge), naming its row."""
    oversized = messages.first_oversized(config.max_message_bytes)
    if oversized is None:
        return
    index, size = oversized
    if batch is not None and messages.rows is not None:
        row = int(messages.rows[index])
        what = (f"row {batch.row_key(row)} of table {batch.databases[row].as_py()}."
                f"{batch.tables[row].as_py()}")
    else:
        what = "the last rows of the task"
    raise MessageTooLargeError(
        f"the {config.protocol} message of {what} is {size} bytes, over max-message-bytes="
        f"{config.max_message_bytes}; raise max-message-bytes (and the topic's max.message.bytes)")


def emit_control_events(config: SinkConfig, layout: InputLayout | None, ddls: list[DDLChange],
                        topics: dict[str, int], watermark: int, driver: TaskIdentity | None = None,
                        table_rows: dict[Table, int] | None = None, bootstrapped: set[Table] = frozenset()) -> int:
    """Send DDL events (each protocol's partitioning), the table schemas due (``bootstrap``: ``table_rows``
    and ``bootstrapped`` say what the tasks wrote and sent) and then watermarks to every partition.

    With the ``driver`` identity of a query or job, the last watermark is kept in
    its marker, so that watermarks never go backwards, even across restarts; in
    exactly-once mode the events and the marker commit in one transaction, so a
    replayed batch whose control events were committed sends nothing.
    """
    encoder = encoder_for(config, layout.table if layout else None)
    router = TopicRouter(config)
    transactional = config.delivery == "exactly-once" and driver is not None
    if transactional:
        output = TransactionalOutput(config, driver.transactional_id, driver.marker_group)
    else:
        output = KafkaOutput(config)
    try:
        marker = None
        if transactional:
            marker = output.start()
            if marker.batch_id is not None and marker.batch_id >= driver.batch_id:
                log.info("ticdc sink: control events of batch %d were committed already", driver.batch_id)
                return max(watermark, marker.watermark)
        elif driver is not None:
            marker = read_marker(output, driver.marker_group)
        if marker is not None:
            watermark = max(watermark, marker.watermark)  # never backwards
        output.remember_partition_counts(topics)  # the tasks looked them up: no metadata call for them
        ddl_topics = [router.topic_for_ddl(ddl.database, ddl.table) for ddl in ddls]
        events = [encoder.encode_ddl(ddl, topic) for ddl, topic in zip(ddls, ddl_topics)]
        schemas, record_bootstraps = [], None
        if driver is not None and table_rows and encoder.bootstrap_version is not None:
            schemas, record_bootstraps = driver_bootstraps(config, encoder, output, driver.marker_prefix,
                                                           table_rows, bootstrapped)
            events += schemas
        every_topic = sorted(set(topics) | set(ddl_topics))
        if watermark and every_topic:
            events.append(encoder.encode_watermark(watermark, every_topic))
        events = [e for e in events if e is not None]
        if events:
            if transactional:
                output.begin()
            for event in events:
                output.produce(event)
            if transactional:
                output.commit(driver.batch_id, watermark)
            else:
                output.flush()
                if driver is not None:
                    write_marker(output, driver.marker_group, driver.batch_id, watermark)
        if record_bootstraps is not None:
            record_bootstraps()
    finally:
        output.close()
    if events:
        log.info("ticdc sink: committed %d DDL event(s), %d table schema(s), watermark %d to %d topic(s)",
                 len(ddls), len(schemas), watermark, len(every_topic))
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
