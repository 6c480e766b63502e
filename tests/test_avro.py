"""protocol=avro: TiCDC's messages byte for byte (golden/avro/), registration, errors, and Confluent's own reader.

Every test runs against the Schema Registry TEST DOUBLE (``schema_registry``
fixture); the integration suite runs the same protocol against a real registry.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import socket
import time
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from changefeed import build, schema
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import types as T

from ticdc_sink.changes.dispatch import Routing
from ticdc_sink.codec import check_services, decoder_for, encoder_for, open_encoder
from ticdc_sink.codec.avro.encoder import column_binary
from ticdc_sink.codec.shared.schema_registry import SchemaRegistryFailure, client_settings, subject
from ticdc_sink.ddl.statements import DDLChange
from ticdc_sink.embedded.schema_registry import SchemaRegistryDouble
from ticdc_sink.errors import ConfigError, ContractError

GOLDEN = Path(__file__).resolve().parent / "golden" / "avro"
CASES = json.loads((GOLDEN / "values.json").read_text())["columns"]
TS_INSERT = 429918007904436226
TS_UPDATE = (1640007050196 << 18) | 1
TABLE = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("id", T.IntegerType(), False),
               ("name", T.StringType(), True, {"mysql_type": "VARCHAR(32)"}))


def golden(name: str) -> bytes:
    return (GOLDEN / name).read_bytes()


def avro_options(registry: SchemaRegistryDouble | str, **options) -> dict:
    """Options for test.t on the double (or a registry URL); an option given as None is left out."""
    url = registry if isinstance(registry, str) else registry.url
    defaults = dict(protocol="avro", topic="tidb_{schema}_{table}", schema_registry=url, database="test",
                    table="t", primary_key="id")
    return {k: v for k, v in {**defaults, **options}.items() if v is not None}


def routing(count: int, topic: str = "tidb_test_t", partitions: int = 1) -> Routing:
    return Routing([topic], np.zeros(count, np.int32), np.zeros(count, np.int32), {topic: partitions})


def encode(spark_schema, rows: list[dict], kafka_topic: str = "tidb_test_t", **options):
    config, layout, changes, _ = build(spark_schema, rows, **options)
    encoder = encoder_for(config, layout.table)
    messages = encoder.encode_rows(changes, routing(len(rows), kafka_topic))
    keys = messages.keys.to_pylist() if messages.keys is not None else [None] * len(messages)
    return config, encoder, list(zip(keys, messages.values.to_pylist()))


def avro_long(number: int) -> bytes:
    """Avro's long encoding (zig-zag, then 7 bits a byte, low first), written out independently."""
    zigzag, out = (number << 1) ^ (number >> 63), bytearray()
    while zigzag > 0x7F:
        out.append(zigzag & 0x7F | 0x80)
        zigzag >>= 7
    return bytes(out + bytes([zigzag]))


def registrations(registry: SchemaRegistryDouble) -> list[str]:
    """The subjects schemas were registered under (POST .../versions), in order."""
    return [path.split("/")[2] for method, path, _ in registry.requests
            if method == "POST" and path.split("?")[0].endswith("/versions")]


def registered(registry: SchemaRegistryDouble, schema_id: int) -> bytes:
    """The schema text the sink sent (the double keeps the first text of each schema as given)."""
    return SchemaRegistryClient({"url": registry.url}).get_schema(schema_id).schema_str.encode()


# ---------------------------------------------------------------------------
# The Confluent envelopes of the example table test.t


@pytest.mark.parametrize("extension", [False, True])
def test_insert_key_and_value_are_ticdcs_bytes(schema_registry, extension):
    rows = [{"_op": "INSERT", "_commit_ts": TS_INSERT, "id": 1, "name": "Zoë"}]
    _, _, [(key, value)] = encode(TABLE, rows, **avro_options(schema_registry, enable_tidb_extension=extension))
    assert key == golden("insert.key.bin")
    assert value == golden("insert-tidb-extension.value.bin" if extension else "insert.value.bin")
    assert registered(schema_registry, 1) == golden("schema-key.json")
    assert registered(schema_registry, 2) == golden("schema-value-tidb-extension.json" if extension
                                                    else "schema-value.json")
    assert registrations(schema_registry) == ["tidb_test_t-key", "tidb_test_t-value"]


