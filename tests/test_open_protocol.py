"""Open Protocol against the events and frames TiCDC writes, byte for byte.

The expected bytes are golden files in ``golden/open-protocol/``: the protocol
document's ``test.t1`` stream and the type table, as the newer TiCDC writes
them; its README says where each comes from and what was adjusted.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import struct
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from changefeed import BASE_OPTIONS, build, schema
from pyspark.sql import types as T

from ticdc_sink.changes.dispatch import Routing
from ticdc_sink.codec import decoder_for, encoder_for
from ticdc_sink.codec.base import DDLEvent, RowEvent, WatermarkEvent
from ticdc_sink.codec.open_protocol.frames import frame, split_frame
from ticdc_sink.codec.shared.compression import compress
from ticdc_sink.codec.shared.json_text import go_quote_body, go_unquote_body
from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.ddl.statements import DDLChange, classify
from ticdc_sink.errors import ConfigError, ContractError, MessageTooLargeError
from ticdc_sink.kafka.messages import BROADCAST

GOLDEN = Path(__file__).resolve().parent / "golden" / "open-protocol"
TXN1, TXN2 = 415508878783938562, 415508881418485761  # the commit ts of the document's two transactions
DDL_TS = 415508856908021766

T1 = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("id", T.IntegerType(), False),
            ("val", T.StringType()))
T1_WITH_BEFORE = schema(*[(f.name, f.dataType, f.nullable) for f in T1.fields],
                        ("_before", T.StructType([T.StructField("id", T.IntegerType()),
                                                  T.StructField("val", T.StringType())])))
T1_OPTIONS = dict(protocol="open-protocol", database="test", table="t1", primary_key="id",
                  column_types="val VARCHAR(16)")


def golden(name: str) -> bytes:
    return (GOLDEN / name).read_bytes()


def op(kind: str, ts: int, id_: int, val: str, before: dict | None = None) -> dict:
    row = {"_op": kind, "_commit_ts": ts, "id": id_, "val": val}
    return row if before is None else {**row, "_before": before}


def with_t1_options(options: dict) -> dict:
    """T1's options with ``options`` over them; None removes an option."""
    return {k: v for k, v in {**T1_OPTIONS, **options}.items() if v is not None}


def events(rows, spark_schema=T1, **options):
    """(event keys, event values) of the rows, as bytes."""
    config, layout, changes, _ = build(spark_schema, rows, **with_t1_options(options))
    encoder = encoder_for(config, layout.table)
    return ([k.encode() for k in encoder.event_keys(changes).to_pylist()],
            [v.encode() for v in encoder.event_values(changes).to_pylist()])


def frames(rows, partitions, spark_schema=T1, partition_count=2, **options):
    """The Kafka messages of the rows, each row sent to the partition given for it."""
    config, layout, changes, _ = build(spark_schema, rows, **with_t1_options(options))
    routing = Routing(["t"], np.zeros(len(rows), dtype=np.int32), np.array(partitions, dtype=np.int32),
                      {"t": partition_count})
    messages = encoder_for(config, layout.table).encode_rows(changes, routing)
    return config, changes, messages


def decode(key: bytes, value: bytes):
    return decoder_for("open-protocol").decode(key, value)


# -- events of the document's test.t1 stream

@pytest.mark.parametrize("name, row", [
    ("row-insert", op("INSERT", TXN1, 1, "aa")),
    ("row-insert-merged", op("INSERT", TXN1, 2, "bb")),
    ("row-insert-3", op("INSERT", TXN1, 3, "cc")),
    ("row-delete", op("DELETE", TXN2, 1, "aa")),
    ("row-update", op("UPDATE", TXN2, 3, "dd")),
    ("row-update-pk-delete", op("DELETE", TXN2, 2, "bb")),
    ("row-update-pk-insert", op("INSERT", TXN2, 4, "ee")),
])
def test_row_events_match_the_documents_stream_with_old_value_off(name, row):
    [key], [value] = events([row])
    assert key == golden(f"{name}.key.json")
    assert value == golden(f"{name}.value.json")


