"""What consumers see after a failed exactly-once attempt: read_committed each row once, read_uncommitted more.

A streaming query's task fails in the middle of its transaction (a filter before
the sink raises after the sink sent rows); the query fails, and restarts from its
checkpoint.  On the same topic a ``read_committed`` reader (what TiCDC's
consumers, Flink's Kafka source with ``properties.isolation.level`` and Kafka
Connect must be set to) sees every row once; a ``read_uncommitted`` reader (the
Java client's and Flink's default) also sees the failed attempt's rows.
"""

from __future__ import annotations

import collections

import pytest

from test_exactly_once import fault, options, row_ids, run_stream, write_feed

pytestmark = [pytest.mark.spark, pytest.mark.broker]


def test_read_committed_sees_each_row_once_and_read_uncommitted_the_failed_attempt_too(
        spark, broker, topic, tmp_path, hides_aborted_transactions):
    if not hides_aborted_transactions:
        pytest.skip("the embedded broker shows aborted transactions to read_committed readers too (Tansu's known "
                    "gap): both views are the same here; this runs on real Kafka")
    write_feed(spark, tmp_path / "feed", [list(range(1, 2001))])
    flag = tmp_path / "failing"
    flag.touch()
    sink = options(broker.bootstrap_servers, topic)
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
    try:
        # The task fails at row 1500 after sending the rows before it, in each of its attempts: the query fails.
        first = run_stream(spark, tmp_path / "feed", tmp_path / "chk", sink, partitions=1, pad=2000,
                           keep=fault(str(flag), at_id=1500, delay=2.0))
        assert first.exception() is not None and "injected failure" in str(first.exception())
        flag.unlink()
        second = run_stream(spark, tmp_path / "feed", tmp_path / "chk", sink, partitions=1, pad=2000)
        assert second.exception() is None
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    committed = collections.Counter(row_ids(broker, topic, 2000))
    assert sorted(committed) == list(range(1, 2001)) and set(committed.values()) == {1}
    uncommitted_view = type(broker)(broker.bootstrap_servers, "read_uncommitted", broker.security)
    uncommitted = collections.Counter(row_ids(uncommitted_view, topic, 2000))
    assert set(uncommitted) == set(committed)
    seen_again = sorted(i for i, n in uncommitted.items() if n > 1)
    assert seen_again and max(seen_again) < 1500, seen_again[-5:]  # the failed attempts' rows, aborted
