"""When a table's schema goes out on its own (Simple's BOOTSTRAP): the writer's rule, for a whole query.

TiCDC sends a table's BOOTSTRAP before the table's first row change, then again
every ``send-bootstrap-interval-in-sec`` seconds or ``send-bootstrap-in-msg-count``
row changes, so that a consumer that joins mid-stream learns the schema.  A
Spark query writes from many tasks at once and from a new writer every
micro-batch, so what was sent lives in Kafka, beside the sink's other markers:
per table, a consumer group of the query (or batch job) on the marker topic,
``<marker prefix>-bootstrap-<database>.<table>``, whose committed offsets are
the schema version last sent (partition 0), when (wall-clock ms, partition 1)
and the row changes written since (partition 2).

- A task, before its first row of a table, reads that state.  When the table's
  current schema version was never sent, the task sends the BOOTSTRAP itself,
  ahead of its rows in the same producer (and transaction), so that every
  partition it writes holds the schema before the rows.  Tasks of one
  micro-batch may each send one: a consumer keeps the first.
- The driver, once the micro-batch is committed, adds the batch's row count and
  sends the BOOTSTRAP when the interval has passed or the count is reached
  (after the batch's rows, not at the row that reaches the count), then records
  the state.  The record is not part of any transaction: lost, it costs one
  BOOTSTRAP more, never a missing one before a table's first rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..changes.dispatch import TopicRouter
from ..codec.base import SendsTableSchemas, wall_clock_ms
from ..config.sink import SinkConfig
from ..kafka.markers import commit_group_offsets, read_group_offsets
from ..kafka.messages import Messages
from ..kafka.producer import KafkaOutput

Table = tuple[str, str]  # (database, table)
_VERSION, _SENT_MS, _ROWS_SINCE = 0, 1, 2  # marker-topic partitions of a table's bootstrap group


@dataclass(frozen=True)
class BootstrapState:
    """What was sent of one table's schema in a query."""

    version: int | None = None  # the schema version last sent; None: never
    sent_ms: int = 0
    rows_since: int = 0

    def after_batch(self, options, version: int, sent_by_tasks: bool, rows: int,
                    now_ms: int) -> tuple["BootstrapState", bool]:
        """The state after a micro-batch that wrote ``rows`` of the table, and whether the driver sends a
        BOOTSTRAP now: the interval passed, the rows since the last one reached the count (``options``: the
        protocol's, with ``send-bootstrap-*``), or the version was never sent (a replayed batch, whose tasks sent
        nothing)."""
        state = BootstrapState(version, now_ms, 0) if sent_by_tasks else self
        rows_since = state.rows_since + rows
        if (state.version != version or now_ms - state.sent_ms >= options.send_bootstrap_interval_in_sec * 1000
                or rows_since >= options.send_bootstrap_in_msg_count):
            return BootstrapState(version, now_ms, 0), True
        return BootstrapState(version, state.sent_ms, rows_since), False


def state_group(marker_prefix: str, table: Table) -> str:
    return f"{marker_prefix}-bootstrap-{table[0]}.{table[1]}"


def read_state(output: KafkaOutput, marker_prefix: str, table: Table) -> BootstrapState:
    version, sent_ms, rows_since = read_group_offsets(output, state_group(marker_prefix, table))
    return BootstrapState(version, sent_ms or 0, rows_since or 0)


def record_state(output: KafkaOutput, marker_prefix: str, table: Table, state: BootstrapState) -> None:
    commit_group_offsets(output, state_group(marker_prefix, table),
                         {_VERSION: state.version, _SENT_MS: state.sent_ms, _ROWS_SINCE: state.rows_since})


class TaskBootstraps:
    """A task's part: the BOOTSTRAP of each table whose schema version the query has not sent yet, ahead of the
    task's first rows of it (the encoder puts it there: ``codec.base.SendsTableSchemas``).  Without a query or
    job (``marker_prefix`` None), each task sends its own."""

    def __init__(self, config: SinkConfig, version: int, output: KafkaOutput, marker_prefix: str | None):
        self.config, self.version, self.output, self.marker_prefix = config, version, output, marker_prefix
        self.rows: dict[Table, int] = {}  # row changes per table, for the driver's count
        self.sent: set[Table] = set()

    def due(self, table_rows: dict[Table, int]) -> list[Table]:
        """The tables of a batch (with its rows of each) whose BOOTSTRAP goes out ahead of the batch's rows."""
        due = []
        for table, count in table_rows.items():
            seen = table in self.rows
            self.rows[table] = self.rows.get(table, 0) + count
            if seen:
                continue
            if self.marker_prefix is not None:
                if read_state(self.output, self.marker_prefix, table).version == self.version:
                    continue
            due.append(table)
            self.sent.add(table)
        return due


def driver_bootstraps(config: SinkConfig, encoder: SendsTableSchemas, output: KafkaOutput, marker_prefix: str,
                      rows: dict[Table, int], sent_by_tasks: set[Table],
                      clock: Callable[[], int] = wall_clock_ms) -> tuple[list[Messages], Callable[[], None]]:
    """The driver's part after a micro-batch: the BOOTSTRAPs due, and what records the new states once they
    (and the batch's other control events) are out."""
    router, now_ms = TopicRouter(config), clock()
    states, messages = {}, []
    for table, count in sorted(rows.items()):
        state, send = read_state(output, marker_prefix, table).after_batch(
            encoder.options, encoder.bootstrap_version, table in sent_by_tasks, count, now_ms)
        states[table] = state
        if send:
            messages.append(encoder.bootstrap_messages(*table, router.topic_for(*table)))

    def record() -> None:
        for table, state in states.items():
            record_state(output, marker_prefix, table, state)

    return messages, record
