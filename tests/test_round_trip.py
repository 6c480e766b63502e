"""Every implemented protocol, through its encoder and back through its decoder, over the type matrix.

One table with every MySQL type the sink renders, in inserts, updates with old
values, deletes and all-NULL rows, across several partitions; each protocol's
decoder must give back the same typed values (see ``Decoder``).  A protocol
added to the registry is tested here without a line more.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import numpy as np
import pytest
from changefeed import build, schema
from protocols import CARRIES
from pyspark.sql import types as T

from ticdc_sink.changes.dispatch import Routing
from ticdc_sink.codec import PROTOCOLS, SendsTableSchemas, decoder_for, encoder_for
from ticdc_sink.codec.base import RowEvent
from ticdc_sink.codec.open_protocol.frames import split_frame

COLUMNS = [
    ("id", T.LongType(), False),
    ("b", T.BooleanType()),
    ("i8", T.ByteType()),
    ("i16", T.ShortType()),
    ("i32", T.IntegerType()),
    ("mi", T.IntegerType()),
    ("u64", T.DecimalType(20, 0)),
    ("f", T.FloatType()),
    ("d", T.DoubleType()),
    ("dec", T.DecimalType(12, 3)),
    ("s", T.StringType()),
    ("txt", T.StringType()),
    ("blob", T.BinaryType()),
    ("vb", T.BinaryType()),
    ("dt", T.DateType()),
    ("ts", T.TimestampType()),
    ("ntz", T.TimestampNTZType()),
    ("dt3", T.TimestampNTZType()),
    ("tm", T.StringType()),
    ("yr", T.IntegerType()),
    ("js", T.StringType()),
    ("arr", T.ArrayType(T.IntegerType())),
    ("en", T.StringType()),
    ("st", T.StringType()),
    ("bt", T.BinaryType()),
]
MATRIX = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), *COLUMNS,
                ("_before", T.StructType([T.StructField(*c) for c in COLUMNS])))
OPTIONS = dict(database="d", table="m", primary_key="id", time_zone="Asia/Shanghai",
               column_types="mi MEDIUMINT, u64 BIGINT UNSIGNED, txt TEXT, blob BLOB, dt3 DATETIME(3), tm TIME(2), "
                            "yr YEAR, js JSON, en ENUM('small','Medium','large'), st SET('r','g','b'), bt BIT(12), "
                            "ts TIMESTAMP(6)")
VALUES = {
    "id": 1, "b": True, "i8": -128, "i16": 32767, "i32": -2147483648, "mi": -8388608,
    "u64": Decimal("18446744073709551615"), "f": 3.14, "d": -1.5e-7, "dec": Decimal("-123456789.125"),
    "s": 'héllo <"quoted"> & \\ \u2028', "txt": "line1\nline2 测试", "blob": b"\x00\x01\xfe\xff", "vb": b"a\"b\\\x89",
    "dt": dt.date(2024, 2, 29), "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=dt.timezone.utc),
    "ntz": dt.datetime(1999, 12, 31, 23, 59, 59, 999999), "dt3": dt.datetime(2020, 5, 6, 7, 8, 9, 123500),
    "tm": "-838:59:58.994", "yr": 2155, "js": '{"b": [1, 2.5], "a": "x"}', "arr": [3, 1, 2], "en": "MEDIUM",
    "st": "b,r", "bt": b"\x0f\xff",
}
# What every decoder gives back for VALUES: TiDB's types, rendered in time zone Asia/Shanghai.
DECODED = {
    "id": 1, "b": 1, "i8": -128, "i16": 32767, "i32": -2147483648, "mi": -8388608,
    "u64": 18446744073709551615, "f": 3.14, "d": -1.5e-7, "dec": Decimal("-123456789.125"),
    "s": 'héllo <"quoted"> & \\ \u2028', "txt": "line1\nline2 测试", "blob": b"\x00\x01\xfe\xff", "vb": b"a\"b\\\x89",
    "dt": dt.date(2024, 2, 29), "ts": dt.datetime(2024, 1, 2, 11, 4, 5, 123456),
    "ntz": dt.datetime(2000, 1, 1, 0, 0, 0),  # TIMESTAMP_NTZ -> DATETIME(0): rounded as MySQL stores it
    "dt3": dt.datetime(2020, 5, 6, 7, 8, 9, 124000), "tm": "-838:59:58.99", "yr": 2155,
    "js": '{"a": "x", "b": [1, 2.5]}', "arr": "[3, 1, 2]", "en": 2, "st": 5, "bt": 0xFFF,
}
NULLS = {name: None for name in VALUES}
# The events that carry no commit ts, and why; every other event must give back its own exactly.
NO_COMMIT_TS = {
    ("avro", "DELETE"): "a tombstone: the key only; _tidb_commit_ts is in the value, which is null",
}


@pytest.fixture
def protocol_options(under_test) -> dict:
    """What a protocol needs besides OPTIONS; with Avro also the TiDB extension, without which its updates
    read as inserts and its events have no commit ts (Debezium's options have it already)."""
    options = {k: v for k, v in under_test.options("t").items() if k != "protocol"}
    return {**options, "enable-tidb-extension": "true"} if under_test.name == "avro" else options


def row(op: str, ts: int, values: dict, before: dict | None = None) -> dict:
    return {"_op": op, "_commit_ts": ts << 18, **values, "_before": before}


def changed(values: dict, **new) -> dict:
    return {**values, **new}


def decoded(values: dict) -> dict:
    return {name: DECODED[name] if values[name] is not None else None for name in VALUES} | {"id": values["id"]}


def assert_columns(actual: dict, expected: dict) -> None:
    assert actual.keys() == expected.keys()
    for name, value in expected.items():
        if name == "f" and value is not None:
            assert math.isclose(actual[name], value, rel_tol=1e-7), name
        else:
            assert actual[name] == value, name


def round_trip(protocol: str, rows: list[dict], partitions: list[int], **options) -> list[tuple[int, RowEvent]]:
    """The rows' events as decoded from every message, in produce order."""
    config, layout, changes, _ = build(MATRIX, rows, **{**OPTIONS, "protocol": protocol, **options})
    routing = Routing(["t"], np.zeros(len(rows), dtype=np.int32), np.array(partitions, dtype=np.int32), {"t": 3})
    encoder = encoder_for(config, layout.table)
    messages = encoder.encode_rows(changes, routing)
    decoder = decoder_for(config)
    if isinstance(encoder, SendsTableSchemas):  # Simple: rows decode once their table's schema arrived
        decoder.decode(None, encoder.bootstrap_messages("d", "m", "t").values[0].as_py())
    keys = messages.keys.to_pylist() if messages.keys is not None else [None] * len(messages)
    events = []
    for key, value, partition in zip(keys, messages.values.to_pylist(), messages.partitions.tolist()):
        for event in decoder.decode(key, value):
            events.append((partition, event))
    return events


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_type_round_trips_in_inserts_updates_and_deletes(protocol, protocol_options):
    second = changed(VALUES, id=2)
    rows = [
        row("INSERT", 1, VALUES),
        row("INSERT", 2, changed(NULLS, id=2)),
        row("UPDATE", 3, second, changed(NULLS, id=2)),
        row("DELETE", 4, VALUES),
    ]
    events = round_trip(protocol, rows, [0, 1, 1, 0], **protocol_options)
    by_partition = {p: [e for q, e in events if q == p] for p in (0, 1)}
    insert, delete = by_partition[0]
    nulls, update = by_partition[1]
    for event, ts in ((insert, 1), (nulls, 2), (update, 3), (delete, 4)):
        expected = None if (protocol, event.type) in NO_COMMIT_TS else ts << 18
        assert event.commit_ts == expected, (protocol, event.type)
    assert all(e.database == "d" and e.table == "m" and e.primary_keys == ["id"] for _, e in events)
    assert_columns(insert.columns, DECODED)
    assert_columns(nulls.columns, decoded(changed(NULLS, id=2)))
    assert update.type == "UPDATE"
    assert_columns(update.columns, decoded(second))
    carries = CARRIES[protocol]
    if carries.old_values:
        assert_columns(update.old, decoded(changed(NULLS, id=2)))
    else:
        assert update.old is None
    assert delete.type == "DELETE"
    assert_columns(delete.columns, DECODED if carries.whole_deleted_row else {"id": 1})


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_many_rows_come_back_in_order_per_partition(protocol, protocol_options):
    rows = [row("INSERT", i, changed(VALUES, id=i, s=f"row {i}")) for i in range(1, 101)]
    events = round_trip(protocol, rows, [i % 3 for i in range(1, 101)], max_batch_size="7", **protocol_options)
    for partition in range(3):
        ids = [e.columns["id"] for p, e in events if p == partition]
        assert ids == [i for i in range(1, 101) if i % 3 == partition]
        assert [e.columns["s"] for p, e in events if p == partition] == [f"row {i}" for i in ids]


def mixed_rows() -> list[dict]:
    """An insert, an all-NULL insert, an update with old values and a delete, over two partitions."""
    second = changed(VALUES, id=2)
    return [row("INSERT", 1, VALUES), row("INSERT", 2, changed(NULLS, id=2)),
            row("UPDATE", 3, second, changed(NULLS, id=2)), row("DELETE", 4, VALUES)]


def assert_mixed_rows(events: list[tuple[int, RowEvent]], protocol: str) -> None:
    insert, nulls, update, delete = sorted((e for _, e in events), key=lambda e: e.commit_ts)
    assert not any(e.handle_key_only for _, e in events)
    assert_columns(insert.columns, DECODED)
    assert_columns(nulls.columns, decoded(changed(NULLS, id=2)))
    assert update.type == "UPDATE" and delete.type == "DELETE"
    assert_columns(update.columns, decoded(changed(VALUES, id=2)))
    if CARRIES[protocol].old_values:
        assert_columns(update.old, decoded(changed(NULLS, id=2)))
    assert_columns(delete.columns, DECODED)


LZ4_FRAME = b"\x04\x22\x4d\x18"
# Where TiCDC compresses (pkg/compression callers): the values of Canal-JSON, Simple and Debezium, Debezium's keys
# too, Open Protocol's event values inside the frames; Avro nothing.
COMPRESSED_PROTOCOLS = ("canal-json", "simple", "debezium", "open-protocol")


@pytest.mark.parametrize("compression", ["lz4", "snappy"])
@pytest.mark.parametrize("protocol", COMPRESSED_PROTOCOLS)
def test_every_type_round_trips_compressed_where_ticdc_compresses(protocol, compression, protocol_options):
    options = {**protocol_options, "large_message_handle_compression": compression}
    if protocol == "canal-json":
        options["enable-tidb-extension"] = "true"
    config, layout, changes, _ = build(MATRIX, mixed_rows(), **{**OPTIONS, "protocol": protocol, **options})
    routing = Routing(["t"], np.zeros(4, dtype=np.int32), np.array([0, 1, 1, 0], dtype=np.int32), {"t": 3})
    messages = encoder_for(config, layout.table).encode_rows(changes, routing)
    values = messages.values.to_pylist()
    if protocol == "open-protocol":
        values = [event for value in values for event in split_frame(value, versioned=False)]
    if protocol == "debezium":
        values += messages.keys.to_pylist()
    for value in values:  # compressed: no JSON (nor Simple's Avro) in sight
        assert value[:4] == LZ4_FRAME if compression == "lz4" else value[:1] not in (b"{", b"\x16")
    assert_mixed_rows(round_trip(protocol, mixed_rows(), [0, 1, 1, 0], **options), protocol)


@pytest.mark.parametrize("protocol", ["avro"])
def test_avro_compresses_nothing_as_in_ticdc(protocol, protocol_options):
    def sent(**options):
        config, layout, changes, _ = build(MATRIX, mixed_rows(), **{**OPTIONS, "protocol": protocol, **options})
        routing = Routing(["t_d_m"], np.zeros(4, dtype=np.int32), np.zeros(4, dtype=np.int32), {"t_d_m": 1})
        messages = encoder_for(config, layout.table).encode_rows(changes, routing)
        return messages.keys.to_pylist(), messages.values.to_pylist()

    assert sent(**protocol_options, large_message_handle_compression="lz4") == sent(**protocol_options)


@pytest.mark.parametrize("extension", ["false", "true"])
@pytest.mark.parametrize("protocol", ["avro"])
def test_avro_with_the_before_value_round_trips_old_rows_and_deleted_rows(protocol, extension, protocol_options):
    """avro-include-before-value: ``_tidb_op`` tells every operation even without the TiDB extension (which
    alone carries the commit ts), an UPDATE comes back with its old row and a DELETE with its whole row."""
    options = {**protocol_options, "enable-tidb-extension": extension, "avro-include-before-value": "true"}
    events = [event for _, event in round_trip(protocol, mixed_rows(), [0, 0, 0, 0], **options)]
    assert [e.type for e in events] == ["INSERT", "INSERT", "UPDATE", "DELETE"]
    assert [e.commit_ts for e in events] == [ts << 18 if extension == "true" else None for ts in (1, 2, 3, 4)]
    insert, nulls, update, delete = events
    assert_columns(insert.columns, DECODED)
    assert_columns(nulls.columns, decoded(changed(NULLS, id=2)))
    assert_columns(update.columns, decoded(changed(VALUES, id=2)))
    assert_columns(update.old, decoded(changed(NULLS, id=2)))
    assert_columns(delete.columns, DECODED)
    assert (insert.old, delete.old) == (None, None)


# TiCDC refuses claim-check-raw-value for the Open Protocol (tests/test_config.py checks it).
@pytest.mark.parametrize("protocol, raw_value", [("canal-json", "false"), ("canal-json", "true"),
                                                 ("open-protocol", "false"), ("simple", "false"), ("simple", "true")])
def test_rows_over_max_message_bytes_come_back_whole_through_claim_check(protocol, raw_value, tmp_path):
    options = {"large_message_handle_option": "claim-check", "claim_check_storage_uri": f"file://{tmp_path}",
               "claim_check_raw_value": raw_value, "large_message_handle_compression": "snappy",
               "max_message_bytes": "450" if protocol == "simple" else "700", "enable-tidb-extension": "true"}
    events = round_trip(protocol, mixed_rows(), [0, 1, 1, 0], **options)
    assert_mixed_rows(events, protocol)
    # The three rows with values are over the limit in every protocol (the all-NULL one in some): they came
    # back whole from these objects.
    kept = sorted(tmp_path.iterdir())
    assert len(kept) >= 3 and all(path.suffix == ".json" for path in kept)
