"""Unit tests for ticdc_sink.config.sink: options and sink-uri parsed into SinkConfig.

The contract is docs/options.md: TiCDC's sink-URI parameter names, Spark's
``kafka.<key>`` convention, and one error naming the option, the value and
what is allowed for every bad value, raised on the driver.
"""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from ticdc_sink.codec import PROTOCOL_OPTIONS, PROTOCOLS
from ticdc_sink.codec.avro.options import AvroOptions
from ticdc_sink.codec.canal_json.options import CanalJSONOptions
from ticdc_sink.codec.open_protocol.options import OpenProtocolOptions
from ticdc_sink.codec.simple.options import SimpleOptions
from ticdc_sink.config.sink import DELIVERY_MODES, DISPATCHERS, ORDER_CHECKS, SinkConfig, require_table_names
from ticdc_sink.config.sink_options import KNOWN_OPTIONS, parse_options
from ticdc_sink.config.sink_uri import parse_sink_uri
from ticdc_sink.errors import ConfigError, TiCDCSinkError

BASE = {"kafka.bootstrap.servers": "broker:9092", "protocol": "canal-json", "topic": "orders"}


def parse(**extra):
    """parse_options over BASE plus ``extra`` (``_`` in a key stands for ``-``)."""
    options = dict(BASE)
    for key, value in extra.items():
        options[key.replace("_", "-")] = value
    return parse_options(options)


def error(options) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_options(options)
    return info.value


def with_base(**extra):
    options = dict(BASE)
    options.update(extra)
    return options


# A protocol that has each protocol option, and what that protocol requires besides.
PROTOCOL_OF = {name: protocol for protocol, options in PROTOCOL_OPTIONS.items() for name in options.option_fields()}
REQUIRED = {"avro": {"topic": "t_{schema}_{table}", "schema-registry": "http://sr:8081"},
            "debezium-avro": {"schema-registry": "http://sr:8081"}}


def parsed_value(option: str, attr: str, raw: str):
    """What ``option=raw`` parses to: on the sink's config, or on the options of a protocol that has it."""
    protocol = PROTOCOL_OF.get(option)
    if protocol is None:
        return getattr(parse_options(with_base(**{option: raw})), attr)
    options = with_base(protocol=protocol, **REQUIRED.get(protocol, {}), **{option: raw})
    return getattr(parse_options(options).protocol_options, attr)


# ---------------------------------------------------------------------------
# The minimal valid configuration and its defaults


def test_minimal_options_and_defaults():
    c = parse_options(BASE)
    assert isinstance(c, SinkConfig)
    assert c.protocol == "canal-json"
    assert c.topic == "orders"
    assert c.kafka == {"bootstrap.servers": "broker:9092"}
    assert c.bootstrap_servers == "broker:9092"
    # TiCDC defaults (common/config.go): max-message-bytes 10 MiB, max-batch-size 16
    assert c.max_message_bytes == 10 * 1024 * 1024
    assert c.protocol_options == CanalJSONOptions(False, False, False)
    assert OpenProtocolOptions().max_batch_size == 16
    assert c.partition == "default"
    assert c.partition_columns == ()
    assert c.time_zone == "UTC"
    avro = AvroOptions()
    assert (avro.avro_namespace, avro.avro_decimal_handling_mode, avro.avro_bigint_unsigned_handling_mode) == \
        ("default", "precise", "long")
    assert SimpleOptions().encoding_format == "json"
    assert c.database is None and c.table is None


def test_default_metadata_column_names():
    c = parse_options(BASE)
    assert (c.op_column, c.commit_ts_column, c.before_column, c.schema_column, c.table_column) == (
        "_op",
        "_commit_ts",
        "_before",
        "_schema",
        "_table",
    )
    assert c.ddl_column == "_ddl"
    assert c.metadata_columns() == ("_op", "_commit_ts", "_before", "_schema", "_table", "_ddl", "_ddl_type",
                                    "_start_ts", "_tidb_rowid")


def test_metadata_column_renames():
    c = parse(op_column="op", commit_ts_column="ts", before_column="old", schema_column="db",
              table_column="tbl", ddl_column="stmt", ddl_type_column="stmt_type", start_ts_column="start",
              row_id_column="rowid")
    assert c.metadata_columns() == ("op", "ts", "old", "db", "tbl", "stmt", "stmt_type", "start", "rowid")


@pytest.mark.parametrize("key", ["op-column", "commit-ts-column", "before-column", "schema-column",
                                 "table-column", "ddl-column", "ddl-type-column"])
def test_empty_metadata_column_name_is_an_error(key):
    err = error(with_base(**{key: "  "}))
    assert err.option == key
    assert "empty" in str(err)


# ---------------------------------------------------------------------------
# Required options


def test_bootstrap_servers_required():
    options = dict(BASE)
    del options["kafka.bootstrap.servers"]
    err = error(options)
    assert err.option == "kafka.bootstrap.servers"
    assert err.value is None
    assert "not set" in str(err)


def test_empty_bootstrap_servers_is_missing():
    err = error(with_base(**{"kafka.bootstrap.servers": ""}))
    assert err.option == "kafka.bootstrap.servers"


