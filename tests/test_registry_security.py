"""The Schema Registry over HTTPS with a login, for avro and debezium-avro.

The registry is the test double serving TLS with a certificate signed by the
session's throwaway CA (``tls_files``) and requiring basic auth.  Each way of
giving the registry's settings (the login in the URL or as
``schema-registry.basic.auth.user.info``, the CA as a file or as PEM text) is
written by the sink and read back by Spark's reader and by ``tail`` with the
same settings; a refused login and an unknown CA fail in one line that shows
no password, and so do the HTTP client's log lines.
"""

from __future__ import annotations

import logging
import re
import stat
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pytest
from certificates import make_tls_files
from changefeed import build, schema
from confluent_kafka import Producer
from protocols import ProtocolUnderTest
from pyspark.sql import types as T
from test_cli import create_topic, output_lines, run_cli

from ticdc_sink.changes.dispatch import Routing
from ticdc_sink.codec import check_services, decoder_for, open_encoder, recognition
from ticdc_sink.codec.base import RowEvent
from ticdc_sink.codec.shared.schema_registry import SchemaRegistry, SchemaRegistryFailure
from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.embedded.schema_registry import SchemaRegistryDouble
from ticdc_sink.errors import ConfigError

USER, PASSWORD = "sink", "s3cr3t p@ss"  # a space and an @: percent-encoded in a URL
LOGIN = f"{USER}:{PASSWORD}"
PROTOCOLS = ["avro", "debezium-avro"]
WAYS = ["url-login.ca-file", "user-info.ca-pem"]  # the login in the URL and the CA as a file, or as settings
TABLE = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("id", T.IntegerType(), False),
               ("name", T.StringType()))
TS = 450_000_000_000_000_000
ROWS = [{"_op": "INSERT", "_commit_ts": TS + 1, "id": 1, "name": "a"},
        {"_op": "INSERT", "_commit_ts": TS + 2, "id": 2, "name": "b"},
        {"_op": "UPDATE", "_commit_ts": TS + 3, "id": 2, "name": "c"},
        {"_op": "DELETE", "_commit_ts": TS + 4, "id": 1, "name": "a"}]
UNTRUSTED = re.compile(r": its TLS certificate is not trusted \((?P<doing>[^)]*)\): \[SSL: CERTIFICATE_VERIFY_FAILED\] "
                       r"certificate verify failed: [^;]*; give the CA that signed it as "
                       r"schema-registry\.ssl\.ca\.location \(a file on the driver and every executor\) or "
                       r"schema-registry\.ssl\.ca\.pem \(its PEM text\), and check that it names the host in "
                       r"schema-registry$")


@pytest.fixture
def registry(tls_files):
    with SchemaRegistryDouble(basic_auth=LOGIN, certificate=tls_files.server_keystore) as double:
        yield double


def with_login(url: str, password: str = PASSWORD) -> str:
    return url.replace("https://", f"https://{USER}:{quote(password, safe='')}@")


def registry_options(way: str, registry: SchemaRegistryDouble, ca: Path, password: str = PASSWORD) -> dict:
    """``schema-registry`` and its settings, given ``way``; ``ca`` is the CA the client is told to trust."""
    if way == WAYS[0]:
        return {"schema-registry": with_login(registry.url, password), "schema-registry.ssl.ca.location": str(ca)}
    return {"schema-registry": registry.url, "schema-registry.basic.auth.user.info": f"{USER}:{password}",
            "schema-registry.ssl.ca.pem": ca.read_text()}


def shown(way: str, registry: SchemaRegistryDouble) -> str:
    """The registry's URL as the errors show it: the password masked where the URL has one."""
    return registry.url.replace("https://", f"https://{USER}:***@") if way == WAYS[0] else registry.url


def protocol_options(protocol: str, topic: str, registry_settings: dict) -> dict:
    """The protocol's options for shop.orders (its rows in ``ProtocolUnderTest.kafka_topic``), TiDB extension on,
    with the registry's settings."""
    return {**ProtocolUnderTest(protocol).options(topic), "enable-tidb-extension": "true", **registry_settings,
            "database": "shop", "table": "orders", "primary-key": "id"}


