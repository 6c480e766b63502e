"""Bad security settings against secured Apache Kafka: each fails in one line, within broker-timeout-ms, naming
what to fix and holding no secret (issue 39).

Four one-node Apache Kafka 4.1.1 clusters (``kafka_server.py``), started together once for the module, each
requiring a SCRAM-SHA-512 login:

- ``secured``: SASL_SSL whose brokers also require a client certificate;
- ``expired``: SASL_SSL whose brokers present a certificate that expired yesterday;
- ``other-host``: SASL_SSL whose brokers present a certificate for another host (``certificates.OTHER_HOST``);
- ``plaintext``: SASL_PLAINTEXT.

Each case gives the client one thing wrong (a wrong password, a CA that did not sign the brokers' certificate,
plaintext to the TLS port, no client certificate or one of another CA, the expired certificate, the other host's,
TLS to the plaintext port) and is tried three ways at once: a batch write
(``df.write.format("ticdc")...save()``), a read (``spark.read.format("ticdc")...load().collect()``) and
``python -m ticdc_sink tail -X ...``.  Each must fail in exactly the one line expected: for Spark the
``DeliveryError`` the sink raised, for ``tail`` a single ``[ticdc-sink] error: ...`` on stderr and nothing else;
neither the password nor a client key's PEM in any of it.  And within the timeout (``broker-timeout-ms``, tail's
``--timeout-seconds``) plus its start-up, which each call measures just before: the same call, with an option the
sink refuses before it makes any Kafka client.  The registry's refusals are tests/test_registry_security.py's.

Without ``java`` and ``mvn`` the tests skip, saying so.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import pytest

from kafka_server import KafkaCluster, ToolMissing
from test_kafka_server_security import LOGIN
from test_spark_sink import CHANGES, row

pytestmark = [pytest.mark.spark]

TIMEOUT_MS = 7000
# What a failure may take beyond the timeout and its start-up (a Spark job's planning and its Python worker, tail's
# interpreter and imports: about 1.5 s each on an idle machine, several times that on a busy one), which each call
# measures just before with an option the sink refuses before any connection; the slack is for what the failure
# does beyond that (its Kafka clients, their TLS).  Less than the timeout, so that a second wait of
# broker-timeout-ms fails the test.
SLACK_SECONDS = 5.0
WRONG_PASSWORD = "not-the-password"
CLUSTERS = {
    "secured": {"tls_client_auth": True, "sasl_scram": LOGIN},
    "expired": {"tls_server_certificate": "expired", "sasl_scram": LOGIN},
    "other-host": {"tls_server_certificate": "other-host", "sasl_scram": LOGIN},
    "plaintext": {"sasl_scram": LOGIN},
}


@pytest.fixture(scope="module")
def clusters():
    """The four clusters, started side by side (a minute one after the other), stopped at the module's end."""
    kafkas = {name: KafkaCluster(1, **security) for name, security in CLUSTERS.items()}
    failures = []

    def start(kafka: KafkaCluster) -> None:
        try:
            kafka.start()
        except BaseException as e:  # noqa: BLE001 - reported below, from the fixture's thread
            failures.append(e)

    threads = [threading.Thread(target=start, args=(kafka,)) for kafka in kafkas.values()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        missing = [e for e in failures if isinstance(e, ToolMissing)]
        if missing:
            pytest.skip(f"no Apache Kafka with a secured listener: {missing[0]}")
        if failures:
            raise failures[0]
        yield kafkas
    finally:
        for kafka in kafkas.values():
            kafka.stop()


@pytest.fixture(scope="module")
def stranger(tmp_path_factory):
    """A CA that signed none of the brokers' certificates, and a client certificate it signed."""
    from certificates import make_tls_files

    return make_tls_files(tmp_path_factory.mktemp("stranger"), client=True)


def login() -> dict:
    return {"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": LOGIN[0], "sasl.password": LOGIN[1]}


def client_certificate(files) -> dict:
    return {"ssl.certificate.pem": files.client_certificate.read_text(), "ssl.key.pem": files.client_key.read_text()}


@dataclass(frozen=True)
class Case:
    """One wrong setting: the cluster, the client's security (librdkafka's settings, the bootstrap servers aside),
    and the cause the line must give for the cluster's broker, with settings named after ``named`` (the sink's
    ``kafka.``, tail's ``-X ``)."""

    name: str
    cluster: str
    security: Callable[[KafkaCluster, object], dict]  # (cluster, the stranger's TlsFiles) -> settings
    cause: Callable[[str, str], str]  # (broker address, named) -> the cause in the line


CASES = [
    Case("a wrong password", "secured",
         lambda kafka, _: {"security.protocol": "SASL_SSL", **login(), "sasl.password": WRONG_PASSWORD,
                           "ssl.ca.location": str(kafka.ca), **client_certificate(kafka.tls_files)},
         lambda broker, named: f"sasl_ssl://{broker}/bootstrap: SASL authentication error: Authentication failed "
                               "during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512; "
                               f"check {named}sasl.username and {named}sasl.password"),
    Case("an unknown CA", "secured",
         lambda kafka, stranger: {"security.protocol": "SASL_SSL", **login(), "ssl.ca.pem": stranger.ca.read_text(),
                                  **client_certificate(kafka.tls_files)},
         lambda broker, named: f"sasl_ssl://{broker}/bootstrap: SSL handshake failed: certificate verify failed: "
                               "self-signed certificate in certificate chain; give the CA that signed the broker's "
                               f"certificate as {named}ssl.ca.location or {named}ssl.ca.pem"),
    Case("plaintext to the TLS port", "secured",
         lambda kafka, _: {"security.protocol": "SASL_PLAINTEXT", **login()},
         lambda broker, named: f"sasl_plaintext://{broker}/bootstrap: Disconnected while requesting ApiVersion: the "
                               "broker closed the connection at the first request, as a TLS listener does; if it "
                               f"speaks TLS, set {named}security.protocol=SSL (or SASL_SSL)"),
    Case("no client certificate", "secured",
         lambda kafka, _: {"security.protocol": "SASL_SSL", **login(), "ssl.ca.location": str(kafka.ca)},
         lambda broker, named: f"sasl_ssl://{broker}/bootstrap: SSL handshake failed: the broker refused the "
                               "connection with the alert 'bad certificate': it requires a client certificate signed "
                               f"by a CA it trusts; set {named}ssl.certificate.location and {named}ssl.key.location "
                               f"(or {named}ssl.certificate.pem and {named}ssl.key.pem)"),
    Case("a client certificate of another CA", "secured",
         lambda kafka, stranger: {"security.protocol": "SASL_SSL", **login(), "ssl.ca.location": str(kafka.ca),
                                  **client_certificate(stranger)},
         lambda broker, named: f"sasl_ssl://{broker}/bootstrap: SSL handshake failed: the broker refused the "
                               "connection with the alert 'certificate unknown': it does not trust the client "
                               f"certificate ({named}ssl.certificate.location or {named}ssl.certificate.pem); give one "
                               "signed by a CA the brokers trust"),
    Case("an expired certificate", "expired",
         lambda kafka, _: {"security.protocol": "SASL_SSL", **login(), "ssl.ca.location": str(kafka.ca)},
         lambda broker, named: f"sasl_ssl://{broker}/bootstrap: SSL handshake failed: certificate verify failed: "
                               "certificate has expired; the broker's certificate is outside its validity dates (or "
                               "this machine's clock is wrong): renew it"),
    Case("a certificate for another host", "other-host",
         lambda kafka, _: {"security.protocol": "SASL_SSL", **login(), "ssl.ca.location": str(kafka.ca)},
         lambda broker, named: f"sasl_ssl://{broker}/bootstrap: SSL handshake failed: certificate verify failed: "
                               f"IP address mismatch, certificate is not valid for '{broker.rpartition(':')[0]}'; the "
                               f"broker's certificate does not name {broker.rpartition(':')[0]}: connect by a name it "
                               "holds (the bootstrap servers and the brokers' advertised listeners), or reissue it "
                               "for this one"),
    Case("TLS to the plaintext port", "plaintext",
         lambda kafka, _: {"security.protocol": "SASL_SSL", **login()},
         lambda broker, named: f"sasl_ssl://{broker}/bootstrap: SSL handshake failed: the broker closed the connection "
                               "(connecting to a PLAINTEXT listener?): it does not speak TLS on this port; set "
                               f"{named}security.protocol=PLAINTEXT (or SASL_PLAINTEXT), or use the port of its TLS "
                               "listener"),
]


@dataclass(frozen=True)
class Outcome:
    seconds: float
    failed: bool
    text: str  # Spark: the exception's text; tail: its stderr
    stdout: str = ""  # tail's
    start_up: float = 0.0  # the seconds the same call took where an option was refused before any connection


def sink_options(kafka: KafkaCluster, security: dict, refused: bool = False) -> dict:
    """The options of a write or read with ``security``; ``refused``: with a protocol the sink refuses as it
    parses them, before any Kafka client is made."""
    return {"kafka.bootstrap.servers": kafka.bootstrap_servers, **{f"kafka.{k}": v for k, v in security.items()},
            "protocol": "no-such-protocol" if refused else "canal-json", "topic": "orders",
            "broker-timeout-ms": str(TIMEOUT_MS)}


def timed(action: Callable[[], None]) -> Outcome:
    started = time.monotonic()
    try:
        action()
    except Exception as e:  # noqa: BLE001 - the outcome under test
        return Outcome(time.monotonic() - started, True, str(e))
    return Outcome(time.monotonic() - started, False, "")


def with_start_up(attempt: Callable[[bool], Outcome]) -> Outcome:
    """``attempt``'s outcome, with the seconds the same attempt took when refused before any connection."""
    start_up = attempt(True)
    assert start_up.failed and ("no-such-protocol" in start_up.text or "needs --schema-registry" in start_up.text), \
        start_up.text[-2000:]
    return dataclasses.replace(attempt(False), start_up=start_up.seconds)


def batch_write(spark, kafka: KafkaCluster, security: dict) -> Outcome:
    frame = spark.createDataFrame([row(1)], CHANGES)  # built before the clock starts

    def attempt(refused: bool) -> Outcome:
        options = {**sink_options(kafka, security, refused), "database": "shop", "table": "orders",
                   "primary-key": "id"}
        return timed(lambda: frame.write.format("ticdc").mode("append").options(**options).save())
    return with_start_up(attempt)


def read(spark, kafka: KafkaCluster, security: dict) -> Outcome:
    def attempt(refused: bool) -> Outcome:
        options = sink_options(kafka, security, refused)
        return timed(lambda: spark.read.format("ticdc").options(**options).load().collect())
    return with_start_up(attempt)


def tail(kafka: KafkaCluster, security: dict) -> Outcome:
    def attempt(refused: bool) -> Outcome:
        # Refused: avro, whose registry is not given, is refused once tail has started and read its arguments.
        command = [sys.executable, "-m", "ticdc_sink", "tail", "--bootstrap-servers", kafka.bootstrap_servers,
                   "--topic", "orders", "--protocol", "avro" if refused else "canal-json",
                   "--timeout-seconds", str(TIMEOUT_MS / 1000),
                   *(part for item in security.items() for part in ("-X", "=".join(item)))]
        started = time.monotonic()
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        return Outcome(time.monotonic() - started, result.returncode != 0, result.stderr, result.stdout)
    return with_start_up(attempt)


_outcomes: dict[str, dict[str, Outcome]] = {}


@pytest.fixture(scope="module")
def warm_spark(spark):
    """Spark's first use of the source (its Python workers, the source's import) out of the first case's time: a
    write and a read without options, which the sink refuses at once."""
    for attempt in (lambda: spark.createDataFrame([row(1)], CHANGES).write.format("ticdc").mode("append").save(),
                    lambda: spark.read.format("ticdc").load().collect()):
        failed = timed(attempt)
        assert failed.failed and "ConfigError" in failed.text, failed.text[-2000:]
    return spark


@pytest.fixture
def outcome(request, warm_spark, clusters, stranger):
    """The case's outcome on each surface (write, read, tail), all three tried at once the first time a test of
    the case asks."""
    case: Case = request.param
    if case.name not in _outcomes:
        kafka = clusters[case.cluster]
        security = case.security(kafka, stranger)
        with ThreadPoolExecutor(3) as pool:
            futures = {"write": pool.submit(batch_write, warm_spark, kafka, security),
                       "read": pool.submit(read, warm_spark, kafka, security),
                       "tail": pool.submit(tail, kafka, security)}
        _outcomes[case.name] = {surface: future.result() for surface, future in futures.items()}
    kafka = clusters[case.cluster]
    return case, kafka, case.security(kafka, stranger), _outcomes[case.name]


def secrets(security: dict) -> list[str]:
    """What no line may show: the password, and each line of a client key's PEM but its armour."""
    key = [line for line in security.get("ssl.key.pem", "").splitlines() if line and not line.startswith("-----")]
    return [security["sasl.password"], *key]


def sink_line(kafka: KafkaCluster, cause: str) -> str:
    return (f"ticdc_sink.errors.DeliveryError: cannot reach the Kafka brokers {kafka.bootstrap_servers} within "
            f"broker-timeout-ms={TIMEOUT_MS} ({cause}): check kafka.bootstrap.servers, the network and the security "
            "settings, or raise broker-timeout-ms")


def the_sinks_lines(text: str) -> list[str]:
    """The distinct lines of the sink's errors in a Spark exception's text (its Python traceback, repeated in the
    JVM's)."""
    return sorted(set(re.findall(r"ticdc_sink\.errors\.\w+: .*", text)))


def assert_within_the_timeout(failed: Outcome) -> None:
    assert failed.seconds < TIMEOUT_MS / 1000 + failed.start_up + SLACK_SECONDS, \
        f"{failed.seconds:.1f} s; refused before any connection: {failed.start_up:.1f} s"


def assert_spark_failed_in_one_line(case: Case, kafka: KafkaCluster, security: dict, failed: Outcome) -> None:
    assert failed.failed, "it did not fail"
    assert the_sinks_lines(failed.text) == [sink_line(kafka, case.cause(kafka.bootstrap_servers, "kafka."))], \
        failed.text[-3000:]
    assert_within_the_timeout(failed)
    assert not [secret for secret in secrets(security) if secret in failed.text]


CASE_IDS = [case.name.replace(" ", "-") for case in CASES]


@pytest.mark.parametrize("outcome", CASES, ids=CASE_IDS, indirect=True)
def test_a_batch_write_fails_before_any_task_in_one_line_naming_the_cause(outcome):
    case, kafka, security, outcomes = outcome
    assert_spark_failed_in_one_line(case, kafka, security, outcomes["write"])


@pytest.mark.parametrize("outcome", CASES, ids=CASE_IDS, indirect=True)
def test_a_read_fails_in_one_line_naming_the_cause(outcome):
    case, kafka, security, outcomes = outcome
    assert_spark_failed_in_one_line(case, kafka, security, outcomes["read"])


@pytest.mark.parametrize("outcome", CASES, ids=CASE_IDS, indirect=True)
def test_tail_fails_with_one_error_line_and_nothing_else(outcome):
    case, kafka, security, outcomes = outcome
    failed = outcomes["tail"]
    assert failed.failed, failed.stdout
    cause = case.cause(kafka.bootstrap_servers, "-X ")
    hint = ("check --bootstrap-servers and the -X security settings" if security else
            "check --bootstrap-servers, or start a broker with: python -m ticdc_sink broker")
    assert failed.text == (f"[ticdc-sink] error: cannot reach Kafka at {kafka.bootstrap_servers} within "
                           f"{TIMEOUT_MS / 1000:g} s ({cause}); {hint}\n")
    assert failed.stdout == ""
    assert_within_the_timeout(failed)
    assert not [secret for secret in secrets(security) if secret in failed.text + failed.stdout]
