"""``kafka.oauth_cb`` (``-X oauth_cb``): a token callback named ``module:function``, imported where each client is
made, refused on the driver in one line, and never showing its token.

No broker speaks OAUTHBEARER here: confluent-kafka calls the callback as it makes a client, before any connection,
so the clients run against a port nothing listens on.  The real-broker test is the integration suite's.
"""

from __future__ import annotations

import ast
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import token_callbacks as callbacks
from ticdc_sink.errors import ConfigError, DeliveryError
from ticdc_sink.kafka import clients, token_callback
from ticdc_sink.kafka.markers import marker_consumer
from ticdc_sink.kafka.producer import KafkaOutput
from ticdc_sink.options import parse_options
from ticdc_sink.source.options import parse_read_options
from ticdc_sink.source.topics import TopicsView

PACKAGE = Path(__file__).resolve().parents[1] / "ticdc_sink"
OAUTHBEARER = {"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "OAUTHBEARER"}


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def options(callback: str, bootstrap: str = "broker:9092", **extra) -> dict:
    return {"kafka.bootstrap.servers": bootstrap, "protocol": "canal-json", "topic": "t", "database": "d",
            "table": "t", **OAUTHBEARER, "kafka.oauth_cb": f"tests.token_callbacks:{callback}",
            "kafka.sasl.oauthbearer.config": "region=eu-west-1", **extra}


@pytest.fixture(autouse=True)
def fresh_callbacks(monkeypatch):
    monkeypatch.setattr(callbacks, "broken", False)
    monkeypatch.setattr(token_callback, "_last_failure", None)
    callbacks.calls.clear()


REFUSED = {
    "my_auth.msk_token": "write module:function, e.g. my_company.kafka_auth:msk_token",
    "tests.no_such_module:token": "cannot import module 'tests.no_such_module' (ModuleNotFoundError: No module named "
                                  "'tests.no_such_module'): install it where Spark's Python runs, on the driver and "
                                  "every executor",
    "tests.token_callbacks:no_such_function": "module 'tests.token_callbacks' has no attribute 'no_such_function'",
    "tests.token_callbacks:NOT_CALLABLE": "NOT_CALLABLE is a str, not a callable",
    "tests.token_callbacks:raises": "calling it raised RuntimeError: Unable to locate credentials (the test's own)",
    "tests.token_callbacks:token_only": "it returned a str, not (token, expiry_epoch_seconds) or (token, expiry, "
                                        "principal, extensions)",
    "tests.token_callbacks:expired": "its token expired 60 s ago",
}


@pytest.mark.parametrize("spec", REFUSED)
def test_a_callback_that_cannot_give_a_token_is_refused_on_the_driver_in_one_line(spec):
    for parse in (parse_options, parse_read_options):  # a write's options, and a read's
        with pytest.raises(ConfigError) as error:
            parse({**options("token"), "kafka.oauth_cb": spec})
        assert str(error.value) == f"option 'kafka.oauth_cb': bad value {spec!r}: {REFUSED[spec]}"
        assert callbacks.TOKEN not in str(error.value)


def test_an_expiry_in_milliseconds_as_msk_gives_it_is_refused_without_the_token():
    with pytest.raises(ConfigError, match=r"its expiry \d{13} is in milliseconds \(MSKAuthTokenProvider's is: divide "
                                          r"it by 1000\), not seconds since the epoch$") as error:
        parse_options(options("milliseconds"))
    assert callbacks.TOKEN not in str(error.value)


@pytest.mark.parametrize("drop", ["kafka.sasl.mechanism", "kafka.security.protocol"])
def test_a_callback_librdkafka_would_never_call_is_refused(drop):
    """Without SASL and OAUTHBEARER librdkafka asks for no token, and confluent-kafka's constructor would wait 10 s
    for one."""
    given = {k: v for k, v in options("token").items() if k != drop}
    with pytest.raises(ConfigError) as error:
        parse_options(given)
    assert str(error.value) == (
        "option 'kafka.oauth_cb': bad value 'tests.token_callbacks:token': librdkafka asks for a token only with "
        "kafka.security.protocol=SASL_SSL (or SASL_PLAINTEXT) and kafka.sasl.mechanism=OAUTHBEARER")


def test_the_driver_calls_it_once_with_sasl_oauthbearer_config_and_keeps_its_name():
    config = parse_options(options("Provider.token"))  # an attribute path, and the 4-tuple form
    assert config.kafka["oauth_cb"] == "tests.token_callbacks:Provider.token"  # the string travels to executors
    config = parse_options(options("token"))
    assert callbacks.calls == ["region=eu-west-1"]
    assert callbacks.TOKEN not in repr(config)


@pytest.mark.parametrize("make", [clients.producer, clients.consumer, clients.admin])
def test_each_client_has_its_first_token_when_its_constructor_returns(make, monkeypatch):
    """confluent-kafka asks for the first token as it makes a client, and waits for it (about a second, its
    polling step): the first connection finds the token there, without a poll."""
    given = []
    monkeypatch.setattr(clients, "with_callback", lambda settings: given.append(
        token_callback.with_callback(settings)) or given[-1])
    settings = {"bootstrap.servers": closed_port(), "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "OAUTHBEARER", "oauth_cb": "tests.token_callbacks:token",
                "sasl.oauthbearer.config": "region=eu-west-1", "log_level": 0}
    if make is clients.consumer:
        settings["group.id"] = "g"
    started = time.monotonic()
    make(settings)
    assert time.monotonic() - started < 3
    [librdkafka_settings] = given
    callback = librdkafka_settings["oauth_cb"]
    assert isinstance(callback, token_callback.TokenCallback) and callback.spec == "tests.token_callbacks:token"
    assert callback._first is None  # the client took the token it held
    assert callbacks.calls == ["region=eu-west-1"]  # fetched once, for that first token
    assert callbacks.TOKEN not in repr(librdkafka_settings)


def test_kafka_clients_are_made_in_clients_py_only():
    """Every Kafka client goes through ``kafka/clients.py``, which puts the callable in place of its name: a client
    made anywhere else would hand librdkafka the string."""
    makers = {"Producer", "Consumer", "AdminClient"}
    elsewhere = []
    for path in PACKAGE.rglob("*.py"):
        if path == PACKAGE / "kafka" / "clients.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name in makers:
                    elsewhere.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not elsewhere


def test_the_write_and_read_paths_clients_each_fetch_a_token():
    """A task's producer and marker consumer, and a read plan's admin client and consumer."""
    config = parse_options(options("token", closed_port()))
    output = KafkaOutput(config)
    marker_consumer(output, "ticdc-sink-g").close()
    TopicsView(parse_read_options(options("token", closed_port()))).close()
    # The two parses (the driver's checks), then one per client.
    assert len(callbacks.calls) == 2 + 4


def test_a_refresh_that_raises_later_fails_within_the_broker_timeout_naming_the_callback(caplog, capfd):
    caplog.set_level(logging.DEBUG)
    output = KafkaOutput(parse_options(options("short_lived", closed_port(), **{"broker-timeout-ms": "4000"})))
    callbacks.broken = True  # librdkafka refreshes the two-second token after about 1.6 s
    started = time.monotonic()
    with pytest.raises(DeliveryError) as error:
        output.partition_count("t")
    assert time.monotonic() - started < 4 + 1
    line = str(error.value)
    assert "\n" not in line
    assert ("Failed to acquire SASL OAUTHBEARER token: kafka.oauth_cb 'tests.token_callbacks:short_lived': calling "
            "it raised RuntimeError: the credentials ran out") in line
    output.close()
    assert callbacks.TOKEN not in line + caplog.text + "".join(capfd.readouterr())
    assert "Traceback" not in "".join(capfd.readouterr())


def test_the_cli_refuses_a_callback_in_one_line_naming_the_x_setting(tmp_path):
    settings = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=OAUTHBEARER"]
    done = subprocess.run([sys.executable, "-m", "ticdc_sink", "tail", "--bootstrap-servers", closed_port(),
                           "--topic", "t", "--protocol", "canal-json", *settings,
                           "-X", "oauth_cb=tests.token_callbacks:raises"],
                          capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[1])
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "[ticdc-sink] error: option '-X oauth_cb': bad value 'tests.token_callbacks:raises': calling it raised "
        "RuntimeError: Unable to locate credentials (the test's own)"]


