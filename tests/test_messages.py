"""The one message container every codec returns and the producer sends."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ticdc_sink.kafka.messages import BROADCAST, MESSAGE_OVERHEAD, Messages


def test_broadcast_messages_become_one_per_partition_in_place():
    messages = Messages(["a", "b"], np.array([0, 1, 0], dtype=np.int32), np.array([2, BROADCAST, BROADCAST], np.int32),
                        pa.array([b"k1", None, b"k3"]), pa.array(["v1", "v2", None]), np.array([7, 8, 9]))
    expanded = messages.without_broadcast({"a": 2, "b": 3}.__getitem__)
    assert [expanded.topics[t] for t in expanded.topic_of_message] == ["a", "b", "b", "b", "a", "a"]
    assert expanded.partitions.tolist() == [2, 0, 1, 2, 0, 1]
    assert expanded.keys.to_pylist() == [b"k1", None, None, None, b"k3", b"k3"]
    assert expanded.values.to_pylist() == ["v1", "v2", "v2", "v2", None, None]  # None: a tombstone
    assert expanded.rows.tolist() == [7, 8, 8, 8, 9, 9]


def test_messages_without_broadcast_are_left_as_they_are():
    messages = Messages(["a"], None, np.array([0, 1], np.int32), None, pa.array(["x", "y"]))
    assert messages.without_broadcast(lambda topic: 5) is messages


def test_sizes_count_key_and_value_bytes_and_name_the_first_message_over_the_limit():
    messages = Messages(["a"], None, np.zeros(3, np.int32), pa.array([b"key", None, b"k"]),
                        pa.array(["é" * 10, "x" * 40, None]))
    assert messages.byte_lengths().tolist() == [3 + 20, 40, 1]  # UTF-8 bytes, not characters
    assert messages.first_oversized(40 + MESSAGE_OVERHEAD) is None
    assert messages.first_oversized(39 + MESSAGE_OVERHEAD) == (1, 40 + MESSAGE_OVERHEAD)


def test_control_events_in_the_same_container():
    ddl = Messages.one("t", 0, None, '{"isDdl":true}')
    assert (ddl.topics, ddl.partitions.tolist(), ddl.keys, ddl.values.to_pylist()) == (["t"], [0], None,
                                                                                       ['{"isDdl":true}'])
    marks = Messages.to_every_partition(["a", "b"], b"k", b"resolved")
    assert marks.partitions.tolist() == [BROADCAST, BROADCAST] and marks.values.type == pa.binary()
    assert [marks.topics[t] for t in marks.topic_of_message] == ["a", "b"]
