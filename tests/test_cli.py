"""The command line: tail's one-line failures, the broker command's lifecycle, readable events (the demo:
test_demo.py)."""

from __future__ import annotations

import datetime as dt
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

import numpy as np
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from ticdc_sink.cli.main import build_parser
from ticdc_sink.cli.tail import enum_set_types, format_event
from ticdc_sink.codec.base import DDLEvent, RowEvent, WatermarkEvent
from ticdc_sink.codec.shared.claim_check import object_content
from ticdc_sink.codec.shared.compression import compress
from ticdc_sink.tso import tso_from_unix_ms

CLI = [sys.executable, "-m", "ticdc_sink"]
NEW_YEAR_MS = int(dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc).timestamp() * 1000)


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def create_topic(bootstrap_servers: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})  # must outlive the future
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)


def output_lines(result: subprocess.CompletedProcess) -> list[str]:
    return (result.stdout + result.stderr).splitlines()


# ---------------------------------------------------------------------------
# format_event

ORDER_TYPES = enum_set_types("id INT, status ENUM('new','paid','shipped'), tags SET('a','b','c')")


def test_enum_and_set_numbers_show_their_members():
    event = RowEvent("INSERT", "shop", "orders", None, {"id": 1, "status": 2, "tags": 5}, primary_keys=["id"])
    assert format_event(event, ORDER_TYPES) == "INSERT shop.orders {id=1, status=2 (paid), tags=5 (a,c)}"


def test_update_shows_members_on_both_sides():
    event = RowEvent("UPDATE", "shop", "orders", None, {"id": 1, "status": 3, "tags": 0},
                     old={"id": 1, "status": 1, "tags": 0}, primary_keys=["id"])
    assert format_event(event, ORDER_TYPES) == "UPDATE shop.orders {id=1} status: 1 (new) -> 3 (shipped)"


def test_numbers_outside_the_members_stay_bare():
    event = RowEvent("INSERT", "shop", "orders", None, {"status": 4, "tags": 8})
    assert format_event(event, ORDER_TYPES) == "INSERT shop.orders {status=4, tags=8}"


def test_without_column_types_enum_numbers_are_shown_as_sent():
    event = RowEvent("INSERT", "shop", "orders", None, {"status": 2})
    assert format_event(event) == "INSERT shop.orders {status=2}"


def test_a_handle_key_only_row_says_so():
    event = RowEvent("UPDATE", "shop", "orders", None, {"id": 1}, old={"id": 1}, primary_keys=["id"],
                     handle_key_only=True)
    assert format_event(event) == \
        "UPDATE shop.orders {id=1} (handle key only: the row was over max-message-bytes)"


def test_watermark_and_ddl_show_the_wall_time_of_their_tso():
    tso = tso_from_unix_ms(NEW_YEAR_MS + 22) | 7  # logical part 7 does not change the wall time
    assert format_event(WatermarkEvent(tso)) == f"WATERMARK  ts={tso} (2026-01-01 00:00:00.022 UTC)"
    ddl = DDLEvent("shop", "orders", "ALTER TABLE orders ADD COLUMN note TEXT", "ALTER", tso)
    assert format_event(ddl).endswith(f"(commit ts {tso}, 2026-01-01 00:00:00.022 UTC)")


@pytest.mark.parametrize("command", [[], ["demo"], ["tail"], ["broker"]])
def test_help_has_no_rest_markup(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([*command, "--help"])
    assert exit_info.value.code == 0
    assert "``" not in capsys.readouterr().out


# ---------------------------------------------------------------------------
# tail


def test_the_console_scripts_usage_names_it():
    script = os.path.join(os.path.dirname(sys.executable), "ticdc-sink")
    usage = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60).stdout
    assert usage.startswith("usage: ticdc-sink ")
    assert subprocess.run([*CLI, "--help"], capture_output=True, text=True, timeout=60).stdout.startswith(
        "usage: python -m ticdc_sink ")


@pytest.mark.broker
def test_tail_names_a_missing_topic(broker):
    result = run_cli("tail", "--bootstrap-servers", broker.bootstrap_servers, "--topic", f"missing-{uuid.uuid4().hex}",
                     "--protocol", "canal-json")
    assert result.returncode != 0
    [line] = output_lines(result)
    assert "does not exist" in line and broker.bootstrap_servers in line