def test_the_cli_clients_fetch_a_token(capsys):
    from ticdc_sink.cli.main import main

    dead = closed_port()
    status = main(["tail", "--bootstrap-servers", dead, "--topic", "t", "--protocol", "canal-json",
                   "--timeout-seconds", "1", "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=OAUTHBEARER",
                   "-X", "oauth_cb=tests.token_callbacks:token", "-X", "sasl.oauthbearer.config=cli"])
    assert status == 1
    assert f"cannot reach Kafka at {dead} within 1 s" in capsys.readouterr().err
    assert callbacks.calls == ["cli", "cli"]  # the check, then tail's admin client


@pytest.mark.spark
def test_each_task_imports_the_callback_in_its_own_python_worker(spark, tmp_path):
    """The option travels as its string; the Python workers that check the options and run the tasks import the
    callable and call it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    calls, feed = tmp_path / "calls", tmp_path / "feed"
    feed.mkdir()
    pq.write_table(pa.table({"id": pa.array([1], pa.int32()), "name": ["a"]}), feed / "rows.parquet")
    stream = spark.readStream.schema("id int, name string").parquet(str(feed))
    query = (stream.writeStream.format("ticdc")
             .options(**options("record_caller", closed_port(), **{
                 "broker-timeout-ms": "1000", "delivery": "at-least-once",
                 "kafka.sasl.oauthbearer.config": f"file={calls}"}))
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    with pytest.raises(Exception, match="cannot reach the Kafka brokers"):
        query.awaitTermination()
    callers = dict(line.split() for line in calls.read_text().splitlines())
    assert "planning" in callers.values() and "task" in callers.values(), callers
    assert str(os.getpid()) not in callers  # none in this process: each imported it itself