def test_null_update_and_delete_are_ticdcs_bytes(schema_registry):
    rows = [{"_op": "INSERT", "_commit_ts": TS_INSERT, "id": 2, "name": None},
            {"_op": "UPDATE", "_commit_ts": TS_UPDATE, "id": 1, "name": "Zoe"},
            {"_op": "DELETE", "_commit_ts": TS_UPDATE + 1, "id": 1, "name": "Zoe"}]
    _, _, messages = encode(TABLE, rows, **avro_options(schema_registry, enable_tidb_extension="true"))
    (null_key, null_value), (update_key, update_value), (delete_key, delete_value) = messages
    assert null_key == golden("insert-null-name.key.bin")
    extension = b"\x02c" + avro_long(TS_INSERT) + avro_long(TS_INSERT >> 18)
    assert null_value == b"\x00\x00\x00\x00\x02" + golden("insert-null-name.value.bin")[5:] + extension
    assert (update_key, update_value) == (golden("update-tidb-extension.key.bin"),
                                          golden("update-tidb-extension.value.bin"))
    assert (delete_key, delete_value) == (golden("delete.key.bin"), None)  # a tombstone


def test_without_the_extension_an_update_is_its_new_row(schema_registry):
    rows = [{"_op": "UPDATE", "_commit_ts": TS_UPDATE, "id": 1, "name": "Zoë"}]
    _, _, [(key, value)] = encode(TABLE, rows, **avro_options(schema_registry))
    assert (key, value) == (golden("insert.key.bin"), golden("insert.value.bin"))


# ---------------------------------------------------------------------------
# Every type of golden/avro/values.json: the field's bytes, and Confluent's reader


