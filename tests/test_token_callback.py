"""``kafka.oauth_cb`` (``-X oauth_cb``): a token callback named ``module:function``, imported where each client is
made, refused on the driver in one line, and never showing its token.

No broker speaks OAUTHBEARER here: confluent-kafka calls the callback as it makes a client, before any connection,
so the clients run against a port nothing listens on.  The real-broker test is the integration suite's.
"""

from __future__ import annotations

import ast
import inspect
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests import token_callbacks as callbacks
from ticdc_sink.config.reader import parse_read_options
from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.errors import ConfigError, DeliveryError
from ticdc_sink.kafka import clients, token_callback
from ticdc_sink.kafka.markers import marker_consumer
from ticdc_sink.kafka.producer import KafkaOutput
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
    monkeypatch.setattr(callbacks, "stalled", False)
    monkeypatch.setattr(token_callback, "_last_failure", None)
    callbacks.calls.clear()
    callbacks.release.clear()
    yield
    callbacks.release.set()  # the calls a test left waiting return (to a thread no one waits for any more)


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
    monkeypatch.setattr(clients, "with_callback", lambda settings, within: given.append(
        token_callback.with_callback(settings, within)) or given[-1])
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


def elapsed(action) -> tuple[float, BaseException | None]:
    """How long ``action`` took, and what it raised."""
    started = time.monotonic()
    try:
        action()
    except BaseException as e:  # noqa: B036 (a test's own check)
        return time.monotonic() - started, e
    return time.monotonic() - started, None


@pytest.mark.parametrize("parse", [parse_options, parse_read_options])
def test_a_callback_that_never_returns_is_refused_on_the_driver_within_broker_timeout_ms(parse):
    """A token service that does not answer (no timeout of its own) would hold the driver forever."""
    took, error = elapsed(lambda: parse(options("hangs", **{"broker-timeout-ms": "1500"})))
    assert isinstance(error, ConfigError)
    assert str(error) == ("option 'kafka.oauth_cb': bad value 'tests.token_callbacks:hangs': no token within "
                          "broker-timeout-ms=1500")
    assert 1.5 <= took < 1.5 + 1
    assert callbacks.calls == ["region=eu-west-1"]  # it was called, and is still waiting


def test_the_driver_check_waits_for_a_slow_token_within_the_bound(monkeypatch):
    """The bound is a timeout, not a delay: a token that comes in time is taken."""
    monkeypatch.setattr(callbacks, "stalled", True)
    answer = threading.Timer(0.5, callbacks.release.set)  # the token service answers after half a second
    took, error = elapsed(lambda: (answer.start(), parse_options(options("token", **{"broker-timeout-ms": "3000"}))))
    assert error is None and 0.5 <= took < 3


def test_a_tasks_clients_are_bounded_by_the_options_broker_timeout_ms(monkeypatch):
    """The driver's check passed; then the node's token service stops answering: a task's producer, a read's admin
    client and consumer fail within broker-timeout-ms instead of hanging the task."""
    write = parse_options(options("token", closed_port(), **{"broker-timeout-ms": "1200"}))
    read = parse_read_options(options("token", closed_port(), **{"broker-timeout-ms": "1200"}))
    monkeypatch.setattr(callbacks, "stalled", True)
    for make in (lambda: KafkaOutput(write), lambda: TopicsView(read)):
        took, error = elapsed(make)
        assert isinstance(error, ConfigError)
        assert str(error) == ("option 'kafka.oauth_cb': bad value 'tests.token_callbacks:token': no token within "
                              "broker-timeout-ms=1200")
        assert 1.2 <= took < 1.2 + 1


@pytest.mark.parametrize("make", [clients.producer, clients.consumer, clients.admin])
def test_each_client_is_made_within_its_bound_or_refused(make):
    settings = {"bootstrap.servers": closed_port(), "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "OAUTHBEARER", "oauth_cb": "tests.token_callbacks:hangs", "group.id": "g"}
    took, error = elapsed(lambda: make(settings, token_callback.Within(1, "broker-timeout-ms=1000")))
    assert isinstance(error, ConfigError)
    assert str(error) == ("option 'kafka.oauth_cb': bad value 'tests.token_callbacks:hangs': no token within "
                          "broker-timeout-ms=1000")
    assert 1 <= took < 2
    # A client made with no bound of its own (the embedded broker's probe) waits broker-timeout-ms's default.
    assert inspect.signature(make).parameters["within"].default == token_callback.broker_timeout(30000)
    assert parse_options(options("token")).broker_timeout_ms == 30000


def test_a_refresh_that_never_returns_fails_within_the_bound_naming_it():
    """A refresh is bounded as the first token is: librdkafka is told it failed, and the reason is kept for the
    error the expired token leads to."""
    callback = token_callback.TokenCallback("tests.token_callbacks:short_lived", "cfg",
                                            token_callback.Within(1, "broker-timeout-ms=1000"))
    assert callback("cfg")[0] == callbacks.TOKEN  # the first token, fetched as it was made
    callbacks.stalled = True
    took, error = elapsed(lambda: callback("cfg"))
    assert isinstance(error, ConfigError) and 1 <= took < 2
    assert token_callback.failure_note() == (" (the token callback failed: kafka.oauth_cb "
                                             "'tests.token_callbacks:short_lived': no token within "
                                             "broker-timeout-ms=1000)")


def tail_with_callback(function: str, *arguments: str) -> subprocess.CompletedProcess:
    """``tail`` against a closed port, logging in by OAUTHBEARER with ``tests.token_callbacks``' ``function``."""
    return subprocess.run([sys.executable, "-m", "ticdc_sink", "tail", "--bootstrap-servers", closed_port(),
                           "--topic", "t", "--protocol", "canal-json", *arguments,
                           "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=OAUTHBEARER",
                           "-X", f"oauth_cb=tests.token_callbacks:{function}"],
                          capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[1])


def test_the_cli_refuses_a_callback_that_never_returns_within_timeout_seconds():
    """tail's bound is its --timeout-seconds; the process ends, the callable's thread left waiting or not."""
    started = time.monotonic()
    done = tail_with_callback("hangs", "--timeout-seconds", "1.5")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "[ticdc-sink] error: option '-X oauth_cb': bad value 'tests.token_callbacks:hangs': no token within "
        "--timeout-seconds=1.5"]
    assert time.monotonic() - started < 1.5 + 20  # the interpreter's start and imports, then the bound


def test_the_cli_refuses_a_callback_in_one_line_naming_the_x_setting(tmp_path):
    done = tail_with_callback("raises")
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


@pytest.mark.spark
def test_a_task_whose_token_never_comes_fails_within_broker_timeout_ms(spark, tmp_path):
    """The driver's check got a token; the tasks' calls never return: each attempt fails after broker-timeout-ms,
    and the query with the option's line, instead of hanging."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    feed = tmp_path / "feed"
    feed.mkdir()
    pq.write_table(pa.table({"id": pa.array([1], pa.int32()), "name": ["a"]}), feed / "rows.parquet")
    stream = spark.readStream.schema("id int, name string").parquet(str(feed))
    query = (stream.writeStream.format("ticdc")
             .options(**options("hangs_in_tasks", closed_port(), **{"broker-timeout-ms": "2000",
                                                                    "delivery": "at-least-once"}))
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    took, error = elapsed(query.awaitTermination)
    assert error is not None
    assert ("option 'kafka.oauth_cb': bad value 'tests.token_callbacks:hangs_in_tasks': no token within "
            "broker-timeout-ms=2000") in str(error)
    assert took < 60  # three attempts of two seconds each, and Spark's own work
