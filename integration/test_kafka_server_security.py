"""kafka_server.py's secured client listeners work for a plain librdkafka client, and refuse the wrong one.

Each security mode gets a one-node Apache Kafka of its own (one at a time: a class
each): SCRAM-SHA-512 over TLS, TLS requiring a client certificate, and OAUTHBEARER
with tokens from the script's own identity provider, fetched by librdkafka's
``oidc`` method or by an ``oauth_cb``.  With ``client_settings`` a transactional
producer commits (and aborts) and a read_committed consumer reads exactly what was
committed; a wrong password, a missing client certificate, a wrong client secret
and a token signed by another key are refused.  Last, the script itself: its
output lines, and that SIGTERM leaves no JVM, no token endpoint and no folder.

Without ``java`` and ``mvn`` the tests skip, saying so.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_server import OAUTH_CLIENT, ToolMissing, kafka_classpath
from started_kafka import started_kafka
from oauth_server import TokenServer, fetch_token
from processes import descendants

LOGIN = ("ticdc-sink", "sink-secret")
SCRIPT = Path(__file__).with_name("kafka_server.py")


def started(**security):
    """A one-node cluster with this security until its tests are done; a skip without java and mvn."""
    yield from started_kafka("Apache Kafka with a secured listener", 1, **security)


@pytest.fixture(scope="class")  # a class of tests each, so one cluster at a time
def scram_over_tls():
    yield from started(tls=True, sasl_scram=LOGIN)


@pytest.fixture(scope="class")
def tls_client_auth():
    yield from started(tls_client_auth=True)


@pytest.fixture(scope="class")
def oauthbearer():
    yield from started(sasl_oauthbearer=LOGIN)


def transactions_round_trip(settings: dict) -> None:
    """Commit, abort, commit through a transactional producer; read_committed reads the committed ones only."""
    topic = f"secured-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(settings)
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    assert topic in admin.list_topics(topic, timeout=30).topics
    producer = Producer({**settings, "transactional.id": f"{topic}-tx"})
    producer.init_transactions(30)
    for values, commit in ((["one", "two"], True), (["aborted"], False), (["three"], True)):
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value=value)
        producer.commit_transaction(30) if commit else producer.abort_transaction(30)
    consumer = Consumer({**settings, "group.id": f"{topic}-reader", "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.subscribe([topic])
    read, deadline = [], time.monotonic() + 30
    while "three" not in read and time.monotonic() < deadline:
        message = consumer.poll(1)
        if message is not None and message.error() is None:
            read.append(message.value().decode())
    consumer.close()
    assert read == ["one", "two", "three"]


def refusal(settings: dict) -> str:
    """What librdkafka reports (to its error callback) of a client the cluster refuses, whose metadata fails."""
    errors = []
    producer = Producer({**settings, "error_cb": lambda error: errors.append(error.str()), "log_level": 0})
    deadline = time.monotonic() + 15
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    with pytest.raises(KafkaException):
        producer.list_topics(timeout=1)
    return " | ".join(errors)


def with_oauth_cb(settings: dict, callback) -> dict:
    """The cluster's settings with tokens from ``callback`` in place of librdkafka's own OIDC requests."""
    return {**{k: v for k, v in settings.items() if not k.startswith("sasl.oauthbearer.")}, "oauth_cb": callback}


class TestScramOverTls:
    def test_a_login_and_the_ca_carry_transactions(self, scram_over_tls):
        settings = scram_over_tls.client_settings
        assert {k: settings[k] for k in ("security.protocol", "sasl.mechanism", "sasl.username")} == {
            "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": LOGIN[0]}
        assert Path(settings["ssl.ca.location"]).read_text().startswith("-----BEGIN CERTIFICATE-----")
        transactions_round_trip(settings)

    def test_a_wrong_password_is_refused(self, scram_over_tls):
        refused = refusal({**scram_over_tls.client_settings, "sasl.password": "not-the-password"})
        assert "SASL authentication error" in refused and "invalid credentials" in refused


class TestTlsClientAuth:
    def test_the_client_certificate_carries_transactions(self, tls_client_auth):
        settings = tls_client_auth.client_settings
        assert settings["security.protocol"] == "SSL" and "sasl.mechanism" not in settings
        assert Path(settings["ssl.key.location"]).read_text().startswith("-----BEGIN PRIVATE KEY-----")
        transactions_round_trip(settings)

    def test_a_client_without_a_certificate_is_refused(self, tls_client_auth):
        settings = {k: v for k, v in tls_client_auth.client_settings.items()
                    if k not in ("ssl.certificate.location", "ssl.key.location")}
        assert "certificate" in refusal(settings)


class TestOAuthBearer:
    def test_librdkafkas_oidc_requests_carry_transactions(self, oauthbearer):
        settings = oauthbearer.client_settings
        assert settings["sasl.mechanism"] == "OAUTHBEARER" and settings["sasl.oauthbearer.method"] == "oidc"
        assert settings["sasl.oauthbearer.token.endpoint.url"].startswith("http://127.0.0.1:")
        transactions_round_trip(settings)

    def test_tokens_from_an_oauth_cb_carry_transactions(self, oauthbearer):
        calls = []

        def token(config: str) -> tuple[str, float]:
            calls.append(config)
            return fetch_token(oauthbearer.token_endpoint, *LOGIN)

        transactions_round_trip(with_oauth_cb(oauthbearer.client_settings, token))
        assert calls

    def test_a_wrong_client_secret_gets_no_token(self, oauthbearer):
        with pytest.raises(urllib.error.HTTPError) as denied:
            fetch_token(oauthbearer.token_endpoint, LOGIN[0], "not-the-secret")
        assert denied.value.code == 401
        refused = refusal({**oauthbearer.client_settings, "sasl.oauthbearer.client.secret": "not-the-secret"})
        assert "Failed to acquire SASL OAUTHBEARER token" in refused and "invalid_client" in refused

    def test_a_token_signed_by_another_key_is_refused(self, oauthbearer):
        with TokenServer(dict([LOGIN])) as impostor:  # same audience, issuer and subject; its own key
            refused = refusal(with_oauth_cb(oauthbearer.client_settings, lambda config: impostor.issue(LOGIN[0])))
        assert "SASL authentication error" in refused and "invalid_token" in refused


def test_the_script_prints_its_lines_in_order_and_sigterm_leaves_nothing_behind():
    try:
        kafka_classpath()
    except ToolMissing as e:
        pytest.skip(f"no Apache Kafka: {e}")
    if shutil.which("java") is None:
        pytest.skip("no Apache Kafka: `java` is not on PATH")
    script = subprocess.Popen([sys.executable, str(SCRIPT), "--tls", "--sasl-oauthbearer"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        bootstrap, ca, token_endpoint = (script.stdout.readline().strip() for _ in range(3))
        assert bootstrap.startswith("127.0.0.1:"), script.stderr.read() if script.poll() is not None else bootstrap
        assert ca.endswith("/tls/ca.pem") and token_endpoint.endswith("/token")
        client_id, secret = OAUTH_CLIENT.split(":")
        AdminClient({"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL", "ssl.ca.location": ca,
                     "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
                     "sasl.oauthbearer.client.id": client_id, "sasl.oauthbearer.client.secret": secret,
                     "sasl.oauthbearer.token.endpoint.url": token_endpoint}).list_topics(timeout=30)
        started_processes = descendants(script.pid)
        assert started_processes
    finally:
        script.send_signal(signal.SIGTERM)
        assert script.wait(60) == 0
    assert [pid for pid in started_processes if Path(f"/proc/{pid}").exists()] == []
    assert not Path(ca).parents[1].exists()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(token_endpoint, data=b"grant_type=client_credentials", timeout=5)
