"""The data source's options and ``sink-uri``, parsed and validated on the driver into one ``SinkConfig``.

Option names follow TiCDC's sink-URI parameters so that users can paste what
they already run; Kafka client settings follow Spark's ``kafka.<key>``
convention and go to librdkafka unchanged.  The sink's own options are
``sink.SinkConfig``'s fields, each protocol's are its ``options.py``; an
option of another protocol is checked and otherwise ignored, as TiCDC ignores
the settings its protocol does not use.  Every problem is reported before a
task starts, as one error naming the option, the value and what is allowed.
"""

from __future__ import annotations

import difflib
import re
from typing import Mapping
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..codec import LARGE_MESSAGE_PROTOCOLS, PROTOCOL_OPTIONS, PROTOCOLS, parse_protocol
from ..codec.shared.claim_check import parse_storage_uri
from ..codec.shared.schema_registry import RegistryOptions
from ..errors import ConfigError, UnknownOptionError
from ..kafka.native_produce import check_installed as check_native_producer
from ..kafka.token_callback import broker_timeout
from ..kafka.token_callback import check as check_token_callback
from ..redact import mask
from ..table.selectors import parse_column_selectors
from .changefeed import changefeed_options
from .option_group import parse_choice
from .sink import COMPRESSIONS, DELIVERY_MODES, DISPATCHERS, LARGE_MESSAGE_OPTIONS, ORDER_CHECKS, SinkConfig
from .sink_uri import parse_sink_uri

# Options that Spark itself passes to every sink; they are not ours to check.
SPARK_OWN_OPTIONS = frozenset({"checkpointlocation", "path", "paths", "queryname"})

_TOPIC_EXPRESSION = re.compile(r"^[A-Za-z0-9._\-]*(\{schema\})?([A-Za-z0-9._\-]*\{table\})?[A-Za-z0-9._\-]*$")
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._\-]{1,249}$")
_TRANSACTIONAL_PREFIX = re.compile(r"^[A-Za-z0-9._\-]{1,200}$")
_ROUTING_EXPRESSION = re.compile(r"^(?:[^{}]|\{schema\}|\{table\})*$")  # TiCDC's pkg/config/sink.go

_SINK_OPTIONS = SinkConfig.option_fields()
_PROTOCOL_OPTION_NAMES = {name for options in PROTOCOL_OPTIONS.values() for name in options.option_fields()}
KNOWN_OPTIONS = tuple(sorted(set(_SINK_OPTIONS) | _PROTOCOL_OPTION_NAMES | {"sink-uri", "changefeed-config"}))


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, KNOWN_OPTIONS, n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]!r}?"
    return "known options are " + ", ".join(KNOWN_OPTIONS) + ", and kafka.<librdkafka setting>"


def _check_agrees(key: str, value: str, uri_value: str | None) -> None:
    """A setting given both in the sink-uri and as the option ``key`` must have one value."""
    if uri_value is not None and uri_value != value:
        raise ConfigError(key, value, f"sink-uri already sets it to {mask(key, uri_value)!r}")


def parse_options(options: Mapping[str, str], *, reading: bool = False) -> SinkConfig:
    """Validate the data source options (Spark passes them case-insensitively).

    ``reading``: for the reader (``reader.py``), which takes the topics its own way and uses the
    config to decode: the sink's topic rules do not apply.
    """
    given = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
    values: dict[str, str] = {}
    kafka: dict[str, str] = {}
    registry: dict[str, str] = {}

    if "sink-uri" in given:
        uri_options, uri_kafka = parse_sink_uri(given["sink-uri"])
        for key in uri_options:
            if key not in KNOWN_OPTIONS or key == "sink-uri":
                raise ConfigError("sink-uri", given["sink-uri"], f"unknown parameter {key!r}; {_suggest(key)}")
        values.update(uri_options)
        kafka.update(uri_kafka)
    if "changefeed-config" in given:  # the file's [sink] settings, under every option given beside it
        path = given.pop("changefeed-config")
        from_file = changefeed_options(path, given.get("database", values.get("database")),
                                       given.get("table", values.get("table")))
        if "partition" in given or "partition" in values:  # a dispatcher given beside replaces the file's whole
            from_file = {k: v for k, v in from_file.items() if k not in ("partition-columns", "partition-index")}
        given = {**{k: v for k, v in from_file.items() if k not in values}, **given}

    for key, value in given.items():
        if key == "sink-uri" or key in SPARK_OWN_OPTIONS:
            continue
        if key.startswith("kafka."):
            setting = key[len("kafka."):]
            if not setting:
                raise ConfigError(key, value, "write kafka.<librdkafka setting>, e.g. kafka.bootstrap.servers")
            _check_agrees(key, value, kafka.get(setting))
            kafka[setting] = value
            continue
        if key.startswith("schema-registry."):
            setting = key[len("schema-registry."):]
            if not setting or setting == "url":
                raise ConfigError(key, value, "write the URL in schema-registry, and client settings as "
                                              "schema-registry.<setting>, e.g. schema-registry.basic.auth.user.info")
            registry[setting] = value
            continue
        if key not in KNOWN_OPTIONS:
            raise UnknownOptionError(key, value, _suggest(key))
        _check_agrees(key, value, values.get(key))
        values[key] = value

    return _build(values, kafka, registry, reading)


