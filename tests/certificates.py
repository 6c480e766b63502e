"""Throwaway certificates for a TLS listener on loopback: a CA, a server's and a client's, as PEM files.

Made fresh at each start with ``cryptography`` (no keytool keystores, no passwords): Kafka reads PEM key and
trust stores directly (``ssl.keystore.type=PEM``), and librdkafka reads the same files, as do Python's ``ssl``
and so the Schema Registry test double and its clients (``tls_files`` fixture).  The server's certificate names
both ways a client may dial loopback (IP 127.0.0.1 and DNS localhost), so clients keep their default hostname
verification.  For the failures a client must report, the server's certificate can instead be expired, or name
another host only (``server=``).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALID_FOR = datetime.timedelta(days=2)
# The server certificates make_tls_files can make: for loopback, for loopback but expired a day ago, for a host that
# is not loopback.
SERVER_CERTIFICATES = ("loopback", "expired", "other-host")
OTHER_HOST = "kafka.example.com"


@dataclass(frozen=True)
class TlsFiles:
    ca: Path  # the CA's certificate: the clients' ssl.ca.location, the server's trust store
    server_keystore: Path  # the server's unencrypted key, its certificate, then the CA's
    client_certificate: Path | None = None  # signed by the CA, for a listener that requires one
    client_key: Path | None = None  # unencrypted


def make_tls_files(directory: Path, client: bool = False, server: str = "loopback") -> TlsFiles:
    """A new CA and a server certificate in ``directory``; with ``client``, a client's too.

    ``server``: ``loopback`` (valid, naming 127.0.0.1 and localhost), ``expired`` (the same, but its validity
    ended a day ago) or ``other-host`` (valid, naming ``OTHER_HOST`` only).
    """
    if server not in SERVER_CERTIFICATES:
        raise ValueError(f"server={server!r}: choose one of {', '.join(SERVER_CERTIFICATES)}")
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _certificate("ticdc-sink test CA", ca_key.public_key(), ca_key, None, ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName(OTHER_HOST)] if server == "other-host" else \
        [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
    now = datetime.datetime.now(datetime.timezone.utc)
    validity = (now - datetime.timedelta(days=3), now - datetime.timedelta(days=1)) if server == "expired" else None
    certificate = _certificate(OTHER_HOST if server == "other-host" else "localhost", server_key.public_key(), ca_key,
                               ca, ca=False, names=names, usage=ExtendedKeyUsageOID.SERVER_AUTH, validity=validity)
    files = TlsFiles(directory / "ca.pem", directory / "server.pem")
    files.ca.write_bytes(_pem(ca))
    files.server_keystore.write_bytes(_key_pem(server_key) + _pem(certificate) + _pem(ca))
    if client:
        client_key = ec.generate_private_key(ec.SECP256R1())
        certificate = _certificate("ticdc-sink-client", client_key.public_key(), ca_key, ca, ca=False,
                                   usage=ExtendedKeyUsageOID.CLIENT_AUTH)
        files = TlsFiles(files.ca, files.server_keystore, directory / "client.pem", directory / "client.key")
        files.client_certificate.write_bytes(_pem(certificate))
        files.client_key.write_bytes(_key_pem(client_key))
    return files


def _certificate(common_name: str, public_key, signing_key, issuer: x509.Certificate | None, *, ca: bool,
                 names: list | None = None, usage=None,
                 validity: tuple[datetime.datetime, datetime.datetime] | None = None) -> x509.Certificate:
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    not_before, not_after = validity or (now - datetime.timedelta(minutes=5), now + _VALID_FOR)
    builder = (x509.CertificateBuilder().subject_name(subject)
               .issuer_name(issuer.subject if issuer else subject)
               .public_key(public_key).serial_number(x509.random_serial_number())
               .not_valid_before(not_before).not_valid_after(not_after)
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(signing_key.public_key()),
                              critical=False))
    if ca:  # what strict verifiers (OpenSSL's X509_STRICT, Python's default context) ask of a CA
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=False, content_commitment=False, key_encipherment=False, data_encipherment=False,
            key_agreement=False, key_cert_sign=True, crl_sign=True, encipher_only=False, decipher_only=False),
            critical=True)
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    if usage:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    return builder.sign(signing_key, hashes.SHA256())


def _pem(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


def _key_pem(key) -> bytes:
    """PKCS#8, the one PEM key form Kafka's PEM store reads."""
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