def test_tail_on_a_closed_port_fails_in_one_line_within_its_timeout():
    address = f"127.0.0.1:{closed_port()}"
    started = time.monotonic()
    result = run_cli("tail", "--bootstrap-servers", address, "--topic", "t", "--protocol", "canal-json",
                     "--timeout-seconds", "2")
    elapsed = time.monotonic() - started
    assert result.returncode != 0
    [line] = output_lines(result)  # no traceback, no librdkafka log lines
    assert f"cannot reach Kafka at {address} within 2 s" in line
    assert "python -m ticdc_sink broker" in line
    assert elapsed < 20


def test_tail_takes_librdkafka_settings_and_names_one_it_does_not_know_without_the_secrets():
    result = run_cli("tail", "--bootstrap-servers", f"127.0.0.1:{closed_port()}", "--topic", "t", "--protocol",
                     "canal-json", "-X", "sasl.password=hunter2", "-X", "no.such.setting=1")
    assert result.returncode == 1
    [line] = output_lines(result)
    assert "-X: " in line and "no.such.setting" in line and "hunter2" not in line


@pytest.mark.broker
def test_tail_reads_with_librdkafka_settings(broker, topic):
    create_topic(broker.bootstrap_servers, topic)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    producer.produce(topic, json.dumps({"id": 0, "database": "d", "table": "t", "pkNames": ["id"], "isDdl": False,
                                        "type": "INSERT", "es": NEW_YEAR_MS, "ts": NEW_YEAR_MS, "sql": "",
                                        "sqlType": {"id": 4}, "mysqlType": {"id": "int"}, "old": None,
                                        "data": [{"id": "7"}]}).encode())
    assert producer.flush(30) == 0
    result = run_cli("tail", "--bootstrap-servers", broker.bootstrap_servers, "--topic", topic, "--protocol",
                     "canal-json", "--idle-seconds", "1", "-X", "client.id=tail-with-settings",
                     "-X", "fetch.wait.max.ms=100")
    assert result.returncode == 0, result.stderr
    assert "INSERT d.t {id=7}" in result.stdout


def test_tail_rejects_bad_column_types_in_one_line():
    result = run_cli("tail", "--bootstrap-servers", f"127.0.0.1:{closed_port()}", "--topic", "t",
                     "--protocol", "canal-json", "--column-types", "status ENUM")
    assert result.returncode != 0
    [line] = output_lines(result)
    assert "--column-types" in line and "ENUM('a','b')" in line


@pytest.mark.broker
def test_tail_decodes_with_member_names(broker, topic):
    create_topic(broker.bootstrap_servers, topic)
    message = {"id": 0, "database": "shop", "table": "orders", "pkNames": ["id"], "isDdl": False,
               "type": "INSERT", "es": NEW_YEAR_MS, "ts": NEW_YEAR_MS, "sql": "",
               "sqlType": {"id": 4, "status": 4, "tags": -7},
               "mysqlType": {"id": "int", "status": "enum", "tags": "set"},
               "old": None, "data": [{"id": "1", "status": "2", "tags": "5"}]}
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    producer.produce(topic, json.dumps(message).encode())
    assert producer.flush(30) == 0
    result = run_cli("tail", "--bootstrap-servers", broker.bootstrap_servers, "--topic", topic,
                     "--protocol", "canal-json", "--idle-seconds", "1",
                     "--column-types", "status ENUM('new','paid','shipped'), tags SET('a','b','c')")
    assert result.returncode == 0, result.stderr
    assert "INSERT shop.orders {id=1, status=2 (paid), tags=5 (a,c)}" in result.stdout
    assert "1 message(s) decoded" in result.stdout