def test_protocol_required_and_lists_protocols():
    options = dict(BASE)
    del options["protocol"]
    err = error(options)
    assert err.option == "protocol"
    for p in PROTOCOLS:
        assert p in str(err)


def test_topic_required():
    options = dict(BASE)
    del options["topic"]
    err = error(options)
    assert err.option == "topic"
    assert "{schema}" in str(err)


def test_none_values_count_as_absent():
    err = error(with_base(topic=None))
    assert err.option == "topic"


def test_errors_are_sink_errors_and_value_errors():
    err = error({})
    assert isinstance(err, TiCDCSinkError)
    assert isinstance(err, ValueError)


# ---------------------------------------------------------------------------
# Unknown options; Spark's own options


@pytest.mark.parametrize(
    "typo,suggestion",
    [
        ("protocl", "protocol"),
        ("toppic", "topic"),
        ("max-mesage-bytes", "max-message-bytes"),
        ("enable-tidb-extention", "enable-tidb-extension"),
        ("partition_num", "partition-num"),
        ("primarykey", "primary-key"),
        ("sinkuri", "sink-uri"),
    ],
)
def test_unknown_option_suggests_the_closest(typo, suggestion):
    err = error(with_base(**{typo: "x"}))
    assert err.option == typo
    assert str(err) == f"unknown option {typo!r}; did you mean {suggestion!r}?"


def test_unknown_option_without_close_match_lists_known_options():
    err = error(with_base(zzzzzzzz="1"))
    message = str(err)
    assert "known options are" in message
    assert "protocol" in message and "topic" in message
    assert "kafka.<" in message


@pytest.mark.parametrize("key", ["checkpointLocation", "checkpointlocation", "path", "paths", "queryName"])
def test_spark_own_options_are_accepted_and_ignored(key):
    c = parse_options(with_base(**{key: "/tmp/x"}))
    assert c == parse_options(BASE)


def test_option_names_are_case_insensitive():
    c = parse_options({"KAFKA.BOOTSTRAP.SERVERS": "h:1", "Protocol": "Canal-JSON", "TOPIC": "t_{schema}_{table}",
                       "Enable-TiDB-Extension": "true"})
    assert c.protocol == "canal-json"
    assert c.protocol_options.enable_tidb_extension is True
    assert c.bootstrap_servers == "h:1"


def test_known_options_cover_the_design_list():
    design = ["protocol", "enable-tidb-extension", "max-message-bytes", "max-batch-size",
              "avro-decimal-handling-mode", "avro-bigint-unsigned-handling-mode", "schema-registry",
              "debezium-disable-schema", "content-compatible", "only-output-updated-columns",
              "encoding-format", "send-bootstrap-interval-in-sec", "send-bootstrap-in-msg-count",
              "send-bootstrap-to-all-partition", "partition-num", "replication-factor", "sink-uri", "topic",
              "partition", "partition-columns", "delivery", "transactional-id-prefix", "database", "table",
              "time-zone", "cluster-id", "avro-namespace", "table-id", "schema-version", "op-column",
              "commit-ts-column", "before-column", "schema-column", "table-column", "column-types",
              "primary-key", "unique-keys"]
    missing = [o for o in design if o not in KNOWN_OPTIONS]
    assert missing == []


def test_every_known_option_is_accepted_by_name():
    # each option is recognised (no "unknown option"), even if its value needs more context
    for name in KNOWN_OPTIONS:
        if name == "sink-uri":
            continue
        try:
            parse_options(with_base(**{name: "1"}))
        except ConfigError as e:
            assert "unknown option" not in str(e), name


# ---------------------------------------------------------------------------
# Booleans and integers

BOOL_OPTIONS = [
    ("enable-tidb-extension", "enable_tidb_extension"),
    ("content-compatible", "content_compatible"),
    ("only-output-updated-columns", "only_output_updated_columns"),
    ("delete-only-output-handle-key-columns", "delete_only_output_handle_key_columns"),
    ("debezium-disable-schema", "debezium_disable_schema"),
    ("send-bootstrap-to-all-partition", "send_bootstrap_to_all_partition"),
    ("auto-create-topic", "auto_create_topic"),
    ("avro-include-before-value", "avro_include_before_value"),
]


@pytest.mark.parametrize("option,attr", BOOL_OPTIONS)
@pytest.mark.parametrize("raw,expected", [("true", True), ("TRUE", True), ("True", True), ("1", True),
                                          ("t", True), (" true ", True), ("false", False), ("FALSE", False),
                                          ("0", False), ("f", False)])
def test_bool_parsing(option, attr, raw, expected):
    assert parsed_value(option, attr, raw) is expected


@pytest.mark.parametrize("option,attr", BOOL_OPTIONS)
@pytest.mark.parametrize("raw", ["yes", "no", "on", "2", "", "truee"])
def test_bad_bool_names_option_value_and_allowed(option, attr, raw):
    err = error(with_base(**{option: raw}))
    assert err.option == option
    assert err.value == raw
    message = str(err)
    assert option in message
    assert repr(raw) in message
    assert "true or false" in message