@pytest.mark.parametrize("name, row", [
    ("row-update-old-value", op("UPDATE", TXN2, 3, "dd", {"id": 3, "val": "cc"})),
    ("row-delete-old-value", op("DELETE", TXN2, 1, "aa", None)),
])
def test_with_old_values_an_update_carries_p_and_a_delete_every_column(name, row):
    [key], [value] = events([{**row, "_before": row.get("_before")}], T1_WITH_BEFORE)
    assert key == golden(f"{name}.key.json")
    assert value == golden(f"{name}.value.json")


def test_delete_only_output_handle_key_columns_deletes_by_the_handle_key_with_old_values_on():
    delete, update = op("DELETE", TXN2, 1, "aa", None), op("UPDATE", TXN2, 3, "dd", {"id": 3, "val": "cc"})
    [delete_key, _], [delete_value, update_value] = events([delete, update], T1_WITH_BEFORE,
                                                            delete_only_output_handle_key_columns="true")
    assert delete_key == golden("row-delete-old-value.key.json")  # no "ohk": not a message over the limit
    assert delete_value == golden("row-delete.value.json")
    assert update_value == golden("row-update-old-value.value.json")  # other rows keep every column


def test_delete_only_output_handle_key_columns_refuses_a_table_without_a_handle_key():
    with pytest.raises(ConfigError, match="delete-only-output-handle-key-columns.*no handle key"):
        events([op("DELETE", TXN2, 1, "aa", None)], T1_WITH_BEFORE, delete_only_output_handle_key_columns="true",
               primary_key=None)


def test_only_output_updated_columns_keeps_the_changed_columns_in_p():
    row = op("UPDATE", TXN2, 3, "dd", {"id": 3, "val": "cc"})
    _, [value] = events([row], T1_WITH_BEFORE, only_output_updated_columns="true")
    assert value == b'{"u":{"id":{"t":3,"h":true,"f":11,"v":3},"val":{"t":15,"f":64,"v":"dd"}},' \
                    b'"p":{"val":{"t":15,"f":64,"v":"cc"}}}'


# -- frames

def test_one_event_alone_is_framed_as_the_document_says():
    _, _, messages = frames([op("INSERT", TXN1, 1, "aa")], [0])
    assert (messages.keys[0].as_py(), messages.values[0].as_py()) == \
        (golden("frame-row-insert.key.bin"), golden("frame-row-insert.value.bin"))


def test_events_of_one_partition_share_a_message_and_never_mix_partitions():
    rows = [op("INSERT", TXN1, 1, "aa"), op("INSERT", TXN1, 2, "bb"), op("INSERT", TXN1, 3, "cc")]
    _, _, messages = frames(rows, [0, 1, 0])
    assert messages.partitions.tolist() == [0, 1] and messages.rows.tolist() == [0, 1]
    assert (messages.keys[0].as_py(), messages.values[0].as_py()) == \
        (golden("frame-batch-p0-txn1.key.bin"), golden("frame-batch-p0-txn1.value.bin"))
    [only] = decode(messages.keys[1].as_py(), messages.values[1].as_py())
    assert only.columns == {"id": 2, "val": "bb"}


def test_a_message_mixes_deletes_updates_and_inserts_in_commit_order():
    rows = [op("DELETE", TXN2, 1, "aa"), op("DELETE", TXN2, 2, "bb"), op("UPDATE", TXN2, 3, "dd"),
            op("INSERT", TXN2, 4, "ee")]
    _, _, messages = frames(rows, [0, 1, 0, 0])
    assert (messages.keys[0].as_py(), messages.values[0].as_py()) == \
        (golden("frame-batch-p0-txn2.key.bin"), golden("frame-batch-p0-txn2.value.bin"))
    assert [(e.type, e.columns["id"]) for e in decode(messages.keys[0].as_py(), messages.values[0].as_py())] == \
        [("DELETE", 1), ("INSERT", 3), ("INSERT", 4)]  # an update without old values reads as an insert