def parsed(options: dict, reading: bool = False):
    """The config of ``options`` where no broker is reached."""
    return parse_options({**options, "kafka.bootstrap.servers": "-"}, reading=reading)


def sent(options: dict, kafka_topic: str) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of each message the sink's encoder makes of ROWS with ``options``."""
    config, layout, changes, _ = build(TABLE, ROWS, **options)
    zeros = np.zeros(len(ROWS), np.int32)
    with open_encoder(config, layout.table) as encoder:
        messages = encoder.encode_rows(changes, Routing([kafka_topic], zeros, zeros, {kafka_topic: 1}))
    return list(zip(messages.keys.to_pylist(), messages.values.to_pylist()))


PROBLEMS = ["refused login", "unknown CA", "no CA given"]


def refused(problem: str, way: str, registry: SchemaRegistryDouble, tls_files, tmp_path: Path) -> dict:
    """The registry's settings given ``way``, with a wrong password, or trusting a CA that did not sign its
    certificate, or no CA but the system's; its client waits 10 ms between attempts."""
    if problem == "refused login":
        settings = registry_options(way, registry, tls_files.ca, password="wrong-s3cr3t")
    else:
        settings = registry_options(way, registry, make_tls_files(tmp_path).ca)  # another CA
    if problem == "no CA given":
        del settings["schema-registry.ssl.ca.location" if way == WAYS[0] else "schema-registry.ssl.ca.pem"]
    return {**settings, "schema-registry.retries.wait.ms": "10"}


def assert_refusal(line: str, problem: str, way: str, registry: SchemaRegistryDouble, doing: str) -> None:
    """``line`` is the one line of ``problem``, ``doing`` what the sink asked the registry for."""
    if problem == "refused login":
        assert line == (f"schema registry {shown(way, registry)} failed {doing}: Unauthorized (HTTP 401, error code "
                        "401); check the credentials in schema-registry (user:password@host) or "
                        "schema-registry.basic.auth.*")
    else:
        assert line.startswith(f"schema registry {shown(way, registry)}: its TLS certificate is not trusted")
        assert UNTRUSTED.search(line).group("doing") == doing


# ---------------------------------------------------------------------------
# The codecs and the client, without Kafka


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_each_way_of_giving_the_login_and_the_ca_writes_and_decodes(protocol, way, registry, tls_files):
    options = protocol_options(protocol, "t", registry_options(way, registry, tls_files.ca))
    messages = sent(options, ProtocolUnderTest(protocol).kafka_topic("t"))
    decoder = decoder_for(parsed(options, reading=True))
    try:
        rows = [(e.type, e.columns) for key, value in messages for e in recognition.decode(decoder, key, value)
                if isinstance(e, RowEvent)]
    finally:
        decoder.close_registry()
    assert rows[:3] == [("INSERT", {"id": 1, "name": "a"}), ("INSERT", {"id": 2, "name": "b"}),
                        ("UPDATE", {"id": 2, "name": "c"})]
    assert rows[3][0] == "DELETE" and rows[3][1]["id"] == 1
    statuses = {status for *_, status in registry.requests}
    assert registry.url.startswith("https://") and statuses == {200}


def test_the_ca_as_pem_text_is_a_private_file_only_while_the_client_is_made(registry, tls_files, monkeypatch):
    from confluent_kafka import schema_registry

    real, seen = schema_registry.SchemaRegistryClient, []

    def client(settings):
        ca = Path(settings["ssl.ca.location"])
        seen.append((ca, stat.S_IMODE(ca.stat().st_mode), ca.read_text()))
        return real(settings)

    monkeypatch.setattr(schema_registry, "SchemaRegistryClient", client)
    options = protocol_options("avro", "t", registry_options(WAYS[1], registry, tls_files.ca))
    made = SchemaRegistry(parsed(options))
    try:
        made.check_reachable()
    finally:
        made.close()
    [(ca, mode, text)] = seen
    assert (mode, text) == (0o600, tls_files.ca.read_text())
    assert not ca.exists()