INT_OPTIONS_MIN_1 = [
    ("max-message-bytes", "max_message_bytes"),
    ("max-batch-size", "max_batch_size"),
    ("partition-num", "partition_num"),
    ("replication-factor", "replication_factor"),
    ("broker-timeout-ms", "broker_timeout_ms"),
]
INT_OPTIONS_MIN_0 = [("table-id", "table_id"), ("schema-version", "schema_version"),
                     ("send-bootstrap-interval-in-sec", "send_bootstrap_interval_in_sec"),
                     ("send-bootstrap-in-msg-count", "send_bootstrap_in_msg_count")]


def test_either_bootstrap_setting_at_zero_turns_bootstrap_messages_off():
    assert parse_options(with_base(protocol="simple")).protocol_options.sends_bootstrap
    for option in ("send-bootstrap-interval-in-sec", "send-bootstrap-in-msg-count"):
        assert not parse_options(with_base(protocol="simple", **{option: "0"})).protocol_options.sends_bootstrap


@pytest.mark.parametrize("option,attr", INT_OPTIONS_MIN_1 + INT_OPTIONS_MIN_0)
def test_int_parsing(option, attr):
    assert parsed_value(option, attr, "7") == 7
    assert parsed_value(option, attr, " 42 ") == 42


@pytest.mark.parametrize("option,attr", INT_OPTIONS_MIN_1 + INT_OPTIONS_MIN_0)
@pytest.mark.parametrize("raw", ["abc", "1.5", "", "1e3", "0x10", "-1"])
def test_bad_int_names_option_value_and_range(option, attr, raw):
    err = error(with_base(**{option: raw}))
    assert err.option == option
    assert err.value == raw
    assert "integer" in str(err)
    assert repr(raw) in str(err)


@pytest.mark.parametrize("option,attr", INT_OPTIONS_MIN_1)
def test_zero_is_out_of_range_for_counts_and_sizes(option, attr):
    err = error(with_base(**{option: "0"}))
    assert err.option == option
    assert "1.." in str(err)


@pytest.mark.parametrize("option,attr", INT_OPTIONS_MIN_0)
def test_zero_is_allowed_for_ids_and_versions(option, attr):
    assert parsed_value(option, attr, "0") == 0


# ---------------------------------------------------------------------------
# Choice options


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_protocol_parses(protocol):
    registry = {"schema-registry": "http://sr:8081"} if protocol in ("avro", "debezium-avro") else {}
    assert parse_options(with_base(protocol=protocol, topic="t_{schema}_{table}", **registry)).protocol == protocol


def test_protocols_are_the_design_list():
    assert set(PROTOCOLS) == {"open-protocol", "canal-json", "avro", "debezium", "simple", "debezium-avro"}


@pytest.mark.parametrize("raw,value", [("Canal-JSON", "canal-json"), (" canal-json ", "canal-json"),
                                       ("CANAL-JSON", "canal-json")])
def test_protocol_is_normalised(raw, value):
    assert parse_options(with_base(protocol=raw, topic="a_{schema}_{table}")).protocol == value


@pytest.mark.parametrize("raw", ["canal", "maxwell", "craft", "json", "open_protocol", ""])
def test_bad_protocol_lists_allowed(raw):
    err = error(with_base(protocol=raw))
    assert err.option == "protocol"
    assert err.value == raw
    for p in PROTOCOLS:
        assert p in str(err)


@pytest.mark.parametrize("dispatcher", ["default", "table", "ts", "index-value"])
def test_partition_dispatchers(dispatcher):
    assert parse(partition=dispatcher).partition == dispatcher


def test_partition_is_normalised():
    assert parse(partition=" TABLE ").partition == "table"


def test_rowid_is_an_alias_of_index_value():
    assert parse(partition="rowid").partition == "index-value"
    assert parse(partition="RowID").partition == "index-value"


def test_bad_partition_lists_allowed():
    err = error(with_base(partition="random"))
    assert err.option == "partition"
    assert err.value == "random"
    for d in DISPATCHERS:
        assert d in str(err)


def test_partition_columns():
    c = parse(partition="columns", partition_columns=" a, b ,c ")
    assert c.partition == "columns"
    assert c.partition_columns == ("a", "b", "c")


def test_partition_columns_required_with_columns_dispatcher():
    err = error(with_base(partition="columns"))
    assert err.option == "partition-columns"
    assert "partition=columns" in str(err)


def test_partition_columns_must_name_a_column():
    err = error(with_base(partition="columns", **{"partition-columns": " , "}))
    assert err.option == "partition-columns"


@pytest.mark.parametrize("dispatcher", ["default", "table", "ts", "index-value"])
def test_partition_columns_only_with_columns_dispatcher(dispatcher):
    err = error(with_base(partition=dispatcher, **{"partition-columns": "a"}))
    assert err.option == "partition-columns"
    assert err.value == "a"
    assert "partition=columns" in str(err)


def test_partition_columns_without_partition_option_is_an_error():
    err = error(with_base(**{"partition-columns": "a"}))
    assert err.option == "partition-columns"


