"""The AWS Glue Schema Registry for avro and debezium-avro (``codec/shared/glue_schema_registry.py``), against
moto's Glue API (``glue_api.py``): TiCDC's refusals in its words, registration and Glue's header, round trips
through the decoders, failures in one line without secrets, and Spark's reader through Glue.

That the sink's schemas, names, requests and bytes are TiCDC's is ``test_ticdc_goldens.py``'s (the avro-glue and
debezium-avro-glue goldens, written by TiCDC's encoder against moto's Glue).
"""

from __future__ import annotations

import socket
import sys
import time
import uuid

import botocore.client
import numpy as np
import pytest
from changefeed import build, schema
from glue_api import ACCESS_KEY, SECRET_ACCESS_KEY
from protocols import ProtocolUnderTest
from pyspark.sql import types as T

from ticdc_sink.changes.dispatch import Routing
from ticdc_sink.cli.tail import protocol_decoder
from ticdc_sink.codec import check_services, decoder_for, encoder_for
from ticdc_sink.codec.base import DDLEvent, RowEvent, WatermarkEvent
from ticdc_sink.codec.recognition import NotOfProtocol, decode
from ticdc_sink.codec.shared.glue_schema_registry import glue_header, split_glue
from ticdc_sink.codec.shared.schema_registry import SchemaRegistryFailure, split_confluent
from ticdc_sink.ddl.statements import DDLChange, classify
from ticdc_sink.errors import ConfigError

TABLE = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("id", T.IntegerType(), False),
               ("name", T.StringType(), True, {"mysql_type": "VARCHAR(32)"}))
TS = 450_000_000_000_000_000
ROWS = [{"_op": "INSERT", "_commit_ts": TS + 1, "id": 1, "name": "Zoë"},
        {"_op": "UPDATE", "_commit_ts": TS + 2, "id": 1, "name": "Zoe"},
        {"_op": "DELETE", "_commit_ts": TS + 3, "id": 1, "name": "Zoe"}]
PROTOCOLS = {"avro": "Avro", "debezium-avro": "Debezium Avro"}  # as TiCDC names them in its refusals
KAFKA_TOPIC = "tidb_test_t"
SECRETS = {"glue-schema-registry-access-key": "AKIANEVERSHOWN", "glue-schema-registry-secret-access-key":
           "secret-never-shown", "glue-schema-registry-token": "token-never-shown"}


def options(protocol: str, glue: dict, **more) -> dict:
    """A write of test.t to tidb_test_t in ``protocol`` through the registry of ``glue`` (its options)."""
    return {"protocol": protocol, "topic": "tidb_{schema}_{table}", "database": "test", "table": "t",
            "primary-key": "id", "enable-tidb-extension": "true", **glue, **more}


def encode(protocol: str, glue: dict, rows: list[dict] = ROWS, spark_schema=TABLE, **more):
    """(config, encoder, [(key, value)]) of ``rows`` through a fresh encoder: a task's."""
    config, layout, changes, _ = build(spark_schema, rows, **options(protocol, glue, **more))
    encoder = encoder_for(config, layout.table)
    messages = encoder.encode_rows(changes, Routing([KAFKA_TOPIC], np.zeros(len(rows), np.int32),
                                                    np.zeros(len(rows), np.int32), {KAFKA_TOPIC: 1}))
    return config, encoder, list(zip(messages.keys.to_pylist(), messages.values.to_pylist()))


