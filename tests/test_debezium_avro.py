"""debezium-avro: TiCDC's Debezium envelope in Avro, byte for byte against the goldens (``tests/golden/debezium-avro``),
its schemas as TiCDC registers them, read back by the sink's decoder and by confluent-kafka's AvroDeserializer."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from changefeed import build, schema
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import types as T

from ticdc_sink.changes.dispatch import Routing
from ticdc_sink.codec import decoder_for, encoder_for
from ticdc_sink.codec.base import DDLEvent, WatermarkEvent
from ticdc_sink.ddl.statements import DDLChange, classify
from ticdc_sink.errors import ConfigError, ContractError
from ticdc_sink.kafka.messages import BROADCAST

GOLDEN = Path(__file__).resolve().parent / "golden" / "debezium-avro"
COMMIT_TS = 449340000000000000  # source.ts_ms 1714096069335
NOW_MS = 1700000000000

FOO = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("id", T.IntegerType(), False),
             ("name", T.StringType()), ("bin", T.BinaryType()), ("price", T.DecimalType(10, 4)),
             ("ubig", T.DecimalType(20, 0)), ("v", T.LongType()))
FOO_ROW = {"_op": "INSERT", "_commit_ts": COMMIT_TS, "id": 1, "name": "alice", "bin": b"\x01\x02\x03",
           "price": Decimal("12.3400"), "ubig": Decimal("18446744073709551615"), "v": None}
FOO_OPTIONS = dict(database="test", table="foo", primary_key="id", cluster_id="dbserver1",
                   column_types="name VARCHAR(16), bin VARBINARY(16), ubig BIGINT UNSIGNED",
                   avro_bigint_unsigned_handling_mode="string")
ACCOUNT_COLUMNS = [T.StructField("id", T.IntegerType(), False), T.StructField("account_id", T.IntegerType(), False)]
ACCOUNT = T.StructType([T.StructField("_op", T.StringType()), T.StructField("_commit_ts", T.LongType()),
                        *ACCOUNT_COLUMNS, T.StructField("_before", T.StructType(ACCOUNT_COLUMNS))])
ACCOUNT_OPTIONS = dict(database="test", table="tp_account", primary_key="id", cluster_id="dbserver1",
                       enable_tidb_extension="true")


def golden(name: str) -> tuple[bytes, str]:
    """(the framed message, the registered schema) of a golden."""
    return (bytes.fromhex((GOLDEN / f"{name}.hex").read_text().strip()),
            (GOLDEN / f"{name}.schema.json").read_text())


def sent(registry_url: str, spark_schema, rows: list[dict], topic: str, **options):
    config, layout, changes, _ = build(spark_schema, rows, protocol="debezium-avro", topic=topic,
                                       schema_registry=registry_url, **options)
    n = len(rows)
    routing = Routing([topic], np.zeros(n, np.int32), np.zeros(n, np.int32), {topic: 1})
    messages = encoder_for(config, layout.table, clock=lambda: NOW_MS).encode_rows(changes, routing)
    return config, messages.keys.to_pylist(), messages.values.to_pylist()


def assert_golden(message: bytes, name: str, registry) -> None:
    """The message equals the golden but for its schema id (the goldens' are placeholders), and that id's
    schema is the golden's text."""
    expected, schema_text = golden(name)
    assert message[:1] == b"\x00" and message[5:] == expected[5:]
    assert registry.schema_text(int.from_bytes(message[1:5], "big")) == schema_text


@pytest.fixture
def registry(schema_registry):
    from ticdc_sink.codec.shared.schema_registry import SchemaRegistry

    client = SchemaRegistry.at(schema_registry.url)
    yield client
    client.close()


@pytest.mark.parametrize("extension", ["false", "true"])
@pytest.mark.parametrize("decimal_mode", ["precise", "string"])
def test_an_insert_is_ticdcs_key_and_envelope_with_its_schemas(schema_registry, registry, extension, decimal_mode):
    _, [key], [value] = sent(schema_registry.url, FOO, [FOO_ROW], "dbserver1.test.foo", enable_tidb_extension=extension,
                             avro_decimal_handling_mode=decimal_mode, **FOO_OPTIONS)
    name = "insert" + ("-tidb-extension" if extension == "true" else "") + \
        ("-decimal-string" if decimal_mode == "string" else "")
    assert_golden(key, f"{name}-key", registry)
    assert_golden(value, f"{name}-value", registry)
    assert sorted(SchemaRegistryClient({"url": schema_registry.url}).get_subjects()) == [
        "dbserver1.test.foo-key", "dbserver1.test.foo-value"]


def test_an_update_carries_its_old_row_where_the_input_has_one_and_a_delete_its_row(schema_registry, registry):
    rows = [{"_op": "UPDATE", "_commit_ts": COMMIT_TS, "id": 13, "account_id": 35,
             "_before": {"id": 13, "account_id": 34}},
            {"_op": "DELETE", "_commit_ts": COMMIT_TS, "id": 14, "account_id": 34, "_before": None}]
    config, [_, delete_key], [update, delete] = sent(schema_registry.url, ACCOUNT, rows, "topic1", **ACCOUNT_OPTIONS)
    assert_golden(update, "update-value", registry)
    assert_golden(delete, "delete-value", registry)
    assert_golden(delete_key, "delete-key", registry)
    without_old = [{k: v for k, v in rows[0].items() if k != "_before"}]  # a DataFrame without _before
    no_before = T.StructType([f for f in ACCOUNT.fields if f.name != "_before"])
    _, _, [update] = sent(schema_registry.url, no_before, without_old, "topic1", **ACCOUNT_OPTIONS)
    assert_golden(update, "update-no-old-value-value", registry)
    decoder = decoder_for(config)
    [event] = decoder.decode(delete_key, delete)
    assert (event.type, event.database, event.table, event.commit_ts, event.columns, event.primary_keys) == \
        ("DELETE", "test", "tp_account", COMMIT_TS, {"id": 14, "account_id": 34}, ["id"])


# TiCDC's debezium testdata/datatype.ddl.sql and datatype.dml.sql: (column, Spark type, TiDB type, input value).
DATATYPE = [
    ("pk", T.IntegerType(), "INT", 1),
    ("col_d_2023", T.DateType(), "DATE", dt.date(2023, 11, 30)),
    ("col_d_1000", T.DateType(), "DATE", dt.date(1000, 1, 1)),
    ("col_d_9999", T.DateType(), "DATE", dt.date(9999, 12, 31)),
    ("col_d_0000", T.DateType(), "DATE", None),  # '0000-00-00': null, as TiCDC writes it for a nullable column
    ("col_dt", T.TimestampNTZType(), "DATETIME", dt.datetime(2023, 11, 30, 12, 34, 56)),
    ("col_dt_fsp_0", T.TimestampNTZType(), "DATETIME(0)", dt.datetime(2023, 11, 30, 12, 34, 56)),
    ("col_dt_fsp_1", T.TimestampNTZType(), "DATETIME(1)", dt.datetime(2023, 11, 30, 12, 34, 56, 100000)),
    ("col_dt_fsp_4", T.TimestampNTZType(), "DATETIME(4)", dt.datetime(2023, 11, 30, 12, 34, 56, 123500)),
    ("col_dt_fsp_6", T.TimestampNTZType(), "DATETIME(6)", dt.datetime(2023, 11, 30, 12, 34, 56, 123456)),
    ("col_dt_0000", T.TimestampNTZType(), "DATETIME(6)", None),
    ("col_t", T.StringType(), "TIME", "12:34:56"),
    ("col_t_fsp_0", T.StringType(), "TIME(0)", "12:34:56"),
    ("col_t_fsp_1", T.StringType(), "TIME(1)", "12:34:56.1"),
    ("col_t_fsp_4", T.StringType(), "TIME(4)", "12:34:56.1235"),
    ("col_t_fsp_6", T.StringType(), "TIME(6)", "12:34:56.123456"),
    ("col_t_neg", T.StringType(), "TIME(6)", "-12:34:56.123456"),
    ("col_ts", T.TimestampType(), "TIMESTAMP", dt.datetime(2023, 11, 30, 12, 34, 56, tzinfo=dt.timezone.utc)),
    ("col_ts_fsp_0", T.TimestampType(), "TIMESTAMP(0)",
     dt.datetime(2023, 11, 30, 12, 34, 56, tzinfo=dt.timezone.utc)),
    ("col_ts_fsp_1", T.TimestampType(), "TIMESTAMP(1)",
     dt.datetime(2023, 11, 30, 12, 34, 56, 100000, tzinfo=dt.timezone.utc)),
    ("col_ts_fsp_5", T.TimestampType(), "TIMESTAMP(5)",
     dt.datetime(2023, 11, 30, 12, 34, 56, 123460, tzinfo=dt.timezone.utc)),
    ("col_ts_fsp_6", T.TimestampType(), "TIMESTAMP(6)",
     dt.datetime(2023, 11, 30, 12, 34, 56, 123456, tzinfo=dt.timezone.utc)),
    ("col_y", T.IntegerType(), "YEAR", 2023),
    ("col_bit_1", T.BinaryType(), "BIT(1)", b"\x01"),
    ("col_bit_5", T.BinaryType(), "BIT(5)", b"\x10"),
    ("col_bit_6", T.BinaryType(), "BIT(6)", b"\x10"),
    ("col_bit_60", T.BinaryType(), "BIT(60)", b"\x00\x00\x00\x00\x00\x00\x00\x10"),
    ("col_varchar", T.StringType(), "VARCHAR(100)", "foo"),
    ("col_char", T.StringType(), "CHAR(100)", "foo"),
    ("col_varbinary", T.BinaryType(), "VARBINARY(100)", b"foo"),
    ("col_binary", T.BinaryType(), "BINARY(100)", b"foo" + bytes(97)),
    ("col_blob", T.BinaryType(), "BLOB", b"foo"),
    ("col_decimal", T.DecimalType(10, 5), "DECIMAL(10,5)", Decimal("12345.12345")),
    ("col_numeric", T.DecimalType(10, 5), "DECIMAL(10,5)", Decimal("12345.12345")),
    ("col_float", T.FloatType(), "FLOAT", 12345.123),
    ("col_double", T.DoubleType(), "DOUBLE", 12345.12345),
    ("col_int", T.IntegerType(), "INT", -2147483648),
    ("col_int_unsigned", T.LongType(), "INT UNSIGNED", 4294967295),
    ("col_tinyint", T.ByteType(), "TINYINT", -128),
    ("col_tinyint_unsigned", T.ShortType(), "TINYINT UNSIGNED", 255),
    ("col_smallint", T.ShortType(), "SMALLINT", -32768),
    ("col_smallint_unsigned", T.IntegerType(), "SMALLINT UNSIGNED", 65535),
    ("col_mediumint", T.IntegerType(), "MEDIUMINT", -8388608),
    ("col_mediumint_unsigned", T.IntegerType(), "MEDIUMINT UNSIGNED", 16777215),
    ("col_bigint", T.LongType(), "BIGINT", -9223372036854775808),
    ("col_bigint_unsigned", T.DecimalType(20, 0), "BIGINT UNSIGNED", Decimal("18446744073709551615")),
    ("col_enum", T.StringType(), "ENUM('a','b','c')", "a"),
    ("col_enum_invalid", T.IntegerType(), "ENUM('a','b','c')", 0),  # 'd': MySQL's error value, index 0
    ("col_set", T.StringType(), "SET('a','b','c')", "a,b"),
    ("col_set_invalid", T.IntegerType(), "SET('a','b','c')", 0),
    ("col_json", T.StringType(), "JSON", '["foo"]'),
]


def test_every_type_of_ticdcs_datatype_table_is_its_avro_value(schema_registry, registry):
    spark_schema = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()),
                          *[(name, spark_type) for name, spark_type, _, _ in DATATYPE])
    row = {"_op": "INSERT", "_commit_ts": COMMIT_TS, **{name: value for name, _, _, value in DATATYPE}}
    types = ", ".join(f"{name} {tidb}" for name, _, tidb, _ in DATATYPE)
    config, [key], [value] = sent(schema_registry.url, spark_schema, [row], "dbserver1.test.foo", database="test",
                                  table="foo", primary_key="pk", cluster_id="dbserver1", column_types=types,
                                  enable_tidb_extension="true", avro_bigint_unsigned_handling_mode="string")
    assert_golden(key, "datatype-key", registry)
    assert_golden(value, "datatype-value", registry)
    [event] = decoder_for(config).decode(key, value)
    assert event.columns["col_t_neg"] == "-12:34:56.123456" and event.columns["col_bigint_unsigned"] == 2**64 - 1
    assert event.columns["col_decimal"] == Decimal("12345.12345") and event.columns["col_bit_60"] == 16


