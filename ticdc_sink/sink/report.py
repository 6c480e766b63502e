"""What a task reports to the driver, and who a task is (its names in Kafka for exactly-once)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from pyspark.sql.datasource import WriterCommitMessage

from ..config.sink import SinkConfig
from ..ddl.statements import DDLChange
from .bootstrap import Table
from .costs import StageCosts

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
class Span:
    """What one task wrote into one Kafka partition: its commit-ts and offset ranges."""

    min_ts: int
    max_ts: int
    first_offset: int
    last_offset: int


def task_spans(ts_spans: dict[tuple[str, int], list[int]],
               offsets: dict[tuple[str, int], list[int]]) -> dict[tuple[str, int], Span]:
    """The spans of a task from its commit-ts ranges and its acknowledged offsets."""
    return {where: Span(ts[0], ts[1], *offsets[where]) for where, ts in ts_spans.items() if where in offsets}