@pytest.fixture
def calls(monkeypatch):
    """The Glue requests made from here on: (operation, parameters)."""
    made = []
    make_api_call = botocore.client.BaseClient._make_api_call

    def recorded(client, operation, params):
        made.append((operation, params))
        return make_api_call(client, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", recorded)
    return made


# ---------------------------------------------------------------------------
# Options: TiCDC's refusals, in its words


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("given, says", [
    ({}, '{} protocol requires parameter "schema-registry" or "glue-schema-registry" to specify the schema registry'),
    ({"schema-registry": "http://registry:8081", "glue-schema-registry-name": "cdc",
      "glue-schema-registry-region": "us-east-1"},
     '{} protocol requires only one of "schema-registry" or "glue-schema-registry" to specify the schema registry'),
    ({"glue-schema-registry-region": "us-east-1"}, "registry-name is empty, is must be set"),
    ({"glue-schema-registry-name": "cdc"}, "region is empty, is must be set"),
    ({"glue-schema-registry-name": "cdc", "glue-schema-registry-region": "us-east-1",
      "glue-schema-registry-access-key": SECRETS["glue-schema-registry-access-key"]},
     "access-key is set, but access-key-secret is empty, they must be set together"),
    ({"glue-schema-registry-name": "cdc", "glue-schema-registry-region": "us-east-1",
      "glue-schema-registry-secret-access-key": SECRETS["glue-schema-registry-secret-access-key"],
      "glue-schema-registry-token": SECRETS["glue-schema-registry-token"]},
     "glue-schema-registry-secret-access-key or -token is set without it"),
    ({"glue-schema-registry-name": "cdc", "glue-schema-registry-region": "us-east-1",
      "glue-schema-registry-endpoint": "localhost:4566"}, "an http:// or https:// URL of a Glue API"),
])
def test_a_registry_setting_ticdc_refuses_is_refused_in_its_words(protocol, given, says):
    with pytest.raises(ConfigError) as refused:
        build(TABLE, [], **options(protocol, given))
    assert says.format(PROTOCOLS[protocol]) in str(refused.value) and "\n" not in str(refused.value)
    assert not any(secret in str(refused.value) for secret in SECRETS.values())


def test_the_credentials_are_masked_in_the_options_repr(glue_registry):
    config, _, _, _ = build(TABLE, [], **options("avro", {**glue_registry.options(), **SECRETS}))
    shown = repr(config)
    assert "glue_schema_registry_name=" in shown and not any(secret in shown for secret in SECRETS.values())


# ---------------------------------------------------------------------------
# Registration and Glue's header


def test_glues_header_is_version_3_compression_0_and_the_version_uuid():
    version = str(uuid.uuid4())
    header = glue_header(version)
    assert header == b"\x03\x00" + uuid.UUID(version).bytes and len(header) == 18
    assert split_glue(header + b"record") == (version, b"record")
    with pytest.raises(ValueError, match="not a Glue Schema Registry Avro message"):
        split_glue(b"\x03\x05" + header[2:] + b"record")  # zlib-compressed, which TiCDC's decoder refuses too
    with pytest.raises(ValueError, match="it starts as Confluent's do: read with the schema-registry option"):
        split_glue(b"\x00\x00\x00\x00\x01" + bytes(13))
    with pytest.raises(ValueError, match="it starts as AWS Glue's do: read with the glue-schema-registry-"):
        split_confluent(header + b"record")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_key_and_value_schemas_are_created_as_ticdc_creates_them(glue_registry, calls, protocol):
    _, _, messages = encode(protocol, glue_registry.options())
    schemas = glue_registry.schemas()
    assert list(schemas) == [f"{KAFKA_TOPIC}-key", f"{KAFKA_TOPIC}-value"]  # the key first, as in TiCDC
    assert {(s.data_format, s.compatibility, len(s.versions)) for s in schemas.values()} == {("AVRO", "NONE", 1)}
    [key_version], [value_version] = (list(s.versions) for s in schemas.values())
    for key, value in messages:
        assert key[:18] == glue_header(key_version)
        assert value is None or value[:18] == glue_header(value_version)
    assert [(operation, params.get("SchemaName") or params["SchemaId"]["SchemaName"]) for operation, params in calls] \
        == [("GetSchemaVersion", f"{KAFKA_TOPIC}-key"), ("CreateSchema", f"{KAFKA_TOPIC}-key"),
            ("GetSchemaVersion", f"{KAFKA_TOPIC}-value"), ("CreateSchema", f"{KAFKA_TOPIC}-value")]


def test_another_task_registers_the_same_version_and_a_new_shape_a_new_one(glue_registry):
    _, _, [(first_key, first_value), *_] = encode("avro", glue_registry.options())
    _, _, [(again_key, again_value), *_] = encode("avro", glue_registry.options())
    assert (again_key[:18], again_value[:18]) == (first_key[:18], first_value[:18])
    assert [len(s.versions) for s in glue_registry.schemas().values()] == [1, 1]

    wider = T.StructType([*TABLE.fields, T.StructField("note", T.StringType())])
    _, _, [(key, value)] = encode("avro", glue_registry.options(), [{**ROWS[0], "note": "new"}], wider)
    value_schema = glue_registry.schemas()[f"{KAFKA_TOPIC}-value"]
    assert len(value_schema.versions) == 2 and '"note"' in value_schema.latest
    assert value[:18] == glue_header(list(value_schema.versions)[-1]) and key[:18] == first_key[:18]


def test_a_schema_another_task_created_meanwhile_is_registered_as_a_version_of_it(glue_registry, monkeypatch):
    make_api_call = botocore.client.BaseClient._make_api_call

    def another_task_first(client, operation, params):
        if operation == "CreateSchema":  # the other task's CreateSchema lands first
            make_api_call(client, operation, params)
        return make_api_call(client, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", another_task_first)
    _, _, [(key, value), *_] = encode("avro", glue_registry.options())
    schemas = glue_registry.schemas()
    assert [len(s.versions) for s in schemas.values()] == [1, 1]
    assert key[:18] == glue_header(list(schemas[f"{KAFKA_TOPIC}-key"].versions)[0])


# ---------------------------------------------------------------------------
# Round trips


def test_avro_reads_back_through_glue(glue_registry, calls):
    config, _, messages = encode("avro", glue_registry.options())
    decoder = decoder_for(config)
    calls.clear()
    events = [event for key, value in messages for event in decoder.decode(key, value)]
    assert [(e.type, e.columns, e.commit_ts) for e in events] == [
        ("INSERT", {"id": 1, "name": "Zoë"}, TS + 1), ("UPDATE", {"id": 1, "name": "Zoe"}, TS + 2),
        ("DELETE", {"id": 1}, None)]  # a tombstone: the key alone
    # One lookup per schema version, by its UUID, however many messages name it.
    assert sorted(operation for operation, _ in calls) == ["GetSchemaVersion", "GetSchemaVersion"]
    assert all(set(params) == {"SchemaVersionId"} for _, params in calls)


def test_debezium_avro_reads_back_through_glue_with_its_ddl_and_watermarks(glue_registry):
    config, encoder, messages = encode("debezium-avro", glue_registry.options(), avro_enable_watermark="true")
    decoder = decoder_for(config)
    events = [event for key, value in messages for event in decoder.decode(key, value)]
    assert [(e.type, e.columns, e.old, e.commit_ts) for e in events] == [
        ("INSERT", {"id": 1, "name": "Zoë"}, None, TS + 1),
        ("UPDATE", {"id": 1, "name": "Zoe"}, None, TS + 2), ("DELETE", {"id": 1, "name": "Zoe"}, None, TS + 3)]

    statement = "ALTER TABLE test.t ADD COLUMN note TEXT"
    ddl = encoder.encode_ddl(DDLChange("test", "t", statement, TS + 4, classify(statement)), KAFKA_TOPIC)
    watermark = encoder.encode_watermark(TS + 5, [KAFKA_TOPIC])
    assert decoder.decode(ddl.keys[0].as_py(), ddl.values[0].as_py()) == [
        DDLEvent("test", "t", statement, "ALTER", TS + 4)]
    assert decoder.decode(watermark.keys[0].as_py(), watermark.values[0].as_py()) == [WatermarkEvent(TS + 5)]
    # The events' schemas under their records' names, as TiCDC registers them (no topic: debeziumAvroSubject).
    assert {"io.debezium.connector.mysql.SchemaChangeKey", "io.debezium.connector.mysql.SchemaChangeValue"} \
        <= set(glue_registry.schemas())


def test_a_glue_message_read_as_the_other_avro_protocol_is_named(glue_registry):
    config, _, [(key, value), *_] = encode("avro", glue_registry.options())
    wrong = decoder_for(build(TABLE, [], **options("debezium-avro", glue_registry.options()))[0])
    with pytest.raises(NotOfProtocol, match="not a debezium-avro message .it looks like avro"):
        decode(wrong, key, value)
    assert isinstance(decode(decoder_for(config), key, value)[0], RowEvent)


def test_tail_reads_through_glue_with_its_options(glue_registry):
    _, _, [(key, value), *_] = encode("avro", glue_registry.options())
    decoder = protocol_decoder("avro", None, glue_registry.options())
    assert [(e.type, e.columns) for e in decoder.decode(key, value)] == [("INSERT", {"id": 1, "name": "Zoë"})]


# ---------------------------------------------------------------------------
# Failures: one line naming the registry and what to do, never a secret


def test_a_missing_registry_fails_on_the_driver_saying_how_to_create_it(glue_registry):
    config, _, _, _ = build(TABLE, [], **options(
        "avro", {**glue_registry.options(**SECRETS), "glue-schema-registry-name": "nowhere"}))
    with pytest.raises(SchemaRegistryFailure) as failure:
        check_services(config)
    said = str(failure.value)
    assert said.startswith("glue schema registry 'nowhere' (region us-east-1, endpoint http://127.0.0.1:")
    assert "failed looking the registry up: EntityNotFoundException: " in said
    assert "aws glue create-registry --registry-name nowhere --region us-east-1" in said and "\n" not in said
    assert not any(secret in said for secret in SECRETS.values())


def test_a_registry_that_does_not_answer_fails_within_broker_timeout_ms():
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        glue = {"glue-schema-registry-name": "cdc", "glue-schema-registry-region": "us-east-1",
                "glue-schema-registry-endpoint": f"http://127.0.0.1:{silent.getsockname()[1]}", **SECRETS}
        config, _, _, _ = build(TABLE, [], **options("avro", glue, broker_timeout_ms="1500"))
        started = time.monotonic()
        with pytest.raises(SchemaRegistryFailure) as failure:
            check_services(config)
        elapsed = time.monotonic() - started
    said = str(failure.value)
    assert "cannot be reached (looking the registry up): ReadTimeoutError" in said and "broker-timeout-ms" in said
    assert "\n" not in said and not any(secret in said for secret in SECRETS.values())
    assert 1.4 < elapsed < 1.5 + 3 + 1  # three attempts of 0.5 s, botocore's waits between them (under 3 s)


def test_without_credentials_boto3_finds_them_or_the_failure_says_where_to_put_them(glue_registry, monkeypatch):
    glue = {k: v for k, v in glue_registry.options().items() if "access-key" not in k}
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                 "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    for name in ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.setenv(name, "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_ACCESS_KEY)
    encode("avro", glue)  # boto3's environment credentials, as TiCDC then loads AWS's default configuration

    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(SchemaRegistryFailure, match="no AWS credentials: give glue-schema-registry-access-key"):
        encode("avro", glue)


def test_a_version_the_registry_lacks_is_one_messages_failure(glue_registry):
    config, _, [(key, value), *_] = encode("avro", glue_registry.options())
    missing = str(uuid.uuid4())
    with pytest.raises(SchemaRegistryFailure) as failure:
        decoder_for(config).decode(key, glue_header(missing) + value[18:])
    assert failure.value.of_one_message and f"looking up schema version {missing}" in str(failure.value)


def test_without_boto3_the_option_says_what_to_install(glue_registry, monkeypatch):
    monkeypatch.setitem(sys.modules, "boto3", None)
    with pytest.raises(ConfigError, match=r"needs boto3, which is not installed: install the package's glue extra \(pip install -e '\.\[glue\]'"):
        encode("avro", glue_registry.options())


# ---------------------------------------------------------------------------
# Spark: written by the sink, read back by the reader through Glue


@pytest.mark.spark
@pytest.mark.broker
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_spark_reads_back_what_the_sink_wrote_through_glue(spark, broker, topic, glue_registry, protocol):
    from test_reader import CHANGES, changes, changes_of, collected, expected_rows, read_options, write_options

    under_test = ProtocolUnderTest(protocol)
    extra = {**glue_registry.options(), "avro-bigint-unsigned-handling-mode": "string"}
    written = {k: v for k, v in write_options(broker, topic, under_test, extra).items() if v is not None}
    spark.createDataFrame(changes(), CHANGES).repartition(2).write.format("ticdc").mode("append") \
        .options(**written).save()

    read = {k: v for k, v in read_options(broker, topic, under_test, extra).items() if v is not None}
    rows = [row.asDict(recursive=True) for row in spark.read.format("ticdc").options(**read).load()
            .orderBy("_commit_ts").collect()]
    assert changes_of(rows) == collected(expected_rows(under_test, extra))
    assert set(glue_registry.schemas()) == {f"{under_test.kafka_topic(topic)}-key",
                                            f"{under_test.kafka_topic(topic)}-value"}
