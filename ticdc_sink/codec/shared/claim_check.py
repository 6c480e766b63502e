"""Claim-check, as TiCDC does it (``pkg/sink/kafka/claimcheck``): a row whose message is over max-message-bytes is
kept whole in external storage, and the Kafka message carries its handle key and where the whole one is.

An object is ``<uuid4>.json`` at the root of ``claim-check-storage-uri``,
holding ``{"key":<base64 or null>,"value":<base64>}`` (Go's padded standard
base64), or the value's bytes alone with ``claim-check-raw-value``; the value is
the message as it would have gone to Kafka, compressed.  The location in the
message is the URI without its query, then ``/`` and the name.  A reader takes
the location's last part and reads it from its own ``claim-check-storage-uri``
(as TiCDC's consumers do), or from the location itself when it has none.

Storage goes through pyarrow's filesystems: ``file://`` and ``s3://`` (TiCDC's
S3 parameters ``endpoint``, ``region``, ``access-key``, ``secret-access-key``,
``session-token``, ``role-arn``, ``external-id``, ``force-path-style``;
otherwise AWS's usual environment and files).
"""

from __future__ import annotations

import base64
import json
import uuid
from urllib.parse import parse_qsl, urlsplit

import pyarrow.fs as pafs

from ...config.sink import SinkConfig
from ...errors import ConfigError, TiCDCSinkError
from ...redact import mask_url

OPTION = "claim-check-storage-uri"
SCHEMES = ("file", "s3")

# TiCDC's S3 query parameters (lower case, '_' read as '-') and the S3FileSystem argument each becomes.
_S3_PARAMETERS = {"region": "region", "access-key": "access_key", "secret-access-key": "secret_key",
                  "session-token": "session_token", "role-arn": "role_arn", "external-id": "external_id"}


class ClaimCheckError(TiCDCSinkError):
    """The claim-check storage could not be written or read; names the storage (credentials masked) and the object."""


class ClaimCheckStorage:
    """Where one writer's (or reader's) claim-check objects are: a filesystem and the directory or prefix in it."""

    def __init__(self, uri: str, *, raw_value: bool = False, timeout_s: float = 30.0):
        self.uri, self.raw_value = uri, raw_value
        self.filesystem, self.root = _filesystem(uri, timeout_s)
        parts = urlsplit(uri)
        base = parts._replace(query="", fragment="").geturl()
        self.prefix = base[:-1] if base.endswith("/") else base  # TiCDC trims one trailing '/'

    @classmethod
    def of(cls, config: SinkConfig, uri: str | None = None) -> "ClaimCheckStorage":
        """The storage ``config`` names (or the one at ``uri``), with its raw-value setting and its timeout."""
        return cls(uri or config.claim_check_storage_uri, raw_value=config.claim_check_raw_value,
                   timeout_s=config.broker_timeout_ms / 1000)

    @property
    def shown(self) -> str:
        return mask_url(self.uri)

    def check(self) -> None:
        """Fail at once where the storage cannot be used: a local directory is made, a bucket's prefix looked at."""
        try:
            if isinstance(self.filesystem, pafs.LocalFileSystem):
                self.filesystem.create_dir(self.root, recursive=True)
            else:
                self.filesystem.get_file_info(self.root)
        except (OSError, ValueError) as error:
            raise ClaimCheckError(f"{OPTION}={self.shown} cannot be used: {_reason(error)}; check the URI, the "
                                  "credentials and that the storage is reachable") from None

    def put(self, key: bytes | None, value: bytes) -> str:
        """Keep one message whole; its location."""
        name = f"{uuid.uuid4()}.json"
        content = value if self.raw_value else object_content(key, value)
        try:
            with self.filesystem.open_output_stream(f"{self.root}/{name}") as out:
                out.write(content)
        except (OSError, ValueError) as error:
            raise ClaimCheckError(f"cannot write claim-check object {name} to {OPTION}={self.shown}: "
                                  f"{_reason(error)}; check the storage and its credentials") from None
        return f"{self.prefix}/{name}"

    def get(self, location: str) -> tuple[bytes | None, bytes]:
        """The key and value kept at ``location``: the object of that name here (TiCDC reads the name only)."""
        name = location.rsplit("/", 1)[-1]
        try:
            with self.filesystem.open_input_stream(f"{self.root}/{name}") as stream:
                content = stream.read()
        except (OSError, ValueError) as error:
            raise ClaimCheckError(f"cannot read claim-check object {name} (location {location}) from "
                                  f"{OPTION}={self.shown}: {_reason(error)}") from None
        return (None, content) if self.raw_value else parse_object(content, location)


