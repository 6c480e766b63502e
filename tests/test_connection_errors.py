"""librdkafka's errors for a wrong security setting become one text per problem that says what to set
(``kafka/connection_errors.py``, through ``ClientErrors``); an untrusted certificate's reason is asked of the
listener with the client's own CA settings.  Against real Kafka: integration/test_security_failures.py."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading

import pytest
from confluent_kafka import KafkaError

from certificates import make_tls_files
from ticdc_sink.kafka.client_log import ClientErrors
from ticdc_sink.kafka.connection_errors import certificate_problem

BROKER = "sasl_ssl://127.0.0.1:9093/bootstrap"
# librdkafka 2.x's words for an untrusted certificate: two of them for one failed handshake
UNTRUSTED = [f"{BROKER}: SSL handshake failed: error:0A000086:SSL routines::certificate verify failed: broker "
             "certificate could not be verified, verify that ssl.ca.location is correctly configured or root CA "
             "certificates are installed (install ca-certificates package) (after 8ms in state SSL_HANDSHAKE)",
             f"{BROKER}: error:0A000086:SSL routines::certificate verify failed (after 9ms in state SSL_HANDSHAKE)"]


def errors_of(*texts: str, named: str = "kafka.") -> ClientErrors:
    errors = ClientErrors(named)
    for text in texts:
        errors(KafkaError(KafkaError._TRANSPORT, text))
        errors(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
    return errors


def test_a_refused_login_keeps_librdkafkas_words_and_names_the_settings():
    refused = (f"{BROKER}: SASL authentication error: Authentication failed during authentication due to invalid "
               "credentials with SASL mechanism SCRAM-SHA-512 (after 331ms in state AUTH_REQ)")
    assert errors_of(refused, refused).distinct == [
        f"{BROKER}: SASL authentication error: Authentication failed during authentication due to invalid "
        "credentials with SASL mechanism SCRAM-SHA-512; check kafka.sasl.username and kafka.sasl.password"]
    plain = "b:9092/bootstrap: SASL authentication error: Authentication failed: Invalid username or password"
    assert errors_of(plain, named="-X ").distinct == [f"{plain}; check -X sasl.username and -X sasl.password"]


def test_tls_to_a_plaintext_port_is_one_text_saying_the_port_does_not_speak_tls():
    errors = errors_of(f"{BROKER}: SSL handshake failed: Disconnected: SSL connection closed by peer: connecting to a "
                       "PLAINTEXT broker listener? (after 13ms in state SSL_HANDSHAKE)",
                       f"{BROKER}: Disconnected: SSL connection closed by peer (after 1ms in state SSL_HANDSHAKE)")
    assert errors.distinct == [
        f"{BROKER}: SSL handshake failed: the broker closed the connection (connecting to a PLAINTEXT listener?): it "
        "does not speak TLS on this port; set kafka.security.protocol=PLAINTEXT (or SASL_PLAINTEXT), or use the "
        "port of its TLS listener"]


def test_a_refused_client_certificate_is_one_text_naming_the_certificate_settings():
    alert = "ssl://127.0.0.1:9093/bootstrap: Receive failed: error:0A000412:SSL routines::ssl/tls alert bad " \
            "certificate: SSL alert number 42"
    errors = errors_of(f"{alert} (after 7ms in state APIVERSION_QUERY)",
                       f"{alert} (after 1ms in state APIVERSION_QUERY, 1 identical error(s) suppressed)")
    assert errors.distinct == [
        "ssl://127.0.0.1:9093/bootstrap: SSL handshake failed: the broker refused the connection with the alert 'bad "
        "certificate': it requires a client certificate signed by a CA it trusts; set kafka.ssl.certificate.location "
        "and kafka.ssl.key.location (or kafka.ssl.certificate.pem and kafka.ssl.key.pem)"]
    untrusted = errors_of("ssl://127.0.0.1:9093/bootstrap: Receive failed: error:0A000416:SSL routines::ssl/tls alert "
                          "certificate unknown: SSL alert number 46 (after 2ms in state APIVERSION_QUERY)")
    assert untrusted.distinct == [  # what Kafka answers a client certificate of another CA
        "ssl://127.0.0.1:9093/bootstrap: SSL handshake failed: the broker refused the connection with the alert "
        "'certificate unknown': it does not trust the client certificate (kafka.ssl.certificate.location or "
        "kafka.ssl.certificate.pem); give one signed by a CA the brokers trust"]


def test_plaintext_to_a_tls_port_is_told_by_the_log_line_librdkafka_writes_for_it():
    """librdkafka reports no error for it, only an INFO line of a disconnect while asking for the API versions."""
    errors = ClientErrors(named="-X ")
    for broker in ("127.0.0.1:9093/bootstrap", "sasl_plaintext://127.0.0.1:9094/bootstrap"):
        for after in (3, 5):
            errors.log(6, "%s [%s] %s", "FAIL", "rdkafka#producer-1",
                       f"[thrd:{broker}]: {broker}: Disconnected: connection closed by peer: receive 0 after POLLIN "
                       f"(after {after}ms in state APIVERSION_QUERY)")
    assert errors.distinct == []  # not an error of the client's: nothing for the notes of later failures
    hint = ("Disconnected while requesting ApiVersion: the broker closed the connection at the first request, as a "
            "TLS listener does; if it speaks TLS, set -X security.protocol=SSL (or SASL_SSL)")
    assert errors.cause(KafkaError(KafkaError._TRANSPORT)) == \
        f"127.0.0.1:9093/bootstrap: {hint}; sasl_plaintext://127.0.0.1:9094/bootstrap: {hint}"


@pytest.mark.parametrize("line", [
    "ssl://b:9093/bootstrap: Disconnected: connection closed by peer (after 3ms in state APIVERSION_QUERY)",  # TLS
    "b:9092/bootstrap: Disconnected (after 30000ms in state UP)",  # an idle connection the broker closed
    "b:9092/bootstrap: Connect to ipv4#10.0.0.1:9092 failed: Connection refused (after 0ms in state CONNECT)",
])
def test_other_failed_connections_in_the_log_are_left_to_the_errors(line):
    errors = ClientErrors()
    errors.log(6, "%s [%s] %s", "FAIL", "rdkafka#producer-1", f"[thrd:b]: {line}")
    assert errors.cause(KafkaError(KafkaError._TRANSPORT)) == "Local: Broker transport failure"


@contextlib.contextmanager
def tls_listener(files):
    """A TLS listener on loopback presenting ``files``' server certificate: each connection's handshake, then
    closed."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(files.server_keystore)
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with contextlib.suppress(OSError), context.wrap_socket(connection, server_side=True):
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        server.close()
        thread.join(5)


