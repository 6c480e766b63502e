"""A small OAuth 2.0 identity provider on loopback, so Kafka's OAUTHBEARER is tested with real signed tokens.

The broker validates tokens as it would against Keycloak or Okta: RS256 signatures checked with the keys
of a JWKS endpoint, a fixed audience and issuer.  The token endpoint speaks the client_credentials grant
(RFC 6749 section 4.4), the client's id and secret in HTTP basic authentication or in the form, which is how
librdkafka's ``sasl.oauthbearer.method=oidc`` and a hand-written ``oauth_cb`` ask; unknown clients and wrong
secrets get HTTP 401.  Tokens name the client id as their subject (so as Kafka's principal) and live an hour.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.parse
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

AUDIENCE = "ticdc-sink-kafka"
ISSUER = "ticdc-sink-test-idp"
TOKEN_LIFETIME_SECONDS = 3600


class TokenServer:
    """The JWKS endpoint (``jwks_url``) and the token endpoint (``token_url``) of one RSA key, in a thread."""

    def __init__(self, clients: dict[str, str], host: str = "127.0.0.1"):
        self.clients = dict(clients)  # client id -> secret
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._kid = uuid.uuid4().hex
        self._http = ThreadingHTTPServer((host, 0), _handler(self))
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, name="oauth-token-server", daemon=True)

    @property
    def _base(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def jwks_url(self) -> str:
        return f"{self._base}/jwks"

    @property
    def token_url(self) -> str:
        return f"{self._base}/token"

    def start(self) -> "TokenServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._http.shutdown()
            self._thread.join()
        self._http.server_close()

    def __enter__(self) -> "TokenServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def jwks(self) -> dict:
        numbers = self._key.public_key().public_numbers()
        return {"keys": [{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": self._kid,
                          "n": _b64(numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big")),
                          "e": _b64(numbers.e.to_bytes((numbers.e.bit_length() + 7) // 8, "big"))}]}

    def issue(self, subject: str) -> tuple[str, int]:
        """A signed JWT for ``subject`` and its expiry (epoch seconds)."""
        now = int(time.time())
        expiry = now + TOKEN_LIFETIME_SECONDS
        header = {"alg": "RS256", "typ": "JWT", "kid": self._kid}
        claims = {"sub": subject, "aud": AUDIENCE, "iss": ISSUER, "iat": now, "exp": expiry,
                  "jti": uuid.uuid4().hex}
        signed = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
        signature = self._key.sign(signed.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signed}.{_b64(signature)}", expiry


def fetch_token(token_url: str, client_id: str, secret: str, timeout: float = 10.0) -> tuple[str, float]:
    """A client_credentials token from ``token_url`` and its expiry in epoch seconds: what an ``oauth_cb``
    returns to confluent-kafka.  A refusal raises ``urllib.error.HTTPError``."""
    basic = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    request = urllib.request.Request(token_url, data=b"grant_type=client_credentials", method="POST",
                                     headers={"Authorization": f"Basic {basic}",
                                              "Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        body = json.load(response)
    return body["access_token"], time.time() + float(body["expires_in"])


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _handler(server: TokenServer):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if urllib.parse.urlsplit(self.path).path != "/jwks":
                return self._reply(404, {"error": "not_found"})
            self._reply(200, server.jwks())

        def do_POST(self) -> None:
            if urllib.parse.urlsplit(self.path).path != "/token":
                return self._reply(404, {"error": "not_found"})
            length = int(self.headers.get("Content-Length") or 0)
            form = urllib.parse.parse_qs(self.rfile.read(length).decode(), keep_blank_values=True)
            if form.get("grant_type") != ["client_credentials"]:
                return self._reply(400, {"error": "unsupported_grant_type"})
            client_id, secret = self._credentials(form)
            if client_id is None or server.clients.get(client_id) != secret:
                return self._reply(401, {"error": "invalid_client"}, {"WWW-Authenticate": 'Basic realm="token"'})
            token, expiry = server.issue(client_id)
            self._reply(200, {"access_token": token, "token_type": "Bearer",
                              "expires_in": expiry - int(time.time())})

        def _credentials(self, form: dict) -> tuple[str | None, str | None]:
            scheme, _, value = (self.headers.get("Authorization") or "").partition(" ")
            if scheme.lower() == "basic":
                try:
                    client_id, _, secret = base64.b64decode(value, validate=True).decode().partition(":")
                except ValueError:
                    return None, None
                return client_id, secret
            return (form.get("client_id") or [None])[0], (form.get("client_secret") or [None])[0]

        def _reply(self, status: int, body: dict, headers: dict | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", "Content-Length": str(len(data)),
                                "Cache-Control": "no-store", **(headers or {})}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format, *args) -> None:  # quiet: kafka_server.py's stdout and stderr are read
            pass

    return Handler