def object_content(key: bytes | None, value: bytes) -> bytes:
    """``{"key":..,"value":..}`` as Go's encoding/json writes a ClaimCheckMessage: padded base64, a nil key null."""
    return json.dumps({"key": None if key is None else base64.b64encode(key).decode(),
                       "value": base64.b64encode(value).decode()}, separators=(",", ":")).encode()


def parse_object(content: bytes, location: str) -> tuple[bytes | None, bytes]:
    try:
        document = json.loads(content)
        key = document["key"]
        return (None if key is None else base64.b64decode(key)), base64.b64decode(document["value"])
    except (ValueError, KeyError, TypeError) as error:
        raise ClaimCheckError(f"claim-check object {location} is not {{\"key\",\"value\"}} JSON ({error}); was it "
                              "written with claim-check-raw-value? The reader's setting must be the writer's") from None


def parse_storage_uri(uri: str) -> str:
    """``uri`` checked, so that a bad one is refused on the driver before any task."""
    _filesystem(uri, 1.0)
    return uri


def _filesystem(uri: str, timeout_s: float) -> tuple[pafs.FileSystem, str]:
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise ConfigError(OPTION, mask_url(uri), "a file:///path or s3://bucket/prefix URI")
    if scheme == "file":
        if parts.netloc or not parts.path.startswith("/"):
            raise ConfigError(OPTION, uri, "a local storage is file:///absolute/path (three slashes)")
        return pafs.LocalFileSystem(), parts.path.rstrip("/") or "/"
    if not parts.netloc:
        raise ConfigError(OPTION, mask_url(uri), "an S3 URI names its bucket: s3://bucket/prefix")
    return pafs.S3FileSystem(**_s3_arguments(uri, parts.query, timeout_s)), \
        f"{parts.netloc}/{parts.path.strip('/')}".rstrip("/")


def _s3_arguments(uri: str, query: str, timeout_s: float) -> dict:
    """pyarrow's S3FileSystem arguments from TiCDC's S3 query parameters."""
    arguments = {"connect_timeout": timeout_s, "request_timeout": timeout_s}
    for name, value in parse_qsl(query, keep_blank_values=True):
        name = name.lower().replace("_", "-")
        if name in _S3_PARAMETERS:
            arguments[_S3_PARAMETERS[name]] = value
        elif name == "endpoint":
            endpoint = urlsplit(value)
            if not endpoint.scheme or not endpoint.netloc:
                raise ConfigError(OPTION, mask_url(uri), f"endpoint={value} needs a scheme and a host, "
                                                         "e.g. http://127.0.0.1:9000")
            arguments.update(endpoint_override=endpoint.netloc, scheme=endpoint.scheme)
        elif name == "force-path-style":
            arguments["force_virtual_addressing"] = value.strip().lower() in ("false", "0")
        else:
            raise ConfigError(OPTION, mask_url(uri), f"the S3 parameter {name!r} is not supported by the sink; "
                              f"it takes endpoint, force-path-style, {', '.join(_S3_PARAMETERS)}")
    if "access_key" in arguments and "secret_key" not in arguments or \
            "secret_key" in arguments and "access_key" not in arguments:
        raise ConfigError(OPTION, mask_url(uri), "access-key and secret-access-key go together")
    return arguments


def _reason(error: Exception) -> str:
    return " ".join(str(error).split()) or type(error).__name__