def test_avro_deserializer_reads_the_messages_into_the_input_rows(schema_registry):
    _, [key], [value] = sent(schema_registry.url, FOO, [FOO_ROW], "orders", enable_tidb_extension="true",
                             **FOO_OPTIONS)
    client = SchemaRegistryClient({"url": schema_registry.url})
    read_key = AvroDeserializer(client)(key, SerializationContext("orders", MessageField.KEY))
    read = AvroDeserializer(client)(value, SerializationContext("orders", MessageField.VALUE))
    assert read_key == {"id": 1}
    assert read["op"] == "c" and read["before"] is None and read["ts_ms"] == NOW_MS
    assert read["after"] == {"id": 1, "name": "alice", "bin": b"\x01\x02\x03", "price": Decimal("12.3400"),
                             "ubig": "18446744073709551615", "v": None}
    assert read["source"]["commit_ts"] == COMMIT_TS and read["source"]["name"] == "dbserver1"
    assert (read["source"]["db"], read["source"]["table"]) == ("test", "foo")


def test_tables_sharing_a_topic_register_their_schemas_under_its_subjects(schema_registry, registry):
    # As TiCDC's own integration test does: two tables' envelopes are not compatible versions of one schema.
    SchemaRegistryClient({"url": schema_registry.url}).set_compatibility(level="NONE")
    rows = [{**FOO_ROW, "_table": "foo"}, {**FOO_ROW, "_table": "bar", "id": 2}]
    spark_schema = T.StructType([*FOO.fields, T.StructField("_table", T.StringType())])
    options = {k: v for k, v in FOO_OPTIONS.items() if k != "table"}
    config, keys, values = sent(schema_registry.url, spark_schema, rows, "shop", **options)
    decoder = decoder_for(config)
    assert [decoder.decode(k, v)[0].table for k, v in zip(keys, values)] == ["foo", "bar"]
    assert SchemaRegistryClient({"url": schema_registry.url}).get_versions("shop-value") == [1, 2]


