"""The AWS Glue Schema Registry, the other registry TiCDC's Avro protocols put their schemas in (TiCDC
``pkg/sink/codec/avro/glue_schema_registry.go`` at pingcap/ticdc@b813e76f): its options, a client, and its
wire format.

TiCDC names a Glue schema as a Confluent subject (``<topic>-key``,
``<topic>-value``; debezium-avro's events by their record's name), registers
it in the named registry (the latest version by name; a new version where
the schema exists, else the schema created with data format AVRO and
compatibility NONE, since TiDB's DDL decides what changes), and writes a
message as Glue's serializers do: header version byte 3, compression byte 0
(none), the 16 bytes of the schema version's UUID, then the Avro binary.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass, fields
from typing import Any
from urllib.parse import urlsplit

from ...config.option_group import OptionGroup
from ...config.sink import SinkConfig
from ...errors import ConfigError
from ...redact import MASK, mask_url
from .registered_schemas import DEFAULT_RETRIES, RegisteredSchemas, SchemaRegistryFailure, attempt_seconds

HEADER_VERSION = 3  # Glue's serializers' header version (AWSSchemaRegistryConstants)
COMPRESSION_NONE = 0
HEADER_SIZE = 18  # the two bytes above and the schema version's UUID
_CREDENTIAL_CODES = frozenset({"UnrecognizedClientException", "InvalidClientTokenId", "InvalidSignatureException",
                               "SignatureDoesNotMatch", "ExpiredTokenException", "IncompleteSignature"})
_PERMISSIONS = "glue:GetRegistry, glue:GetSchemaVersion, glue:CreateSchema and glue:RegisterSchemaVersion"


@dataclass(frozen=True, repr=False)
class GlueRegistryOptions(OptionGroup):
    """TiCDC's ``[sink.kafka-config.glue-schema-registry-config]`` as options (``registry-name``, ``region``,
    ``access-key``, ``secret-access-key``, ``token``), and the endpoint of a VPC endpoint or a test's Glue API.

    Without an access key boto3 finds the credentials its usual way (the
    environment, ``~/.aws``, an instance or pod role), as TiCDC then loads
    AWS's default configuration. Any of these options chooses Glue's registry.
    """

    glue_schema_registry_name: str | None = None
    glue_schema_registry_region: str | None = None
    glue_schema_registry_access_key: str | None = None
    glue_schema_registry_secret_access_key: str | None = None
    glue_schema_registry_token: str | None = None
    glue_schema_registry_endpoint: str | None = None

    @property
    def uses_glue(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(GlueRegistryOptions))

    def check_glue(self) -> None:
        """TiCDC's checks of its glue-schema-registry-config (``pkg/config/sink.go``,
        ``GlueSchemaRegistryConfig.Validate``) in its words, and the sink's of what TiCDC lets through."""
        if not self.glue_schema_registry_name:
            raise ConfigError("glue-schema-registry-name", None,
                              "registry-name is empty, is must be set: the name of the AWS Glue Schema Registry")
        if not self.glue_schema_registry_region:
            raise ConfigError("glue-schema-registry-region", None,
                              "region is empty, is must be set: the registry's AWS region, e.g. us-east-1")
        if self.glue_schema_registry_access_key and not self.glue_schema_registry_secret_access_key:
            raise ConfigError("glue-schema-registry-secret-access-key", None,
                              "access-key is set, but access-key-secret is empty, they must be set together")
        if not self.glue_schema_registry_access_key and (self.glue_schema_registry_secret_access_key or
                                                         self.glue_schema_registry_token):
            raise ConfigError("glue-schema-registry-access-key", None,
                              "glue-schema-registry-secret-access-key or -token is set without it: give the access "
                              "key with them, or none of the three for boto3's own credentials")
        endpoint = self.glue_schema_registry_endpoint
        if endpoint is not None:
            parts = urlsplit(endpoint)
            if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
                raise ConfigError("glue-schema-registry-endpoint", endpoint,
                                  "an http:// or https:// URL of a Glue API, e.g. a VPC endpoint's")