def test_partition_index_with_index_value():
    c = parse(partition="index-value", partition_index="uk_email")
    assert c.partition_index == "uk_email"


def test_partition_index_only_with_index_value():
    err = error(with_base(partition="table", **{"partition-index": "uk"}))
    assert err.option == "partition-index"
    assert "index-value" in str(err)


def test_at_least_once_delivery():
    assert parse(delivery="at-least-once").delivery == "at-least-once"
    assert parse(delivery="AT-LEAST-ONCE").delivery == "at-least-once"


def test_bad_delivery_lists_allowed():
    err = error(with_base(delivery="maybe-once"))
    assert err.option == "delivery"
    for mode in DELIVERY_MODES:
        assert mode in str(err)


def test_order_check():
    assert parse_options(BASE).order_check == "warn"
    for check in ORDER_CHECKS:
        assert parse(order_check=check.upper()).order_check == check
    assert parse_options({"sink-uri": "kafka://h:9092/t?protocol=canal-json&order-check=off"}).order_check == "off"


@pytest.mark.parametrize("raw", ["", "warning", "fail", "true", "none"])
def test_bad_order_check_lists_allowed(raw):
    err = error(with_base(**{"order-check": raw}))
    assert err.option == "order-check" and err.value == raw
    assert str(err).endswith("expected one of warn, error, off")


def test_native_producer(monkeypatch):
    from ticdc_sink.kafka import native_produce

    assert parse_options(BASE).native_producer == "auto"
    assert parse(native_producer="OFF").native_producer == "off"
    assert error(with_base(**{"native-producer": "yes"})).option == "native-producer"
    monkeypatch.setattr(native_produce, "installed", lambda: False)
    assert parse(native_producer="auto").native_producer == "auto"  # the Python path, no error
    err = error(with_base(**{"native-producer": "on"}))
    assert str(err) == ("option 'native-producer': bad value 'on': ticdc-sink-native is not installed: pip install "
                        "./native from a clone of ticdc-sink (it needs gcc and the Python headers), or set "
                        "native-producer to auto or off")
    monkeypatch.setattr(native_produce, "installed", lambda: True)
    assert parse(native_producer="on").native_producer == "on"


def test_exactly_once_is_the_default_delivery():
    assert parse_options(BASE).delivery == "exactly-once"
    c = parse(delivery="exactly-once", transactional_id_prefix="orders-sink")
    assert c.delivery == "exactly-once" and c.transactional_id_prefix == "orders-sink"


@pytest.mark.parametrize("prefix", ["", "has space", "x" * 201, "a/b"])
def test_bad_transactional_id_prefix(prefix):
    err = error(with_base(**{"transactional-id-prefix": prefix}))
    assert err.option == "transactional-id-prefix" and "A-Za-z0-9" in str(err)


def test_task_timeout_and_marker_topic():
    c = parse(task_timeout_ms="120000", marker_topic="my-markers")
    assert c.task_timeout_ms == 120000 and c.marker_topic == "my-markers"
    assert error(with_base(**{"task-timeout-ms": "0"})).option == "task-timeout-ms"
    assert error(with_base(**{"marker-topic": "bad topic"})).option == "marker-topic"


def test_transactional_id_prefix_is_kept():
    assert parse(transactional_id_prefix="p1").transactional_id_prefix == "p1"


@pytest.mark.parametrize(
    "option,attr,choices",
    [
        ("avro-decimal-handling-mode", "avro_decimal_handling_mode", ("precise", "string")),
        ("avro-bigint-unsigned-handling-mode", "avro_bigint_unsigned_handling_mode", ("long", "string")),
        ("encoding-format", "encoding_format", ("json", "avro")),
    ],
)
def test_other_choice_options(option, attr, choices):
    for choice in choices:
        assert parsed_value(option, attr, choice) == choice
        assert parsed_value(option, attr, choice.upper()) == choice
    err = error(with_base(**{option: "double"}))
    assert err.option == option
    assert err.value == "double"
    for choice in choices:
        assert choice in str(err)


# ---------------------------------------------------------------------------
# Topic expressions (TiCDC's regex; avro needs {schema} and {table})


@pytest.mark.parametrize(
    "topic",
    [
        "orders",
        "a.b-c_D9",
        "x" * 249,
        "tidb_{schema}_{table}",
        "{schema}_{table}",
        "{schema}.{table}",
        "{schema}",
        "{table}",
        "pre.{schema}",
        "{table}-suffix",
        "cdc-{schema}-x-{table}-y",
        "{schema}{table}",
    ],
)
def test_valid_topics(topic):
    c = parse(topic=topic)
    assert c.topic == topic
    assert c.topic_has_placeholders == ("{" in topic)


@pytest.mark.parametrize(
    "topic",
    [
        "",
        "a b",
        "orders!",
        "a/b",
        "x" * 250,
        "{table}_{schema}",  # TiCDC's regex wants {schema} before {table}
        "{schema}_{schema}",
        "{table}{table}",
        "{Schema}_{Table}",
        "{db}_{table}",
        "{schema",
        "schema}",
        "{}",
        "tidb_{schema}_{table}_{partition}",
        "téléphone",
    ],
)
def test_invalid_topics(topic):
    err = error(with_base(topic=topic))
    assert err.option == "topic"
    assert err.value == topic


