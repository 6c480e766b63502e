"""Failures are short: one clear error within ``broker-timeout-ms``, and no librdkafka log spam.

The Spark checks run in a fresh Python process outside the repository, as a
user's own session would: nothing is registered, so ``format("ticdc")`` must be
found by name, and the process's stderr can be read whole.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest
from changefeed import schema
from pyspark.sql import types as T

from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.errors import DeliveryError
from ticdc_sink.kafka.client_log import LIBRDKAFKA_LOG
from ticdc_sink.kafka.producer import check_brokers
from ticdc_sink.sink.driver import abort_batch
from ticdc_sink.sink.task import WritePlan


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def options(bootstrap: str, **extra) -> dict:
    return {"kafka.bootstrap.servers": bootstrap, "protocol": "canal-json", "topic": "t", "database": "d",
            "table": "t", "broker-timeout-ms": "2000", **extra}


USER_SESSION = textwrap.dedent("""
    import json, sys, time
    from pyspark.sql import SparkSession

    live, dead, topic = sys.argv[1:4]
    spark = (SparkSession.builder.master("local[2,3]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("OFF")
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id int, name string").repartition(2)
    base = {"protocol": "canal-json", "topic": topic, "database": "d", "table": "t", "primary-key": "id",
            "broker-timeout-ms": "3000"}
    df.write.format("ticdc").mode("append").options(**{**base, "kafka.bootstrap.servers": live}).save()
    started = time.monotonic()
    try:
        df.write.format("ticdc").mode("append").options(**{**base, "kafka.bootstrap.servers": dead}).save()
        error = None
    except Exception as e:
        error = str(e)
    print(json.dumps({"elapsed": time.monotonic() - started, "error": error}))
""")


@pytest.mark.spark
@pytest.mark.broker
def test_a_users_own_session_finds_the_source_by_name_and_fails_fast_on_a_dead_broker(broker, topic, tmp_path):
    import json

    dead = closed_port()
    script = tmp_path / "session.py"
    script.write_text(USER_SESSION)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYSPARK_PYTHON"] = sys.executable
    done = subprocess.run([sys.executable, str(script), broker.bootstrap_servers, dead, topic], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # Found by name (no register call, the repository is not the working directory): both rows arrived.
    values = sorted(json.loads(m.value())["data"][0]["id"] for m in broker.read(
        topic, max_messages=2, idle_seconds=30))
    assert values == ["1", "2"]
    # The dead broker: one error naming it, before any task, within the timeout plus Spark's overhead.
    assert f"cannot reach the Kafka brokers {dead} within broker-timeout-ms=3000" in result["error"]
    assert result["elapsed"] < 3 + 10, result
    librdkafka_lines = [line for line in done.stderr.splitlines() if "rdkafka" in line]
    assert len(librdkafka_lines) <= 2, librdkafka_lines


def _write_check(dead: str) -> None:
    check_brokers(parse_options(options(dead)))


def _task_metadata(dead: str) -> None:
    from ticdc_sink.kafka.producer import KafkaOutput

    KafkaOutput(parse_options(options(dead))).partition_count("t")


def _read_plan(dead: str) -> None:
    from ticdc_sink.config.reader import parse_read_options
    from ticdc_sink.source.topics import TopicsView

    with TopicsView(parse_read_options(options(dead))) as view:
        view.partitions()


@pytest.mark.parametrize("reach", [_write_check, _task_metadata, _read_plan])
def test_a_port_nothing_listens_on_fails_within_the_broker_timeout_in_one_clear_line(reach):
    """The write's driver check, a write task's first metadata call and a read's plan say the same line: the
    servers, the client's own reason, what to do; not librdkafka's count of brokers down ("1/1 brokers are
    down; 0/1 brokers are down"), nor its retry's time and state."""
    dead = closed_port()
    started = time.monotonic()
    with pytest.raises(DeliveryError) as error:
        reach(dead)
    assert time.monotonic() - started < 2 + 1.5
    line = str(error.value)
    assert line == (f"cannot reach the Kafka brokers {dead} within broker-timeout-ms=2000 ({dead}/bootstrap: "
                    f"Connect to ipv4#{dead} failed: Connection refused): check kafka.bootstrap.servers, the network "
                    "and the security settings, or raise broker-timeout-ms")


def test_brokers_gone_while_a_read_is_planned_fail_it_within_the_broker_timeout_in_one_line(
        broker_that_goes_away, topic, monkeypatch):
    """Brokers that answer the offsets' listing and are gone when the plan reads a partition's end: the same one
    line as brokers never reached, not a wait for ever nor librdkafka's exception."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import OffsetSpec

    from ticdc_sink.config.reader import parse_read_options
    from ticdc_sink.source.topics import TopicsView

    gone = broker_that_goes_away
    producer = Producer({"bootstrap.servers": gone.bootstrap_servers})
    producer.produce(topic, b"v")
    assert producer.flush(30) == 0
    del producer  # its log lines once the broker is gone are not the read's
    listed = TopicsView._list_offsets

    def then_gone(view, parts, spec):
        offsets = listed(view, parts, spec)
        if spec is OffsetSpec.latest():
            os.kill(gone.pid, signal.SIGKILL)
        return offsets

    monkeypatch.setattr(TopicsView, "_list_offsets", then_gone)
    with TopicsView(parse_read_options({**options(gone.bootstrap_servers), "topic": topic})) as view:
        keys = view.partitions()
        started = time.monotonic()
        with pytest.raises(DeliveryError) as error:
            view.bounds(keys)
    assert time.monotonic() - started < 2 + 1.5
    line = str(error.value)
    assert line.startswith(f"cannot reach the Kafka brokers {gone.bootstrap_servers} within broker-timeout-ms=2000 (")
    # The cause is the refused reconnection, or on a loaded machine the plan's own call failing first, before
    # librdkafka has tried to reconnect.
    assert ("Connection refused" in line or "Broker transport failure" in line), line
    assert line.endswith("or raise broker-timeout-ms"), line


def test_client_errors_keep_each_reason_once_without_the_count_of_brokers_down():
    from confluent_kafka import KafkaError

    from ticdc_sink.kafka.client_log import ClientErrors

    errors = ClientErrors()
    for after in (0, 12):
        errors(KafkaError(KafkaError._TRANSPORT, f"b:1/bootstrap: Connect to ipv4#10.0.0.1:1 failed: Connection "
                                                 f"refused (after {after}ms in state CONNECT)"))
        errors(KafkaError(KafkaError._ALL_BROKERS_DOWN, f"{1 - after // 12}/1 brokers are down"))
    assert errors.distinct == ["b:1/bootstrap: Connect to ipv4#10.0.0.1:1 failed: Connection refused"]
    assert errors.cause(KafkaError(KafkaError._TRANSPORT)) == errors.distinct[0]
    assert ClientErrors().cause(KafkaError(KafkaError._TIMED_OUT)) == "Local: Timed out"


def test_abort_of_a_batch_job_on_a_dead_broker_is_bounded_and_says_so_once(caplog):
    config = parse_options(options(closed_port()))
    plan = WritePlan.for_schema(config, schema(("id", T.IntegerType(), False)), job_id="j1")
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="ticdc_sink"):
        abort_batch(plan, [None] * 4)  # four failed partitions to fence
    assert time.monotonic() - started < 2 + 1.5
    warnings = [r.getMessage() for r in caplog.records if r.name == "ticdc_sink.sink.driver"]
    assert len(warnings) == 1 and "fenced 0 of 4 failed partition(s)" in warnings[0], warnings


def test_librdkafka_lines_that_repeat_a_problem_are_dropped(caplog):
    caplog.set_level(logging.DEBUG, logger=LIBRDKAFKA_LOG.name)
    for port, after in ((9001, 0), (9001, 12), (9002, 3)):  # a retry differs only in numbers
        LIBRDKAFKA_LOG.error("FAIL [rdkafka#producer-%d] 127.0.0.1:%d: Connect failed: Connection refused "
                             "(after %dms in state CONNECT)", port, port, after)
    LIBRDKAFKA_LOG.error("FAIL [rdkafka#producer-1] 127.0.0.1:9001: SASL authentication failed")
    assert [r.getMessage().split(": ", 1)[1] for r in caplog.records] == [
        "Connect failed: Connection refused (after 0ms in state CONNECT)", "SASL authentication failed"]


def test_a_producer_that_refuses_messages_after_its_transaction_failed_says_why_in_one_error():
    import numpy as np
    import pyarrow as pa
    from confluent_kafka import KafkaError, KafkaException

    from ticdc_sink.kafka.messages import Messages
    from ticdc_sink.kafka.producer import KafkaOutput

    class FailedTransaction:
        """A producer whose transaction failed: its messages timed out, and it refuses new ones."""

        def __init__(self, reports):
            self.reports = reports

        def produce(self, *args, **kwargs):
            raise KafkaException(KafkaError(KafkaError._STATE, "Unable to produce message: Local: Erroneous state"))

        def poll(self, timeout):
            for report in self.reports:
                report()
            self.reports = []

    class Timed:
        def topic(self):
            return "t"

        def partition(self):
            return 2

    messages = Messages(["t"], None, np.zeros(1, dtype=np.int32), None, pa.array([b"v"]), np.arange(1))
    for reports, expected in (([], r"t\[0\] refused a message: Unable to produce message: Local: Erroneous state"),
                              ([KafkaError(KafkaError._MSG_TIMED_OUT)] * 2,
                               r"2 message\(s\) were not acknowledged by .*: t\[2\]: Local: Message timed out")):
        output = KafkaOutput(parse_options(options(closed_port())))
        output._partition_counts["t"] = 3
        output._producer = FailedTransaction([lambda e=e: output._on_delivery(e, Timed()) for e in reports])
        with pytest.raises(DeliveryError, match=expected):
            output.produce(messages)


def test_a_fatal_client_error_is_one_line_whatever_confluent_kafka_raised_for_it():
    from ticdc_sink.kafka.producer import KafkaOutput

    output = KafkaOutput(parse_options(options(closed_port())))

    class FatalError:
        """A producer hitting a fatal error: librdkafka logs it, and the exception raised is not it."""

        def flush(self, timeout):
            output._log.log(logging.CRITICAL, "%s [%s] %s", "FATAL", "rdkafka#producer-1",
                            "[thrd:main]: Fatal error: Broker: Broker received an out of order sequence number")
            raise SystemError("<method 'flush' of 'cimpl.Producer' objects> returned NULL without setting an "
                              "exception")

    output._producer, output._pending = FatalError(), 1
    with pytest.raises(DeliveryError) as error:
        output.flush()
    assert str(error.value) == (f"the Kafka client failed on {output.config.bootstrap_servers}: Fatal error: "
                                "Broker: Broker received an out of order sequence number")
    assert error.value.__context__ is None
    output._producer = type("Broken", (), {"flush": lambda self, timeout: 1 / 0})()  # not a fatal error: as is
    output._log.fatal = None
    with pytest.raises(ZeroDivisionError):
        output.flush()


def test_a_failed_transaction_names_its_cause_not_the_purge_of_its_messages():
    from confluent_kafka import KafkaError

    from ticdc_sink.kafka.transactions import TransactionalOutput

    output = TransactionalOutput(parse_options(options(closed_port())), "ticdc-sink-job-1-0", "ticdc-sink-job-1-0")

    class Purged:
        def topic(self):
            return "orders"

        def partition(self):
            return 0

    class RefusedPartition:
        """A transaction the broker would not add a partition to: librdkafka logs why, then purges the queue."""

        def flush(self, timeout):
            output._log.log(logging.ERROR, "%s [%s] %s", "TXNERR", "rdkafka#producer-1",
                            "[thrd:main]: Current transaction failed in state InTransaction: Failed to add "
                            "partition(s) to transaction on broker TxnCoordinator/1: Broker: Topic authorization "
                            "failed (after 1 ms) (TOPIC_AUTHORIZATION_FAILED)")
            output._on_delivery(KafkaError(KafkaError._PURGE_QUEUE), Purged())

    output._producer, output._pending = RefusedPartition(), 1
    with pytest.raises(DeliveryError) as error:
        output.flush()
    assert str(error.value) == (
        "1 message(s) were not acknowledged (purged from the queue), and the transaction of transactional.id "
        f"'ticdc-sink-job-1-0' failed on {output.config.bootstrap_servers}, so none of its messages is committed: "
        "Failed to add partition(s) to transaction on broker TxnCoordinator/1: Broker: Topic authorization failed "
        "(after 1 ms) (TOPIC_AUTHORIZATION_FAILED)")