def test_frames_split_at_max_batch_size_in_order():
    rows = [op("INSERT", TXN1 + i, i, f"v{i}") for i in range(40)]
    _, _, messages = frames(rows, [0] * 40, max_batch_size="16")
    decoded = [decode(messages.keys[i].as_py(), messages.values[i].as_py()) for i in range(len(messages))]
    assert [len(d) for d in decoded] == [16, 16, 8]
    assert [e.columns["id"] for d in decoded for e in d] == list(range(40))
    assert messages.rows.tolist() == [0, 16, 32]


def test_frames_split_at_max_message_bytes_and_each_fits():
    rows = [op("INSERT", TXN1, i, "x" * (i % 7)) for i in range(100, 160)]
    limit = 600
    config, changes, messages = frames(rows, [i % 2 for i in range(60)], max_message_bytes=str(limit))
    sizes = messages.byte_lengths() + 36
    assert sizes.max() <= limit and len(messages) > 8
    per_partition = {0: [], 1: []}
    for i in range(len(messages)):
        per_partition[int(messages.partitions[i])] += [e.columns["id"] for e in
                                                        decode(messages.keys[i].as_py(), messages.values[i].as_py())]
    assert per_partition == {0: list(range(100, 160, 2)), 1: list(range(101, 160, 2))}


def test_greedy_packing_is_tiCDCs_each_message_as_full_as_the_limit_allows():
    rows = [op("INSERT", TXN1, i, "y") for i in range(10, 20)]
    [key], [value] = events(rows[:1])
    event = len(key) + len(value) + 16
    limit = 44 + 3 * event  # exactly three events per message
    _, _, messages = frames(rows, [0] * 10, max_message_bytes=str(limit))
    assert [len(split_frame(messages.values[i].as_py(), versioned=False)) for i in range(len(messages))] == \
        [3, 3, 3, 1]
    assert (messages.byte_lengths() + 36).tolist()[:3] == [limit] * 3


def test_frames_split_where_both_max_batch_size_and_max_message_bytes_bind():
    """TiCDC's rule with both limits: a new message when the open one holds max-batch-size events, or when its
    length (8 + 36 bytes, then each event's key, value and 16 length bytes) would pass max-message-bytes."""
    vals = ["y"] * 5 + ["b" * 216] + ["y"] * 3 + ["b" * 216] * 2 + ["y"]
    rows = [op("INSERT", TXN1, 10 + i, val) for i, val in enumerate(vals)]
    keys, values = events(rows, column_types="val VARCHAR(255)")
    small, big = (len(keys[i]) + len(values[i]) + 16 for i in (0, 5))
    assert 2 * small < big <= 3 * small  # a big event fits beside one small one, not beside two or a big one
    limit = 44 + 4 * small  # four small events fit: three of them close a message by count alone
    _, _, messages = frames(rows, [0] * 12, max_batch_size="3", max_message_bytes=str(limit),
                            column_types="val VARCHAR(255)")
    # By count alone the second message would be small, small, big: over the limit, so bytes bind too.
    # S S S | S S | B S | S S | B | B S
    assert [len(split_frame(messages.values[i].as_py(), versioned=False)) for i in range(len(messages))] == \
        [3, 2, 2, 2, 1, 2]
    assert messages.rows.tolist() == [0, 3, 5, 7, 9, 10]
    assert (messages.byte_lengths() + 36).tolist() == \
        [44 + 3 * small, 44 + 2 * small, 44 + big + small, 44 + 2 * small, 44 + big, 44 + big + small]