def test_topic_is_stripped():
    assert parse(topic="  orders  ").topic == "orders"


AVRO = {"protocol": "avro", "schema-registry": "http://sr:8081"}


@pytest.mark.parametrize("topic", ["tidb_{schema}_{table}", "{schema}{table}", "{schema}.{table}.avro"])
def test_avro_topic_with_schema_and_table(topic):
    assert parse_options(with_base(**AVRO, topic=topic)).topic == topic


@pytest.mark.parametrize("topic", ["orders", "{schema}", "{table}", "tidb_{schema}", "x_{table}"])
def test_avro_refuses_topic_without_schema_and_table(topic):
    err = error(with_base(**AVRO, topic=topic))
    assert err.option == "topic"
    assert "{schema}" in str(err) and "{table}" in str(err)
    assert "avro" in str(err)


@pytest.mark.parametrize("protocol", ["open-protocol", "canal-json", "debezium", "simple"])
def test_other_protocols_accept_a_fixed_topic(protocol):
    assert parse(protocol=protocol, topic="fixed").topic == "fixed"


def test_avro_needs_a_registry_in_ticdcs_words():
    err = error(with_base(protocol="avro", topic="{schema}_{table}"))
    assert str(err) == ("option 'schema-registry' is not set: Avro protocol requires parameter \"schema-registry\" "
                        "or \"glue-schema-registry\" to specify the schema registry: a Confluent Schema Registry URL, "
                        "e.g. http://registry:8081, or AWS Glue's glue-schema-registry-name and "
                        "glue-schema-registry-region")


@pytest.mark.parametrize("url", ["sr:8081", "ftp://sr", "http://", "http://sr:8081,sr2:8081"])
def test_the_registry_url_is_http_or_https(url):
    err = error(with_base(**{**AVRO, "schema-registry": url}, topic="{schema}_{table}"))
    assert err.option == "schema-registry" and "http:// or https://" in str(err)


def test_registry_client_settings_are_collected_and_their_secrets_masked():
    c = parse_options(with_base(**{**AVRO, "schema-registry": "https://u:pw@sr:8081"}, topic="{schema}_{table}",
                                **{"schema-registry.basic.auth.user.info": "u:pw",
                                   "Schema-Registry.ssl.ca.location": "/ca.pem"}))
    assert c.protocol_options.schema_registry_settings == (("basic.auth.user.info", "u:pw"),
                                                            ("ssl.ca.location", "/ca.pem"))
    assert "pw" not in repr(c)
    assert "ssl.ca.location', '/ca.pem'" in repr(c)


def test_the_registry_url_is_not_a_client_setting():
    err = error(with_base(**AVRO, topic="{schema}_{table}", **{"schema-registry.url": "http://other:8081"}))
    assert err.option == "schema-registry.url" and "write the URL in schema-registry" in str(err)


def test_other_protocols_ignore_a_registry_as_ticdc_does():
    c = parse_options(with_base(**{"schema-registry": "http://sr:8081", "schema-registry.timeout": "5"}))
    assert c.protocol == "canal-json" and c.protocol_options == CanalJSONOptions()


def test_default_topic():
    assert parse(topic="t_{schema}_{table}", default_topic="ddl-topic").default_topic == "ddl-topic"
    err = error(with_base(**{"default-topic": "bad topic"}))
    assert err.option == "default-topic"


# ---------------------------------------------------------------------------
# sink-uri


def test_sink_uri_whole():
    c = parse_options({"sink-uri": "kafka://h1:9092,h2:9093/my-topic?protocol=open-protocol"
                                   "&only-output-updated-columns=true&max-message-bytes=1048576&partition-num=6"
                                   "&replication-factor=3&max-batch-size=4"})
    assert c.kafka == {"bootstrap.servers": "h1:9092,h2:9093"}
    assert c.topic == "my-topic"
    assert c.protocol == "open-protocol"
    assert c.protocol_options.only_output_updated_columns is True
    assert c.max_message_bytes == 1048576
    assert c.partition_num == 6
    assert c.replication_factor == 3
    assert c.protocol_options.max_batch_size == 4


def test_parse_sink_uri_returns_options_and_kafka_settings():
    options, kafka = parse_sink_uri("kafka://h:9092/t?protocol=avro&schema-registry=http://sr:8081")
    assert options == {"topic": "t", "protocol": "avro", "schema-registry": "http://sr:8081"}
    assert kafka == {"bootstrap.servers": "h:9092"}


def test_sink_uri_topic_is_url_decoded():
    c = parse_options({"sink-uri": "kafka://h:9092/tidb_%7Bschema%7D_%7Btable%7D?protocol=canal-json"})
    assert c.topic == "tidb_{schema}_{table}"


def test_sink_uri_parameters_are_case_insensitive():
    c = parse_options({"sink-uri": "KAFKA://h:9092/t?PROTOCOL=Canal-JSON&Enable-TiDB-Extension=TRUE"})
    assert c.protocol == "canal-json"
    assert c.protocol_options.enable_tidb_extension is True


