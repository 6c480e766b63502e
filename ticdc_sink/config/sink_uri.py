"""``sink-uri``: a TiCDC Kafka sink URI, split into the sink's options and librdkafka's settings.

``kafka://h1:9092,h2:9092/topic?protocol=canal-json&...`` as TiCDC's changefeeds
write it (``pkg/sink/kafka/options.go`` at pingcap/ticdc@b813e76f): the hosts are
the brokers, the path the topic, and each parameter either a Kafka client
setting (renamed to librdkafka's name), one librdkafka negotiates itself
(ignored, with an info line), or an option of the sink.
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qsl, unquote, urlsplit

from ..errors import ConfigError
from ..redact import mask
from .option_group import parse_bool

log = logging.getLogger(__name__)

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
            if parse_bool("sink-uri parameter enable-tls", value):
                kafka["security.protocol"] = "SSL"
        elif key in _URI_IGNORED_PARAMETERS:
            log.info("sink-uri parameter %s=%s is not needed by librdkafka and is ignored", key, mask(key, value))
        else:
            options[key] = value
    if "sasl.mechanism" in kafka:
        kafka["security.protocol"] = "SASL_SSL" if kafka.get("security.protocol") == "SSL" else "SASL_PLAINTEXT"
    return options, kafka
