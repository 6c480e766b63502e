"""Options and ``sink-uri``, parsed and validated on the driver into one frozen ``SinkConfig``.

Option names follow TiCDC's sink-URI parameters so that users can paste what
they already run; Kafka client settings follow Spark's ``kafka.<key>``
convention and go to librdkafka unchanged.  Every problem is reported before a
task starts, as one error naming the option, the value and what is allowed.
``SinkConfig`` keeps secrets (librdkafka needs them) but its repr, the errors
and the log lines show them masked (``redact``).
"""

from __future__ import annotations

import difflib
import logging
import re
from dataclasses import dataclass, fields
from typing import Mapping
from urllib.parse import parse_qsl, unquote, urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import ConfigError
from .redact import mask

log = logging.getLogger(__name__)

PROTOCOLS = ("open-protocol", "canal-json", "avro", "debezium", "simple")
# The protocols with a codec in ticdc_sink.codec (a test keeps the two in step).
DISPATCHERS = ("default", "table", "index-value", "ts", "columns")
DELIVERY_MODES = ("exactly-once", "at-least-once")
ORDER_CHECKS = ("warn", "error", "off")

# Options that Spark itself passes to every sink; they are not ours to check.
SPARK_OWN_OPTIONS = frozenset({"checkpointlocation", "path", "paths", "queryname"})

_TOPIC_EXPRESSION = re.compile(r"^[A-Za-z0-9._\-]*(\{schema\})?([A-Za-z0-9._\-]*\{table\})?[A-Za-z0-9._\-]*$")
_AVRO_TOPIC_EXPRESSION = re.compile(r"^[A-Za-z0-9._\-]*\{schema\}[A-Za-z0-9._\-]*\{table\}[A-Za-z0-9._\-]*$")
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._\-]{1,249}$")
_TRANSACTIONAL_PREFIX = re.compile(r"^[A-Za-z0-9._\-]{1,200}$")

# TiCDC sink-URI parameters that are Kafka client settings, as librdkafka names them.
_URI_KAFKA_PARAMETERS = {
    "kafka-client-id": "client.id",
    "compression": "compression.type",
    "sasl-user": "sasl.username",
    "sasl-password": "sasl.password",
    "sasl-mechanism": "sasl.mechanism",
    "ca": "ssl.ca.location",
    "cert": "ssl.certificate.location",
    "key": "ssl.key.location",
}
# TiCDC sink-URI parameters that librdkafka has no use for (it negotiates them).
_URI_IGNORED_PARAMETERS = frozenset(
    {"kafka-version", "dial-timeout", "read-timeout", "write-timeout", "insecure-skip-verify", "required-acks"}
)