def test_the_login_in_the_url_is_in_no_log_line_of_the_http_client(registry, tls_files, caplog):
    caplog.set_level(logging.DEBUG)
    options = protocol_options("avro", "t", registry_options(WAYS[0], registry, tls_files.ca))
    check_services(parsed(options))
    lines = [record.getMessage() for record in caplog.records]
    assert any(f"HTTP Request: GET {registry.url}/subjects" in line for line in lines)  # the client logs each URL
    assert not [line for line in lines if "s3cr3t" in line]
    assert [status for *_, status in registry.requests] == [200]


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("problem", PROBLEMS)
def test_a_refused_login_or_an_unknown_ca_fails_in_one_line_without_the_password(problem, way, registry, tls_files,
                                                                                   tmp_path):
    options = protocol_options("avro", "t", refused(problem, way, registry, tls_files, tmp_path))
    with pytest.raises(SchemaRegistryFailure) as failed:
        check_services(parsed(options))
    assert_refusal(str(failed.value), problem, way, registry, "listing its subjects")
    assert [status for *_, status in registry.requests] == ([401] if problem == "refused login" else [])


def test_the_ca_is_given_once_and_as_a_certificate(registry, tls_files):
    options = protocol_options("avro", "t", registry_options(WAYS[1], registry, tls_files.ca))
    with pytest.raises(ConfigError) as twice:
        parsed({**options, "schema-registry.ssl.ca.location": "/etc/ssl/registry-ca.pem"})
    assert str(twice.value) == ("option 'schema-registry.ssl.ca.location': bad value '/etc/ssl/registry-ca.pem': "
                                "give the registry's CA once: as this file or as schema-registry.ssl.ca.pem, not both")
    with pytest.raises(ConfigError) as not_pem:
        check_services(parsed({**options, "schema-registry.ssl.ca.pem": "not a certificate"}))
    assert str(not_pem.value).startswith(
        f"option 'schema-registry': bad value '{registry.url}': the Schema Registry client cannot read its TLS files "
        "(schema-registry.ssl.ca.pem): [X509: NO_CERTIFICATE_OR_CRL_FOUND]")
    assert "\n" not in str(not_pem.value)


# ---------------------------------------------------------------------------
# Through Kafka: Spark's writer and reader, and tail


def tail(broker, kafka_topic: str, protocol: str, registry_settings: dict) -> list[str]:
    """``tail``'s output lines and exit status, the registry's settings given as tail takes them."""
    url, settings = registry_settings["schema-registry"], {k: v for k, v in registry_settings.items()
                                                           if k != "schema-registry"}
    result = run_cli("tail", "--bootstrap-servers", broker.bootstrap_servers, "--topic", kafka_topic,
                     "--protocol", protocol, "--schema-registry", url, "--idle-seconds", "1",
                     *[part for name, value in settings.items() for part in ("-o", f"{name}={value}")],
                     *(["--read-uncommitted"] if broker.isolation == "read_uncommitted" else []))
    return [*output_lines(result), f"exit {result.returncode}"]


@pytest.mark.spark
@pytest.mark.broker
@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_sink_writes_and_reads_back_through_the_https_registry(spark, broker, topic, protocol, way, registry,
                                                                    tls_files):
    settings = registry_options(way, registry, tls_files.ca)
    options = {**protocol_options(protocol, topic, settings), "kafka.bootstrap.servers": broker.bootstrap_servers}
    # one task, so that each key's changes reach its partition in commit order (the input contract)
    spark.createDataFrame(ROWS, TABLE).coalesce(1).write.format("ticdc").mode("append").options(**options).save()

    kafka_topic = ProtocolUnderTest(protocol).kafka_topic(topic)
    read = {**{k: v for k, v in options.items() if k not in ("database", "table")}, "topic": kafka_topic,
            "kafka.isolation.level": broker.isolation}
    rows = spark.read.format("ticdc").options(**read).load().collect()
    deleted_name = None if protocol == "avro" else "a"  # avro's delete is its key alone
    assert sorted((r["_op"], r["id"], r["name"]) for r in rows) == [
        ("DELETE", 1, deleted_name), ("INSERT", 1, "a"), ("INSERT", 2, "b"), ("UPDATE", 2, "c")]

    lines = tail(broker, kafka_topic, protocol, settings)
    assert "INSERT shop.orders {id=1, name='a'}" in "\n".join(lines) and lines[-1] == "exit 0"
    assert {status for *_, status in registry.requests} == {200}