def test_tail_shows_an_open_transactions_messages_only_when_asked_to_read_uncommitted(broker, topic):
    create_topic(broker.bootstrap_servers, topic)
    message = {"id": 0, "database": "shop", "table": "orders", "pkNames": ["id"], "isDdl": False,
               "type": "INSERT", "es": NEW_YEAR_MS, "ts": NEW_YEAR_MS, "sql": "", "sqlType": {"id": 4},
               "mysqlType": {"id": "int"}, "old": None, "data": [{"id": "1"}]}
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": topic})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, json.dumps(message).encode())
    assert producer.flush(30) == 0
    try:
        tail = ["tail", "--bootstrap-servers", broker.bootstrap_servers, "--topic", topic,
                "--protocol", "canal-json", "--idle-seconds", "1"]
        committed, uncommitted = run_cli(*tail), run_cli(*tail, "--read-uncommitted")
    finally:
        producer.abort_transaction(30)
    assert committed.returncode == 0 and uncommitted.returncode == 0, committed.stderr + uncommitted.stderr
    assert "0 message(s) decoded" in committed.stdout and "INSERT" not in committed.stdout
    assert "INSERT shop.orders {id=1}" in uncommitted.stdout and "1 message(s) decoded" in uncommitted.stdout


@pytest.mark.parametrize("protocol", ["avro", "debezium-avro"])
def test_tail_of_avro_needs_the_registry_in_one_line(protocol):
    result = run_cli("tail", "--bootstrap-servers", f"127.0.0.1:{closed_port()}", "--topic", "t",
                     "--protocol", protocol)
    assert result.returncode == 1
    assert output_lines(result) == [f"[ticdc-sink] error: --protocol {protocol} needs --schema-registry URL (or AWS "
                                    "Glue's: -o glue-schema-registry-name=... -o glue-schema-registry-region=...): "
                                    "the registry the sink registered the schemas in"]


@pytest.mark.broker
def test_tail_decodes_avro_through_the_registry(broker, topic, schema_registry):
    from changefeed import build, schema
    from pyspark.sql import types as T

    from ticdc_sink.changes.dispatch import Routing
    from ticdc_sink.codec import encoder_for

    table = schema(("_op", T.StringType()), ("id", T.IntegerType(), False), ("status", T.StringType()))
    rows = [{"_op": "INSERT", "id": 1, "status": "paid"}, {"_op": "DELETE", "id": 1, "status": "paid"}]
    config, layout, changes, _ = build(table, rows, protocol="avro", topic="x_{schema}_{table}",
                                       schema_registry=schema_registry.url, database="shop", table="orders",
                                       primary_key="id", column_types="status ENUM('new','paid')")
    messages = encoder_for(config, layout.table).encode_rows(
        changes, Routing([topic], np.zeros(2, np.int32), np.zeros(2, np.int32), {topic: 1}))
    create_topic(broker.bootstrap_servers, topic)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for key, value in zip(messages.keys.to_pylist(), messages.values.to_pylist()):
        producer.produce(topic, value, key)
    assert producer.flush(30) == 0
    result = run_cli("tail", "--bootstrap-servers", broker.bootstrap_servers, "--topic", topic, "--protocol", "avro",
                     "--schema-registry", schema_registry.url, "--idle-seconds", "1",
                     "--column-types", "status ENUM('new','paid')")
    assert result.returncode == 0, result.stderr
    assert "INSERT shop.orders {id=1, status=2 (paid)}" in result.stdout
    assert "DELETE shop.orders {id=1}" in result.stdout
    assert "2 message(s) decoded" in result.stdout


@pytest.mark.broker
def test_tail_decodes_debezium_rows_ddl_and_watermarks(broker, topic):
    from changefeed import build, schema
    from pyspark.sql import types as T

    from ticdc_sink.changes.dispatch import Routing
    from ticdc_sink.codec import encoder_for
    from ticdc_sink.ddl.statements import DDLChange, classify

    table = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("id", T.IntegerType(), False),
                   ("status", T.StringType()))
    rows = [{"_op": "INSERT", "_commit_ts": 5 << 18, "id": 1, "status": "paid"},
            {"_op": "DELETE", "_commit_ts": 6 << 18, "id": 1, "status": "paid"}]
    config, layout, changes, _ = build(table, rows, protocol="debezium", enable_tidb_extension=True,
                                       database="shop", table="orders", primary_key="id",
                                       column_types="status ENUM('new','paid')")
    encoder = encoder_for(config, layout.table)
    statement = "ALTER TABLE orders ADD COLUMN note TEXT"
    events = [encoder.encode_rows(changes, Routing([topic], np.zeros(2, np.int32), np.zeros(2, np.int32), {topic: 1})),
              encoder.encode_ddl(DDLChange("shop", "orders", statement, 7 << 18, classify(statement)), topic),
              encoder.encode_watermark(8 << 18, [topic])]
    create_topic(broker.bootstrap_servers, topic)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for messages in events:
        for key, value in zip(messages.keys.to_pylist(), messages.values.to_pylist()):
            producer.produce(topic, value, key, partition=0)
    assert producer.flush(30) == 0
    result = run_cli("tail", "--bootstrap-servers", broker.bootstrap_servers, "--topic", topic,
                     "--protocol", "debezium", "--idle-seconds", "1", "--column-types", "status ENUM('new','paid')")
    assert result.returncode == 0, result.stderr
    assert "INSERT shop.orders {id=1, status=2 (paid)}" in result.stdout
    assert "DELETE shop.orders {id=1, status=2 (paid)}" in result.stdout
    assert re.search(r"DDL ALTER +shop.orders: ALTER TABLE orders ADD COLUMN note TEXT", result.stdout)
    assert f"WATERMARK  ts={8 << 18}" in result.stdout
    assert "4 message(s) decoded" in result.stdout


