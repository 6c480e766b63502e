"""``changefeed-config``: a TiCDC changefeed's TOML file as the sink's options (``ticdc_sink/config/changefeed.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.errors import ConfigError

SHOP = Path(__file__).parent / "changefeeds" / "shop.toml"


def parse(path: Path = SHOP, **options):
    return parse_options({"kafka.bootstrap.servers": "broker:9092", "changefeed-config": str(path),
                          "database": "shop", "table": "orders", "primary-key": "id", **options})


def test_the_sink_section_of_a_changefeed_file_becomes_the_options():
    config = parse()
    assert (config.protocol, config.topic, config.partition, config.partition_columns) == \
        ("canal-json", "tidb_{schema}_{table}", "columns", ("id",))  # the first dispatcher matching shop.orders
    assert json.loads(config.column_selectors) == [{"matcher": ["shop.orders"], "columns": ["*", "!secret"]}]
    assert config.max_message_bytes == 1048576 and config.output_raw_change_event
    assert config.large_message_handle_option == "handle-key-only"
    assert config.protocol_options.enable_tidb_extension
    assert config.protocol_options.delete_only_output_handle_key_columns


def test_options_given_beside_the_file_win():
    config = parse(**{"max-message-bytes": "2000", "topic": "orders", "partition": "table"})
    assert (config.max_message_bytes, config.topic, config.partition) == (2000, "orders", "table")
    assert parse(table="audit").topic == "audit"  # another table, another dispatcher


@pytest.mark.parametrize("toml, says", [
    ("[sink.integrity]\nno-such-setting = 1", "sink.integrity.no-such-setting is not supported by the sink"),
    ("[sink.integrity]\ncorruption-handle-level = 'panic'", "corruption-handle-level: 'panic' is not warn or error"),
    ("[sink.kafka-config]\nsasl-user = 'u'", "sink.kafka-config.sasl-user: Kafka client settings are given as "
                                               "kafka.<librdkafka setting> options"),
    ("[sink.kafka-config.codec-config]\nno-such-setting = true",
     "codec-config.no-such-setting: the sink does not support it"),
    ("[sink.open]\noutput-handle-key = true", "sink.open.output-handle-key is not supported by the sink"),
    ("[sink.kafka-config.large-message-handle]\nclaim-check-compression = 'lz4'",
     "large-message-handle.claim-check-compression: not a key of TiCDC's large-message-handle"),
    ("[sink]\nprotocol = ", "not a TOML file"),
])
def test_a_key_the_sink_cannot_honour_is_refused_in_one_line_naming_it(tmp_path, toml, says):
    path = tmp_path / "changefeed.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError, match="changefeed-config") as info:
        parse(path, protocol="canal-json", topic="t")
    assert says in str(info.value) and "\n" not in str(info.value)


def test_ticdcs_own_claim_check_changefeed_file_applies_as_it_is(tmp_path):
    path = tmp_path / "changefeed.toml"  # tests/integration_tests/canal_json_claim_check/conf/changefeed.toml
    path.write_text('[sink.kafka-config.large-message-handle]\nlarge-message-handle-compression = "snappy"\n'
                    'large-message-handle-option = "claim-check"\n'
                    'claim-check-storage-uri = "file:///tmp/canal-json-claim-check"\n')
    config = parse(path, protocol="canal-json", topic="t", **{"enable-tidb-extension": "true"})
    assert (config.large_message_handle_option, config.large_message_handle_compression,
            config.claim_check_storage_uri, config.claim_check_raw_value) == \
        ("claim-check", "snappy", "file:///tmp/canal-json-claim-check", False)


@pytest.mark.parametrize("toml, protocol, option, value", [
    ("[sink.open]\noutput-old-value = false", "open-protocol", "open_output_old_value", False),
    ("[sink.debezium]\noutput-old-value = false", "debezium", "debezium_output_old_value", False),
    ("[sink.debezium]\noutput-old-value = false", "debezium-avro", "debezium_output_old_value", False),
    ("[sink.debezium]\ninclude-start-ts = true", "debezium", "debezium_include_start_ts", True),
])
def test_the_protocol_sections_settings_apply(tmp_path, toml, protocol, option, value):
    path = tmp_path / "changefeed.toml"
    path.write_text(toml)
    registry = {"schema-registry": "http://registry:8081"} if protocol.endswith("avro") else {}
    config = parse(path, protocol=protocol, topic="tidb_{schema}_{table}", **registry)
    assert getattr(config.protocol_options, option) is value


def test_avro_include_before_value_in_codec_config_applies_with_avro_only(tmp_path):
    """TiCDC takes it from codec-config as from the sink URI, and for protocol avro alone (common/config.go)."""
    path = tmp_path / "changefeed.toml"
    path.write_text("[sink.kafka-config.codec-config]\navro-include-before-value = true\n")
    config = parse(path, protocol="avro", topic="tidb_{schema}_{table}", **{"schema-registry": "http://registry:8081"})
    assert config.protocol_options.avro_include_before_value is True
    assert parse(path, protocol="canal-json", topic="t").protocol == "canal-json"  # another protocol: ignored


def test_another_protocols_section_changes_nothing_but_start_ts_is_refused_as_ticdc_refuses_it(tmp_path):
    path = tmp_path / "changefeed.toml"
    path.write_text("[sink.open]\noutput-old-value = false\n[sink.debezium]\noutput-old-value = false\n")
    assert parse(path, protocol="canal-json", topic="t").protocol == "canal-json"  # TiCDC reads them by protocol
    path.write_text("[sink.debezium]\ninclude-start-ts = true\n")
    with pytest.raises(ConfigError, match='debezium-include-start-ts only takes effect with protocol "debezium"'):
        parse(path, protocol="canal-json", topic="t")


def test_output_row_key_in_the_file_is_passed_over_as_ticdc_passes_it_over(tmp_path, caplog):
    """TiCDC b813e76 reads output-row-key from the sink URI only (common/config.go's mergeConfig copies no
    CodecConfig.OutputRowKey)."""
    path = tmp_path / "changefeed.toml"
    path.write_text("[sink.kafka-config.codec-config]\noutput-row-key = true\nenable-tidb-extension = true\n")
    with caplog.at_level("INFO", logger="ticdc_sink.config.changefeed"):
        config = parse(path, protocol="canal-json", topic="t")
    assert config.protocol_options.enable_tidb_extension
    assert "reads output-row-key from the sink URI only" in caplog.text


def test_dispatchers_need_the_written_tables_name():
    with pytest.raises(ConfigError, match="give the options database and table"):
        parse_options({"kafka.bootstrap.servers": "b:9092", "changefeed-config": str(SHOP), "topic": "t"})


def test_a_missing_file_is_named():
    with pytest.raises(ConfigError, match="cannot read the changefeed file"):
        parse(Path("/nonexistent/changefeed.toml"))


GLUE_SECTION = ('[sink.kafka-config.glue-schema-registry-config]\nregistry-name = "cdc"\nregion = "eu-west-1"\n'
                'access-key = "AKIAFILE"\nsecret-access-key = "file-secret"\ntoken = "file-token"\n')


def test_the_glue_schema_registry_config_becomes_the_glue_options(tmp_path):
    path = tmp_path / "changefeed.toml"
    path.write_text('[sink]\nprotocol = "avro"\n' + GLUE_SECTION)
    options = parse(path, topic="tidb_{schema}_{table}").protocol_options
    assert (options.glue_schema_registry_name, options.glue_schema_registry_region,
            options.glue_schema_registry_access_key, options.glue_schema_registry_secret_access_key,
            options.glue_schema_registry_token) == ("cdc", "eu-west-1", "AKIAFILE", "file-secret", "file-token")
    assert options.schema_registry is None
    assert "file-secret" not in repr(options) and "file-token" not in repr(options) and "AKIAFILE" not in repr(options)


@pytest.mark.parametrize("toml, says", [
    # The section names Glue's registry however empty, as TiCDC reads it (pkg/config/sink.go Validate).
    ('[sink.kafka-config.glue-schema-registry-config]\nregion = "eu-west-1"\n',
     "registry-name is empty, is must be set"),
    ('[sink.kafka-config.glue-schema-registry-config]\nregistry-name = ""\n', "registry-name is empty, is must be set"),
    ('[sink.kafka-config.glue-schema-registry-config]\nregistry-name = "cdc"\n', "region is empty, is must be set"),
    ('[sink]\nschema-registry = "http://registry:8081"\n' + GLUE_SECTION,
     'Debezium Avro protocol requires only one of "schema-registry" or "glue-schema-registry"'),
    ('[sink.kafka-config.glue-schema-registry-config]\nregistry = "cdc"\n',
     "glue-schema-registry-config.registry: not a key of TiCDC's glue-schema-registry-config"),
])
def test_a_glue_section_ticdc_refuses_is_refused_in_its_words(tmp_path, toml, says):
    path = tmp_path / "changefeed.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError) as info:
        parse(path, protocol="debezium-avro", topic="t")
    assert says in str(info.value) and "\n" not in str(info.value) and "file-secret" not in str(info.value)


def test_a_changefeed_file_with_ticdcs_newer_settings_applies_as_it_is(tmp_path):
    """TiCDC's settings the sink took on last (output-old-value, include-start-ts, routing rules, the codec's
    before value and row key, Glue), in one file as a TiCDC user writes it: each lands on its option."""
    path = tmp_path / "changefeed.toml"
    path.write_text('''
[sink]
protocol = "debezium"
[sink.open]
output-old-value = false
[sink.debezium]
output-old-value = false
include-start-ts = true
[[sink.dispatchers]]
matcher = ["shop.*"]
topic = "tidb_{schema}_{table}"
partition = "index-value"
target-schema = "{schema}_copy"
target-table = "{table}"
[sink.kafka-config.codec-config]
enable-tidb-extension = true
avro-include-before-value = true
output-row-key = true
[sink.kafka-config.glue-schema-registry-config]
registry-name = "ticdc"
region = "us-east-1"
''')
    config = parse(path)
    options = config.protocol_options
    assert (options.debezium_output_old_value, options.debezium_include_start_ts, options.enable_tidb_extension) == \
        (False, True, True)
    assert (config.topic, config.partition, config.target_schema, config.target_table) == \
        ("tidb_{schema}_{table}", "index-value", "{schema}_copy", "{table}")
    # TiCDC refuses include-start-ts with another protocol, and so does the sink.
    path.write_text(path.read_text().replace("include-start-ts = true\n", ""))
    avro = parse(path, protocol="avro", **{"glue-schema-registry-endpoint": "http://127.0.0.1:9"}).protocol_options
    assert (avro.avro_include_before_value, avro.glue_schema_registry_name, avro.glue_schema_registry_region) == \
        (True, "ticdc", "us-east-1")
    assert parse(path, protocol="open-protocol").protocol_options.open_output_old_value is False


def test_sink_integrity_is_the_integrity_check_level(tmp_path):
    path = tmp_path / "changefeed.toml"  # where TiCDC's encoders read it (pkg/sink/codec/common/config.go)
    path.write_text('[sink.integrity]\nintegrity-check-level = "correctness"\ncorruption-handle-level = "warn"\n')
    config = parse(path, protocol="simple", topic="t")
    assert (config.integrity_check_level, config.row_checksums) == ("correctness", True)
    assert parse(protocol="simple", topic="t").integrity_check_level == "none"


@pytest.mark.parametrize("options", [
    {"enable-tidb-extension": "false"},
    {"avro-decimal-handling-mode": "precise"},
    {"avro-bigint-unsigned-handling-mode": "long"},
])
def test_avro_checksums_need_the_extension_and_string_modes_as_ticdc_says(options):
    given = {"kafka.bootstrap.servers": "broker:9092", "protocol": "avro", "topic": "tidb_{schema}_{table}",
             "schema-registry": "http://registry:8081",
             "integrity-check-level": "correctness", "enable-tidb-extension": "true",
             "avro-decimal-handling-mode": "string", "avro-bigint-unsigned-handling-mode": "string"}
    assert parse_options(given).row_checksums
    with pytest.raises(ConfigError, match='Avro protocol with row level checksum, should set "enable-tidb-extension"'):
        parse_options({**given, **options})


def test_integrity_with_column_selectors_is_refused_as_ticdc_does():
    with pytest.raises(ConfigError, match="integrity check enabled and column selector set, not allowed"):
        parse(protocol="simple", topic="t", **{"integrity-check-level": "correctness",
                                               "column-selectors": '[{"matcher": ["shop.*"], "columns": ["id"]}]'})
    with pytest.raises(ConfigError, match="expected one of none, correctness"):
        parse(protocol="simple", topic="t", **{"integrity-check-level": "full"})


def test_kafka_configs_auto_create_topic_and_client_id_apply_as_the_sink_uris_do(tmp_path):
    path = tmp_path / "changefeed.toml"
    path.write_text('[sink.kafka-config]\nauto-create-topic = false\nkafka-client-id = "cdc-orders"\n')
    config = parse(path, protocol="canal-json", topic="t")
    assert (config.auto_create_topic, config.kafka["client.id"]) == (False, "cdc-orders")


def test_a_top_level_integrity_section_is_passed_over_with_a_warning(tmp_path, caplog):
    path = tmp_path / "changefeed.toml"
    path.write_text('[integrity]\nintegrity-check-level = "correctness"\n')
    with caplog.at_level("WARNING", logger="ticdc_sink.config.changefeed"):
        config = parse(path, protocol="simple", topic="t")
    assert config.integrity_check_level == "none" and "[sink.integrity]" in caplog.text