def test_sink_uri_without_topic_takes_the_topic_option():
    c = parse_options({"sink-uri": "kafka://h:9092/?protocol=canal-json", "topic": "from-option"})
    assert c.topic == "from-option"
    c = parse_options({"sink-uri": "kafka://h:9092", "protocol": "canal-json", "topic": "t2"})
    assert c.topic == "t2"


def test_sink_uri_without_topic_or_option_is_an_error():
    err = error({"sink-uri": "kafka://h:9092/?protocol=canal-json"})
    assert err.option == "topic"


def test_sink_uri_combined_with_other_options():
    c = parse_options({"sink-uri": "kafka://h:9092/t?protocol=canal-json", "enable-tidb-extension": "true",
                       "kafka.client.id": "me"})
    assert c.protocol_options.enable_tidb_extension is True
    assert c.kafka == {"bootstrap.servers": "h:9092", "client.id": "me"}


def test_sink_uri_and_same_option_value_agree():
    c = parse_options({"sink-uri": "kafka://h:9092/t?protocol=canal-json", "protocol": "canal-json",
                       "topic": "t"})
    assert c.protocol == "canal-json" and c.topic == "t"


@pytest.mark.parametrize("option,value", [("protocol", "avro"), ("topic", "other"),
                                          ("max-message-bytes", "5")])
def test_conflicting_option_and_sink_uri(option, value):
    uri = "kafka://h:9092/t?protocol=canal-json&max-message-bytes=100"
    err = error({"sink-uri": uri, option: value})
    assert err.option == option
    assert err.value == value
    assert "sink-uri" in str(err)


def test_conflicting_bootstrap_servers_and_sink_uri():
    with pytest.raises(ConfigError) as info:
        parse_options({"sink-uri": "kafka://h:9092/t?protocol=canal-json",
                       "kafka.bootstrap.servers": "other:9092"})
    assert "sink-uri" in str(info.value)


def test_sink_uri_sasl_plain():
    c = parse_options({"sink-uri": "kafka://h:9092/t?protocol=canal-json&sasl-user=u&sasl-password=p"
                                   "&sasl-mechanism=PLAIN"})
    assert c.kafka == {
        "bootstrap.servers": "h:9092",
        "sasl.username": "u",
        "sasl.password": "p",
        "sasl.mechanism": "PLAIN",
        "security.protocol": "SASL_PLAINTEXT",
    }


def test_sink_uri_sasl_with_tls():
    c = parse_options({"sink-uri": "kafka://h:9092/t?protocol=canal-json&sasl-user=u&sasl-password=p"
                                   "&sasl-mechanism=SCRAM-SHA-256&enable-tls=true"})
    assert c.kafka["security.protocol"] == "SASL_SSL"
    assert c.kafka["sasl.mechanism"] == "SCRAM-SHA-256"


def test_sink_uri_tls_files():
    c = parse_options({"sink-uri": "kafka://h:9092/t?protocol=canal-json&enable-tls=true&ca=/ca.pem"
                                   "&cert=/c.pem&key=/k.pem"})
    assert c.kafka == {
        "bootstrap.servers": "h:9092",
        "security.protocol": "SSL",
        "ssl.ca.location": "/ca.pem",
        "ssl.certificate.location": "/c.pem",
        "ssl.key.location": "/k.pem",
    }


def test_sink_uri_enable_tls_false_adds_nothing():
    c = parse_options({"sink-uri": "kafka://h:9092/t?protocol=canal-json&enable-tls=false"})
    assert "security.protocol" not in c.kafka


def test_sink_uri_bad_enable_tls():
    err = error({"sink-uri": "kafka://h:9092/t?protocol=canal-json&enable-tls=maybe"})
    assert "enable-tls" in err.option
    assert err.value == "maybe"


def test_kafka_ssl_scheme():
    c = parse_options({"sink-uri": "kafka+ssl://h:9092/t?protocol=canal-json"})
    assert c.kafka["security.protocol"] == "SSL"


def test_sink_uri_client_id_and_compression():
    c = parse_options({"sink-uri": "kafka://h:9092/t?protocol=canal-json&compression=lz4"
                                   "&kafka-client-id=cid"})
    assert c.kafka == {"bootstrap.servers": "h:9092", "client.id": "cid", "compression.type": "lz4"}


@pytest.mark.parametrize("param", ["kafka-version=2.4.0", "dial-timeout=5s", "read-timeout=10s",
                                   "write-timeout=10s", "required-acks=-1", "insecure-skip-verify=true"])
def test_sink_uri_parameters_librdkafka_does_not_need_are_ignored(param):
    c = parse_options({"sink-uri": f"kafka://h:9092/t?protocol=canal-json&{param}"})
    assert c.kafka == {"bootstrap.servers": "h:9092"}
    assert c == parse_options({"sink-uri": "kafka://h:9092/t?protocol=canal-json"})


def test_sink_uri_unknown_parameter_suggests():
    err = error({"sink-uri": "kafka://h:9092/t?protocl=canal-json"})
    assert err.option == "sink-uri"
    assert "unknown parameter 'protocl'" in str(err)
    assert "did you mean 'protocol'" in str(err)


