"""The sink exactly-once on secured Apache Kafka, read back by its reader and by ``tail`` (issue 39).

Each security mode gets a one-node Apache Kafka 4.1.1 of its own (``kafka_server.py``,
one class each, so one cluster at a time), and in it the streaming query of
``exactly_once_checks.py``: exactly-once, Canal-JSON with the TiDB extension,
``KEYS`` keys with one change each in every one of 4 micro-batches, written in two
Spark partitions.  The query is then restarted from its checkpoint with the last
micro-batch's commit taken out, as if the driver had died before recording it:
the replay's tasks must find the micro-batch in their markers and abort their
copy, and its driver send no watermark again.  The options carry the mode's
security and nothing else does: the sink's producers, its admin clients and its
marker consumers must all log in with them.  The topic is then read back
``read_committed`` twice, by the sink's own reader (``spark.read.format("ticdc")``
with the same options) and by ``python -m ticdc_sink tail -X ...``: every change
once, each key's changes in commit order in one Kafka partition, and (``tail``
shows them) each micro-batch's watermark once in every partition.  ``tail`` prints
every message, so it is the strict count: the reader, under TiCDC's consumer rules,
drops a row that comes again after its partition's watermark.

1. SASL_SSL, SCRAM-SHA-512, the CA as PEM text (``kafka.ssl.ca.pem``): no file to ship;
2. TLS with a client certificate, certificate, key and CA as PEM text (``kafka.ssl.*.pem``);
3. SASL_SSL, OAUTHBEARER by librdkafka's ``oidc`` method (client credentials from
   ``oauth_server.py``'s token endpoint), the CA as PEM text;
4. a TiCDC ``sink-uri`` (``sasl-user``, ``sasl-password``, ``sasl-mechanism=SCRAM-SHA-512``,
   ``enable-tls``, ``ca``, ``cert``, ``key``: files) on SASL_SSL SCRAM brokers that also
   require a client certificate; ``tail`` takes the same as ``-X`` settings;
5. SASL_SSL, OAUTHBEARER by a token callback, ``kafka.oauth_cb=integration.oauth_callbacks:client_credentials``
   (``-X oauth_cb=...`` for ``tail``): each process imports it and fetches its tokens from the same endpoint,
   named in ``kafka.sasl.oauthbearer.config``; the CA as PEM text;
6. SASL_SSL, PLAIN (as Confluent Cloud and Azure Event Hubs take their logins), the CA as PEM text.

Without ``java`` and ``mvn`` the tests skip, saying so.

    python -m pytest -q integration/test_secured_kafka.py
"""

from __future__ import annotations

import collections
import re
import subprocess
import sys
from dataclasses import dataclass
from urllib.parse import quote, urlencode

import pytest
from exactly_once_checks import BASE_TS, KEYS, STEPS, new_run, sink_options, start_query, watermark_of
from test_kafka_server_security import LOGIN, started

from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.errors import ConfigError

pytestmark = [pytest.mark.spark]

QUERY_SECONDS = 240  # the four micro-batches take ~10 s; a client that cannot log in fails them within ~1 min
TAIL_SECONDS = 120
SECRETS = ("sasl.password", "sasl.oauthbearer.client.secret", "ssl.key.pem",  # never printed by tail
           "sasl.oauthbearer.config")


@dataclass(frozen=True)
class Change:
    """One row change as a reader gave it back."""

    key: int
    step: int  # the micro-batch that wrote it
    partition: int
    offset: int
    commit_ts: int | None = None  # where the reader shows it


def assert_every_change_once_in_commit_order(changes: list[Change]) -> None:
    """Every key's change of every micro-batch once, all of a key's in one Kafka partition, in commit order
    (``changes`` in each partition's offset order)."""
    chains: dict[int, list[Change]] = collections.defaultdict(list)
    for change in changes:
        chains[change.key].append(change)
    lost = sorted(set(range(KEYS)) - set(chains))
    assert not lost, f"{len(lost)} keys lost, e.g. {lost[:5]}"
    assert len(changes) == KEYS * len(STEPS), f"{len(changes)} changes read, {KEYS * len(STEPS)} written"
    for key, chain in chains.items():
        assert len({c.partition for c in chain}) == 1, (key, chain)
        assert [c.step for c in chain] == list(range(len(STEPS))), (key, chain)  # once each, in commit order
        assert [c.offset for c in chain] == sorted(c.offset for c in chain), (key, chain)
        if chain[0].commit_ts is not None:
            assert [c.commit_ts for c in chain] == [BASE_TS + step * KEYS + key for step in range(len(STEPS))]


_TAIL_ROW = re.compile(r"^\s*p(\d+)@(\d+)\s+(INSERT|UPDATE|DELETE)\s+shop\.orders\s+(.*)$")
_TAIL_WATERMARK = re.compile(r"^\s*p(\d+)@\d+\s+WATERMARK\s+ts=(\d+)")


