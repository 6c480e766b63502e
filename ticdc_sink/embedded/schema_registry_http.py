"""The Schema Registry double on the wire: a threaded HTTP(S) server with basic auth and a log of requests.

JSON in and out as the registry sends it (``application/vnd.schemaregistry.v1+json``), one request per
connection so nothing lingers when the double stops. Without the configured ``Authorization: Basic`` header
a request is a 401 ``{"error_code": 401, "message": "Unauthorized"}``. Over TLS the handshake runs in the
request's thread, so a client that refuses the certificate, or speaks plain HTTP, sees the connection closed
and holds up no other client. A bug in the double is a 500 with its exception rather than a hung client.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import ssl
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from .schema_registry_errors import RegistryError
from .schema_registry_routes import route
from .schema_registry_store import RegistryStore

_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


@dataclass
class ServedRegistry:
    """What every server of one double shares, and keeps across a restart: the store, the login, the log."""

    store: RegistryStore
    basic_auth: str | None  # "user:password", or None for no login
    log_requests: bool
    lock: threading.Lock = field(default_factory=threading.Lock)  # over the store and the request log
    requests: list = field(default_factory=list)  # (method, path with query, HTTP status)

    def authorized(self, header: str | None) -> bool:
        if self.basic_auth is None:
            return True
        if not header or not header.startswith("Basic "):
            return False
        try:
            given = base64.b64decode(header[len("Basic "):].strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return False
        return hmac.compare_digest(given.encode(), self.basic_auth.encode())


class _Handler(BaseHTTPRequestHandler):
    server_version = "SchemaRegistryDouble/1.0 (test double)"
    sys_version = ""
    protocol_version = "HTTP/1.0"  # one request per connection: nothing lingers when the double stops

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PUT(self):
        self._handle("PUT")

    def do_DELETE(self):
        self._handle("DELETE")

    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        if self.server.served.log_requests:
            sys.stderr.write(f"[SchemaRegistryDouble {self.address_string()}] {format % args}\n")

    def _handle(self, method: str) -> None:
        served = self.server.served
        split = urlsplit(self.path)
        query = parse_qs(split.query, keep_blank_values=True)
        # Split before unquoting: the client sends a "/" inside a subject as %2F.
        parts = [unquote(p) for p in split.path.split("/")[1:]]
        if parts and parts[-1] == "":
            parts.pop()
        try:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length > 0 else b""
            if not served.authorized(self.headers.get("Authorization")):
                status, body = 401, {"error_code": 401, "message": "Unauthorized"}
            else:
                try:
                    payload = json.loads(raw) if raw.strip() else None
                except ValueError as exc:
                    raise RegistryError(400, 400, f"Unparseable JSON request body: {exc}") from None
                with served.lock:
                    status, body = 200, route(served.store, method, parts, query, payload)
        except RegistryError as exc:
            status, body = exc.http_status, {"error_code": exc.error_code, "message": exc.message}
        except Exception as exc:  # a bug in the double: say so rather than hang the client
            status, body = 500, {"error_code": 50001, "message": f"SchemaRegistryDouble internal error: {exc!r}"}
        data = json.dumps(body).encode()
        with served.lock:  # logged before the answer, so a client that has its answer finds its request here
            served.requests.append((method, self.path, status))
        self.send_response(status)
        self.send_header("Content-Type", _CONTENT_TYPE)
        self.send_header("Content-Length", str(len(data)))
        if status == 401:
            self.send_header("WWW-Authenticate", 'Basic realm="SchemaRegistryDouble"')
        self.end_headers()
        self.wfile.write(data)


class RegistryServer(ThreadingHTTPServer):
    """Serves ``served`` on 127.0.0.1 at a free port, over TLS when given a server-side ``tls`` context."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, served: ServedRegistry, tls: ssl.SSLContext | None):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.served = served
        self.tls = tls

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.server_address[1]}"

    def finish_request(self, request, client_address):
        """Over TLS, the handshake first, here in the request's thread rather than in the accepting one."""
        if self.tls is None:
            super().finish_request(request, client_address)
            return
        try:
            request = self.tls.wrap_socket(request, server_side=True)
        except OSError:  # the client refused the certificate, or did not speak TLS: the handshake is its answer
            return
        try:
            super().finish_request(request, client_address)
        finally:  # the TLS socket, as the caller shuts down the plain one it was made from
            self.shutdown_request(request)
