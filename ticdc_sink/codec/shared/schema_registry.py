"""The Confluent Schema Registry, for the protocols whose schemas live there (Avro): a client, its errors,
TiCDC's subject names; the options of both registries (AWS Glue's is ``glue_schema_registry.py``), and the
declaration by which a codec says it needs one, which gives it the registry its options name."""

from __future__ import annotations

import functools
import ssl
import struct
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator
from urllib.parse import unquote, urlsplit

from ...config.option_group import SETTINGS, OptionGroup
from ...config.sink import SinkConfig
from ...errors import ConfigError
from ...redact import mask_url
from .glue_schema_registry import HEADER_VERSION, GlueRegistryOptions, GlueSchemaRegistry, check_glue_client
from .registered_schemas import DEFAULT_RETRIES, RegisteredSchemas, SchemaRegistryFailure, attempt_seconds

# Client settings that take numbers; options always arrive as strings.
_NUMBER_SETTINGS = frozenset({"timeout", "cache.capacity", "cache.latest.ttl.sec", "max.retries", "retries.wait.ms",
                              "retries.max.wait.ms"})
_CA_PEM, _CA_FILE = "ssl.ca.pem", "ssl.ca.location"
MAGIC_BYTE = 0
_CONFLUENT_HEADER = struct.Struct(">bI")  # the magic byte and the schema id, big-endian


@dataclass(frozen=True, repr=False)
class RegistryOptions(GlueRegistryOptions, OptionGroup):
    """The options of a protocol whose schemas live in a registry: a Confluent Schema Registry's URL, and
    ``schema-registry.<setting>`` options, confluent-kafka ``SchemaRegistryClient`` settings (TLS, basic auth, ...)
    plus ``ssl.ca.pem``, the registry's CA as text, which the client takes as a file; or AWS Glue's."""

    schema_registry: str | None = None
    schema_registry_settings: tuple[tuple[str, str], ...] = field(default=(), metadata={SETTINGS: True})

    def check_registry(self, protocol: str) -> None:
        """One registry, as TiCDC requires in its words (``pkg/sink/codec/common/config.go``, ``Validate``;
        ``protocol`` as it names it there: Avro, Debezium Avro), and its options. Confluent's: each URL of
        ``schema-registry`` is an http:// or https:// one, and the registry's CA is given once."""
        if self.schema_registry and self.uses_glue:
            raise ConfigError("schema-registry", self.schema_registry,
                              f'{protocol} protocol requires only one of "schema-registry" or "glue-schema-registry" '
                              "to specify the schema registry: give schema-registry (a Confluent Schema Registry) "
                              "or the glue-schema-registry-* options (AWS Glue's), not both")
        if not self.schema_registry and not self.uses_glue:
            raise ConfigError("schema-registry", None,
                              f'{protocol} protocol requires parameter "schema-registry" or "glue-schema-registry" '
                              "to specify the schema registry: a Confluent Schema Registry URL, e.g. "
                              "http://registry:8081, or AWS Glue's glue-schema-registry-name and "
                              "glue-schema-registry-region")
        if self.uses_glue:
            self.check_glue()
            return
        for one in (self.schema_registry or "").split(","):
            parts = urlsplit(one.strip())
            if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
                raise ConfigError("schema-registry", self.schema_registry,
                                  "an http:// or https:// URL (several joined by commas), "
                                  "e.g. http://user:password@registry:8081")
        settings = dict(self.schema_registry_settings)
        if _CA_PEM in settings and _CA_FILE in settings:
            raise ConfigError(f"schema-registry.{_CA_FILE}", settings[_CA_FILE],
                              f"give the registry's CA once: as this file or as schema-registry.{_CA_PEM}, not both")


def subject(topic: str, part: str) -> str:
    """TopicNameStrategy's subject as TiCDC names it: ``part`` is ``key`` or ``value``."""
    return f"{topic.replace('.', '_')}-{part}"


def confluent_header(schema_id: int) -> bytes:
    """The first five bytes of a key or value in the Confluent wire format: the magic byte and the schema id."""
    return _CONFLUENT_HEADER.pack(MAGIC_BYTE, schema_id)


def split_confluent(data: bytes) -> tuple[int, bytes]:
    """(schema id, Avro record) of a key or value in the Confluent wire format."""
    if len(data) < _CONFLUENT_HEADER.size or data[0] != MAGIC_BYTE:
        hint = "; it starts as AWS Glue's do: read with the glue-schema-registry-* options" \
            if data[:1] == bytes((HEADER_VERSION,)) else ""
        raise ValueError(f"not a Confluent Avro message (magic byte 0, schema id, record): {data[:8]!r}{hint}")
    return _CONFLUENT_HEADER.unpack_from(data)[1], data[_CONFLUENT_HEADER.size:]