@pytest.mark.spark
@pytest.mark.broker
@pytest.mark.parametrize("problem", ["refused login", "unknown CA"])
def test_a_refused_login_or_an_unknown_ca_fails_the_write_before_any_task_in_one_line(spark, broker, topic, problem,
                                                                                      registry, tls_files, tmp_path):
    options = {**protocol_options("avro", topic, refused(problem, WAYS[0], registry, tls_files, tmp_path)),
               "kafka.bootstrap.servers": broker.bootstrap_servers}
    with pytest.raises(Exception) as failed:
        spark.createDataFrame(ROWS, TABLE).write.format("ticdc").mode("append").options(**options).save()
    text = str(failed.value)
    [line] = [line for line in text.splitlines() if "SchemaRegistryFailure: " in line]
    assert_refusal(line.split("SchemaRegistryFailure: ", 1)[1], problem, WAYS[0], registry, "listing its subjects")
    assert "s3cr3t" not in text and "s3cr3t" not in repr(failed.value)


def produced(broker, topic: str, registry: SchemaRegistryDouble, tls_files) -> None:
    """ROWS in avro in ``topic``, their schemas in ``registry``."""
    create_topic(broker.bootstrap_servers, topic)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for key, value in sent(protocol_options("avro", "t", registry_options(WAYS[1], registry, tls_files.ca)), topic):
        producer.produce(topic, value, key)
    assert producer.flush(30) == 0


@pytest.mark.spark
@pytest.mark.broker
@pytest.mark.parametrize("on_error", ["fail", "skip"])  # skip passes over a message, not a registry that refuses all
@pytest.mark.parametrize("columns", ["learned", "given"])  # found by the driver, or met by the tasks
def test_a_refused_login_fails_the_read_in_one_line(spark, broker, topic, registry, tls_files, tmp_path, on_error,
                                                    columns):
    produced(broker, topic, registry, tls_files)
    options = {**protocol_options("avro", topic, refused("refused login", WAYS[0], registry, tls_files, tmp_path)),
               "topic": topic, "kafka.bootstrap.servers": broker.bootstrap_servers,
               "kafka.isolation.level": broker.isolation, "on-error": on_error}
    reader = spark.read.format("ticdc").options(**options)
    if columns == "given":
        reader = reader.schema(TABLE)
    with pytest.raises(Exception) as failed:
        reader.load().collect()
    text = str(failed.value)
    [line] = {line for line in text.splitlines() if "ReadError: " in line}  # the same line from each attempt
    assert re.search(f"schema registry {re.escape(shown(WAYS[0], registry))} failed looking up schema id [12]: "
                     r"Unauthorized \(HTTP 401, error code 401\); check the credentials in schema-registry "
                     r"\(user:password@host\) or schema-registry\.basic\.auth\.\*", line)
    assert "s3cr3t" not in text


@pytest.mark.broker
@pytest.mark.parametrize("problem", ["refused login", "unknown CA"])
def test_tail_with_a_refused_login_or_an_unknown_ca_fails_in_one_line(broker, topic, problem, registry, tls_files,
                                                                       tmp_path):
    produced(broker, topic, registry, tls_files)
    *lines, status = tail(broker, topic, "avro", refused(problem, WAYS[1], registry, tls_files, tmp_path))
    [line] = lines
    assert line.startswith("[ticdc-sink] error: ") and status == "exit 1"
    # The first message's value schema (id 2, registered after its key's) is the first looked up.
    assert_refusal(line[len("[ticdc-sink] error: "):], problem, WAYS[1], registry, "looking up schema id 2")
    assert "s3cr3t" not in line
