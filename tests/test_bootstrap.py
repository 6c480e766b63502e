"""The writer's rule for Simple's BOOTSTRAP messages (ticdc_sink/bootstrap.py), without a broker."""

from __future__ import annotations

import dataclasses

import pytest

from test_simple import encoder
from ticdc_sink.sink.bootstrap import BootstrapState
from ticdc_sink.codec.simple.options import SimpleOptions

OPTIONS = SimpleOptions(send_bootstrap_interval_in_sec=120, send_bootstrap_in_msg_count=10)
V = 42


@pytest.mark.parametrize("state, sent_by_tasks, rows, now_ms, after, send", [
    # The tasks sent it ahead of the batch's rows: counted from there.
    (BootstrapState(), True, 3, 1000, BootstrapState(V, 1000, 3), False),
    (BootstrapState(), True, 10, 1000, BootstrapState(V, 1000, 0), True),  # its rows reached the count
    # Neither the interval nor the count reached: the rows add up.
    (BootstrapState(V, 1000, 3), False, 6, 120_999, BootstrapState(V, 1000, 9), False),
    (BootstrapState(V, 1000, 3), False, 7, 2000, BootstrapState(V, 2000, 0), True),  # 10 rows since
    (BootstrapState(V, 1000, 3), False, 1, 121_000, BootstrapState(V, 121_000, 0), True),  # 120 s since
    # Another version was sent last (or none, and no task sent it: a replayed batch): the driver sends it.
    (BootstrapState(V - 1, 1000, 0), False, 1, 2000, BootstrapState(V, 2000, 0), True),
    (BootstrapState(), False, 1, 2000, BootstrapState(V, 2000, 0), True),
])
def test_when_the_driver_sends_a_bootstrap(state, sent_by_tasks, rows, now_ms, after, send):
    assert state.after_batch(OPTIONS, V, sent_by_tasks, rows, now_ms) == (after, send)


def with_options(config, **options):
    return dataclasses.replace(config, protocol_options=dataclasses.replace(config.protocol_options, **options))


def test_bootstraps_go_to_every_partition_or_the_first_and_zero_turns_them_off():
    simple, changes = encoder([{"_op": "INSERT", "_commit_ts": 1, "id": 1}])
    assert simple.bootstrap_version == simple.shape.version
    assert simple.bootstrap_messages("simple", "user", "t").partitions.tolist() == [-1]  # BROADCAST
    first_only = with_options(simple.config, send_bootstrap_to_all_partition=False)
    assert type(simple)(first_only, simple.table).bootstrap_messages("simple", "user", "t").partitions.tolist() == [0]
    for off in ({"send_bootstrap_interval_in_sec": 0}, {"send_bootstrap_in_msg_count": 0}):
        assert type(simple)(with_options(simple.config, **off), simple.table).bootstrap_version is None
    assert changes.tables_of_rows[0] == [("simple", "user")]