def tail_changes(output: str) -> tuple[list[Change], dict[int, list[int]]]:
    """The row changes ``tail`` printed, in its order, and each partition's watermarks."""
    changes, watermarks = [], collections.defaultdict(list)
    for line in output.splitlines():
        if row := _TAIL_ROW.match(line):
            partition, offset, _, columns = row.groups()
            key = int(re.search(r"\bid=(\d+)", columns).group(1))
            step = re.search(r"\bstep(?:=|: \d+ -> )(\d+)", columns)  # a row, or an UPDATE's changed columns
            changes.append(Change(key, int(step.group(1)), int(partition), int(offset)))
        elif mark := _TAIL_WATERMARK.match(line):
            watermarks[int(mark.group(1))].append(int(mark.group(2)))
    return changes, dict(watermarks)


class SecuredRoundTrip:
    """One mode: its cluster's security (``cluster``) and the client's (``security``: librdkafka's settings, the
    sink's ``kafka.*`` options and ``tail``'s ``-X``); the tests are the same for every mode."""

    cluster: dict  # KafkaCluster's keyword arguments

    def security(self, kafka) -> dict:
        raise NotImplementedError

    def options(self, kafka, run) -> dict:
        """The options of the sink (and of its reader) for the run, with this mode's security."""
        return sink_options(kafka, run, **{f"kafka.{name}": value for name, value in self.security(kafka).items()})

    def tail_settings(self, kafka) -> dict:
        """``tail``'s librdkafka settings (``-X``) for this mode's security."""
        return self.security(kafka)

    @pytest.fixture(scope="class")
    @classmethod
    def kafka(cls):
        yield from started(**cls.cluster)

    @pytest.fixture(scope="class")
    @classmethod
    def written(cls, kafka, spark, tmp_path_factory):
        """The run whose streaming query wrote its four micro-batches, then, restarted from its checkpoint with
        the last one's commit taken out (as if the driver died before recording it), replayed that one: each
        query's error and progress."""
        run = new_run(kafka, tmp_path_factory.mktemp(cls.__name__))
        queries = []
        for attempt in ("first", "replay"):
            if attempt == "replay":
                last = len(STEPS) - 1
                (run.checkpoint / "commits" / str(last)).unlink()
                (run.checkpoint / "commits" / f".{last}.crc").unlink(missing_ok=True)
            query = start_query(spark, run, cls().options(kafka, run))
            try:
                query.awaitTermination(QUERY_SECONDS)
            finally:
                if query.isActive:
                    query.stop()
            queries.append((query.exception(), [(p["batchId"], p["numInputRows"]) for p in query.recentProgress
                                                 if p["numInputRows"]]))
            if query.exception() is not None:
                break
        return run, queries

    def test_the_stream_commits_each_micro_batch_through_the_secured_clients(self, written):
        run, queries = written
        (failure, batches), *replay = queries
        assert failure is None, str(failure)
        assert batches == [(step, KEYS) for step in range(len(STEPS))]
        assert replay, "the query restarted from its checkpoint never ran"
        failure, batches = replay[0]
        assert failure is None, str(failure)
        assert batches == [(len(STEPS) - 1, KEYS)]  # its tasks find their markers and abort their copy

    def test_the_sinks_reader_reads_every_change_once_in_commit_order(self, written, kafka, spark):
        """Through every client of the read (the driver's admin client and consumer, each task's consumer)."""
        run, _ = written
        rows = spark.read.format("ticdc").options(**self.options(kafka, run)) \
            .option("include-kafka-coordinates", "true").load() \
            .select("_partition", "_offset", "_commit_ts", "id", "step").collect()
        changes = sorted((Change(r.id, r.step, r._partition, r._offset, r._commit_ts) for r in rows),
                         key=lambda c: (c.partition, c.offset))
        assert_every_change_once_in_commit_order(changes)

    def test_tail_reads_every_change_once_in_commit_order_and_each_watermark_once(self, written, kafka):
        run, _ = written
        settings = self.tail_settings(kafka)
        tail = [sys.executable, "-m", "ticdc_sink", "tail", "--bootstrap-servers", kafka.bootstrap_servers,
                "--topic", run.topic, "--protocol", "canal-json", "-o", "enable-tidb-extension=true",
                "--idle-seconds", "2", *(part for item in settings.items() for part in ("-X", "=".join(item)))]
        result = subprocess.run(tail, capture_output=True, text=True, timeout=TAIL_SECONDS)
        assert result.returncode == 0, result.stderr
        changes, watermarks = tail_changes(result.stdout)
        assert_every_change_once_in_commit_order(changes)
        each_batch = [watermark_of(step) for step in range(len(STEPS))]
        assert watermarks == {partition: each_batch for partition in range(3)}  # new_run's three partitions
        secrets = [settings[k] for k in SECRETS if k in settings]
        assert secrets and not [s for s in secrets if s.strip() in result.stdout + result.stderr]


def pem(path) -> str:
    return path.read_text()


