"""``changefeed-config``: a TiCDC changefeed's TOML file, whose ``[sink]`` section becomes the sink's options.

The keys and their nesting are TiCDC's ``pkg/config/sink.go`` (pingcap/ticdc):
``protocol``, ``column-selectors``, ``delete-only-output-handle-key-columns``
and the other row settings under ``[sink]``; ``max-message-bytes``,
``partition-num``, ``replication-factor``, ``output-raw-change-event`` and
``[sink.kafka-config.large-message-handle]`` under ``[sink.kafka-config]``;
the codec's settings under ``[sink.kafka-config.codec-config]``; the AWS Glue
Schema Registry's under ``[sink.kafka-config.glue-schema-registry-config]``
(options ``glue-schema-registry-name``, ``-region``, ``-access-key``,
``-secret-access-key``, ``-token``);
``output-old-value`` under ``[sink.open]`` and ``[sink.debezium]`` (with
``include-start-ts``), which the sink names ``open-output-old-value``,
``debezium-output-old-value`` and ``debezium-include-start-ts``; ``integrity-check-level`` under
``[sink.integrity]`` (where TiCDC's encoders read it; the top-level ``[integrity]`` section is the
changefeed's mounter's).  Of the
``[[sink.dispatchers]]``, the first whose ``matcher`` matches the written
table (the ``database`` and ``table`` options) gives ``topic``, ``partition``,
``index`` and ``columns``, and the first matching one that routes gives
``target-schema`` and ``target-table``.  Other sections of the file (``[filter]``,
``[mounter]``, ...) are the changefeed's, not the sink's.  A ``[sink]`` key
the sink cannot honour is refused, naming it and why; one that changes
nothing in the messages (how TiCDC schedules its own work) is passed over.
"""

from __future__ import annotations

import json
import logging
import tomllib
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..table.filters import FilterSyntaxError, TableFilter

log = logging.getLogger(__name__)
OPTION = "changefeed-config"

# [sink] keys that are sink options of the same name.
_SINK_KEYS = ("protocol", "schema-registry", "only-output-updated-columns", "delete-only-output-handle-key-columns",
              "content-compatible", "debezium-disable-schema", "send-bootstrap-interval-in-sec",
              "send-bootstrap-in-msg-count", "send-bootstrap-to-all-partition")
_KAFKA_KEYS = ("max-message-bytes", "partition-num", "replication-factor", "output-raw-change-event",
               "auto-create-topic")
_CODEC_KEYS = ("enable-tidb-extension", "max-batch-size", "avro-decimal-handling-mode",
               "avro-bigint-unsigned-handling-mode", "avro-enable-watermark", "avro-include-before-value",
               "encoding-format")
# Sections of [sink] whose keys are sink options named for the section.
_SECTION_KEYS = {"open": {"output-old-value": "open-output-old-value"},
                 "debezium": {"output-old-value": "debezium-output-old-value",
                              "include-start-ts": "debezium-include-start-ts"}}
# Keys that change nothing in the messages: how TiCDC schedules, retries or names its own work.
_PASSED_OVER = {
    "sink": {"encoder-concurrency", "advance-timeout-in-sec", "enable-kafka-sink-v2", "transaction-atomicity",
             "safe-mode", "send-all-bootstrap-at-start", "mysql-config", "pulsar-config", "cloud-storage-config",
             "csv", "terminator", "date-separator", "enable-partition-separator", "file-index-digit"},
    "kafka-config": {"kafka-version", "dial-timeout", "write-timeout", "read-timeout"},
}
# [sink.kafka-config.glue-schema-registry-config] keys -> options; the section names Glue's registry even with
# its registry-name empty, which TiCDC refuses as the sink does.
_GLUE_KEYS = {"registry-name": "glue-schema-registry-name", "region": "glue-schema-registry-region",
              "access-key": "glue-schema-registry-access-key",
              "secret-access-key": "glue-schema-registry-secret-access-key", "token": "glue-schema-registry-token"}
_LARGE_MESSAGE_KEYS = {"large-message-handle-option", "large-message-handle-compression", "claim-check-storage-uri",
                       "claim-check-raw-value"}
_WHY_NOT = {
    "kafka-config": "Kafka client settings are given as kafka.<librdkafka setting> options beside the file",
    "codec-config": "the sink does not support it",
    "large-message-handle": "not a key of TiCDC's large-message-handle",
    "glue-schema-registry-config": "not a key of TiCDC's glue-schema-registry-config",
}