def client_settings(config: SinkConfig) -> dict[str, Any]:
    """``SchemaRegistryClient`` settings from the options.

    Without ``schema-registry.timeout`` a request's attempts share
    ``broker-timeout-ms``, so that a registry that does not answer fails the
    task in about that time (plus the client's waits between attempts).

    A ``user:password@`` in the URL goes to the client as
    ``basic.auth.user.info`` instead (the first URL's, which the client uses
    for every URL), so that the URLs it requests carry no password: its HTTP
    library logs each one at INFO.
    """
    options = config.protocol_options
    settings: dict[str, Any] = {"url": options.schema_registry}
    for setting, value in options.schema_registry_settings:
        if setting in _NUMBER_SETTINGS:
            try:
                settings[setting] = float(value) if setting == "timeout" else int(value)
            except ValueError:
                raise ConfigError(f"schema-registry.{setting}", value, "expected a number") from None
        else:
            settings[setting] = value
    retries = settings.setdefault("max.retries", DEFAULT_RETRIES)
    settings.setdefault("timeout", attempt_seconds(config.broker_timeout_ms, retries))
    if "basic.auth.user.info" not in settings:  # with both, the client's own refusal says which to drop
        settings.update(_login_out_of_urls(options.schema_registry))
    return settings


def _login_out_of_urls(urls: str) -> dict[str, str]:
    """The URLs without their user info and the first one's ``user:password``, where it has one."""
    parts = [urlsplit(one.strip()) for one in urls.split(",")]
    if parts[0].password is None:
        return {}
    return {"url": ",".join(p._replace(netloc=p.netloc.rpartition("@")[2]).geturl() for p in parts),
            "basic.auth.user.info": f"{unquote(parts[0].username)}:{unquote(parts[0].password)}"}


@functools.lru_cache(maxsize=16)
def check_client_settings(config: SinkConfig) -> None:
    """Refuse settings the registry's client refuses, once per configuration and process (building a client
    costs tens of milliseconds: it loads the CA certificates)."""
    if config.protocol_options.uses_glue:
        check_glue_client(config)
    else:
        _client(config).close()


def _registry_client():
    """confluent-kafka's registry client module and the HTTP library under it (httpx2 where installed, else
    httpx), imported where a registry is used: they take a tenth of a second to import, in every Spark worker
    and planner process that imports the codecs."""
    from confluent_kafka import schema_registry

    try:
        from confluent_kafka.schema_registry.common._httpx_compat import httpx
    except ImportError:  # an older client
        import httpx
    return schema_registry, httpx