@dataclass(frozen=True)
class SinkConfig:
    """Everything a task needs to know, validated. Picklable, so it travels to executors."""

    protocol: str
    topic: str
    kafka_settings: tuple[tuple[str, str], ...] = ()
    # ``schema-registry.<setting>`` options: confluent-kafka SchemaRegistryClient settings (TLS, basic auth, ...).
    schema_registry_settings: tuple[tuple[str, str], ...] = ()
    default_topic: str | None = None
    enable_tidb_extension: bool = False
    max_message_bytes: int = 10 * 1024 * 1024
    max_batch_size: int = 16
    content_compatible: bool = False
    only_output_updated_columns: bool = False
    avro_decimal_handling_mode: str = "precise"
    avro_bigint_unsigned_handling_mode: str = "long"
    schema_registry: str | None = None
    debezium_disable_schema: bool = False
    encoding_format: str = "json"
    send_bootstrap_interval_in_sec: int = 120
    send_bootstrap_in_msg_count: int = 10000
    send_bootstrap_to_all_partition: bool = True
    partition_num: int = 3
    replication_factor: int = 1
    auto_create_topic: bool = True
    partition: str = "default"
    partition_columns: tuple[str, ...] = ()
    partition_index: str | None = None
    delivery: str = "exactly-once"
    # When two tasks of one micro-batch wrote a Kafka partition, so that a key's changes
    # may be out of commit-ts order: log a warning, fail the batch, or say nothing.
    order_check: str = "warn"
    transactional_id_prefix: str | None = None
    task_timeout_ms: int = 600_000
    marker_topic: str = "__ticdc_sink_markers"
    broker_timeout_ms: int = 30000
    database: str | None = None
    table: str | None = None
    time_zone: str = "UTC"
    cluster_id: str = "default"
    avro_namespace: str = "default"
    table_id: int = 0
    schema_version: int = 0
    column_types: str | None = None
    primary_key: str | None = None
    unique_keys: str | None = None
    op_column: str = "_op"
    commit_ts_column: str = "_commit_ts"
    before_column: str = "_before"
    schema_column: str = "_schema"
    table_column: str = "_table"
    ddl_column: str = "_ddl"
    ddl_type_column: str = "_ddl_type"

    @property
    def kafka(self) -> dict[str, str]:
        """The ``kafka.*`` settings, as librdkafka takes them."""
        return dict(self.kafka_settings)

    @property
    def sends_bootstrap(self) -> bool:
        """Simple's BOOTSTRAP messages: either setting at 0 turns them off (TiCDC ``ShouldSendBootstrapMsg``)."""
        return self.send_bootstrap_interval_in_sec > 0 and self.send_bootstrap_in_msg_count > 0

    @property
    def bootstrap_servers(self) -> str:
        return self.kafka["bootstrap.servers"]

    @property
    def topic_has_placeholders(self) -> bool:
        return "{" in self.topic

    def __repr__(self) -> str:
        """The dataclass repr with secrets masked: reprs reach logs, Spark's UI and tracebacks."""
        shown = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _SETTINGS_FIELDS:
                value = tuple((setting, mask(setting, v)) for setting, v in value)
            else:
                value = mask(_option_name(f), value)
            shown.append(f"{f.name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"

    def metadata_columns(self) -> tuple[str, ...]:
        return (
            self.op_column,
            self.commit_ts_column,
            self.before_column,
            self.schema_column,
            self.table_column,
            self.ddl_column,
            self.ddl_type_column,
        )


def _option_name(f) -> str:
    return f.name.replace("_", "-")


# Option name -> SinkConfig field; ``sink-uri``, ``kafka.*`` and ``schema-registry.*`` are handled apart.
_SETTINGS_FIELDS = ("kafka_settings", "schema_registry_settings")
_FIELDS = {_option_name(f): f for f in fields(SinkConfig) if f.name not in _SETTINGS_FIELDS}
KNOWN_OPTIONS = tuple(sorted(set(_FIELDS) | {"sink-uri"}))

_TRUE = {"1", "t", "true"}
_FALSE = {"0", "f", "false"}


def _parse_bool(name: str, value: str) -> bool:
    lowered = str(value).strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ConfigError(name, value, "expected true or false")


def _parse_int(name: str, value: str, minimum: int, maximum: int = 2**63 - 1) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ConfigError(name, value, f"expected an integer in {minimum}..{maximum}") from None
    if not minimum <= number <= maximum:
        raise ConfigError(name, value, f"expected an integer in {minimum}..{maximum}")
    return number


def _parse_choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    lowered = str(value).strip().lower()
    if lowered not in choices:
        raise ConfigError(name, value, f"expected one of {', '.join(choices)}")
    return lowered


def parse_sink_uri(uri: str) -> tuple[dict[str, str], dict[str, str]]:
    """``kafka://h1:9092,h2:9092/topic?protocol=canal-json&...`` -> (options, kafka settings)."""
    parts = urlsplit(uri)
    if parts.scheme.lower() not in ("kafka", "kafka+ssl"):
        raise ConfigError("sink-uri", uri, "expected kafka://host:port[,host:port]/topic?parameters")
    hosts = parts.netloc.rpartition("@")[2]
    if not hosts:
        raise ConfigError("sink-uri", uri, "names no broker: write kafka://host:port/topic")
    options: dict[str, str] = {}
    kafka = {"bootstrap.servers": hosts}
    topic = unquote(parts.path.lstrip("/"))
    if topic:
        options["topic"] = topic
    if parts.scheme.lower() == "kafka+ssl":
        kafka["security.protocol"] = "SSL"
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        key = key.lower()
        if key in _URI_KAFKA_PARAMETERS:
            kafka[_URI_KAFKA_PARAMETERS[key]] = value
        elif key == "enable-tls":
            if _parse_bool("sink-uri parameter enable-tls", value):
                kafka["security.protocol"] = "SSL"
        elif key in _URI_IGNORED_PARAMETERS:
            log.info("sink-uri parameter %s=%s is not needed by librdkafka and is ignored", key, mask(key, value))
        else:
            options[key] = value
    if "sasl.mechanism" in kafka:
        kafka["security.protocol"] = "SASL_SSL" if kafka.get("security.protocol") == "SSL" else "SASL_PLAINTEXT"
    return options, kafka


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, KNOWN_OPTIONS, n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]!r}?"
    return "known options are " + ", ".join(KNOWN_OPTIONS) + ", and kafka.<librdkafka setting>"


def _check_agrees(key: str, value: str, uri_value: str | None) -> None:
    """A setting given both in the sink-uri and as the option ``key`` must have one value."""
    if uri_value is not None and uri_value != value:
        raise ConfigError(key, value, f"sink-uri already sets it to {mask(key, uri_value)!r}")


def parse_options(options: Mapping[str, str]) -> SinkConfig:
    """Validate the data source options (Spark passes them case-insensitively)."""
    given = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
    values: dict[str, str] = {}
    kafka: dict[str, str] = {}
    registry: dict[str, str] = {}

    if "sink-uri" in given:
        uri_options, uri_kafka = parse_sink_uri(given["sink-uri"])
        for key in uri_options:
            if key not in _FIELDS:
                raise ConfigError("sink-uri", given["sink-uri"], f"unknown parameter {key!r}; {_suggest(key)}")
        values.update(uri_options)
        kafka.update(uri_kafka)

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
        if key not in _FIELDS:
            raise ConfigError(key, value, f"unknown option; {_suggest(key)}")
        _check_agrees(key, value, values.get(key))
        values[key] = value

    return _build(values, kafka, registry)


