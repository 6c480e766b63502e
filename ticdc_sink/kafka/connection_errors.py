"""librdkafka's errors for a connection that a wrong security setting breaks, said as what to set.

librdkafka names the failure (``SSL handshake failed``, ``SASL authentication error``, ...) but not always the
setting behind it, says an untrusted certificate the same way whatever the reason (an unknown CA, an expired
certificate, one for another host), logs a plaintext client that a TLS listener hangs up on only as a
disconnect, and reports one problem in two or three wordings.  ``classify`` gives each such error one text per
problem and broker, with what to do; ``certificate_problem`` asks the broker's TLS listener, with the client's
own CA settings, why its certificate fails verification (in OpenSSL's words).  No text holds a setting's value.
"""

from __future__ import annotations

import re
import socket
import ssl
from pathlib import Path
from typing import Mapping, NamedTuple

# "sasl_ssl://127.0.0.1:9093/bootstrap: ..." (no scheme for PLAINTEXT): the broker, its address, the rest.
_BROKER = re.compile(r"^(?:(?P<scheme>\w+)://)?(?P<address>[^\s/]+)/\S+?: (?P<rest>.*)$", re.S)
_LOGIN_REFUSED = re.compile(r"invalid credentials|invalid username or password", re.I)
# The alerts of a broker that requires a client certificate: none came (Kafka's JVM says "bad certificate"), or
# one it does not trust came.
_CLIENT_CERTIFICATE_REFUSED = re.compile(r"alert (bad certificate|certificate required|certificate unknown)", re.I)
_PROBE_SECONDS = 2.0


class Problem(NamedTuple):
    """A classified error: ``text`` is its one line (the broker as librdkafka names it, what failed, what to do);
    ``address`` the broker's host:port, where the reason must be asked of the broker (an untrusted certificate)."""

    text: str
    address: str | None = None


def classify(error: str, state: str | None, named: str) -> Problem | None:
    """The problem behind a client error (``state``: the connection's when it failed), or None if it is none of
    these; ``named`` goes before a setting's name (``kafka.`` for the sink's options, ``-X `` for the CLI's)."""
    broker = _BROKER.match(error)
    if broker is None:
        return None
    scheme, address, rest = (broker["scheme"] or "plaintext").lower(), broker["address"], broker["rest"]
    name = error[:len(error) - len(rest) - 2]  # "sasl_ssl://127.0.0.1:9093/bootstrap"
    if "certificate verify failed" in rest:
        return Problem(f"{name}: SSL handshake failed: certificate verify failed", address)
    if "SSL connection closed by peer" in rest:
        return Problem(f"{name}: SSL handshake failed: the broker closed the connection (connecting to a PLAINTEXT "
                       f"listener?): it does not speak TLS on this port; set {named}security.protocol=PLAINTEXT "
                       "(or SASL_PLAINTEXT), or use the port of its TLS listener")
    if alert := _CLIENT_CERTIFICATE_REFUSED.search(rest):
        alert = alert.group(1).lower()
        refused = f"{name}: SSL handshake failed: the broker refused the connection with the alert '{alert}'"
        if alert == "certificate unknown":
            return Problem(f"{refused}: it does not trust the client certificate ({named}ssl.certificate.location or "
                           f"{named}ssl.certificate.pem); give one signed by a CA the brokers trust")
        return Problem(f"{refused}: it requires a client certificate signed by a CA it trusts; set "
                       f"{named}ssl.certificate.location and {named}ssl.key.location (or {named}ssl.certificate.pem "
                       f"and {named}ssl.key.pem)")
    if "SASL authentication error" in rest and _LOGIN_REFUSED.search(rest):
        return Problem(f"{error}; check {named}sasl.username and {named}sasl.password")
    if rest.startswith("Disconnected") and state == "APIVERSION_QUERY" and scheme in ("plaintext", "sasl_plaintext"):
        return Problem(f"{name}: Disconnected while requesting ApiVersion: the broker closed the connection at the "
                       f"first request, as a TLS listener does; if it speaks TLS, set {named}security.protocol=SSL "
                       "(or SASL_SSL)")
    return None


def explained_certificate(problem: Problem, settings: Mapping[str, object] | None, named: str) -> str:
    """An untrusted certificate's line: OpenSSL's reason, found by asking the broker with the client's CA
    settings, and what to do about it."""
    reason = certificate_problem(problem.address, settings) if settings is not None else None
    host = problem.address.rpartition(":")[0].strip("[]")
    if reason is None:
        return (f"{problem.text}: the broker's certificate is not trusted; check {named}ssl.ca.location or "
                f"{named}ssl.ca.pem (the CA that signed it), its validity dates, and that it names {host}")
    if "expired" in reason or "not yet valid" in reason:
        todo = "the broker's certificate is outside its validity dates (or this machine's clock is wrong): renew it"
    elif "mismatch" in reason:
        todo = (f"the broker's certificate does not name {host}: connect by a name it holds (the bootstrap servers "
                "and the brokers' advertised listeners), or reissue it for this one")
    else:
        todo = f"give the CA that signed the broker's certificate as {named}ssl.ca.location or {named}ssl.ca.pem"
    return f"{problem.text}: {reason.rstrip('.')}; {todo}"


def certificate_problem(address: str, settings: Mapping[str, object] | None) -> str | None:
    """Why the TLS listener at ``address`` fails verification with these librdkafka settings (its CA as
    ``ssl.ca.location`` or ``ssl.ca.pem``, else the system's; the host checked unless
    ``ssl.endpoint.identification.algorithm=none``), in OpenSSL's words; None if it passes or cannot be asked."""
    settings = settings or {}
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    try:
        context = _context(settings)
        with socket.create_connection((host, int(port)), timeout=_PROBE_SECONDS) as connection, \
                context.wrap_socket(connection, server_hostname=host):
            return None
    except ssl.SSLCertVerificationError as e:
        return e.verify_message or None
    except (OSError, ValueError):  # ssl.SSLError is an OSError: a listener that is gone, a CA that does not load
        return None


def _context(settings: Mapping[str, object]) -> ssl.SSLContext:
    location = settings.get("ssl.ca.location")
    pem = settings.get("ssl.ca.pem")
    if location and str(location) != "probe":
        path = Path(str(location))
        context = ssl.create_default_context(capath=str(path)) if path.is_dir() \
            else ssl.create_default_context(cafile=str(path))
    elif pem:
        context = ssl.create_default_context(cadata=_certificates_only(str(pem)))
    else:
        context = ssl.create_default_context()
    if str(settings.get("ssl.endpoint.identification.algorithm", "https")).lower() == "none":
        context.check_hostname = False
    return context


def _certificates_only(pem: str) -> str:
    """The PEM certificates of ``pem``: Python's cadata takes nothing else."""
    blocks = re.findall(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", pem, re.S)
    if not blocks:
        raise ValueError("no certificate")
    return "\n".join(blocks) + "\n"