def test_the_size_boundary_where_one_event_exactly_fits():
    # The reference's check: a varchar(10) primary-key row ("aa", "bb") fits 188 bytes exactly.
    s = schema(("_commit_ts", T.LongType()), ("a", T.StringType(), False), ("b", T.StringType()))
    options = dict(protocol="open-protocol", database="test", table="t", primary_key="a",
                   column_types="a VARCHAR(10), b VARCHAR(10)")
    rows = [{"_commit_ts": TXN1, "a": "aa", "b": "bb"}]
    frames(rows, [0], s, **options, max_message_bytes="188")  # the encoder refuses a message over the limit
    with pytest.raises(MessageTooLargeError, match=r"row \{a='aa'\} .* is 188 bytes, over max-message-bytes=187"):
        frames(rows, [0], s, **options, max_message_bytes="187")


# -- control events

def test_ddl_is_one_event_to_every_partition():
    config, layout, _, _ = build(T1, [op("INSERT", TXN1, 1, "aa")], **T1_OPTIONS)
    query = "CREATE TABLE test.t1(id int primary key, val varchar(16))"
    ddl = DDLChange("test", "t1", query, DDL_TS, classify(query))
    messages = encoder_for(config, layout.table).encode_ddl(ddl, "t")
    assert messages.partitions.tolist() == [BROADCAST]
    assert (messages.keys[0].as_py(), messages.values[0].as_py()) == \
        (golden("frame-ddl.key.bin"), golden("frame-ddl.value.bin"))
    assert decode(messages.keys[0].as_py(), messages.values[0].as_py()) == [DDLEvent("test", "t1", query, 3, DDL_TS)]


def test_resolved_event_is_a_key_and_an_empty_value_to_every_partition():
    config, layout, _, _ = build(T1, [op("INSERT", TXN1, 1, "aa")], **T1_OPTIONS)
    messages = encoder_for(config, layout.table).encode_watermark(DDL_TS, ["a", "b"])
    assert messages.partitions.tolist() == [BROADCAST, BROADCAST] and messages.topics == ["a", "b"]
    assert (messages.keys[0].as_py(), messages.values[0].as_py()) == \
        (golden("frame-resolved.key.bin"), golden("frame-resolved.value.bin"))
    assert decode(messages.keys[1].as_py(), messages.values[1].as_py()) == [WatermarkEvent(DDL_TS)]


def test_ddl_type_override_takes_a_code_or_an_action_name_and_unknown_statements_need_one():
    config, layout, _, _ = build(T1, [op("INSERT", TXN1, 1, "aa")], **T1_OPTIONS)
    encoder = encoder_for(config, layout.table)

    def code(query, override=None):
        messages = encoder.encode_ddl(DDLChange("test", "t1", query, DDL_TS, classify(query), override), "t")
        return json.loads(split_frame(messages.values[0].as_py(), versioned=False)[0])["t"]

    assert code("ALTER TABLE t1 ADD COLUMN c INT") == 5
    assert code("GRANT ALL ON t1 TO u", "27") == 27
    assert code("GRANT ALL ON t1 TO u", "Lock Table") == 27
    with pytest.raises(ContractError, match="_ddl_type.*TiDB's action code"):
        encoder.check_ddl(DDLChange("test", "t1", "GRANT ALL ON t1 TO u", DDL_TS, classify("GRANT ALL ON t1 TO u")))


# -- columns: the type table, flags, renderings

COLUMNS = json.loads(golden("columns.json"))
# The input for each row of the golden type table, in its order: (Spark type, value).
TYPE_INPUTS = [
    (T.BooleanType(), True), (T.ShortType(), 1), (T.IntegerType(), 123), (T.FloatType(), 153.123),
    (T.DoubleType(), 153.123), (T.IntegerType(), None),
    (T.TimestampType(), dt.datetime(1973, 12, 30, 15, 30, tzinfo=dt.timezone.utc)), (T.LongType(), 123),
    (T.IntegerType(), 123), (T.DateType(), dt.date(2000, 1, 1)), (T.StringType(), "23:59:59"),
    (T.TimestampNTZType(), dt.datetime(2015, 12, 20, 23, 58, 58)), (T.IntegerType(), 1970),
    (T.StringType(), "test"), (T.BinaryType(), b"\x89PNG\r\n\x1a\n"), (T.StringType(), "测试<&>"),
    (T.LongType(), 0b01010001), (T.StringType(), '{"key1": "value1"}'), (T.DecimalType(14, 7), Decimal("129012.123")),
    (T.StringType(), "a"), (T.StringType(), "a,b"),
    (T.StringType(), "测试text"), (T.BinaryType(), "测试text".encode()), (T.StringType(), "测试text"),
    (T.BinaryType(), "测试text".encode()), (T.StringType(), "测试text"), (T.BinaryType(), "测试text".encode()),
    (T.StringType(), "测试text"), (T.BinaryType(), "测试text".encode()), (T.StringType(), "test"),
    (T.BinaryType(), b"\x89PNG\r\n\x1a\n"), (T.DecimalType(20, 0), Decimal("18446744073709551615")),
]