def test_sink_uri_unknown_parameter_without_close_match():
    err = error({"sink-uri": "kafka://h:9092/t?protocol=canal-json&zzzzzz=1"})
    assert err.option == "sink-uri"
    assert "'zzzzzz'" in str(err)


def test_sink_uri_parameter_values_are_validated_with_the_option_name():
    err = error({"sink-uri": "kafka://h:9092/t?protocol=canal-json&partition-num=0"})
    assert err.option == "partition-num"
    err = error({"sink-uri": "kafka://h:9092/t?protocol=nope"})
    assert err.option == "protocol"


@pytest.mark.parametrize("uri", ["pulsar://h:6650/t?protocol=canal-json", "mysql://root@h:3306/",
                                 "h:9092/t", "http://h:9092/t"])
def test_sink_uri_must_be_kafka(uri):
    err = error({"sink-uri": uri})
    assert err.option == "sink-uri"
    assert "kafka://" in str(err)


def test_sink_uri_without_broker():
    err = error({"sink-uri": "kafka:///t?protocol=canal-json"})
    assert err.option == "sink-uri"
    assert "broker" in str(err)


def test_sink_uri_user_info_is_not_a_broker():
    c = parse_options({"sink-uri": "kafka://user:pw@h:9092/t?protocol=canal-json"})
    assert c.bootstrap_servers == "h:9092"


def test_sink_uri_content_compatible_forces_only_updated_columns():
    c = parse_options({"sink-uri": "kafka://h:9092/t?protocol=canal-json&content-compatible=true"})
    assert c.protocol_options.content_compatible is True
    assert c.protocol_options.only_output_updated_columns is True


# ---------------------------------------------------------------------------
# content-compatible (TiCDC common/config.go Apply)


def test_content_compatible_forces_only_output_updated_columns():
    c = parse(content_compatible="true")
    assert c.protocol_options.content_compatible and c.protocol_options.only_output_updated_columns


def test_content_compatible_overrides_an_explicit_false():
    c = parse(content_compatible="true", only_output_updated_columns="false")
    assert c.protocol_options.only_output_updated_columns is True


def test_only_output_updated_columns_alone():
    c = parse(only_output_updated_columns="true")
    assert c.protocol_options.only_output_updated_columns and not c.protocol_options.content_compatible
    c = parse(content_compatible="false")
    assert not c.protocol_options.only_output_updated_columns


# ---------------------------------------------------------------------------
# kafka.* passthrough


def test_kafka_settings_pass_through_unchanged():
    c = parse(**{"kafka.linger.ms": "5", "kafka.compression.type": "zstd", "kafka.sasl.username": "u",
                 "kafka.message.max.bytes": "2000000"})
    assert c.kafka == {
        "bootstrap.servers": "broker:9092",
        "linger.ms": "5",
        "compression.type": "zstd",
        "sasl.username": "u",
        "message.max.bytes": "2000000",
    }


def test_kafka_settings_are_sorted_tuples():
    c = parse(**{"kafka.z.last": "1", "kafka.a.first": "2"})
    assert c.kafka_settings == tuple(sorted(c.kafka_settings))
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in c.kafka_settings)


def test_kafka_prefix_without_setting_is_an_error():
    err = error(with_base(**{"kafka.": "x"}))
    assert err.option == "kafka."
    assert "kafka.<" in str(err)


@pytest.mark.parametrize("setting,value", [("enable.idempotence", "false"), ("enable.idempotence", "False"),
                                           ("acks", "1"), ("acks", "0")])
def test_settings_that_break_idempotence_are_refused(setting, value):
    err = error(with_base(**{f"kafka.{setting}": value}))
    assert err.option == f"kafka.{setting}"
    assert err.value == value
    assert "idempotent" in str(err)
    assert "acks=all" in str(err)


@pytest.mark.parametrize("setting,value", [("enable.idempotence", "true"), ("acks", "all"), ("acks", "-1"),
                                           ("acks", "ALL")])
def test_settings_compatible_with_idempotence_are_kept(setting, value):
    assert parse(**{f"kafka.{setting}": value}).kafka[setting] == value


# ---------------------------------------------------------------------------
# time-zone


@pytest.mark.parametrize("zone", ["UTC", "Asia/Shanghai", "America/New_York", "Europe/Berlin", "Etc/GMT+8"])
def test_valid_time_zones(zone):
    assert parse(time_zone=zone).time_zone == zone


@pytest.mark.parametrize("zone", ["Mars/Base", "", "Not a zone", "../etc/passwd"])
def test_invalid_time_zone(zone):
    err = error(with_base(**{"time-zone": zone}))
    assert err.option == "time-zone"
    assert "IANA" in str(err)


# ---------------------------------------------------------------------------
# Values that stay strings