@pytest.fixture(scope="module")
def stranger(tmp_path_factory):
    return make_tls_files(tmp_path_factory.mktemp("stranger")).ca


@pytest.mark.parametrize("server, reason", [
    ("loopback", None),
    ("expired", "certificate has expired"),
    ("other-host", "IP address mismatch, certificate is not valid for '127.0.0.1'."),
], ids=["loopback", "expired", "other-host"])
def test_the_listener_is_asked_why_its_certificate_fails_with_the_clients_ca(tmp_path, server, reason):
    files = make_tls_files(tmp_path, server=server)
    with tls_listener(files) as address:
        assert certificate_problem(address, {"ssl.ca.location": str(files.ca)}) == reason
        assert certificate_problem(address, {"ssl.ca.pem": files.ca.read_text()}) == reason
        if server == "other-host":  # what librdkafka checks too, unless told not to
            assert certificate_problem(address, {"ssl.ca.location": str(files.ca),
                                                 "ssl.endpoint.identification.algorithm": "none"}) is None


def test_a_ca_that_did_not_sign_the_certificate_is_named_in_the_line(tmp_path, stranger):
    files = make_tls_files(tmp_path)
    with tls_listener(files) as address:
        broker = f"sasl_ssl://{address}/bootstrap"
        errors = errors_of(*(text.replace(BROKER, broker) for text in UNTRUSTED))
        assert len(errors.distinct) == 1  # both of librdkafka's wordings
        assert errors.cause(KafkaError(KafkaError._TRANSPORT), {"ssl.ca.pem": stranger.read_text()}) == (
            f"{broker}: SSL handshake failed: certificate verify failed: self-signed certificate in certificate "
            "chain; give the CA that signed the broker's certificate as kafka.ssl.ca.location or kafka.ssl.ca.pem")


def test_without_the_settings_or_the_listener_the_line_names_what_to_check(tmp_path):
    generic = (f"{BROKER}: SSL handshake failed: certificate verify failed: the broker's certificate is not "
               "trusted; check kafka.ssl.ca.location or kafka.ssl.ca.pem (the CA that signed it), its validity dates, "
               "and that it names 127.0.0.1")
    errors = errors_of(*UNTRUSTED)
    assert errors.distinct == [generic]  # as later failures' notes show it
    assert errors.cause(KafkaError(KafkaError._TRANSPORT)) == generic
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    gone = errors_of(*(text.replace("9093", str(port)) for text in UNTRUSTED))
    assert gone.cause(KafkaError(KafkaError._TRANSPORT), {}) == generic.replace("9093", str(port))
