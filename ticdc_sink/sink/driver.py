"""The driver's side of a write, once its tasks reported: control events, the order check, fencing on abort.

After every task of a batch succeeded, the driver checks that the tasks kept
each key's commit order (``order_check.check_order``), emits the batch's DDL rows,
the table schemas due (Simple's BOOTSTRAP, ``bootstrap.py``) and then the
watermark events (the batch's max commit ts, never decreasing) to every
partition of every topic the batch touched.  A task's own path is ``task.py``.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import TYPE_CHECKING

from ..changes.contract import InputLayout
from ..changes.dispatch import TopicRouter
from ..codec import SendsTableSchemas, encoder_for
from ..config.sink import SinkConfig
from ..config.sink_options import parse_options
from ..ddl.statements import DDLChange, classify
from ..kafka.markers import read_marker, write_marker
from ..kafka.producer import KafkaOutput
from ..kafka.transactions import TransactionalOutput
from ..tso import now_tso
from .bootstrap import Table, driver_bootstraps
from .costs import StageCosts
from .order_check import check_order
from .report import TaskIdentity, TaskReport

if TYPE_CHECKING:
    from .task import WritePlan

log = logging.getLogger(__name__)


def commit_batch(plan: WritePlan, reports: list[TaskReport | None]) -> int:
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
    what = "the batch write" if plan.job_id is not None or identity is None else f"micro-batch {identity.batch_id}"
    task_of = {id(r): r.identity.partition if r.identity else i for i, r in enumerate(reports)}
    check_order(plan.config, {task_of[id(r)]: r.spans for r in reports}, what,
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
    return emit_control_events(plan.config, plan.layout, ddls, topics, watermark, driver, table_rows, bootstrapped)


def abort_batch(plan: WritePlan, reports: list[TaskReport | None]) -> None:
    """Fence the failed partitions' transactional ids, so none of their transactions stays open.

    Their names come from a task that succeeded, or from the batch job; a
    streaming micro-batch whose every task failed leaves that to the retry
    (and to the broker's transaction timeout).  The whole fencing takes at
    most ``broker-timeout-ms`` and stops at the first failure: a broker that
    is away would only make every further attempt wait as long.
    """
    config = plan.config
    if config.delivery != "exactly-once":
        return
    identity = next((r.identity for r in reports if r is not None and r.identity is not None), None)
    if identity is None and plan.job_id is not None:
        identity = TaskIdentity.for_job(config, plan.job_id, 0)
    if identity is None:
        log.warning("ticdc sink: no task of the aborted batch reported its transactional ids; open "
                    "transactions end with the retry or after task-timeout-ms")
        return
    failed = [dataclasses.replace(identity, partition=p) for p, report in enumerate(reports) if report is None]
    deadline = time.monotonic() + config.broker_timeout_ms / 1000
    for done, task in enumerate(failed):
        try:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"broker-timeout-ms={config.broker_timeout_ms} passed")
            output = TransactionalOutput(config, task.transactional_id, task.marker_group)
            try:
                output.fence(remaining)
            finally:
                output.close()
        except Exception as e:  # abort must not hide the task's own error
            log.warning("ticdc sink: fenced %d of %d failed partition(s), then %s: %s; the others' open "
                        "transactions end with the retry or after task-timeout-ms",
                        done, len(failed), task.transactional_id, e)
            return


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
        events = [encoder.encode_ddl(encoder.route.ddl(ddl), topic) for ddl, topic in zip(ddls, ddl_topics)]
        schemas, record_bootstraps = [], None
        if (driver is not None and table_rows and isinstance(encoder, SendsTableSchemas)
                and encoder.bootstrap_version is not None):
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

    ``options`` are the sink's options (protocol, topic, kafka.bootstrap.servers, ...).  The event goes
    outside any transaction and with no watermark after it.  ``commit_ts`` (default: the TSO of now) places
    it among the rows, as consumers order by commit ts, not offset: it must be above every watermark already
    in its partitions (the highest commit ts of earlier writes; at or below it, readers drop the DDL as a
    repeat), above the commit ts of the rows it follows and below that of the rows after it (a row at its
    commit ts counts as before it).  It takes effect once a watermark at or above it reaches every
    partition, which the next write sends.  A backfill whose rows all carry the snapshot's TSO ``tso``
    sends its CREATE TABLE before writing them, with ``commit_ts=tso - 1``.  docs/usage.md has the rule.
    """
    config = parse_options(options)
    ddl = DDLChange(database, table, statement, commit_ts or now_tso(), classify(statement), ddl_type)
    emit_control_events(config, None, [ddl], {}, 0)