@pytest.mark.parametrize("entry, spark_type, value", [(e, *i) for e, i in zip(COLUMNS["types"], TYPE_INPUTS)],
                         ids=[e["mysql_type"] for e in COLUMNS["types"]])
def test_each_type_renders_as_the_type_table(entry, spark_type, value):
    assert len(TYPE_INPUTS) == len(COLUMNS["types"])
    s = schema(("_commit_ts", T.LongType()), ("c", spark_type))
    _, [encoded] = events([{"_commit_ts": TXN1, "c": value}], s, table="t", primary_key=None,
                          column_types=f"c {entry['mysql_type']}")
    assert encoded == b'{"u":{"c":' + entry["column_json"].encode() + b"}}"


@pytest.mark.parametrize("example", [e for e in COLUMNS["flag_examples"] if "column" in e], ids=lambda e: e["column"])
def test_flags_of_the_references_worked_examples(example):
    declared = {"a varchar(10) primary key": ("VARCHAR(10)", "pk"), "b varchar(10)": ("VARCHAR(10)", None),
                "tinyint primary key": ("TINYINT", "pk"), "int (nullable)": ("INT", None)}
    mysql_type, key = declared[example["column"]]
    s = schema(("_commit_ts", T.LongType()), ("k", T.IntegerType(), False), ("c", T.StringType()
               if "varchar" in mysql_type.lower() else T.IntegerType(), key is None))
    options = dict(table="t", column_types=f"c {mysql_type}", primary_key="c" if key else "k")
    row = {"_commit_ts": TXN1, "k": 1, "c": "x" if "varchar" in mysql_type.lower() else 1}
    _, [value] = events([row], s, **options)
    column = json.loads(value)["u"]["c"]
    assert column["f"] == example["f"] and column.get("h", False) == example.get("h", False)


def test_strings_are_escaped_as_jsoniter_does_without_html_escapes():
    s = schema(("_commit_ts", T.LongType()), ("id", T.IntegerType(), False), ("s", T.StringType()))
    _, [value] = events([{"_commit_ts": TXN1, "id": 1, "s": 'a"b\\c\n\t\x01<&>\u2028é'}], s, primary_key="id",
                        column_types=None, table="t")
    assert b'"v":"a\\"b\\\\c\\n\\t\\u0001<&>\xe2\x80\xa8\xc3\xa9"' in value


def test_floats_are_json_numbers_as_go_writes_them():
    s = schema(("_commit_ts", T.LongType()), ("id", T.IntegerType(), False), ("d", T.DoubleType()),
               ("f", T.FloatType()))
    values = [(1.5e-7, 1e-7), (1e21, 3.14), (float("nan"), float("inf")), (-0.000001, 1e21)]
    _, encoded = events([{"_commit_ts": TXN1, "id": i, "d": d, "f": f} for i, (d, f) in enumerate(values)], s,
                        primary_key="id", column_types=None, table="t")
    rendered = [(json.loads(v)["u"]["d"]["v"], v.split(b'"f":{')[1].split(b'"v":')[1].rstrip(b"}")) for v in encoded]
    assert [r[1] for r in rendered] == [b"1e-7", b"3.14", b"0", b"1e+21"]
    assert b'"v":1.5e-7' in encoded[0] and b'"v":1e+21' in encoded[1] and b'"v":-0.000001' in encoded[3]
    assert rendered[2][0] == 0  # NaN and infinities are written as 0, as TiCDC does


