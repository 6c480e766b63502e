"""A task's CPU per stage: the clock's laps, a task's report and the driver's summary of a batch."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from test_exactly_once import a_query, plan_for, record_batches
from ticdc_sink.sink.driver import commit_batch
from ticdc_sink.sink.costs import LIBRDKAFKA, STAGES, StageClock, StageCosts


def burn(seconds: float) -> None:
    """Spend ``seconds`` of this thread's CPU."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


def test_each_lap_charges_the_threads_cpu_since_the_last_one_to_its_stage():
    clock = StageClock()
    burn(0.03)
    clock.lap("input")
    clock.lap("dispatch")  # nothing since the last lap
    burn(0.06)
    clock.lap("encode")
    other = threading.Thread(target=burn, args=(0.05,))  # the process's other threads stand for librdkafka's
    other.start()
    other.join()
    costs = clock.stop().seconds
    assert 0.03 <= costs["input"] < 0.05
    assert costs["dispatch"] < 0.005
    assert 0.06 <= costs["encode"] < 0.08
    assert costs["receive"] == costs["produce"] == 0.0
    assert costs[LIBRDKAFKA] == pytest.approx(0.05, abs=0.01)  # the other thread's CPU, none of this one's


def test_costs_add_up_over_tasks_and_read_per_row():
    one, other = StageCosts(), StageCosts()
    one.seconds["encode"], other.seconds["encode"], other.seconds["produce"] = 0.002, 0.001, 0.004
    one.add(other)
    assert one.per_row(1000)["encode"] == pytest.approx(3.0)
    assert one.describe(1000) == ("receive 0.0, input 0.0, dispatch 0.0, encode 3.0, produce 4.0, "
                                  "librdkafka 0.0 µs/row")


@pytest.mark.broker
@pytest.mark.parametrize("delivery", ["at-least-once", "exactly-once"])
def test_a_tasks_report_carries_its_cpu_per_stage_and_the_driver_logs_the_batchs(broker, topic, delivery, caplog):
    plan = plan_for(broker, topic, delivery=delivery)
    report = plan.write(record_batches(range(1, 2001), size=500), a_query(plan, 0))
    costs = report.costs.seconds
    assert list(costs) == [*STAGES, LIBRDKAFKA]
    assert all(costs[stage] > 0 for stage in ("input", "dispatch", "encode", "produce"))
    with caplog.at_level(logging.INFO, logger="ticdc_sink.sink.driver"):
        commit_batch(plan, [report])
    summary = next(r.getMessage() for r in caplog.records if "the tasks' CPU" in r.getMessage())
    assert "micro-batch 0 wrote 2000 rows; the tasks' CPU: receive " in summary and summary.endswith(" µs/row")