def _build(values: dict[str, str], kafka: dict[str, str], registry: dict[str, str], reading: bool) -> SinkConfig:
    # The protocol first: without its codec no other option can be used, and the
    # rules of some (an avro topic) would send the user after the wrong fix.
    if "protocol" not in values:
        raise ConfigError("protocol", None, f"required: one of {', '.join(PROTOCOLS)}")
    protocol = parse_protocol(values["protocol"])
    if not kafka.get("bootstrap.servers"):
        raise ConfigError(
            "kafka.bootstrap.servers", None, "required: the brokers to use, e.g. host1:9092,host2:9092"
        )
    if "topic" not in values:
        raise ConfigError("topic", None, "required: a topic name, or an expression with {schema} and {table}")

    parsed = SinkConfig.parse_values(values)
    # Every protocol's options are checked as given; only this protocol's are kept.
    checked = {name: options.parse_values(values) for name, options in PROTOCOL_OPTIONS.items()}
    protocol_values = checked[protocol]
    if checked["debezium"].get("debezium_include_start_ts") and protocol != "debezium":
        raise ConfigError("debezium-include-start-ts", values["debezium-include-start-ts"],
                          'debezium-include-start-ts only takes effect with protocol "debezium"')
    parsed["protocol"] = protocol
    partition = str(parsed.get("partition", "default")).strip().lower()
    if partition == "rowid":  # TiCDC's deprecated alias
        partition = "index-value"
    parsed["partition"] = parse_choice("partition", partition, DISPATCHERS)
    if "partition_columns" in parsed:
        columns = tuple(c.strip() for c in str(parsed["partition_columns"]).split(",") if c.strip())
        if not columns:
            raise ConfigError("partition-columns", values["partition-columns"], "list one or more column names")
        parsed["partition_columns"] = columns
    if parsed["partition"] == "columns" and not parsed.get("partition_columns"):
        raise ConfigError("partition-columns", None, "required with partition=columns: a comma-separated column list")
    if parsed.get("partition_columns") and parsed["partition"] != "columns":
        raise ConfigError("partition-columns", values["partition-columns"], "only used with partition=columns")
    if parsed.get("partition_index") and parsed["partition"] != "index-value":
        raise ConfigError("partition-index", values["partition-index"], "only used with partition=index-value")
    for option in ("target-schema", "target-table"):
        if option in values and not _ROUTING_EXPRESSION.match(values[option]):
            raise ConfigError(option, values[option], f'{option} "{values[option]}" must contain only literal '
                                                      "text, {schema}, and {table}")

    if parsed.get("column_selectors") is not None:
        parse_column_selectors(str(parsed["column_selectors"]))  # refused here, before any task
        if parsed.get("integrity_check_level") == "correctness":  # TiCDC's ReplicaConfig.ValidateAndAdjust
            raise ConfigError("integrity-check-level", values["integrity-check-level"],
                              "integrity check enabled and column selector set, not allowed")
    if "large_message_handle_option" in parsed:
        parsed["large_message_handle_option"] = parse_choice(
            "large-message-handle-option", parsed["large_message_handle_option"], LARGE_MESSAGE_OPTIONS)
    if "large_message_handle_compression" in parsed:
        parsed["large_message_handle_compression"] = parse_choice(
            "large-message-handle-compression", parsed["large_message_handle_compression"], COMPRESSIONS)
    if parsed.get("claim_check_storage_uri") is not None:
        parse_storage_uri(str(parsed["claim_check_storage_uri"]))  # refused here, before any task
    parsed["delivery"] = parse_choice("delivery", parsed.get("delivery", "exactly-once"), DELIVERY_MODES)
    prefix = parsed.get("transactional_id_prefix")
    if prefix is not None and not _TRANSACTIONAL_PREFIX.match(str(prefix)):
        raise ConfigError("transactional-id-prefix", prefix, "1..200 characters of [A-Za-z0-9._-]")
    marker_topic = parsed.get("marker_topic")
    if marker_topic is not None and not _TOPIC_NAME.match(str(marker_topic)):
        raise ConfigError("marker-topic", marker_topic, "a Kafka topic name of [A-Za-z0-9._-], at most 249 long")
    if "order_check" in parsed:
        parsed["order_check"] = parse_choice("order-check", parsed["order_check"], ORDER_CHECKS)
    if not reading:
        check_native_producer(parsed.get("native_producer", "auto"))

    topic = str(parsed["topic"])
    if not reading and (not _TOPIC_EXPRESSION.match(topic) or not topic):
        raise ConfigError(
            "topic", topic, "a Kafka topic name ([A-Za-z0-9._-]) or an expression like tidb_{schema}_{table}"
        )
    options_class = PROTOCOL_OPTIONS[protocol]
    if issubclass(options_class, RegistryOptions):
        protocol_values["schema_registry_settings"] = tuple(sorted(registry.items()))
    shared = SinkConfig(**parsed)
    protocol_options = options_class(**protocol_values).resolve(shared, reading=reading)
    if not reading:  # a reader finds TiCDC's marks and locations in the messages
        _check_large_messages(shared)
    if not reading and "{" not in topic and not _TOPIC_NAME.match(topic):
        raise ConfigError("topic", topic, "a Kafka topic name is 1..249 characters of [A-Za-z0-9._-]")
    default_topic = parsed.get("default_topic")
    if default_topic is not None and not _TOPIC_NAME.match(str(default_topic)):
        raise ConfigError("default-topic", default_topic, "a Kafka topic name of [A-Za-z0-9._-], at most 249 long")

    try:
        ZoneInfo(str(parsed.get("time_zone", "UTC")))
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError("time-zone", parsed.get("time_zone"), "an IANA time zone name such as UTC or Asia/Shanghai")

    renames = [k for k in values if k.endswith("-column") and k != "partition-columns"]
    for key in renames:
        if not str(parsed[key.replace("-", "_")]):
            raise ConfigError(key, values[key], "a column name cannot be empty")

    kafka = dict(kafka)
    for setting in ("enable.idempotence", "acks"):
        if setting in kafka and kafka[setting].strip().lower() not in ("true", "all", "-1"):
            raise ConfigError(
                f"kafka.{setting}", kafka[setting], "the sink always uses the idempotent producer with acks=all"
            )
    # Imported and called once here, on the driver, before any task; a callable that gives no token within
    # broker-timeout-ms is refused.
    check_token_callback(kafka, within=broker_timeout(shared.broker_timeout_ms))
    return SinkConfig(kafka_settings=tuple(sorted(kafka.items())), protocol_options=protocol_options, **parsed)


def _check_large_messages(config: SinkConfig) -> None:
    """TiCDC's rules for large-message-handle-option that hold for every protocol (pkg/config/large_message.go),
    in its words where it has them; a protocol's own are in its options' ``resolve``."""
    option = config.large_message_handle_option
    if option == "none":
        return
    if config.protocol not in LARGE_MESSAGE_PROTOCOLS:
        raise ConfigError("large-message-handle-option", option,
                          f"large message handle is set to {option}, protocol is {config.protocol}, it's not "
                          f"supported (TiCDC supports it for {', '.join(LARGE_MESSAGE_PROTOCOLS)})")
    if option == "claim-check" and not config.claim_check_storage_uri:
        raise ConfigError("claim-check-storage-uri", None, "large message handle is set to claim-check, but the "
                          "claim-check-storage-uri is empty: give a file:///path or s3://bucket/prefix URI")