@pytest.mark.parametrize("bits", [32, 64])
def test_float_columns_are_spelled_as_each_value_alone_at_every_magnitude(bits):
    # The column functions look only at rows outside Arrow's plain range; every magnitude is checked here.
    import pyarrow as pa

    from ticdc_sink.table.value_text import float_json_numbers, float_text, go_float_text, go_json_float_text

    rng = np.random.default_rng(3)
    values = [m * 10.0 ** k for k in range(-40, 39) for m in (1, -1.5, 9.999999, *rng.uniform(-10, 10, 4))]
    values += [0.0, -0.0, float("nan"), float("inf"), float("-inf"), 1e-5, 1e9, 9.99999e8, 1e10, None]
    array = pa.array(values, pa.float32() if bits == 32 else pa.float64())
    finite = [None if v is None else (v if np.isfinite(v) else 0.0) for v in array.to_pylist()]
    assert float_text(array, bits).to_pylist() == [None if v is None else go_float_text(v, bits)
                                                   for v in array.to_pylist()]
    assert float_json_numbers(array, bits).to_pylist() == [None if v is None else go_json_float_text(v, bits)
                                                           for v in finite]


@pytest.mark.parametrize("data", [b"", b"plain", b'q"b\\', b"\x00\x07\x08\x0c\x0b\x7f", b"\xff\xfe\x80",
                                  "é😀\u00a0\u200b".encode(), bytes(range(256))])
def test_go_quoting_of_binary_strings_round_trips(data):
    assert go_unquote_body(go_quote_body(data)) == data


def test_go_quoting_by_translation_agrees_with_quoting_rune_by_rune():
    from ticdc_sink.codec.shared.json_text import _go_quote_runes

    rng = np.random.default_rng(7)
    values = [bytes(rng.integers(0, 256, n, dtype=np.uint8)) for n in rng.integers(0, 40, 3000)]
    values += ["a\u00a0b\u0085\u200b\U0001F600".encode(), "\udc80".encode("utf-8", "surrogatepass")]
    assert [go_quote_body(v) for v in values] == [_go_quote_runes(v) for v in values]


def test_go_quoting_matches_strconv_quote():
    assert go_quote_body(b"\x89PNG\r\n\x1a\n") == "\\x89PNG\\r\\n\\x1a\\n"
    assert go_quote_body("é\u00a0😀\x7f\a".encode()) == "é\\u00a0😀\\x7f\\a"


def test_a_keyless_table_deletes_with_every_column_and_no_handle_marker():
    s = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("a", T.IntegerType()), ("b", T.StringType()))
    _, [value] = events([{"_op": "DELETE", "_commit_ts": TXN1, "a": 1, "b": "x"}], s, primary_key=None,
                        column_types=None, table="t")
    assert value == b'{"d":{"a":{"t":3,"f":65,"v":1},"b":{"t":15,"f":64,"v":"x"}}}'


def test_the_decoder_refuses_a_frame_that_is_not_one():
    with pytest.raises(ValueError, match="version 1"):
        split_frame(b"\x00" * 8 + struct.pack(">Q", 3) + b"abc")
    with pytest.raises(ValueError, match="truncated"):
        split_frame(struct.pack(">Q", 1) + struct.pack(">Q", 30) + b"abc")


def test_decoder_reads_the_golden_frames():
    [first, third] = decode(golden("frame-batch-p0-txn1.key.bin"), golden("frame-batch-p0-txn1.value.bin"))
    assert isinstance(first, RowEvent) and (first.database, first.table, first.commit_ts) == ("test", "t1", TXN1)
    assert (first.columns, third.columns, first.primary_keys) == ({"id": 1, "val": "aa"}, {"id": 3, "val": "cc"},
                                                                  ["id"])