def glue_header(version_id: str) -> bytes:
    """The first 18 bytes of a key or value in Glue's wire format."""
    return bytes((HEADER_VERSION, COMPRESSION_NONE)) + uuid.UUID(version_id).bytes


def split_glue(data: bytes) -> tuple[str, bytes]:
    """(schema version id, Avro record) of a key or value in Glue's wire format, as TiCDC's decoder reads it
    (``pkg/sink/codec/avro/decoder.go``, ``extractGlueSchemaIDAndBinaryData``): a compressed record is refused."""
    if len(data) < HEADER_SIZE or data[0] != HEADER_VERSION or data[1] != COMPRESSION_NONE:
        hint = "; it starts as Confluent's do: read with the schema-registry option" if data[:1] == b"\x00" else ""
        raise ValueError("not a Glue Schema Registry Avro message (header version 3, compression 0, the schema "
                         f"version's UUID, record): {data[:8]!r}{hint}")
    return str(uuid.UUID(bytes=data[2:HEADER_SIZE])), data[HEADER_SIZE:]


def _boto3():
    """boto3 and botocore's Config, imported where Glue's registry is used: they take a few tenths of a second to
    import, in every process that imports the codecs; and they are an extra (``ticdc-sink[glue]``)."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        raise ConfigError("glue-schema-registry-name", None, "the AWS Glue Schema Registry needs boto3, which is "
                          "not installed: install the package's glue extra (pip install -e '.[glue]' in a clone) "
                          "or boto3 on the driver and the executors") from None
    return boto3, Config


def _client(config: SinkConfig):
    """A Glue client whose requests give up within broker-timeout-ms: three attempts of a third of it each."""
    boto3, Config = _boto3()
    options = config.protocol_options
    seconds = attempt_seconds(config.broker_timeout_ms)
    credentials: dict[str, Any] = {}
    if options.glue_schema_registry_access_key:
        credentials = {"aws_access_key_id": options.glue_schema_registry_access_key,
                       "aws_secret_access_key": options.glue_schema_registry_secret_access_key,
                       "aws_session_token": options.glue_schema_registry_token or None}
    try:
        return boto3.session.Session().client(
            "glue", region_name=options.glue_schema_registry_region,
            endpoint_url=options.glue_schema_registry_endpoint or None,
            config=Config(connect_timeout=seconds, read_timeout=seconds,
                          retries={"mode": "standard", "total_max_attempts": DEFAULT_RETRIES + 1}),
            **credentials)
    except ValueError as e:  # botocore's InvalidRegionError, or an endpoint it cannot use
        option = "glue-schema-registry-endpoint" if "endpoint" in str(e).lower() else "glue-schema-registry-region"
        raise ConfigError(option, getattr(options, option.replace("-", "_")), f"boto3 refused it: {e}") from None


@functools.lru_cache(maxsize=16)
def check_glue_client(config: SinkConfig) -> None:
    """Refuse what boto3 refuses (a region or endpoint it cannot use, boto3 missing) when an encoder is built,
    once per configuration and process."""
    _client(config).close()


class GlueSchemaRegistry(RegisteredSchemas):
    """TiCDC's requests to the AWS Glue Schema Registry, each failure one line naming the registry and what to do."""

    def __init__(self, config: SinkConfig):
        super().__init__()
        self._options = config.protocol_options
        self._name = self._options.glue_schema_registry_name
        self._client = _client(config)

    @property
    def where(self) -> str:
        endpoint = self._options.glue_schema_registry_endpoint
        return (f"glue schema registry {self._name!r} (region {self._options.glue_schema_registry_region}"
                f"{f', endpoint {mask_url(endpoint)}' if endpoint else ''})")

    def split(self, data: bytes) -> tuple[str, bytes]:
        return split_glue(data)

    def check_reachable(self) -> None:
        """The registry itself, as TiCDC asks for it before it encodes: a missing registry fails here too."""
        self._request("get_registry", "looking the registry up", RegistryId={"RegistryName": self._name})

    def _register(self, name: str, schema_text: str, what: str) -> bytes:
        """TiCDC's order (``glueSchemaManager.Register``): the latest version by name, then a new version of the
        schema, or the schema created. Where another task created it in between, its version is registered."""
        doing = f"registering {what} as schema {name!r}"
        schema_id = {"RegistryName": self._name, "SchemaName": name}
        latest = self._request("get_schema_version", doing, absent="EntityNotFoundException", SchemaId=schema_id,
                               SchemaVersionNumber={"LatestVersion": True})
        answer = None
        if latest is None:
            answer = self._request("create_schema", doing, absent="AlreadyExistsException",
                                   RegistryId={"RegistryName": self._name}, SchemaName=name, DataFormat="AVRO",
                                   Compatibility="NONE", SchemaDefinition=schema_text)
        if answer is None:
            answer = self._request("register_schema_version", doing, SchemaId=schema_id,
                                   SchemaDefinition=schema_text)
        return glue_header(answer["SchemaVersionId"])

    def _look_up(self, schema_id: str) -> str:
        answer = self._request("get_schema_version", f"looking up schema version {schema_id}",
                               names_a_schema=True, SchemaVersionId=schema_id)
        return answer["SchemaDefinition"]

    def _request(self, operation: str, doing: str, *, absent: str | None = None, names_a_schema: bool = False,
                 **params) -> dict | None:
        """The answer to one request; None where it failed with the error code ``absent`` (an expected "no such
        schema"). ``names_a_schema``: the request is for a schema version a message names, which may be gone."""
        from botocore.exceptions import BotoCoreError, ClientError, ConnectionError, HTTPClientError, NoCredentialsError

        try:
            return getattr(self._client, operation)(**params)
        except ClientError as e:
            error = e.response.get("Error", {})
            code = error.get("Code", "")
            if code == absent:
                return None
            raise SchemaRegistryFailure(
                self._scrubbed(f"{self.where} failed {doing}: {code}: {error.get('Message', '')}"
                               f"{self._advice(operation, code)}"),
                of_one_message=names_a_schema and code == "EntityNotFoundException") from None
        except NoCredentialsError:
            raise SchemaRegistryFailure(
                f"{self.where} failed {doing}: no AWS credentials: give glue-schema-registry-access-key and "
                "glue-schema-registry-secret-access-key, or provide them where boto3 looks (AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, ~/.aws/credentials, an instance or pod role) on the driver and every "
                "executor") from None
        except (ConnectionError, HTTPClientError) as e:
            raise SchemaRegistryFailure(self._scrubbed(
                f"{self.where} cannot be reached ({doing}): {type(e).__name__}: {e}; check "
                "glue-schema-registry-region (and -endpoint), the network, or raise broker-timeout-ms")) from None
        except BotoCoreError as e:
            raise SchemaRegistryFailure(self._scrubbed(
                f"{self.where} failed {doing}: {type(e).__name__}: {e}")) from None

    def _advice(self, operation: str, code: str) -> str:
        if code == "EntityNotFoundException" and operation == "get_registry":
            return (f"; create the registry (aws glue create-registry --registry-name {self._name} --region "
                    f"{self._options.glue_schema_registry_region}) or fix glue-schema-registry-name and -region")
        if code == "AccessDeniedException":
            return f"; the credentials need {_PERMISSIONS} on the registry and its schemas"
        if code in _CREDENTIAL_CODES:
            return ("; check the credentials: glue-schema-registry-access-key, -secret-access-key and -token, or "
                    "those boto3 finds")
        return ""

    def _scrubbed(self, text: str) -> str:
        """``text`` without the credentials given as options, should an answer quote them."""
        for secret in (self._options.glue_schema_registry_secret_access_key, self._options.glue_schema_registry_token,
                       self._options.glue_schema_registry_access_key):
            if secret:
                text = text.replace(secret, MASK)
        return text

    def close(self) -> None:
        self._client.close()
