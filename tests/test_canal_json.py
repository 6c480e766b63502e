"""Canal-JSON against the messages TiCDC writes, byte for byte.

The expected messages are golden files in ``golden/canal-json/``: the protocol
document's examples and the renderings TiCDC's source decides, one message per
file; its README says where each comes from and what was adjusted.  The
encoder's clock is fixed at each example's ``ts`` (the moment of encoding).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import logging
import re
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from changefeed import BASE_OPTIONS, build, schema
from pyspark.sql import types as T

from ticdc_sink.changes.dispatch import Routing
from ticdc_sink.codec import decoder_for, encoder_for
from ticdc_sink.codec.base import DDLEvent, WatermarkEvent
from ticdc_sink.codec.shared.compression import decompress
from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.ddl.statements import DDLChange, classify
from ticdc_sink.errors import ConfigError, ContractError, MessageTooLargeError
from ticdc_sink.kafka.messages import BROADCAST

GOLDEN = Path(__file__).resolve().parent / "golden" / "canal-json"
BUILD_MS = 1639633142960
DOC_COMMIT_TS = 429918007904436226
DOC_DML_ES = 1639633141221  # the es of the document's DML example, which is not DOC_COMMIT_TS >> 18


def golden(name: str) -> bytes:
    """The stored message, as exact bytes: a test must not pass on a parse-and-compare."""
    return (GOLDEN / name).read_bytes()


def encode(spark_schema, rows, **options) -> list[str]:
    config, layout, changes, _ = build(spark_schema, rows, **options)
    encoder = encoder_for(config, layout.table, clock=lambda: BUILD_MS)
    return encoder.encode_values(changes).to_pylist()


def decode(message: str):
    return decoder_for("canal-json").decode(None, message.encode("utf-8"))


# The spec's tp_int table, its columns in the order the document prints them.
TP_INT = schema(
    ("_commit_ts", T.LongType()),
    ("c_bigint", T.LongType()),
    ("c_int", T.IntegerType()),
    ("c_mediumint", T.IntegerType()),
    ("c_smallint", T.ShortType()),
    ("c_tinyint", T.ByteType()),
    ("id", T.IntegerType(), False),
)
TP_INT_OPTIONS = dict(database="test", table="tp_int", primary_key="id", column_types="c_mediumint MEDIUMINT")
TP_INT_ROW = {"c_bigint": 9223372036854775807, "c_int": 2147483647, "c_mediumint": 8388607,
              "c_smallint": 32767, "c_tinyint": 127, "id": 2}


def test_dml_insert_matches_the_spec_example_byte_for_byte():
    [message] = encode(TP_INT, [{**TP_INT_ROW, "_commit_ts": DOC_DML_ES << 18}], **TP_INT_OPTIONS)
    assert message.encode() == golden("dml-insert.json")


def test_dml_insert_with_tidb_extension_matches_the_spec_example():
    [message] = encode(TP_INT, [{**TP_INT_ROW, "_commit_ts": DOC_COMMIT_TS}],
                       enable_tidb_extension="true", **TP_INT_OPTIONS)
    assert message.encode() == golden("dml-insert-tidb-extension.json")


UPDATE_SCHEMA = schema(
    ("_op", T.StringType()),
    ("_commit_ts", T.LongType()),
    ("_before", T.StructType(TP_INT.fields[1:])),
    *[(f.name, f.dataType, f.nullable) for f in TP_INT.fields[1:]],
)
NEW_ROW = {**TP_INT_ROW, "c_int": 0, "c_tinyint": 0}


def _update_golden(old: dict) -> str:
    types = ('"sqlType":{"c_bigint":-5,"c_int":4,"c_mediumint":4,"c_smallint":5,"c_tinyint":-6,"id":4},'
             '"mysqlType":{"c_bigint":"bigint","c_int":"int","c_mediumint":"mediumint","c_smallint":"smallint",'
             '"c_tinyint":"tinyint","id":"int"}')
    data = {k: str(v) for k, v in NEW_ROW.items()}
    return (f'{{"id":0,"database":"test","table":"tp_int","pkNames":["id"],"isDdl":false,"type":"UPDATE",'
            f'"es":{DOC_DML_ES},"ts":{BUILD_MS},"sql":"",{types},'
            f'"old":[{json.dumps(old, separators=(",", ":"))}],"data":[{json.dumps(data, separators=(",", ":"))}]}}')


def test_update_old_holds_every_column_by_default():
    row = {"_op": "UPDATE", "_commit_ts": DOC_DML_ES << 18, "_before": TP_INT_ROW, **NEW_ROW}
    [message] = encode(UPDATE_SCHEMA, [row], **TP_INT_OPTIONS)
    assert message == _update_golden({k: str(v) for k, v in TP_INT_ROW.items()})


def test_update_with_only_output_updated_columns_keeps_changed_columns():
    row = {"_op": "u", "_commit_ts": DOC_DML_ES << 18, "_before": TP_INT_ROW, **NEW_ROW}
    [message] = encode(UPDATE_SCHEMA, [row], only_output_updated_columns="true", **TP_INT_OPTIONS)
    assert message == _update_golden({"c_int": "2147483647", "c_tinyint": "127"})


def test_content_compatible_gives_full_mysql_types_and_only_updated_columns():
    row = {"_op": "UPDATE", "_commit_ts": DOC_DML_ES << 18, "_before": TP_INT_ROW, **NEW_ROW}
    [message] = encode(UPDATE_SCHEMA, [row], content_compatible="true", **TP_INT_OPTIONS)
    expected = _update_golden({"c_int": "2147483647", "c_tinyint": "127"}).replace(
        '"mysqlType":{"c_bigint":"bigint","c_int":"int","c_mediumint":"mediumint","c_smallint":"smallint",'
        '"c_tinyint":"tinyint","id":"int"}',
        '"mysqlType":{"c_bigint":"bigint(20)","c_int":"int(11)","c_mediumint":"mediumint(9)",'
        '"c_smallint":"smallint(6)","c_tinyint":"tinyint(4)","id":"int(11)"}')
    assert message == expected


def test_delete_only_output_handle_key_columns_gives_ticdcs_handle_key_delete():
    delete = {"_op": "DELETE", "_commit_ts": DOC_COMMIT_TS, "_before": None, **NEW_ROW}
    insert = {**delete, "_op": "INSERT"}
    deleted, inserted = encode(UPDATE_SCHEMA, [delete, insert], delete_only_output_handle_key_columns="true",
                               enable_tidb_extension="true", **TP_INT_OPTIONS)
    assert deleted.encode() == golden("dml-delete-handle-key-only.json")
    assert json.loads(inserted)["data"] == [{k: str(v) for k, v in NEW_ROW.items()}]  # other rows keep every column
    [event] = decode(deleted)
    assert (event.type, event.columns) == ("DELETE", {"id": 2})


def test_delete_only_output_handle_key_columns_refuses_a_table_without_a_handle_key():
    keyless = {k: v for k, v in TP_INT_OPTIONS.items() if k != "primary_key"}
    with pytest.raises(ConfigError, match="delete-only-output-handle-key-columns.*no handle key"):
        encode(UPDATE_SCHEMA, [{"_op": "DELETE", "_commit_ts": 1, "_before": None, **NEW_ROW}],
               delete_only_output_handle_key_columns="true", **keyless)


def test_delete_puts_the_old_row_in_data_and_old_is_null():
    row = {"_op": "DELETE", "_commit_ts": DOC_DML_ES << 18, "_before": None, **NEW_ROW}
    [message] = encode(UPDATE_SCHEMA, [row], **TP_INT_OPTIONS)
    doc = json.loads(message)
    assert list(doc) == ["id", "database", "table", "pkNames", "isDdl", "type", "es", "ts", "sql", "sqlType",
                         "mysqlType", "old", "data"]
    assert doc["type"] == "DELETE" and doc["old"] is None
    assert doc["data"] == [{k: str(v) for k, v in NEW_ROW.items()}]


def test_update_without_old_values_is_an_insert_as_with_old_value_off():
    no_before = schema(("_op", T.StringType()), *[(f.name, f.dataType, f.nullable) for f in TP_INT.fields[1:]])
    [message] = encode(no_before, [{"_op": "UPDATE", **NEW_ROW}], **TP_INT_OPTIONS)
    doc = json.loads(message)
    assert doc["type"] == "INSERT" and doc["old"] is None


def test_binary_rendering_matches_the_spec_example():
    bytes_ = bytes([5, 7, 10, 15, 36, 50, 43, 99, 120, 60, 38, 255, 254, 45, 55, 70])
    s = schema(("_commit_ts", T.LongType()), ("id", T.IntegerType(), False), ("c_varbinary", T.BinaryType()))
    [message] = encode(s, [{"_commit_ts": DOC_COMMIT_TS, "id": 1, "c_varbinary": bytes_}],
                       database="test", table="t", primary_key="id")
    assert message.encode() == golden("binary.json")
    [event] = decode(message)
    assert event.columns["c_varbinary"] == bytes_


MYSQLTYPE_TABLE = schema(
    ("id", T.IntegerType(), False),
    ("c_decimal", T.DecimalType(10, 4)),
    ("c_char", T.StringType()),
    ("c_varchar", T.StringType()),
    ("c_binary", T.BinaryType()),
    ("c_varbinary", T.BinaryType()),
    ("c_enum", T.StringType()),
    ("c_set", T.StringType()),
    ("c_bit", T.LongType()),
)
MYSQLTYPE_OPTIONS = dict(
    database="test", table="t", primary_key="id",
    column_types="c_char CHAR(16), c_varchar VARCHAR(16), c_binary BINARY(16), c_varbinary VARBINARY(16), "
                 "c_enum ENUM('a','b','c'), c_set SET('a','b','c'), c_bit BIT(64)",
)
MYSQLTYPE_ROW = {"id": 1, "c_decimal": Decimal("123.456"), "c_char": "abc", "c_varchar": "abc", "c_binary": b"abc",
                 "c_varbinary": b"abc", "c_enum": "a", "c_set": "a,b", "c_bit": 0b1000001}


def test_mysql_type_example_short_names_values_and_sql_types():
    [message] = encode(MYSQLTYPE_TABLE, [MYSQLTYPE_ROW], **MYSQLTYPE_OPTIONS)
    doc = json.loads(message)
    assert doc["mysqlType"] == {"c_binary": "binary", "c_bit": "bit", "c_char": "char", "c_decimal": "decimal",
                                "c_enum": "enum", "c_set": "set", "c_varbinary": "varbinary",
                                "c_varchar": "varchar", "id": "int"}
    assert doc["sqlType"] == {"id": 4, "c_decimal": 3, "c_char": 1, "c_varchar": 12, "c_binary": 2004,
                              "c_varbinary": 2004, "c_enum": 4, "c_set": -7, "c_bit": -7}
    assert doc["data"] == [{"id": "1", "c_decimal": "123.4560", "c_char": "abc", "c_varchar": "abc",
                            "c_binary": "abc" + "\u0000" * 13, "c_varbinary": "abc", "c_enum": "1",
                            "c_set": "3", "c_bit": "65"}]


def test_mysql_type_example_full_names_with_content_compatible():
    [message] = encode(MYSQLTYPE_TABLE, [MYSQLTYPE_ROW], content_compatible="true", **MYSQLTYPE_OPTIONS)
    assert json.loads(message)["mysqlType"] == {
        "id": "int(11)", "c_decimal": "decimal(10,4)", "c_char": "char(16)", "c_varchar": "varchar(16)",
        "c_binary": "binary(16)", "c_varbinary": "varbinary(16)", "c_enum": "enum('a','b','c')",
        "c_set": "set('a','b','c')", "c_bit": "bit(64)"}


@pytest.mark.parametrize("column_type, spark_type, value, base, promoted", [
    ("TINYINT UNSIGNED", T.ShortType(), 127, -6, None),
    ("TINYINT UNSIGNED", T.ShortType(), 128, -6, 5),
    ("SMALLINT UNSIGNED", T.IntegerType(), 32768, 5, 4),
    ("MEDIUMINT UNSIGNED", T.IntegerType(), 16777215, 4, None),
    ("INT UNSIGNED", T.LongType(), 2147483647, 4, None),
    ("INT UNSIGNED", T.LongType(), 2147483648, 4, -5),
    ("BIGINT UNSIGNED", T.DecimalType(20, 0), Decimal("9223372036854775807"), -5, None),
    ("BIGINT UNSIGNED", T.DecimalType(20, 0), Decimal("18446744073709551615"), -5, 3),
])
def test_unsigned_sql_type_follows_the_value(column_type, spark_type, value, base, promoted):
    s = schema(("id", T.IntegerType(), False), ("u", spark_type))
    messages = encode(s, [{"id": 1, "u": value}, {"id": 2, "u": None}], database="d", table="t",
                      primary_key="id", column_types=f"u {column_type}")
    first, second = (json.loads(m) for m in messages)
    assert first["sqlType"]["u"] == (promoted or base)
    assert second["sqlType"]["u"] == base  # NULL keeps the base type
    assert first["data"][0]["u"] == str(value)
    assert first["mysqlType"]["u"] == column_type.lower()


def test_tidb_extension_adds_commit_ts_and_no_pk_gives_empty_pk_names():
    s = schema(("_commit_ts", T.LongType()), ("a", T.StringType()))
    [message] = encode(s, [{"_commit_ts": DOC_COMMIT_TS, "a": "x"}], database="d", table="t",
                       enable_tidb_extension="true")
    assert message.endswith(f',"_tidb":{{"commitTs":{DOC_COMMIT_TS}}}}}')
    assert '"pkNames":[]' in message


def test_strings_are_escaped_as_go_does():
    s = schema(("id", T.IntegerType(), False), ("t", T.StringType()))
    [message] = encode(s, [{"id": 1, "t": 'a"b\\c<d>&\x01\u2028é\t'}], database="d", table="t", primary_key="id")
    assert '"t":"a\\"b\\\\c\\u003cd\\u003e\\u0026\\u0001\\u2028é\\t"' in message
    assert decode(message)[0].columns["t"] == 'a"b\\c<d>&\x01\u2028é\t'


def control_encoder(clock_ms: int = 1, **options):
    config, layout, _, _ = build(schema(("a", T.StringType())), [], database="d", table="t", **options)
    return encoder_for(config, layout.table, clock=lambda: clock_ms)


def only_value(messages) -> str:
    [value] = messages.values.to_pylist()
    return value


def test_ddl_event_matches_the_spec_example():
    ddl = DDLChange("test", "", "drop database if exists test", DOC_COMMIT_TS, classify("drop database if exists test"))
    event = control_encoder(1639633095489, enable_tidb_extension="true").encode_ddl(ddl, "t")
    assert event.topics == ["t"] and event.partitions.tolist() == [0] and event.keys is None
    assert only_value(event).encode() == golden("ddl.json")
    [decoded] = decode(only_value(event))
    assert decoded == DDLEvent("test", "", "drop database if exists test", "QUERY", DOC_COMMIT_TS)


def test_ddl_event_without_extension_has_no_tidb_field():
    ddl = DDLChange("test", "orders", "ALTER TABLE orders ADD COLUMN c INT", 5 << 18,
                    classify("ALTER TABLE orders ADD COLUMN c INT"))
    assert only_value(control_encoder().encode_ddl(ddl, "t")) == (
        '{"id":0,"database":"test","table":"orders","pkNames":null,"isDdl":true,'
        '"type":"ALTER","es":5,"ts":1,"sql":"ALTER TABLE orders ADD COLUMN c INT",'
        '"sqlType":null,"mysqlType":null,"data":null,"old":null}')


def test_ddl_type_override_is_checked_on_executors_and_on_the_driver():
    ddl = DDLChange("d", "t", "do something", 1 << 18, "unknown", type_override="bogus")
    with pytest.raises(ContractError, match="CREATE, ALTER"):
        control_encoder().check_ddl(ddl)
    with pytest.raises(ContractError, match="CREATE, ALTER"):
        control_encoder().encode_ddl(ddl, "t")


def test_watermark_matches_the_spec_example():
    event = control_encoder(1640007050284, enable_tidb_extension="true").encode_watermark(DOC_COMMIT_TS, ["a", "b"])
    assert event.topics == ["a", "b"] and event.partitions.tolist() == [BROADCAST, BROADCAST]
    assert [v.encode() for v in event.values.to_pylist()] == [golden("watermark.json")] * 2
    assert decode(event.values[0].as_py()) == [WatermarkEvent(DOC_COMMIT_TS)]


def test_no_watermark_without_the_extension():
    assert control_encoder().encode_watermark(DOC_COMMIT_TS, ["t"]) is None


def test_a_message_over_max_message_bytes_is_refused_with_the_row_key():
    config, layout, changes, _ = build(schema(("id", T.IntegerType(), False), ("t", T.StringType())),
                                       [{"id": 6, "t": "x"}, {"id": 7, "t": "x" * 500}], database="d", table="t",
                                       primary_key="id", max_message_bytes="300")
    routing = Routing(["t"], np.zeros(2, "int32"), np.zeros(2, "int32"), {"t": 1})
    with pytest.raises(MessageTooLargeError, match=r"message of row \{id=7\}.*of table d\.t is \d+ bytes, over "
                                                   r"max-message-bytes=300"):
        encoder_for(config, layout.table).encode_rows(changes, routing)


# -- value renderings of one type each, against goldens derived from the reference


def encode_typed_row(columns: list[tuple], values: dict, column_types: str, **options) -> bytes:
    """The message of one INSERT of ``values`` into test.t (id 1, committed at the document's TSO)."""
    s = schema(("_commit_ts", T.LongType()), ("id", T.IntegerType(), False), *columns)
    [message] = encode(s, [{"_commit_ts": DOC_COMMIT_TS, "id": 1, **values}], database="test", table="t",
                       primary_key="id", column_types=column_types, **options)
    return message.encode()


def test_time_renders_with_the_column_fsp_and_its_sign():
    values = {"t": "838:59:59", "t_fsp3": "01:02:03.4", "t_negative_fsp2": "-00:00:01.5",
              "t_negative_fsp6": "-12:00:00.000001"}
    message = encode_typed_row([(name, T.StringType()) for name in values], values,
                               "t TIME, t_fsp3 TIME(3), t_negative_fsp2 TIME(2), t_negative_fsp6 TIME(6)")
    assert message == golden("types-time.json")


def test_timestamp_renders_in_the_time_zone_and_datetime_as_it_is():
    utc = dt.timezone.utc
    columns = [("ts_fsp3", T.TimestampType()), ("ts", T.TimestampType()),
               ("dt_fsp6", T.TimestampNTZType()), ("dt", T.TimestampNTZType())]
    values = {"ts_fsp3": dt.datetime(2023, 12, 31, 20, 0, 0, 500000, tzinfo=utc),
              "ts": dt.datetime(2024, 7, 1, tzinfo=utc),
              "dt_fsp6": dt.datetime(2024, 2, 29, 23, 59, 59, 1), "dt": dt.datetime(1999, 12, 31, 23, 59, 59)}
    column_types = "ts_fsp3 TIMESTAMP(3), ts TIMESTAMP, dt_fsp6 DATETIME(6), dt DATETIME"
    message = encode_typed_row(columns, values, column_types, time_zone="Asia/Shanghai")
    assert message == golden("types-datetime-timestamp-shanghai.json")


def test_json_renders_as_tidb_prints_it():
    document = '{"z":[3,{"y":"\u00fc","x":-1}],"a":{"c":2.5,"b":"\u65e5\u672c"},"n":null,"m":true,"e":[[],{}]}'
    message = encode_typed_row([("j", T.StringType())], {"j": document}, "j JSON")
    assert message == golden("types-json.json")


def test_varbinary_and_blob_bytes_render_as_iso_8859_1_with_go_escapes():
    every_kind_of_byte = b"\x00\x08\t\n\x0c\r\x1f \"'\\<>&\x7f\x80\x9f\xa0\xe9\xff"
    message = encode_typed_row([("vb", T.BinaryType()), ("bl", T.BinaryType())],
                               {"vb": every_kind_of_byte, "bl": every_kind_of_byte}, "vb VARBINARY(32), bl BLOB")
    assert message == golden("types-varbinary-blob.json")


def test_year_renders_as_its_number():
    values = {"y": 2155, "y_min": 1901, "y_null": None}
    message = encode_typed_row([(name, T.IntegerType()) for name in values], values,
                               "y YEAR, y_min YEAR, y_null YEAR")
    assert message == golden("types-year.json")


def test_floats_render_as_their_shortest_text_never_an_exponent():
    s = schema(("id", T.IntegerType(), False), ("f", T.FloatType()), ("d", T.DoubleType()))
    [message] = encode(s, [{"id": 1, "f": 3.14, "d": -1.5e-7}], database="d", table="t", primary_key="id")
    assert json.loads(message)["data"][0]["f"] == "3.14"  # float32 shortest text
    assert json.loads(message)["data"][0]["d"] == "-0.00000015"


@pytest.mark.parametrize("value, text", [(float("nan"), "NaN"), (float("inf"), "+Inf"), (1e21, "1000000000000000000000")])
def test_special_doubles_render_as_go_formats_them(value, text):
    s = schema(("id", T.IntegerType(), False), ("d", T.DoubleType()))
    [message] = encode(s, [{"id": 1, "d": value}], database="d", table="t", primary_key="id")
    assert json.loads(message)["data"][0]["d"] == text


def test_small_decimals_keep_their_scale_without_exponents():
    s = schema(("id", T.IntegerType(), False), ("d", T.DecimalType(20, 10)))
    messages = encode(s, [{"id": 1, "d": Decimal("0")}, {"id": 2, "d": Decimal("0.000000001")}],
                      database="d", table="t", primary_key="id")
    assert [json.loads(m)["data"][0]["d"] for m in messages] == ["0.0000000000", "0.0000000010"]


def test_binary_values_of_a_sliced_batch():
    import pyarrow as pa

    from ticdc_sink.changes.contract import ChangeBatchBuilder, InputLayout
    from ticdc_sink.config.sink_options import parse_options
    from ticdc_sink.table.spark_types import arrow_schema_of

    s = schema(("id", T.IntegerType(), False), ("b", T.BinaryType()))
    config = parse_options({"kafka.bootstrap.servers": "h:1", "protocol": "canal-json", "topic": "t",
                            "database": "d", "table": "t", "primary-key": "id"})
    layout = InputLayout.from_spark_schema(s, config)
    table = pa.Table.from_pylist([{"id": i, "b": None if i % 2 else bytes([200 + i])} for i in range(6)],
                                 schema=arrow_schema_of(s))
    values = []
    for batch in table.to_batches(max_chunksize=4):  # the second batch is a slice at offset 4
        changes, _ = ChangeBatchBuilder(layout, config).build(batch)
        values += [json.loads(v)["data"][0]["b"] for v in encoder_for(config, layout.table)
                   .encode_values(changes).to_pylist()]
    assert values == [chr(200), None, chr(202), None, chr(204), None]


def sent(spark_schema, rows, **options) -> list[str]:
    """The values of the messages ``encode_rows`` sends (where a row over max-message-bytes is replaced)."""
    config, layout, changes, _ = build(spark_schema, rows, **options)
    routing = Routing(["t"], np.zeros(len(rows), np.int32), np.zeros(len(rows), np.int32), {"t": 1})
    return encoder_for(config, layout.table, clock=lambda: BUILD_MS).encode_rows(changes, routing).values.to_pylist()


def test_a_row_over_max_message_bytes_becomes_ticdcs_handle_key_only_message():
    row = {**TP_INT_ROW, "_commit_ts": DOC_COMMIT_TS}
    full = len(golden("dml-insert-tidb-extension.json")) + 36  # TiCDC counts the key, the value and 36 bytes
    options = dict(enable_tidb_extension="true", large_message_handle_option="handle-key-only", **TP_INT_OPTIONS)
    [message] = sent(TP_INT, [row], max_message_bytes=full, **options)
    assert message.encode() == golden("dml-insert-tidb-extension.json")  # at the limit: whole
    [message] = sent(TP_INT, [row], max_message_bytes=full - 1, **options)
    assert message.encode() == golden("dml-insert-handle-key-only.json")
    [event] = decode(message)
    assert event.handle_key_only and event.columns == {"id": 2}


CLAIM_CHECK_UUID = "6ba7b810-9dad-41d1-80b4-00c04fd430c8"


@pytest.fixture
def fixed_uuid(monkeypatch):
    """Claim-check objects named by one known UUID (TiCDC's are random)."""
    monkeypatch.setattr("ticdc_sink.codec.shared.claim_check.uuid.uuid4", lambda: CLAIM_CHECK_UUID)


def test_with_claim_check_a_row_over_max_message_bytes_is_kept_whole_and_its_message_points_at_it(tmp_path,
                                                                                                 fixed_uuid):
    row = {**TP_INT_ROW, "_commit_ts": DOC_COMMIT_TS}
    full = len(golden("dml-insert-tidb-extension.json")) + 36
    uri = f"file://{tmp_path}/claims/"  # one trailing slash trimmed, as TiCDC does
    options = dict(enable_tidb_extension="true", large_message_handle_option="claim-check",
                   claim_check_storage_uri=uri, **TP_INT_OPTIONS)
    [message] = sent(TP_INT, [row], max_message_bytes=full - 1, **options)
    golden_uri = "file:///tmp/canal-json-claim-check"
    assert message.replace(uri[:-1], golden_uri).encode() == golden("dml-insert-claim-check.json")
    [kept] = (tmp_path / "claims").iterdir()
    assert kept.name == f"{CLAIM_CHECK_UUID}.json"
    whole = base64.b64encode(golden("dml-insert-tidb-extension.json")).decode()
    assert kept.read_bytes() == b'{"key":null,"value":"' + whole.encode() + b'"}'
    # A reader with no claim-check-storage-uri reads where the location says; with one, the name in its own.
    for reader in ({}, {"claim-check-storage-uri": f"file://{tmp_path}/claims"}):
        config = parse_options({**BASE_OPTIONS, "enable-tidb-extension": "true", **reader}, reading=True)
        [event] = decoder_for(config).decode(None, message.encode())
        assert not event.handle_key_only and event.columns == {**TP_INT_ROW}
    sent(TP_INT, [row], max_message_bytes=full, **options)
    assert len(list((tmp_path / "claims").iterdir())) == 1  # at the limit the message goes whole: nothing kept


def test_claim_check_raw_value_keeps_the_compressed_message_alone(tmp_path):
    row = {**TP_INT_ROW, "_commit_ts": DOC_COMMIT_TS}
    options = dict(enable_tidb_extension="true", large_message_handle_option="claim-check",
                   claim_check_storage_uri=f"file://{tmp_path}", claim_check_raw_value="true",
                   large_message_handle_compression="lz4", **TP_INT_OPTIONS)
    [whole] = sent(TP_INT, [row], **{**options, "large_message_handle_option": "none"})
    [message] = sent(TP_INT, [row], max_message_bytes=len(whole) + 35, **options)  # compressed, one byte over
    [kept] = tmp_path.iterdir()
    assert decompress(kept.read_bytes(), "lz4") == golden("dml-insert-tidb-extension.json")
    config = parse_options({**BASE_OPTIONS, "enable-tidb-extension": "true", "claim-check-raw-value": "true",
                            "large-message-handle-compression": "lz4",
                            "claim-check-storage-uri": f"file://{tmp_path}"}, reading=True)
    [event] = decoder_for(config).decode(None, message)
    assert event.columns == TP_INT_ROW


def test_a_handle_key_only_message_still_over_max_message_bytes_fails_naming_the_row():
    row = {**TP_INT_ROW, "_commit_ts": DOC_COMMIT_TS}
    with pytest.raises(MessageTooLargeError, match=r"row \{id=2\}.*max-message-bytes=100"):
        sent(TP_INT, [row], enable_tidb_extension="true", max_message_bytes="100",
             large_message_handle_option="handle-key-only", **TP_INT_OPTIONS)


# output-row-key: TP_INT as TiDB's table 114, whose row id=2 has the int handle 2.
ROW_KEY_OPTIONS = dict(enable_tidb_extension="true", output_row_key="true", table_id="114", **TP_INT_OPTIONS)
ROW_KEY_OF_ID_2 = "dIAAAAAAAAByX3KAAAAAAAAAAg=="  # t, 114 and _r, 2, each int64 with the sign bit flipped


def test_output_row_key_writes_the_rows_tikv_key_last_in_tidb_and_both_decoders_read_the_message():
    [message] = encode(TP_INT, [{**TP_INT_ROW, "_commit_ts": DOC_COMMIT_TS}], **ROW_KEY_OPTIONS)
    extension = golden("dml-insert-tidb-extension.json").decode()
    assert message == extension[:-2] + f',"rowkey":"{ROW_KEY_OF_ID_2}"}}}}'
    [event] = decode(message)
    assert event.row_key == base64.b64decode(ROW_KEY_OF_ID_2) and event.columns == TP_INT_ROW
    columns = decoder_for("canal-json").decode_columns([None], [message.encode()], event.column_types)
    assert {name: values.to_pylist() for name, values in columns.new.items()} == \
        {name: [value] for name, value in TP_INT_ROW.items()}


def test_every_message_of_a_row_carries_its_row_key_after_the_marks():
    row = {**TP_INT_ROW, "_commit_ts": DOC_COMMIT_TS}
    options = dict(large_message_handle_option="handle-key-only", **ROW_KEY_OPTIONS)
    [whole] = sent(TP_INT, [row], **options)
    [message] = sent(TP_INT, [row], max_message_bytes=len(whole) + 35, **options)  # one byte over
    assert message.endswith(f',"onlyHandleKey":true,"rowkey":"{ROW_KEY_OF_ID_2}"}}}}')
    delete = {"_op": "DELETE", "_commit_ts": DOC_COMMIT_TS, "_before": None, **NEW_ROW}
    [deleted] = encode(UPDATE_SCHEMA, [delete], delete_only_output_handle_key_columns="true", **ROW_KEY_OPTIONS)
    assert json.loads(deleted)["_tidb"] == {"commitTs": DOC_COMMIT_TS, "rowkey": ROW_KEY_OF_ID_2}


def test_the_row_key_is_the_whole_tables_whichever_columns_a_message_carries():
    config, layout, changes, _ = build(TP_INT, [{**TP_INT_ROW, "_commit_ts": DOC_COMMIT_TS}], **ROW_KEY_OPTIONS)
    [message] = encoder_for(config, layout.table.select(["c_int"])).encode_values(changes).to_pylist()
    assert json.loads(message)["_tidb"]["rowkey"] == ROW_KEY_OF_ID_2


def test_without_the_tidb_extension_output_row_key_writes_nothing_as_in_ticdc(caplog):
    without = {k: v for k, v in ROW_KEY_OPTIONS.items() if k != "enable_tidb_extension"}
    with caplog.at_level(logging.INFO, logger="ticdc_sink.codec.canal_json.options"):
        [message] = encode(TP_INT, [{**TP_INT_ROW, "_commit_ts": DOC_DML_ES << 18}], **without)
    assert message.encode() == golden("dml-insert.json")
    assert "output-row-key is set but enable-tidb-extension is not" in caplog.text


def test_output_row_key_needs_the_tables_id_in_tidb_to_write_but_not_to_read():
    options = {**BASE_OPTIONS, "enable-tidb-extension": "true", "output-row-key": "true", "database": "test",
               "table": "tp_int"}
    with pytest.raises(ConfigError, match="'table-id' is not set: output-row-key needs .*TIDB_TABLE_ID"):
        parse_options(options)
    assert not parse_options(options, reading=True).protocol_options.table_id
    with pytest.raises(ConfigError, match="'table' is not set: table-id 114 is one table's id"):
        parse_options({**options, "table-id": "114", "table": ""})


def test_output_row_key_refuses_rows_of_another_table_than_table_ids():
    spark_schema = schema(("_table", T.StringType()), *[(f.name, f.dataType, f.nullable) for f in TP_INT.fields])
    with pytest.raises(ConfigError, match="table-id.*is the id of test.tp_int.*cannot key rows of test.other"):
        encode(spark_schema, [{"_table": "other", **TP_INT_ROW, "_commit_ts": DOC_COMMIT_TS}], **ROW_KEY_OPTIONS)


def test_output_row_key_refuses_a_table_keyed_by_tidbs_hidden_row_id():
    keyless = {k: v for k, v in ROW_KEY_OPTIONS.items() if k != "primary_key"}
    with pytest.raises(ConfigError, match="output-row-key.*test.tp_int has no primary key.*_tidb_rowid: give it as"):
        encode(TP_INT, [{**TP_INT_ROW, "_commit_ts": DOC_COMMIT_TS}], unique_keys="id", **keyless)


def test_ticdcs_row_key_messages_decode_message_by_message_and_a_column_at_a_time():
    """TiCDC's own output-row-key messages (tests/golden/ticdc/): every table's rows, keys of every handle kind."""
    tables = json.loads((GOLDEN.parent / "ticdc" / "canal-json-row-key.json").read_text(encoding="utf-8"))["tables"]
    decoder = decoder_for("canal-json")
    for name, table in tables.items():
        values = [m["value"].encode() for m in table["messages"] if "error" not in m]
        events = [event for value in values for event in decoder.decode(None, value)]
        assert [e.row_key for e in events] == \
            [base64.b64decode(json.loads(value)["_tidb"]["rowkey"]) for value in values], name
        # The reader's path takes them as it takes the same messages without the key (a DECIMAL(65,30) goes
        # message by message either way).
        columns = decoder.decode_columns([None] * len(values), values, events[0].column_types)
        without = [re.sub(rb',"rowkey":"[^"]*"', b"", value) for value in values]
        assert (columns is None) == (decoder.decode_columns([None] * len(values), without,
                                                            events[0].column_types) is None), name
        assert columns is None or columns.op.to_pylist() == [e.type for e in events], name