def test_an_event_over_max_message_bytes_becomes_ticdcs_handle_key_only_event():
    full = len(golden("row-insert.key.json")) + len(golden("row-insert.value.json")) + 36 + 24  # framed alone
    for limit, key, value in [
        (full, golden("row-insert.key.json"), golden("row-insert.value.json")),
        (full - 1, b'{"ts":415508878783938562,"scm":"test","tbl":"t1","t":1,"ohk":true}',
         b'{"u":{"id":{"t":3,"h":true,"f":11,"v":1}}}'),
    ]:
        _, _, messages = frames([op("INSERT", TXN1, 1, "aa")], [0], max_message_bytes=limit,
                                large_message_handle_option="handle-key-only")
        [event] = decode(messages.keys[0].as_py(), messages.values[0].as_py())
        assert split_frame(messages.keys[0].as_py()) == [key]
        assert split_frame(messages.values[0].as_py(), versioned=False) == [value]
    assert event.handle_key_only and event.columns == {"id": 1}


def test_with_claim_check_an_event_is_kept_framed_and_its_key_points_at_it_as_ticdc_writes_it(tmp_path):
    row = op("INSERT", TXN1, 1, "a" * 300)
    _, _, whole = frames([row], [0])
    [whole_key], [whole_value] = split_frame(whole.keys[0].as_py()), split_frame(whole.values[0].as_py(), False)
    uri = f"file://{tmp_path}"
    _, _, messages = frames([row], [0], max_message_bytes=len(whole_key) + len(whole_value) + 36 + 24 - 1,
                            large_message_handle_option="claim-check", claim_check_storage_uri=uri)
    [kept] = tmp_path.iterdir()
    location = f"{uri}/{kept.name}"
    # TiCDC marks the event handle-key-only and then not (ohk twice: a JSON reader takes the last), with ccl.
    assert split_frame(messages.keys[0].as_py()) == [
        b'{"ts":415508878783938562,"scm":"test","tbl":"t1","t":1,"ohk":true,"ohk":false,"ccl":"%s"}'
        % location.encode()]
    assert split_frame(messages.values[0].as_py(), versioned=False) == [b'{"u":{"id":{"t":3,"h":true,"f":11,"v":1}}}']
    # The object: the event's key and value, each framed as a message of its own (version, lengths).
    stored = json.loads(kept.read_bytes())
    assert base64.b64decode(stored["key"]) == struct.pack(">QQ", 1, len(whole_key)) + whole_key
    assert base64.b64decode(stored["value"]) == struct.pack(">Q", len(whole_value)) + whole_value
    [event] = decode(messages.keys[0].as_py(), messages.values[0].as_py())
    assert not event.handle_key_only and event.columns == {"id": 1, "val": "a" * 300}


@pytest.mark.parametrize("compression, stored", [("none", "open-protocol-claim-check-object.json"),
                                                 ("lz4", "open-protocol-claim-check-object.lz4.json"),
                                                 ("snappy", "open-protocol-claim-check-object.snappy.json")])
def test_decoder_reads_the_claim_check_objects_ticdcs_libraries_write(compression, stored, tmp_path):
    name = "6ba7b810-9dad-41d1-80b4-00c04fd430c8.json"
    (tmp_path / name).write_bytes((GOLDEN.parent / "compression" / stored).read_bytes())
    key = frame([b'{"ts":1,"scm":"test","tbl":"t","t":1,"ohk":true,"ohk":false,"ccl":"s3://elsewhere/p/%s"}'
                 % name.encode()])
    value = frame([compress(b'{"u":{"id":{"t":3,"h":true,"f":11,"v":1}}}', compression)], versioned=False)
    config = parse_options({**BASE_OPTIONS, "protocol": "open-protocol", "large-message-handle-compression": compression,
                            "claim-check-storage-uri": f"file://{tmp_path}"}, reading=True)
    [event] = decoder_for(config).decode(key, value)  # the name, read from the reader's own storage
    assert (event.database, event.table, event.commit_ts, event.columns) == ("test", "t", 1, {"id": 1})