@contextmanager
def _ca_as_file(settings: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``settings`` with ``ssl.ca.pem`` as the ``ssl.ca.location`` the client takes: a private temporary file
    (mode 0600), removed once the client is made, since it loads the CA into its TLS context then. So the CA
    need not be a file on every executor, as with ``kafka.ssl.ca.pem``."""
    if _CA_PEM not in settings:
        yield settings
        return
    settings = dict(settings)
    with tempfile.NamedTemporaryFile("w", prefix="ticdc-sink-registry-ca-", suffix=".pem") as ca:
        ca.write(settings.pop(_CA_PEM))
        ca.flush()
        yield {**settings, _CA_FILE: ca.name}


def _client(config: SinkConfig):
    schema_registry, _ = _registry_client()
    try:
        with _ca_as_file(client_settings(config)) as settings:
            return schema_registry.SchemaRegistryClient(settings)
    except OSError as e:  # a TLS file that cannot be read: Python's error does not name it
        options = config.protocol_options
        files = ", ".join(f"schema-registry.{s}" + ("" if s == _CA_PEM else f"={v}")
                          for s, v in options.schema_registry_settings if s.endswith(".location") or s == _CA_PEM)
        raise ConfigError("schema-registry", options.schema_registry,
                          f"the Schema Registry client cannot read its TLS files ({files}): {e}") from None
    except (ValueError, TypeError) as e:
        options = config.protocol_options
        given = ", ".join(f"schema-registry.{s}" for s, _ in options.schema_registry_settings) or "none"
        raise ConfigError("schema-registry", options.schema_registry,
                          f"the Schema Registry client refused its settings (schema-registry.* given: {given}): "
                          f"{e}") from None


class SchemaRegistry(RegisteredSchemas):
    """The Confluent Schema Registry through confluent-kafka's client, which caches as well; the cache above it
    also spares the client parsing the schema on every batch."""

    def __init__(self, config: SinkConfig):
        super().__init__()
        self._config = config
        self._client = _client(config)

    @classmethod
    def at(cls, url: str) -> "SchemaRegistry":
        """A registry by URL alone, with the default settings (to read schemas back)."""
        return cls(SinkConfig(protocol="avro", topic="", protocol_options=RegistryOptions(schema_registry=url)))

    @property
    def where(self) -> str:
        """The registry's URL as it may be shown: without its credentials."""
        return mask_url(self._config.protocol_options.schema_registry or "")

    def split(self, data: bytes) -> tuple[int, bytes]:
        return split_confluent(data)

    def _register(self, name: str, schema_text: str, what: str) -> bytes:
        return confluent_header(self._call(
            lambda: self._client.register_schema(name, _registry_client()[0].Schema(schema_text, "AVRO")),
            f"registering {what} under subject {name!r}"))

    def _look_up(self, schema_id: int) -> str:
        return self._call(lambda: self._client.get_schema(schema_id).schema_str, f"looking up schema id {schema_id}",
                          names_a_schema=True)

    def check_reachable(self) -> None:
        """One request (the subject list), so that a wrong URL or credentials fail before any task."""
        self._call(self._client.get_subjects, "listing its subjects")

    def _call(self, request, doing: str, names_a_schema: bool = False):
        """``names_a_schema``: the request is for a schema id a message names, which the registry may lack."""
        schema_registry, httpx = _registry_client()
        try:
            return request()
        except schema_registry.SchemaRegistryError as e:
            raise SchemaRegistryFailure(
                f"schema registry {self.where} failed {doing}: {e.error_message} (HTTP {e.http_status_code}, "
                f"error code {e.error_code}){_advice(e.http_status_code)}",
                of_one_message=names_a_schema and e.http_status_code == 404) from None
        except httpx.TransportError as e:
            if _caused_by(e, ssl.SSLCertVerificationError):
                raise SchemaRegistryFailure(
                    f"schema registry {self.where}: its TLS certificate is not trusted ({doing}): {e}; give the CA "
                    f"that signed it as schema-registry.{_CA_FILE} (a file on the driver and every executor) or "
                    f"schema-registry.{_CA_PEM} (its PEM text), and check that it names the host in "
                    "schema-registry") from None
            raise SchemaRegistryFailure(
                f"schema registry {self.where} cannot be reached ({doing}): {type(e).__name__}: {e}; check the "
                "schema-registry option, the network and the registry, or raise broker-timeout-ms") from None
        except ValueError as e:  # a 2xx answer that is not the registry's JSON: another service at that URL
            raise SchemaRegistryFailure(
                f"schema registry {self.where} gave an answer that is not a Schema Registry's ({doing}): "
                f"{type(e).__name__}: {e}; check that schema-registry names the registry") from None

    def close(self) -> None:
        self._client.close()


def _caused_by(error: BaseException, kind: type) -> bool:
    """Whether ``kind`` is in the chain of causes of ``error`` (the HTTP layers wrap the ssl module's errors)."""
    while error is not None:
        if isinstance(error, kind):
            return True
        error = error.__cause__ or error.__context__
    return False


def _advice(status: int) -> str:
    if status == 409:
        return ("; the table's schema is incompatible with the subject's earlier versions under its compatibility "
                "level: make the change compatible (new columns nullable), or change the subject's level")
    if status in (401, 403):
        return "; check the credentials in schema-registry (user:password@host) or schema-registry.basic.auth.*"
    return ""


def open_registry(config: SinkConfig) -> RegisteredSchemas:
    """A client of the registry the options name: AWS Glue's, or the Confluent Schema Registry."""
    return GlueSchemaRegistry(config) if config.protocol_options.uses_glue else SchemaRegistry(config)


class UsesSchemaRegistry:
    """Declared by a codec whose schemas live in a schema registry (Avro): Confluent's or AWS Glue's.

    Its client is made when the codec first needs it; ``codec.open_encoder``
    closes it at the end of a task, and ``codec.check_services`` reaches the
    registry once on the driver, before any task.
    """

    config: SinkConfig | None
    _registry: RegisteredSchemas | None = None

    @property
    def registry(self) -> RegisteredSchemas:
        if self._registry is None:
            options = self.config and self.config.protocol_options
            if not options or not (options.schema_registry or options.uses_glue):
                raise ConfigError("schema-registry", None, "decoding avro needs the registry the schemas are "
                                                           "in: decoder_for('avro', schema_registry=URL)")
            self._registry = open_registry(self.config)
        return self._registry

    def close_registry(self) -> None:
        if self._registry is not None:
            self._registry.close()
            self._registry = None