@pytest.mark.broker
def test_tail_with_the_wrong_protocol_says_so_in_one_line(broker, topic):
    from test_protocol_recognition import written

    create_topic(broker.bootstrap_servers, topic)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for _, key, value in written("debezium", None, topic):
        producer.produce(topic, value, key, partition=0)
    assert producer.flush(30) == 0
    result = run_cli("tail", "--bootstrap-servers", broker.bootstrap_servers, "--topic", topic,
                     "--protocol", "canal-json", "--idle-seconds", "1")
    assert result.returncode != 0
    assert output_lines(result) == [f"[ticdc-sink] error: topic {topic!r} partition 0 offset 0: not a canal-json "
                                    "message (it looks like debezium); check --protocol"]


@pytest.mark.broker
@pytest.mark.parametrize("encoding_format", ["json", "avro"])
def test_tail_decodes_simple_once_its_bootstrap_arrived(broker, topic, encoding_format):
    from changefeed import build, schema
    from pyspark.sql import types as T

    from ticdc_sink.changes.dispatch import Routing
    from ticdc_sink.codec import encoder_for

    table = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("id", T.IntegerType(), False),
                   ("status", T.StringType()))
    rows = [{"_op": "INSERT", "_commit_ts": 5 << 18, "id": 1, "status": "paid"}]
    config, layout, changes, _ = build(table, rows, protocol="simple", encoding_format=encoding_format,
                                       database="shop", table="orders", primary_key="id",
                                       column_types="status ENUM('new','paid')")
    encoder = encoder_for(config, layout.table)
    # Joined mid-stream: the row comes before its table's schema.
    one_row = Routing([topic], np.zeros(1, np.int32), np.zeros(1, np.int32), {topic: 1})
    events = [encoder.encode_rows(changes, one_row), encoder.bootstrap_messages("shop", "orders", topic),
              encoder.encode_watermark(8 << 18, [topic])]
    create_topic(broker.bootstrap_servers, topic)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for messages in events:
        for value in messages.values.to_pylist():
            producer.produce(topic, value, partition=0)
    assert producer.flush(30) == 0
    result = run_cli("tail", "--bootstrap-servers", broker.bootstrap_servers, "--topic", topic,
                     "--protocol", "simple", "--idle-seconds", "1", "--column-types", "status ENUM('new','paid')")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("  p0@")]
    assert "BOOTSTRAP  shop.orders: the table's schema" in lines[0], lines
    assert "INSERT shop.orders {id=1, status=2 (paid)}" in lines[1]
    assert f"WATERMARK  ts={8 << 18}" in lines[2] and "3 message(s) decoded" in result.stdout


# ---------------------------------------------------------------------------
# broker


def line_reader(stream) -> queue.Queue:
    """The stream's lines, read by a thread, so that a test can wait for one with a timeout."""
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line.rstrip("\n")) for line in stream], daemon=True).start()
    return lines