def parse_protocol(value: str) -> str:
    return _parse_choice("protocol", value, PROTOCOLS)


def _build(values: dict[str, str], kafka: dict[str, str], registry: dict[str, str]) -> SinkConfig:
    # The protocol first: without its codec no other option can be used, and the
    # rules of some (an avro topic) would send the user after the wrong fix.
    if "protocol" not in values:
        raise ConfigError("protocol", None, f"required: one of {', '.join(PROTOCOLS)}")
    protocol = parse_protocol(values["protocol"])
    if not kafka.get("bootstrap.servers"):
        raise ConfigError(
            "kafka.bootstrap.servers", None, "required: the brokers to write to, e.g. host1:9092,host2:9092"
        )
    if "topic" not in values:
        raise ConfigError("topic", None, "required: a topic name, or an expression with {schema} and {table}")

    parsed: dict[str, object] = {}
    for key, raw in values.items():
        f = _FIELDS[key]
        if f.type in ("bool",):
            parsed[f.name] = _parse_bool(key, raw)
        elif f.type in ("int",):
            minimum = 1 if key in ("max-message-bytes", "max-batch-size", "partition-num", "replication-factor",
                                   "broker-timeout-ms", "task-timeout-ms") else 0
            parsed[f.name] = _parse_int(key, raw, minimum)
        else:
            parsed[f.name] = raw.strip() if key not in ("column-types",) else raw

    parsed["protocol"] = protocol
    partition = str(parsed.get("partition", "default")).strip().lower()
    if partition == "rowid":  # TiCDC's deprecated alias
        partition = "index-value"
    parsed["partition"] = _parse_choice("partition", partition, DISPATCHERS)
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

    parsed["delivery"] = _parse_choice("delivery", parsed.get("delivery", "exactly-once"), DELIVERY_MODES)
    prefix = parsed.get("transactional_id_prefix")
    if prefix is not None and not _TRANSACTIONAL_PREFIX.match(str(prefix)):
        raise ConfigError("transactional-id-prefix", prefix, "1..200 characters of [A-Za-z0-9._-]")
    marker_topic = parsed.get("marker_topic")
    if marker_topic is not None and not _TOPIC_NAME.match(str(marker_topic)):
        raise ConfigError("marker-topic", marker_topic, "a Kafka topic name of [A-Za-z0-9._-], at most 249 long")
    for key, choices in (
        ("avro-decimal-handling-mode", ("precise", "string")),
        ("avro-bigint-unsigned-handling-mode", ("long", "string")),
        ("encoding-format", ("json", "avro")),
        ("order-check", ORDER_CHECKS),
    ):
        name = key.replace("-", "_")
        if name in parsed:
            parsed[name] = _parse_choice(key, parsed[name], choices)

    topic = str(parsed["topic"])
    if not _TOPIC_EXPRESSION.match(topic) or not topic:
        raise ConfigError(
            "topic", topic, "a Kafka topic name ([A-Za-z0-9._-]) or an expression like tidb_{schema}_{table}"
        )
    if parsed["protocol"] == "avro" and not _AVRO_TOPIC_EXPRESSION.match(topic):
        raise ConfigError("topic", topic, "the avro protocol needs a topic expression with {schema} and {table}")
    _check_schema_registry(parsed)
    if "{" not in topic and not _TOPIC_NAME.match(topic):
        raise ConfigError("topic", topic, "a Kafka topic name is 1..249 characters of [A-Za-z0-9._-]")
    default_topic = parsed.get("default_topic")
    if default_topic is not None and not _TOPIC_NAME.match(str(default_topic)):
        raise ConfigError("default-topic", default_topic, "a Kafka topic name of [A-Za-z0-9._-], at most 249 long")

    if parsed.get("content_compatible"):
        # TiCDC's rule (common/config.go Apply): content-compatible implies only-output-updated-columns.
        parsed["only_output_updated_columns"] = True

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
    return SinkConfig(kafka_settings=tuple(sorted(kafka.items())),
                      schema_registry_settings=tuple(sorted(registry.items())), **parsed)


def _check_schema_registry(parsed: dict[str, object]) -> None:
    """Avro needs a registry URL (the other protocols ignore one, as TiCDC does)."""
    url = parsed.get("schema_registry")
    if parsed["protocol"] != "avro":
        return
    if not url:
        raise ConfigError("schema-registry", None, "required with protocol=avro: the Confluent Schema Registry "
                                                   "URL, e.g. http://registry:8081")
    for one in str(url).split(","):
        parts = urlsplit(one.strip())
        if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
            raise ConfigError("schema-registry", url, "an http:// or https:// URL (several joined by commas), "
                                                      "e.g. http://user:password@registry:8081")


def require_table_names(config: SinkConfig, has_schema_column: bool, has_table_column: bool) -> None:
    """Without per-row ``_schema``/``_table`` columns the options must name the table."""
    if not has_schema_column and not config.database:
        raise ConfigError(
            "database", None, f"required when the DataFrame has no {config.schema_column!r} column"
        )
    if not has_table_column and not config.table:
        raise ConfigError("table", None, f"required when the DataFrame has no {config.table_column!r} column")