def changefeed_options(path: str, database: str | None, table: str | None) -> dict[str, str]:
    """The sink options the ``[sink]`` section of the changefeed file at ``path`` sets, for the table
    ``database.table`` (which chooses the dispatcher)."""
    try:
        document = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(OPTION, path, f"cannot read the changefeed file: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(OPTION, path, f"not a TOML file: {e}") from None
    sink = document.get("sink", {})
    if document.get("integrity", {}).get("integrity-check-level", "none") != "none":
        log.warning("changefeed-config: the top-level [integrity] section is passed over, as TiCDC b813e76's "
                    "encoders pass it over: they take integrity-check-level from [sink.integrity]")
    options: dict[str, str] = {}
    for key, value in sink.items():
        if key in _SINK_KEYS:
            options[key] = _text(value)
        elif key == "column-selectors":
            options[key] = json.dumps(value)
        elif key == "kafka-config":
            options.update(_kafka_config(path, value))
        elif key == "dispatchers":
            options.update(_dispatcher(path, value, database, table))
        elif key == "integrity":
            options.update(_integrity(path, value))
        elif key in _SECTION_KEYS:
            for section_key, section_value in value.items():
                if section_key not in _SECTION_KEYS[key]:
                    raise ConfigError(OPTION, path, f"sink.{key}.{section_key} is not supported by the sink")
                options[_SECTION_KEYS[key][section_key]] = _text(section_value)
        elif key in _PASSED_OVER["sink"]:
            log.info("changefeed-config: sink.%s changes nothing in the messages; passed over", key)
        else:
            raise ConfigError(OPTION, path, f"sink.{key} is not supported by the sink")
    return options


def _integrity(path: str, config: dict) -> dict[str, str]:
    """``[sink.integrity]``, where TiCDC's encoders read it (``pkg/sink/codec/common/config.go``): its
    integrity-check-level is the option of that name; corruption-handle-level says what TiCDC does with a row
    whose checksum does not match the one TiDB stored, which the sink, computing checksums from its input, never
    meets: checked and passed over."""
    options: dict[str, str] = {}
    for key, value in config.items():
        if key == "integrity-check-level":
            options[key] = _text(value)
        elif key == "corruption-handle-level":
            if value not in ("warn", "error"):
                raise ConfigError(OPTION, path, f"sink.integrity.corruption-handle-level: {value!r} is not warn or "
                                                "error")
            log.info("changefeed-config: sink.integrity.corruption-handle-level changes nothing in the sink's "
                     "messages; passed over")
        else:
            raise ConfigError(OPTION, path, f"sink.integrity.{key} is not supported by the sink")
    return options


def _kafka_config(path: str, config: dict) -> dict[str, str]:
    options: dict[str, str] = {}
    for key, value in config.items():
        if key in _KAFKA_KEYS:
            options[key] = _text(value)
        elif key == "kafka-client-id":  # as the sink URI's parameter of that name
            options["kafka.client.id"] = _text(value)
        elif key == "codec-config":
            for codec_key, codec_value in value.items():
                if codec_key == "output-row-key":
                    log.info("changefeed-config: TiCDC reads output-row-key from the sink URI only, not from "
                             "sink.kafka-config.codec-config; passed over as TiCDC passes it over")
                    continue
                if codec_key not in _CODEC_KEYS:
                    raise ConfigError(OPTION, path, f"sink.kafka-config.codec-config.{codec_key}: "
                                                    f"{_WHY_NOT['codec-config']}")
                options[codec_key] = _text(codec_value)
        elif key == "large-message-handle":
            for large_key, large_value in value.items():
                if large_key not in _LARGE_MESSAGE_KEYS:
                    raise ConfigError(OPTION, path, f"sink.kafka-config.large-message-handle.{large_key}: "
                                                    f"{_WHY_NOT['large-message-handle']}")
                if large_value != "":  # TiCDC reads an empty one as its default
                    options[large_key] = _text(large_value)
        elif key == "glue-schema-registry-config":
            options.update(_glue_config(path, value))
        elif key in _PASSED_OVER["kafka-config"]:
            log.info("changefeed-config: sink.kafka-config.%s changes nothing in the messages; passed over", key)
        else:
            raise ConfigError(OPTION, path, f"sink.kafka-config.{key}: {_WHY_NOT['kafka-config']}")
    return options


def _glue_config(path: str, config: dict) -> dict[str, str]:
    unknown = set(config) - set(_GLUE_KEYS)
    if unknown:
        raise ConfigError(OPTION, path, f"sink.kafka-config.glue-schema-registry-config.{sorted(unknown)[0]}: "
                                        f"{_WHY_NOT['glue-schema-registry-config']}")
    options = {_GLUE_KEYS["registry-name"]: _text(config.get("registry-name", ""))}
    options.update((_GLUE_KEYS[key], _text(value)) for key, value in config.items() if value != "")
    return options


def _dispatcher(path: str, rules: list, database: str | None, table: str | None) -> dict[str, str]:
    """The options of the dispatcher rules that match the table: the first one's topic and partition, as TiCDC's
    event router takes them, and the target names of the first one that routes (TiCDC's router, which passes
    over rules without ``target-schema`` or ``target-table``)."""
    if database is None or table is None:
        raise ConfigError(OPTION, path, "its dispatchers choose a rule by the written table: give the options "
                                        "database and table")
    options: dict[str, str] | None = None
    for rule in rules:
        unknown = set(rule) - {"matcher", "topic", "partition", "dispatcher", "index", "columns", *_TARGETS}
        if unknown:
            raise ConfigError(OPTION, path, f"sink.dispatchers.{sorted(unknown)[0]} is not supported by the sink")
        try:
            matched = TableFilter(list(rule.get("matcher", []))).matches(database, table)
        except FilterSyntaxError as e:
            raise ConfigError(OPTION, path, f"sink.dispatchers: {e}") from None
        if not matched:
            continue
        if options is None:
            options = _dispatch_options(path, rule)
        if any(rule.get(key) for key in _TARGETS):
            return {**options, **{key: str(rule[key]) for key in _TARGETS if rule.get(key)}}
    return options or {}


_TARGETS = ("target-schema", "target-table")


def _dispatch_options(path: str, rule: dict) -> dict[str, str]:
    """A rule's topic and partition dispatcher, as sink options."""
    if "partition" in rule and "dispatcher" in rule:
        raise ConfigError(OPTION, path, f"dispatcher and partition cannot be configured both for rule: {rule}")
    options = {}
    if rule.get("topic"):
        options["topic"] = str(rule["topic"])
    partition = rule.get("partition", rule.get("dispatcher"))
    if partition:
        options["partition"] = str(partition)
    if rule.get("index"):
        options["partition-index"] = str(rule["index"])
    if rule.get("columns"):
        options["partition-columns"] = ",".join(rule["columns"])
    return options


def _text(value: Any) -> str:
    """A TOML value as the sink's options spell it."""
    return str(value).lower() if isinstance(value, bool) else str(value)