def test_a_bigint_unsigned_over_a_long_is_refused_naming_the_row_unless_written_as_text(schema_registry):
    with pytest.raises(ContractError, match=r"ubig.*18446744073709551615.*avro-bigint-unsigned-handling-mode=string"):
        sent(schema_registry.url, FOO, [FOO_ROW], "t", **{**FOO_OPTIONS, "avro_bigint_unsigned_handling_mode": "long"})


DDL_CLOCK_MS = 1701326309000  # the Debezium goldens' clock


def control_encoder(registry_url: str, **options):
    """The encoder of TiCDC's DDL test table (test.table1, id INT(10) primary key), cluster test_cluster."""
    config, layout, _, _ = build(schema(("_op", T.StringType()), ("id", T.IntegerType(), False)), [],
                                 protocol="debezium-avro", topic="t", schema_registry=registry_url, database="test",
                                 table="table1", primary_key="id", column_types="id INT(10)", cluster_id="test_cluster",
                                 **options)
    return config, encoder_for(config, layout.table, clock=lambda: DDL_CLOCK_MS)


def test_ddl_and_watermarks_are_debeziums_events_in_avro_with_avro_enable_watermark(schema_registry, registry):
    config, encoder = control_encoder(schema_registry.url, enable_tidb_extension="true",
                                      avro_enable_watermark="true")
    statement = "RENAME TABLE test.table1 to test.table2"
    ddl = encoder.encode_ddl(DDLChange("test", "table2", statement, 1, classify(statement)), "t")
    assert ddl.partitions.tolist() == [BROADCAST]
    assert_golden(ddl.keys[0].as_py(), "ddl-rename-table-key", registry)
    assert_golden(ddl.values[0].as_py(), "ddl-rename-table-value", registry)
    watermark = encoder.encode_watermark(3, ["t"])
    assert_golden(watermark.keys[0].as_py(), "watermark-key", registry)
    assert_golden(watermark.values[0].as_py(), "watermark-value", registry)
    client = SchemaRegistryClient({"url": schema_registry.url})
    assert set(client.get_subjects()) == {"io.debezium.connector.mysql.SchemaChangeKey",
                                          "io.debezium.connector.mysql.SchemaChangeValue",
                                          "test_cluster.watermark.Key", "test_cluster.watermark.Envelope"}
    decoder = decoder_for(config)
    assert decoder.carries_watermarks
    assert decoder.decode(ddl.keys[0].as_py(), ddl.values[0].as_py()) == [
        DDLEvent("test", "table2", statement, "ALTER", 1)]
    assert decoder.decode(watermark.keys[0].as_py(), watermark.values[0].as_py()) == [WatermarkEvent(3)]