class TestScramOverTlsWithTheCaAsPemText(SecuredRoundTrip):
    """1. SASL_SSL, SCRAM-SHA-512, ``kafka.ssl.ca.pem``."""

    cluster = {"tls": True, "sasl_scram": LOGIN}

    def security(self, kafka) -> dict:
        return {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": LOGIN[0], "sasl.password": LOGIN[1], "ssl.ca.pem": pem(kafka.ca)}


class TestTlsClientCertificateAsPemText(SecuredRoundTrip):
    """2. SSL with a client certificate: ``kafka.ssl.certificate.pem``, ``kafka.ssl.key.pem``, ``kafka.ssl.ca.pem``."""

    cluster = {"tls_client_auth": True}

    def security(self, kafka) -> dict:
        files = kafka.tls_files
        return {"security.protocol": "SSL", "ssl.ca.pem": pem(files.ca),
                "ssl.certificate.pem": pem(files.client_certificate), "ssl.key.pem": pem(files.client_key)}


class TestOAuthBearerOidcOverTls(SecuredRoundTrip):
    """3. SASL_SSL, OAUTHBEARER: librdkafka's ``oidc`` client-credentials requests, the CA as PEM text."""

    cluster = {"tls": True, "sasl_oauthbearer": LOGIN}

    def security(self, kafka) -> dict:
        return {"security.protocol": "SASL_SSL", "ssl.ca.pem": pem(kafka.ca),
                "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
                "sasl.oauthbearer.client.id": LOGIN[0], "sasl.oauthbearer.client.secret": LOGIN[1],
                "sasl.oauthbearer.token.endpoint.url": kafka.token_endpoint}


class TestSinkUriScramOverTlsWithAClientCertificate(SecuredRoundTrip):
    """4. A TiCDC sink URI's SCRAM login, TLS, CA, client certificate and key (files), on brokers requiring both."""

    cluster = {"tls_client_auth": True, "sasl_scram": LOGIN}

    def options(self, kafka, run) -> dict:
        files = kafka.tls_files
        parameters = {"protocol": "canal-json", "enable-tidb-extension": "true",
                      "sasl-user": LOGIN[0], "sasl-password": LOGIN[1], "sasl-mechanism": "SCRAM-SHA-512",
                      "enable-tls": "true", "ca": files.ca, "cert": files.client_certificate, "key": files.client_key}
        uri = f"kafka://{kafka.bootstrap_servers}/{quote(run.topic)}?{urlencode(parameters)}"
        options = {k: v for k, v in sink_options(kafka, run).items()
                   if k not in ("kafka.bootstrap.servers", "topic", "protocol", "enable-tidb-extension")}
        return {"sink-uri": uri, **options}

    def security(self, kafka) -> dict:  # tail takes no sink URI: what it means, as librdkafka's settings
        return {k: v for k, v in kafka.client_settings.items() if k != "bootstrap.servers"}


class TestOAuthBearerTokenCallbackOverTls(SecuredRoundTrip):
    """5. SASL_SSL, OAUTHBEARER by a token callback: ``kafka.oauth_cb`` names ``oauth_callbacks.client_credentials``,
    which every process making a client (the driver, each Python worker, ``tail``) imports by name and which
    fetches a client_credentials token from the cluster's token endpoint; the endpoint and the login reach it in
    ``kafka.sasl.oauthbearer.config``.  No ``sasl.oauthbearer.method``: librdkafka's only token is the callback's."""

    cluster = {"tls": True, "sasl_oauthbearer": LOGIN}

    def security(self, kafka) -> dict:
        return {"security.protocol": "SASL_SSL", "ssl.ca.pem": pem(kafka.ca), "sasl.mechanism": "OAUTHBEARER",
                "oauth_cb": "integration.oauth_callbacks:client_credentials",
                "sasl.oauthbearer.config": f"token_url={kafka.token_endpoint},client_id={LOGIN[0]},"
                                           f"client_secret={LOGIN[1]}"}

    def test_a_refused_client_secret_fails_on_the_driver_in_one_line(self, kafka):
        """The token endpoint refuses the login: the driver's check says so before any client, in one line."""
        options = {**{f"kafka.{name}": value for name, value in self.security(kafka).items()},
                   "kafka.sasl.oauthbearer.config": f"token_url={kafka.token_endpoint},client_id={LOGIN[0]},"
                                                    "client_secret=not-the-secret",
                   "kafka.bootstrap.servers": kafka.bootstrap_servers, "protocol": "canal-json", "topic": "t"}
        with pytest.raises(ConfigError) as error:
            parse_options(options)
        assert str(error.value) == ("option 'kafka.oauth_cb': bad value "
                                    "'integration.oauth_callbacks:client_credentials': calling it raised HTTPError: "
                                    "HTTP Error 401: Unauthorized")


class TestPlainOverTlsWithTheCaAsPemText(SecuredRoundTrip):
    """6. SASL_SSL, PLAIN (Confluent Cloud's API key and secret, Azure Event Hubs' connection string), the CA as
    PEM text."""

    cluster = {"tls": True, "sasl_plain": LOGIN}

    def security(self, kafka) -> dict:
        return {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                "sasl.username": LOGIN[0], "sasl.password": LOGIN[1], "ssl.ca.pem": pem(kafka.ca)}