def spark_input(case: dict):
    """The Spark type and value that carry a case's input, as the sink's input contract takes it."""
    kind = case["mysql_type"].split("(")[0].split()[0].upper()
    value = case["input"]
    if kind == "BOOL":
        return T.BooleanType(), value
    if kind == "BIGINT" and "UNSIGNED" in case["mysql_type"]:
        return T.DecimalType(20, 0), Decimal(value)
    if kind in ("TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "BIT", "YEAR"):
        return T.LongType(), value
    if kind in ("FLOAT", "DOUBLE"):
        return (T.FloatType() if kind == "FLOAT" else T.DoubleType()), value
    if kind == "DECIMAL":
        precision, scale = (map(int, re.findall(r"\d+", case["mysql_type"])) if "(" in case["mysql_type"]
                            else (10, 0))
        return T.DecimalType(precision, scale), Decimal(value)
    if kind in ("BINARY", "VARBINARY", "BLOB"):
        return T.BinaryType(), bytes.fromhex(value)
    if kind == "DATE":
        return T.DateType(), dt.date.fromisoformat(value)
    if kind == "DATETIME":
        return T.TimestampNTZType(), dt.datetime.fromisoformat(value)
    if kind == "TIMESTAMP":
        return T.TimestampType(), dt.datetime.fromisoformat(value).replace(tzinfo=dt.timezone.utc)
    return T.StringType(), value


def case_table(case: dict, number: int):
    spark_type, value = spark_input(case)
    nullable = not case["mysql_type"].endswith("NOT NULL")
    mysql_type = re.sub(r"\s+(NOT )?NULL$", "", case["mysql_type"])
    spark_schema = schema(("_op", T.StringType()), ("id", T.IntegerType(), False),
                          (case["column"], spark_type, nullable, {"mysql_type": mysql_type}))
    options = {k.replace("-", "_"): v for k, v in (case.get("options") or {}).items()}
    return spark_schema, [{"_op": "INSERT", "id": number, case["column"]: value}], options


def avro_value(case: dict):
    """The value a reader gets: a precise decimal is its number (the logical type), other bytes their bytes."""
    if '"logicalType":"decimal"' in case["field_json"]:
        return Decimal(case["input"])
    if "avro_value_hex" in case:
        return bytes.fromhex(case["avro_value_hex"])
    return case["avro_value"]


CASE_IDS = [f"{n}-{c['column']}-{c['mysql_type']}" for n, c in enumerate(CASES)]


@pytest.mark.parametrize("number, case", list(enumerate(CASES)), ids=CASE_IDS)
def test_each_value_is_ticdcs_avro_binary(schema_registry, number, case):
    spark_schema, rows, options = case_table(case, number)
    config, layout, changes, _ = build(spark_schema, rows, **avro_options(schema_registry, **options))
    column = layout.table.column_named(case["column"])
    assert column_binary(changes.columns[case["column"]], column, config).to_pylist() == [
        bytes.fromhex(case["avro_binary_hex"])]


def test_confluents_deserializer_reads_every_type_back(schema_registry):
    """The whole values.json matrix, one table per case, read by confluent-kafka's AvroDeserializer."""
    client = SchemaRegistryClient({"url": schema_registry.url})
    deserializer = AvroDeserializer(client)
    for number, case in enumerate(CASES):
        spark_schema, rows, options = case_table(case, number)
        _, _, [(key, value)] = encode(spark_schema, rows, f"tidb_test_t{number}", **avro_options(
            schema_registry, table=f"t{number}", **options))
        context = SerializationContext(f"tidb_test_t{number}", MessageField.VALUE)
        record = deserializer(value, context)
        expected = avro_value(case)
        if case["avro_type"] == "float":
            assert record[case["column"]] == pytest.approx(expected, rel=1e-7), CASE_IDS[number]
        else:
            assert record == {"id": number, case["column"]: expected}, CASE_IDS[number]
        assert deserializer(key, SerializationContext(f"tidb_test_t{number}", MessageField.KEY)) == {"id": number}


# ---------------------------------------------------------------------------
# Keys, topics and subjects


def test_the_key_is_the_not_null_unique_key_when_there_is_no_primary_key(schema_registry):
    table = schema(("_op", T.StringType()), ("id", T.IntegerType()), ("email", T.StringType(), False))
    _, _, [(key, _)] = encode(table, [{"_op": "INSERT", "id": 7, "email": "a@b"}],
                              **avro_options(schema_registry, primary_key=None, unique_keys="uk(email)"))
    key_schema = json.loads(registered(schema_registry, 1))
    assert [f["name"] for f in key_schema["fields"]] == ["email"]
    assert key == b"\x00\x00\x00\x00\x01" + b"\x06a@b"


def test_a_keyless_table_sends_no_key_and_its_delete_neither_key_nor_value(schema_registry, caplog):
    table = schema(("_op", T.StringType()), ("id", T.IntegerType()), ("note", T.StringType()))
    rows = [{"_op": "INSERT", "id": 1, "note": "x"}, {"_op": "DELETE", "id": 1, "note": "x"}]
    with caplog.at_level(logging.WARNING):
        _, _, messages = encode(table, rows, **avro_options(schema_registry, primary_key=None))
    assert messages[0][0] is None and messages[0][1].startswith(b"\x00\x00\x00\x00\x01")
    assert messages[1] == (None, None)
    assert "test.t has no primary key and no NOT NULL unique key" in caplog.text
    assert registrations(schema_registry) == ["tidb_test_t-value"]


def test_each_topic_registers_its_tables_schemas_once_per_task(schema_registry):
    table = schema(("_op", T.StringType()), ("_schema", T.StringType()), ("_table", T.StringType()),
                   ("id", T.IntegerType(), False), ("v", T.StringType()))
    rows = [{"_op": "INSERT", "_schema": "shop", "_table": t, "id": i, "v": t} for i, t in enumerate("aba")]
    config, layout, changes, _ = build(table, rows, **avro_options(schema_registry, database=None, table=None))
    encoder = encoder_for(config, layout.table)
    topics = Routing(["tidb_shop_a", "tidb_shop_b"], np.array([0, 1, 0], np.int32), np.zeros(3, np.int32),
                     {"tidb_shop_a": 1, "tidb_shop_b": 1})
    for _ in range(3):
        messages = encoder.encode_rows(changes, topics)
    assert registrations(schema_registry) == ["tidb_shop_a-key", "tidb_shop_a-value", "tidb_shop_b-key",
                                              "tidb_shop_b-value"]
    assert messages.topic_of_message.tolist() == [0, 1, 0]
    value_ids = [int.from_bytes(v[1:5], "big") for v in messages.values.to_pylist()]
    assert value_ids == [2, 4, 2]
    assert json.loads(registered(schema_registry, 4))["name"] == "b"
    assert json.loads(registered(schema_registry, 4))["namespace"] == "default.shop"


def test_a_second_table_on_a_topic_is_refused_in_a_later_batch_too(schema_registry):
    table = schema(("_op", T.StringType()), ("_schema", T.StringType()), ("_table", T.StringType()),
                   ("id", T.IntegerType(), False))
    config, layout, first, _ = build(table, [{"_op": "INSERT", "_schema": "a_b", "_table": "c", "id": 1}],
                                     **avro_options(schema_registry, database=None, table=None))
    *_, second, _ = build(table, [{"_op": "INSERT", "_schema": "a", "_table": "b_c", "id": 2}],
                          **avro_options(schema_registry, database=None, table=None))
    encoder = encoder_for(config, layout.table)
    encoder.encode_rows(first, routing(1, "tidb_a_b_c"))
    with pytest.raises(ConfigError, match=r"tables a_b\.c and a\.b_c both go to this topic"):
        encoder.encode_rows(second, routing(1, "tidb_a_b_c"))


def test_two_tables_on_one_topic_are_refused(schema_registry):
    table = schema(("_op", T.StringType()), ("_schema", T.StringType()), ("_table", T.StringType()),
                   ("id", T.IntegerType(), False))
    rows = [{"_op": "INSERT", "_schema": "a_b", "_table": "c", "id": 1},
            {"_op": "INSERT", "_schema": "a", "_table": "b_c", "id": 2}]
    config, layout, changes, _ = build(table, rows, **avro_options(schema_registry, database=None, table=None))
    with pytest.raises(ConfigError, match=r"tables a_b\.c and a\.b_c both go to this topic.*keeps them apart"):
        encoder_for(config, layout.table).encode_rows(changes, routing(2, "tidb_a_b_c"))


def test_subjects_follow_topic_name_strategy_with_dots_as_underscores():
    assert subject("tidb.shop.orders", "key") == "tidb_shop_orders-key"
    assert subject("orders", "value") == "orders-value"


def test_names_are_sanitized_and_the_namespace_is_configurable(schema_registry):
    table = schema(("_op", T.StringType()), ("1st-id", T.IntegerType(), False), ("v", T.StringType()))
    encode(table, [{"_op": "INSERT", "1st-id": 1, "v": "x"}],
           **avro_options(schema_registry, database="my-db", table="9t", primary_key="1st-id",
                          avro_namespace="prod"))
    value = json.loads(registered(schema_registry, 2))
    assert (value["name"], value["namespace"], value["fields"][0]["name"]) == ("_9t", "prod.my_db", "_1st_id")


# ---------------------------------------------------------------------------
# The registry: credentials, refusals, reachability


def test_credentials_in_the_url_reach_the_registry():
    with SchemaRegistryDouble(basic_auth="sink:s3cr3t p@ss") as registry:
        url = registry.url.replace("http://", "http://sink:s3cr3t%20p%40ss@")
        rows = [{"_op": "INSERT", "_commit_ts": TS_INSERT, "id": 1, "name": "Zoë"}]
        _, _, [(key, _)] = encode(TABLE, rows, **{**avro_options(registry), "schema_registry": url})
        assert key == golden("insert.key.bin")
        assert all(status == 200 for *_, status in registry.requests)


def test_client_settings_pass_through_and_wrong_credentials_fail_in_one_line():
    with SchemaRegistryDouble(basic_auth="sink:right") as registry:
        rows = [{"_op": "INSERT", "_commit_ts": TS_INSERT, "id": 1, "name": "Zoë"}]
        options = avro_options(registry, **{"schema-registry.basic.auth.user.info": "sink:right"})
        encode(TABLE, rows, **options)
        options["schema-registry.basic.auth.user.info"] = "sink:wrong"
        with pytest.raises(SchemaRegistryFailure) as failure:
            encode(TABLE, rows, **options)
    message = str(failure.value)
    assert "\n" not in message and "wrong" not in message
    assert message.startswith(f"schema registry {registry.url} failed registering the key schema of test.t under "
                              "subject 'tidb_test_t-key': Unauthorized (HTTP 401")
    assert "check the credentials" in message


def test_an_incompatible_schema_fails_with_the_registrys_message(schema_registry):
    client = SchemaRegistryClient({"url": schema_registry.url})
    old = {"type": "record", "name": "t", "namespace": "default.test", "fields": [{"name": "id", "type": "int"}]}
    client.register_schema("tidb_test_t-value", Schema(json.dumps(old), "AVRO"))
    # The new value schema adds the nullable name (fine) but changes id to a string (not readable as before).
    table = schema(("_op", T.StringType()), ("id", T.StringType(), False), ("name", T.StringType()))
    with pytest.raises(SchemaRegistryFailure) as failure:
        encode(table, [{"_op": "INSERT", "id": "1", "name": "x"}], **avro_options(schema_registry))
    message = str(failure.value)
    assert "failed registering the value schema of test.t under subject 'tidb_test_t-value'" in message
    assert "Schema being registered is incompatible with an earlier schema" in message
    assert "(HTTP 409, error code 409)" in message and "make the change compatible" in message
    assert "\n" not in message


def test_a_registry_that_refuses_connections_fails_in_one_line(schema_registry):
    url = schema_registry.url
    schema_registry.stop()
    rows = [{"_op": "INSERT", "_commit_ts": TS_INSERT, "id": 1, "name": "Zoë"}]
    with pytest.raises(SchemaRegistryFailure) as failure:
        encode(TABLE, rows, **avro_options(schema_registry, **{"schema-registry.retries.wait.ms": "10"}))
    message = str(failure.value)
    assert message.startswith(f"schema registry {url} cannot be reached (registering the key schema of test.t")
    assert "check the schema-registry option" in message and "\n" not in message


def test_a_registry_that_never_answers_fails_after_broker_timeout():
    """A port that accepts connections and never answers: each attempt waits its share of broker-timeout-ms."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        rows = [{"_op": "INSERT", "_commit_ts": TS_INSERT, "id": 1, "name": "Zoë"}]
        started = time.monotonic()
        with pytest.raises(SchemaRegistryFailure, match=r"cannot be reached .*Timeout"):
            encode(TABLE, rows, **avro_options(url, broker_timeout_ms=1500,
                                               **{"schema-registry.retries.wait.ms": "10"}))
        elapsed = time.monotonic() - started
    assert 1.4 < elapsed < 15  # three attempts of 0.5 s, and the client's short waits between them


def test_request_timeouts_share_broker_timeout_between_attempts():
    config, *_ = build(TABLE, [], **{"kafka.bootstrap.servers": "h:1", "protocol": "avro",
                                     "topic": "{schema}_{table}", "schema-registry": "https://r:8081",
                                     "database": "d", "table": "t", "broker-timeout-ms": "9000"})
    assert client_settings(config) == {"url": "https://r:8081", "max.retries": 2, "timeout": 3.0}


# ---------------------------------------------------------------------------
# The project's decoder


def test_the_decoder_restores_events_from_keys_and_values(schema_registry):
    rows = [{"_op": "INSERT", "_commit_ts": TS_INSERT, "id": 1, "name": "Zoë"},
            {"_op": "UPDATE", "_commit_ts": TS_UPDATE, "id": 1, "name": None},
            {"_op": "DELETE", "_commit_ts": TS_UPDATE + 1, "id": 1, "name": None}]
    config, _, messages = encode(TABLE, rows, **avro_options(schema_registry, enable_tidb_extension="true"))
    events = [event for key, value in messages for event in decoder_for(config).decode(key, value)]
    assert [(e.type, e.database, e.table, e.commit_ts, e.columns, e.primary_keys) for e in events] == [
        ("INSERT", "test", "t", TS_INSERT, {"id": 1, "name": "Zoë"}, ["id"]),
        ("UPDATE", "test", "t", TS_UPDATE, {"id": 1, "name": None}, ["id"]),
        ("DELETE", "test", "t", None, {"id": 1}, ["id"]),
    ]


def test_the_decoder_needs_the_registry_and_the_wire_format(schema_registry):
    with pytest.raises(ConfigError, match="schema-registry"):
        decoder_for("avro").decode(golden("insert.key.bin"), golden("insert.value.bin"))
    config, *_ = build(TABLE, [], **avro_options(schema_registry))
    with pytest.raises(ValueError, match="not a Confluent Avro message"):
        decoder_for(config).decode(None, b'{"json": true}')


# ---------------------------------------------------------------------------
# avro-include-before-value (TiCDC's bytes for it: tests/golden/ticdc/avro-before-value*.json)


def test_without_the_old_row_an_update_sends_a_null_before_image(schema_registry):
    """An input without ``_before`` gives no old row: the update's ``_ticdc_before`` is null, its ``_tidb_op``
    still ``u``, and it reads back as an UPDATE without old values."""
    rows = [{"_op": "UPDATE", "_commit_ts": TS_UPDATE, "id": 1, "name": "Zoe"},
            {"_op": "DELETE", "_commit_ts": TS_UPDATE + 1, "id": 1, "name": "Zoe"}]
    config, _, [(_, update), (_, delete)] = encode(TABLE, rows, **avro_options(
        schema_registry, avro_include_before_value="true"))
    row = avro_long(1) + b"\x02" + b"\x06Zoe"  # id, then name's union branch and string
    assert update[5:] == row + b"\x00" + b"\x02u"
    assert delete[5:] == row + b"\x02" + row + b"\x02d"  # a delete's before-image is its own row
    events = [event for value in (update, delete) for event in decoder_for(config).decode(None, value)]
    assert [(e.type, e.columns, e.old) for e in events] == [("UPDATE", {"id": 1, "name": "Zoe"}, None),
                                                            ("DELETE", {"id": 1, "name": "Zoe"}, None)]


def test_with_the_before_value_a_keyless_tables_delete_is_its_row(schema_registry, caplog):
    table = schema(("_op", T.StringType()), ("id", T.IntegerType()), ("note", T.StringType()))
    rows = [{"_op": "DELETE", "id": 1, "note": "x"}]
    with caplog.at_level(logging.WARNING):
        config, _, [(key, value)] = encode(table, rows, **avro_options(schema_registry, primary_key=None,
                                                                       avro_include_before_value="true"))
    assert key is None and not caplog.text
    [event] = decoder_for(config).decode(None, value)
    assert (event.type, event.columns) == ("DELETE", {"id": 1, "note": "x"})


def test_an_enum_error_value_in_the_old_row_fails_naming_it(schema_registry):
    """TiCDC writes the old row's ENUM as its member name too, and has none for index 0."""
    columns = [("id", T.IntegerType(), False), ("en", T.IntegerType(), True, {"mysql_type": "ENUM('a','b')"})]
    table = schema(("_op", T.StringType()), *columns, ("_before", schema(*columns)))
    rows = [{"_op": "UPDATE", "id": 1, "en": 1, "_before": {"id": 1, "en": 0}}]
    encode(table, rows, **avro_options(schema_registry))  # without the old row in the value, nothing to refuse
    with pytest.raises(ContractError, match=r"_before\.en.*'' is not a member of ENUM\('a', 'b'\)"):
        encode(table, rows, **avro_options(schema_registry, avro_include_before_value="true"))


# ---------------------------------------------------------------------------
# Edge values, and what the registry client leaves open


def test_wide_decimals_nulls_and_zoned_timestamps_read_back(schema_registry):
    """DECIMAL(65,30) goes through Python integers, DECIMAL(12,2) through Arrow's 128-bit words; TIMESTAMP
    values are rendered in time-zone; NULLs take the union's null branch."""
    table = schema(("_op", T.StringType()), ("id", T.IntegerType(), False),
                   ("wide", T.DecimalType(38, 10), True, {"mysql_type": "DECIMAL(65,30)"}),
                   ("money", T.DecimalType(12, 2)), ("at", T.TimestampType(), True, {"mysql_type": "TIMESTAMP(3)"}))
    moment = dt.datetime(2024, 1, 1, 23, 30, 0, 250000, tzinfo=dt.timezone.utc)
    rows = [{"_op": "INSERT", "id": 1, "wide": Decimal("-1234567890123456789012345678.0123456789"),
             "money": Decimal("-1.28"), "at": moment},
            {"_op": "INSERT", "id": 2, "wide": None, "money": None, "at": None}]
    config, _, messages = encode(table, rows, **avro_options(schema_registry, time_zone="Asia/Shanghai"))
    deserializer = AvroDeserializer(SchemaRegistryClient({"url": schema_registry.url}))
    context = SerializationContext("tidb_test_t", MessageField.VALUE)
    assert [deserializer(value, context) for _, value in messages] == [
        {"id": 1, "wide": Decimal("-1234567890123456789012345678.012345678900000000000000000000"),
         "money": Decimal("-1.28"), "at": "2024-01-02 07:30:00.250"},
        {"id": 2, "wide": None, "money": None, "at": None}]
    value_schema = json.loads(registered(schema_registry, 2))
    assert value_schema["fields"][1]["type"][1]["precision"] == 65
    events = [decoder_for(config).decode(key, value)[0] for key, value in messages]
    assert events[0].columns["at"] == dt.datetime(2024, 1, 2, 7, 30, 0, 250000)


def test_enum_error_value_is_refused_naming_the_row(schema_registry):
    table = schema(("_op", T.StringType()), ("id", T.IntegerType(), False),
                   ("status", T.StringType(), True, {"mysql_type": "ENUM('new','paid')"}))
    with pytest.raises(ContractError, match=r"column 'status': value '' in row \{id=7\}.*avro protocol writes an "
                                            r"ENUM value as its member name"):
        encode(table, [{"_op": "INSERT", "id": 7, "status": ""}], **avro_options(schema_registry))


def test_a_keyless_delete_decodes_to_no_event(schema_registry):
    assert decoder_for("avro", schema_registry=schema_registry.url).decode(None, None) == []


def test_the_batch_writes_registry_check_names_the_registry(schema_registry):
    config, layout, *_ = build(TABLE, [], **avro_options(schema_registry))
    check_services(config)
    method, path, _ = schema_registry.requests[-1]
    assert (method, path.split("?")[0]) == ("GET", "/subjects")
    url = schema_registry.url
    schema_registry.stop()
    with pytest.raises(SchemaRegistryFailure, match=f"schema registry {url} cannot be reached .listing its subjects"):
        check_services(config)


def test_the_task_closes_the_client_it_opened(schema_registry):
    config, layout, changes, _ = build(TABLE, [{"_op": "INSERT", "_commit_ts": TS_INSERT, "id": 1, "name": "Zoë"}],
                                       **avro_options(schema_registry))
    with open_encoder(config, layout.table) as encoder:
        encoder.encode_rows(changes, routing(changes.num_rows))
        client = encoder.registry
    with pytest.raises(RuntimeError, match="client has been closed"):
        client.register("x-value", '"string"', "a check")


def test_a_missing_tls_file_is_named(schema_registry):
    with pytest.raises(ConfigError, match=r"cannot read its TLS files \(schema-registry.ssl.ca.location="
                                          r"/nowhere/ca.pem\)"):
        encode(TABLE, [], **avro_options(schema_registry, **{"schema-registry.ssl.ca.location": "/nowhere/ca.pem"}))


# ---------------------------------------------------------------------------
# avro-enable-watermark: TiCDC's test-only DDL, watermark and delete events (their bytes: test_ticdc_goldens.py)


def test_avro_enable_watermarks_events_read_back_as_a_ddl_a_watermark_and_a_delete_with_its_commit_ts(
        schema_registry):
    options = avro_options(schema_registry, enable_tidb_extension="true", avro_enable_watermark="true")
    rows = [{"_op": "INSERT", "_commit_ts": TS_INSERT, "id": 1, "name": "a"},
            {"_op": "DELETE", "_commit_ts": TS_UPDATE, "id": 1, "name": "a"}]
    config, encoder, messages = encode(TABLE, rows, **options)
    assert messages[1][1] == b"\x03" + TS_UPDATE.to_bytes(8, "big")  # the delete: byte 3 and its commit ts
    ddl = DDLChange("test", "t", "ALTER TABLE t ADD COLUMN <x> INT", TS_UPDATE + 1, "add column")
    [ddl_value] = encoder.encode_ddl(ddl, "tidb_test_t").values.to_pylist()
    assert ddl_value == (b'\x01{"query":"ALTER TABLE t ADD COLUMN \\u003cx\\u003e INT","type":5,"schema":"test",'
                         b'"table":"t","commitTs":' + str(TS_UPDATE + 1).encode() + b"}")  # Go's json.Marshal
    [watermark] = encoder.encode_watermark(TS_UPDATE + 2, ["tidb_test_t"]).values.to_pylist()
    decoder = decoder_for(config)
    assert decoder.carries_watermarks
    events = [e for key, value in [*messages, (None, ddl_value), (None, watermark)] for e in decoder.decode(key, value)]
    assert [(e.type, e.commit_ts, e.columns) for e in events[:2]] == \
        [("INSERT", TS_INSERT, {"id": 1, "name": "a"}), ("DELETE", TS_UPDATE, {"id": 1})]
    assert (events[2].query, events[2].type, events[2].commit_ts) == (ddl.query, 5, TS_UPDATE + 1)
    assert events[3].ts == TS_UPDATE + 2


def test_avro_enable_watermark_without_the_extension_is_passed_over_as_ticdc_does(schema_registry):
    options = avro_options(schema_registry, avro_enable_watermark="true")
    rows = [{"_op": "DELETE", "_commit_ts": TS_UPDATE, "id": 1, "name": "a"}]
    _, encoder, [(_, value)] = encode(TABLE, rows, **options)
    assert value is None and encoder.encode_watermark(1, ["t"]) is None  # a tombstone; no watermark
