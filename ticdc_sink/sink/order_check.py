"""Per-key commit order across Spark tasks: the driver's check that sees it break.

A task writes its rows in commit-ts order, but two tasks that write the same
Kafka partition interleave their messages, so a key changed in both can reach
consumers out of order.  ``check_order`` reads what the tasks of a batch wrote
(the commit-ts and offset span of each Kafka partition) and says when two of
them wrote one Kafka partition so that a later message carries an earlier
commit ts; ``changes/commit_order.order_changes`` lays a DataFrame out so that it cannot.
"""

from __future__ import annotations

import logging
from typing import Iterable, Mapping

from ..config.sink import SinkConfig
from ..errors import TiCDCSinkError
from .report import Span

log = logging.getLogger(__name__)

HELP = ("prepare the DataFrame with ticdc_sink.order_changes(df, options), which gives each Kafka partition "
        "to one Spark partition sorted by commit ts")


class OrderError(TiCDCSinkError):
    """Two tasks of a batch wrote one Kafka partition out of commit-ts order (``order-check=error``)."""


# ---------------------------------------------------------------------------
# The layout


def reorderings(spans_by_task: Mapping[int, Mapping[tuple[str, int], Span]]) -> list[str]:
    """Kafka partitions where one task's message precedes another's with a lower commit ts.

    Tasks A and B of one batch in one Kafka partition: some message of A comes
    before some message of B (A's first offset < B's last offset) and A has a
    commit ts above one of B's.  Overlapping commit-ts ranges always show up;
    ranges that merely touch, in offset order, do not.
    """
    by_partition: dict[tuple[str, int], list[tuple[int, Span]]] = {}
    for task, spans in spans_by_task.items():
        for where, span in spans.items():
            by_partition.setdefault(where, []).append((task, span))
    found = []
    for (topic, partition), writers in sorted(by_partition.items()):
        for task_a, a in writers:
            clash = next(((task_b, b) for task_b, b in writers if task_b != task_a
                          and a.first_offset < b.last_offset and a.max_ts > b.min_ts), None)
            if clash is not None:
                task_b, b = clash
                found.append(f"{topic}[{partition}]: Spark partition {task_a} wrote commit ts {a.min_ts}.."
                             f"{a.max_ts} at offsets {a.first_offset}..{a.last_offset}, Spark partition "
                             f"{task_b} wrote {b.min_ts}..{b.max_ts} at {b.first_offset}..{b.last_offset}")
                break
    return found


def check_order(config: SinkConfig, spans_by_task: Mapping[int, Mapping[tuple[str, int], Span]],
                what: str, unsorted_tasks: Iterable[int] = ()) -> None:
    """Warn (or raise, with ``order-check=error``) when tasks of ``what`` may have reordered a key's changes.

    ``unsorted_tasks`` received their input out of commit-ts order across Arrow batches.
    """
    if config.order_check == "off":
        return
    found = [f"Spark partition {task}'s input was not in commit-ts order across Arrow batches"
             for task in sorted(unsorted_tasks)] + reorderings(spans_by_task)
    if not found:
        return
    shown = "; ".join(found[:3]) + (f"; and {len(found) - 3} more" if len(found) > 3 else "")
    message = (f"ticdc sink: in {what}, rows reached a Kafka partition out of commit-ts order, so a key's "
               f"changes may reach consumers out of order ({shown}). To keep each key's changes in order, {HELP} "
               "(on a stream, keep each micro-batch task within spark.sql.execution.arrow.maxRecordsPerBatch "
               "rows); order-check=off silences this")
    if config.order_check == "error":
        raise OrderError(message)
    log.warning(message)