@pytest.mark.parametrize("options", [{}, {"enable_tidb_extension": "true"}, {"avro_enable_watermark": "true"}])
def test_without_both_settings_no_ddl_or_watermark_is_sent_as_in_ticdc(schema_registry, options):
    _, encoder = control_encoder(schema_registry.url, **options)
    statement = "RENAME TABLE test.table1 to test.table2"
    assert encoder.encode_ddl(DDLChange("test", "table2", statement, 1, classify(statement)), "t") is None
    assert encoder.encode_watermark(3, ["t"]) is None


@pytest.mark.parametrize("options, says", [
    ({}, 'Debezium Avro protocol requires parameter "schema-registry"'),
    ({"schema_registry": "http://r:8081", "large_message_handle_option": "handle-key-only"},
     "protocol is debezium-avro, it's not supported"),
])
def test_what_ticdc_refuses_or_the_sink_does_not_do_is_refused_in_one_line(options, says):
    with pytest.raises(ConfigError) as refused:
        build(FOO, [FOO_ROW], protocol="debezium-avro", topic="t", **FOO_OPTIONS, **options)
    assert says in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize("decimal_mode, read_default", [("precise", Decimal("1.5000")), ("string", "1.5")])
def test_a_null_of_a_column_with_a_default_is_the_default_in_avro(schema_registry, decimal_mode, read_default):
    """As in Debezium's JSON (test_debezium.py); a DECIMAL's default as text keeps its own digits, as TiCDC
    prints the decimal it parses from the stored text.  The Avro schemas carry no defaults but null's."""
    row = {**FOO_ROW, "name": None, "price": None}
    types = "name VARCHAR(16) DEFAULT 'x', bin VARBINARY(16), ubig BIGINT UNSIGNED, price DECIMAL(10,4) DEFAULT 1.5"
    options = {**FOO_OPTIONS, "column_types": types, "avro_decimal_handling_mode": decimal_mode}
    _, _, [value] = sent(schema_registry.url, FOO, [row], "defaults", **options)
    client = SchemaRegistryClient({"url": schema_registry.url})
    read = AvroDeserializer(client)(value, SerializationContext("defaults", MessageField.VALUE))
    assert (read["after"]["name"], read["after"]["price"], read["after"]["v"]) == ("x", read_default, None)
    registered = client.get_latest_version("defaults-value").schema.schema_str
    assert '"default":null' in registered and '"default":"x"' not in registered