def child_pids(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as children:
        return [int(p) for p in children.read().split()]


def round_trip(bootstrap_servers: str) -> bytes:
    topic = f"cli-broker-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap_servers, topic)
    producer = Producer({"bootstrap.servers": bootstrap_servers})
    producer.produce(topic, b"hello")
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": topic, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                return message.value()
    finally:
        consumer.close()
    raise AssertionError("the message did not come back")


def ignore_sigint() -> None:
    """What a shell does to a background job (command &)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.broker
@pytest.mark.parametrize("stop_signal, preexec_fn", [(signal.SIGINT, None), (signal.SIGTERM, None),
                                                     (signal.SIGINT, ignore_sigint)],
                         ids=["SIGINT", "SIGTERM", "SIGINT-to-background-job"])
def test_broker_command_serves_until_interrupted(stop_signal, preexec_fn):
    process = subprocess.Popen([*CLI, "broker"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=preexec_fn)
    try:
        stdout = line_reader(process.stdout)
        address = stdout.get(timeout=60)
        host, port = address.rsplit(":", 1)
        assert host == "127.0.0.1" and port.isdigit()
        assert f"--bootstrap-servers {address}" in stdout.get(timeout=10)
        assert round_trip(address) == b"hello"
        [tansu] = child_pids(process.pid)
        process.send_signal(stop_signal)
        process.wait(timeout=30)
        err = process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert stdout.get(timeout=5).endswith("stopping the broker") and stdout.get(timeout=5).endswith("broker stopped")
    assert err == ""
    assert not os.path.exists(f"/proc/{tansu}")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", int(port)), timeout=5).close()


def test_broker_command_serves_on_the_port_given_and_names_a_taken_one():
    port = int(closed_port())
    process = subprocess.Popen([*CLI, "broker", "--port", str(port)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert line_reader(process.stdout).get(timeout=60) == f"127.0.0.1:{port}"
        taken = run_cli("broker", "--port", str(port))
        assert taken.returncode == 1
        assert output_lines(taken) == [f"[ticdc-sink] error: port {port} on 127.0.0.1 is taken: stop what serves "
                                       "it, or choose another port"]
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


# ---------------------------------------------------------------------------
# demo


@pytest.mark.broker
def test_tail_takes_the_writers_options_to_decompress_and_fetch_claim_checks(broker, topic, tmp_path):
    create_topic(broker.bootstrap_servers, topic)
    message = {"id": 0, "database": "shop", "table": "orders", "pkNames": ["id"], "isDdl": False,
               "type": "INSERT", "es": NEW_YEAR_MS, "ts": NEW_YEAR_MS, "sql": "", "sqlType": {"id": 4, "note": 12},
               "mysqlType": {"id": "int", "note": "varchar"}, "old": None, "data": [{"id": "1", "note": "whole"}]}
    kept = json.dumps({**message, "_tidb": {"commitTs": 1}}).encode()
    (tmp_path / "6ba7b810-9dad-41d1-80b4-00c04fd430c8.json").write_bytes(object_content(None, compress(kept, "lz4")))
    pointer = {**message, "sqlType": {"id": 4}, "mysqlType": {"id": "int"}, "data": [{"id": "1"}],
               "_tidb": {"commitTs": 1, "claimCheckLocation": "s3://bucket/6ba7b810-9dad-41d1-80b4-00c04fd430c8.json"}}
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    producer.produce(topic, compress(json.dumps(pointer).encode(), "lz4"))
    assert producer.flush(30) == 0
    tail = ["tail", "--bootstrap-servers", broker.bootstrap_servers, "--topic", topic, "--protocol", "canal-json",
            "--idle-seconds", "1", "-o", "large-message-handle-compression=lz4"]
    result = run_cli(*tail, "--option", f"claim-check-storage-uri=file://{tmp_path}")
    assert result.returncode == 0, result.stderr
    assert "INSERT shop.orders {id=1, note='whole'}" in result.stdout
    result = run_cli(*tail[:-2])  # not told of the compression: one line, naming the message and the option
    assert result.returncode != 0
    [line] = output_lines(result)
    assert "cannot decode the message at partition 0 offset 0" in line
    assert "an LZ4 frame: give large-message-handle-compression=lz4" in line


def test_an_option_that_is_not_name_equals_value_is_refused():
    result = run_cli("tail", "--bootstrap-servers", "h:1", "--topic", "t", "--protocol", "canal-json", "-o", "lz4")
    assert result.returncode == 2 and "'lz4' is not NAME=VALUE" in result.stderr
