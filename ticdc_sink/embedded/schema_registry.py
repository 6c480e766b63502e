"""A TEST DOUBLE of the Confluent Schema Registry, for the tests and the demo only.

``SchemaRegistryDouble`` is a small in-process HTTP server (``http.server`` on a
thread, bound to 127.0.0.1 on a free port) that speaks the subset of the
Schema Registry REST API that confluent-kafka's ``SchemaRegistryClient``,
``AvroSerializer`` and ``AvroDeserializer`` use. The machine that runs the tests
has no Docker, so the real registry cannot be started next to them; and the
Avro demo of an installed package needs a registry, so the double ships in it,
as the embedded broker does (``embedded/broker.py``).

    with SchemaRegistryDouble() as registry:
        client = SchemaRegistryClient({"url": registry.url})

It is NOT a schema registry: state lives in memory and dies with the server,
only AVRO schemas are accepted (schema references by subject and version
included), and it has no modes, contexts, metadata, rule sets, GUIDs,
associations or exporters; ``metadata``/``ruleSet`` in a request are ignored, as
are ``normalize`` (comparison is always canonical), ``format`` and ``force``.

This module holds the double's options and lifecycle; its parts, each with the details:

- ``schema_registry_routes``: the endpoints it answers, and the 404 for any other path;
- ``schema_registry_store``: subjects, versions, ids, soft and permanent deletes, configs;
- ``schema_registry_compatibility``: the levels (BACKWARD by default) and the registry's messages;
- ``schema_registry_resolution``: Avro schema resolution, the check behind every level;
- ``schema_registry_schema``: parsing, and the canonical form that decides "the same schema";
- ``schema_registry_errors``: the error codes and texts of the registry's Errors.java;
- ``schema_registry_http``: the HTTP(S) server, basic auth and the request log.

An incompatible schema is an HTTP 409 with error_code 409. Registries built after
Confluent added associations in December 2025 send error_code 40901 instead;
pass ``incompatible_error_code=40901`` to mimic them.

Basic auth: ``SchemaRegistryDouble(basic_auth="user:password")`` makes every
request without that ``Authorization: Basic`` header a 401
``{"error_code": 401, "message": "Unauthorized"}``.

TLS: ``SchemaRegistryDouble(certificate="server.pem", key="server.key")`` serves
HTTPS (``url`` is ``https://127.0.0.1:<port>``) with that PEM certificate chain
and key (``key`` left out when the certificate file holds it); the certificate
must name 127.0.0.1 for clients that check the host name.

Every request is recorded in ``.requests`` as ``(method, path, status)``; nothing
is logged to stderr unless ``log_requests=True``.
"""

from __future__ import annotations

import ssl
import threading
from os import PathLike

from .schema_registry_compatibility import COMPATIBILITY_LEVELS, DEFAULT_COMPATIBILITY
from .schema_registry_http import RegistryServer, ServedRegistry
from .schema_registry_store import RegistryStore

__all__ = ["SchemaRegistryDouble", "COMPATIBILITY_LEVELS", "DEFAULT_COMPATIBILITY"]


class SchemaRegistryDouble:
    """A TEST DOUBLE of the Confluent Schema Registry; see the module docstring for what it speaks.

    Use as a context manager (or call ``start()``/``stop()``). ``url`` is ``http://127.0.0.1:<port>``, or
    ``https://`` with a ``certificate``.
    """

    def __init__(self, *, basic_auth: str | None = None, certificate: str | PathLike | None = None,
                 key: str | PathLike | None = None, default_compatibility: str = DEFAULT_COMPATIBILITY,
                 incompatible_error_code: int = 409, log_requests: bool = False):
        if basic_auth is not None and ":" not in basic_auth:
            raise ValueError("basic_auth must be 'username:password'")
        if key is not None and certificate is None:
            raise ValueError("key needs the certificate it belongs to")
        if default_compatibility.upper() not in COMPATIBILITY_LEVELS:
            raise ValueError(f"unknown compatibility level {default_compatibility!r}")
        self._tls = None
        if certificate is not None:  # loaded now, so that a wrong file fails here rather than in each handshake
            self._tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self._tls.load_cert_chain(certificate, key)
        self._served = ServedRegistry(RegistryStore(default_compatibility.upper(), incompatible_error_code),
                                      basic_auth, log_requests)
        self._server: RegistryServer | None = None
        self._thread: threading.Thread | None = None
        self.url: str | None = None

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> "SchemaRegistryDouble":
        if self._server is not None:
            raise RuntimeError("SchemaRegistryDouble is already running")
        server = self._server = RegistryServer(self._served, self._tls)
        self.url = server.url
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01},
                                        name="SchemaRegistryDouble", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        self._server = self._thread = None
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> "SchemaRegistryDouble":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    # -- helpers for tests ----------------------------------------------------------------------
    @property
    def log_requests(self) -> bool:
        """Whether each request is also logged to stderr."""
        return self._served.log_requests

    @log_requests.setter
    def log_requests(self, value: bool) -> None:
        self._served.log_requests = value

    def client_config(self, **extra) -> dict:
        """A ``SchemaRegistryClient`` configuration for this double, with its credentials if any."""
        conf = {"url": self.url}
        if self._served.basic_auth is not None:
            conf["basic.auth.user.info"] = self._served.basic_auth
        conf.update(extra)
        return conf

    @property
    def requests(self) -> list:
        """``(method, path with query, HTTP status)`` of every request so far, oldest first."""
        with self._served.lock:
            return list(self._served.requests)