def test_string_options_are_kept():
    c = parse(database="shop", table="orders", avro_namespace="ns", protocol="avro", topic="{schema}_{table}",
              schema_registry="http://sr:8081", primary_key=" id ", unique_keys="uk(email)")
    assert (c.database, c.table, c.protocol_options.avro_namespace) == ("shop", "orders", "ns")
    assert c.protocol_options.schema_registry == "http://sr:8081"
    assert parse(protocol="debezium", cluster_id=" c1 ").protocol_options.cluster_id == "c1"
    assert c.primary_key == "id"
    assert c.unique_keys == "uk(email)"


def test_column_types_is_kept_verbatim():
    text = " id INT UNSIGNED,  st ENUM('a','b') "
    assert parse(column_types=text).column_types == text


# ---------------------------------------------------------------------------
# SinkConfig


def test_sink_config_is_picklable_and_frozen():
    c = parse_options({"kafka.bootstrap.servers": "h:1", "kafka.linger.ms": "3", "protocol": "canal-json",
                       "topic": "p_{schema}_{table}", "schema-registry": "http://sr:8081",
                       "partition": "columns", "partition-columns": "a,b", "time-zone": "Asia/Shanghai"})
    again = pickle.loads(pickle.dumps(c))
    assert again == c
    assert again.partition_columns == ("a", "b")
    assert again.kafka == {"bootstrap.servers": "h:1", "linger.ms": "3"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.protocol = "canal-json"  # type: ignore[misc]


def test_sink_config_is_hashable():
    assert hash(parse_options(BASE)) == hash(parse_options(dict(BASE)))


# ---------------------------------------------------------------------------
# require_table_names


def test_require_table_names():
    c = parse_options(BASE)
    with pytest.raises(ConfigError) as info:
        require_table_names(c, has_schema_column=False, has_table_column=True)
    assert info.value.option == "database"
    assert "_schema" in str(info.value)
    with pytest.raises(ConfigError) as info:
        require_table_names(c, has_schema_column=True, has_table_column=False)
    assert info.value.option == "table"
    assert "_table" in str(info.value)
    require_table_names(c, has_schema_column=True, has_table_column=True)


def test_require_table_names_satisfied_by_options():
    c = parse(database="shop", table="orders")
    require_table_names(c, has_schema_column=False, has_table_column=False)


def test_require_table_names_uses_renamed_columns():
    c = parse(schema_column="db_name")
    with pytest.raises(ConfigError, match="db_name"):
        require_table_names(c, has_schema_column=False, has_table_column=True)


# ---------------------------------------------------------------------------
# large-message-handle-option (TiCDC pkg/config/large_message.go)

@pytest.mark.parametrize("protocol, extra", [
    ("avro", {"schema-registry": "http://r:8081", "topic": "t_{schema}_{table}"}), ("debezium", {})])
def test_large_message_handling_is_refused_for_avro_and_debezium_in_ticdcs_words(protocol, extra):
    err = error(with_base(**{"protocol": protocol, "large-message-handle-option": "handle-key-only", **extra}))
    assert err.option == "large-message-handle-option"
    assert f"large message handle is set to handle-key-only, protocol is {protocol}, it's not supported" in str(err)


def test_large_message_handling_in_canal_json_needs_the_tidb_extension():
    err = error(with_base(**{"protocol": "canal-json", "large-message-handle-option": "handle-key-only"}))
    assert "but enable-tidb-extension is false" in str(err)
    config = parse(protocol="canal-json", large_message_handle_option="Handle-Key-Only",
                   enable_tidb_extension="true")
    assert config.large_message_handle_option == "handle-key-only"


def test_claim_check_needs_a_storage_and_takes_no_raw_value_in_open_protocol_as_in_ticdc():
    err = error(with_base(**{"protocol": "simple", "large-message-handle-option": "claim-check"}))
    assert err.option == "claim-check-storage-uri"
    assert "large message handle is set to claim-check, but the claim-check-storage-uri is empty" in str(err)
    err = error(with_base(**{"protocol": "open-protocol", "large-message-handle-option": "claim-check",
                             "claim-check-storage-uri": "file:///tmp/c", "claim-check-raw-value": "true"}))
    assert err.option == "claim-check-raw-value"
    assert "raw value is not supported for the open protocol" in str(err)
    config = parse(protocol="simple", large_message_handle_option="claim-check",
                   claim_check_storage_uri="s3://bucket/cdc?region=us-east-1", claim_check_raw_value="true",
                   large_message_handle_compression="LZ4")
    assert (config.large_message_handle_option, config.claim_check_storage_uri, config.claim_check_raw_value,
            config.large_message_handle_compression) == ("claim-check", "s3://bucket/cdc?region=us-east-1", True,
                                                         "lz4")


def test_compression_is_none_lz4_or_snappy_and_needs_no_large_message_option():
    assert parse(protocol="debezium", large_message_handle_compression="snappy") \
        .large_message_handle_compression == "snappy"
    err = error(with_base(**{"protocol": "simple", "large-message-handle-compression": "zstd"}))
    assert err.option == "large-message-handle-compression" and "expected one of none, lz4, snappy" in str(err)


def test_unknown_large_message_options_are_refused():
    assert "expected one of none, handle-key-only, claim-check" in str(
        error(with_base(**{"protocol": "simple", "large-message-handle-option": "drop"})))
