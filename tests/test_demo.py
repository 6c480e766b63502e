"""``ticdc-sink demo`` for each protocol, as the Quickstart runs it: a process of its own that starts Spark and an
embedded broker, streams the demo's feed through the sink, prints every message decoded and reads the topic back.

A module of its own, apart from test_cli.py, so that ``-n auto`` gives the six demos' three minutes a worker of
their own while the command line's other tests run beside them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from test_cli import CLI


def demo_output(*args: str) -> str:
    """The demo's standard output; it must succeed."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    result = subprocess.run([*CLI, "demo", *args], capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.mark.spark
@pytest.mark.broker
def test_demo_explains_what_a_reader_sees():
    out = demo_output()
    assert "one message as it is on the wire" in out
    assert '\n  value: {"id":0,"database":"shop","table":"orders"' in out
    assert "offsets skip numbers" in out and "control record" in out
    assert "status: 1 (new) -> 2 (paid)" in out
    assert "WATERMARK  ts=" in out and "(2026-01-01 00:00:00.022 UTC)" in out
    assert "message(s) decoded" in out
    # And read back by the ticdc format: the changes as the sink took them, the DDL last.
    assert "back into a DataFrame: spark.read.format('ticdc')" in out
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert table[0].split("|")[1:-1] == [f"{name:<{len(cell)}}" for name, cell in zip(
        ["_op", "_commit_ts", "id", "customer", "amount", "status", "updated_at", "_before", "_ddl"],
        table[0].split("|")[1:-1])]
    assert "|UPDATE|" in table[6] and "|10.50 |paid   |" in table[6] and "{1, customer-1, 10.50, new, " in table[6]
    assert table[-1].startswith("|DDL   |") and "ALTER TABLE orders ADD COLUMN note VARCHAR(64)" in table[-1]


@pytest.mark.spark
@pytest.mark.broker
def test_demo_of_avro_runs_against_the_registry_test_double():
    out = demo_output("--protocol", "avro", "--topic", "avro-demo")
    assert "started a Schema Registry TEST DOUBLE at http://127.0.0.1:" in out
    assert "reading topic 'avro-demo_shop_orders' back" in out
    assert "\n  key:   00 | schema id 1 | " in out and "\n  value: 00 | schema id 2 | " in out
    assert '(subject avro-demo_shop_orders-value): {"type":"record","name":"orders","namespace":"default.shop",' in out
    assert "Avro has no DDL or watermark events" in out
    assert "UPDATE shop.orders {id=1, customer='customer-1', amount=10.50, status=2 (paid)" in out
    assert "DELETE shop.orders {id=3}" in out
    events = [line for line in out.splitlines() if line.startswith("  p")]
    assert len(events) == 10 and not [e for e in events if "WATERMARK" in e or " DDL " in e]
    assert "message(s) decoded" in out


@pytest.mark.spark
@pytest.mark.broker
def test_demo_of_debezium_avro_shows_the_envelope_through_the_registry_test_double():
    out = demo_output("--protocol", "debezium-avro", "--topic", "dbz-avro-demo")
    assert "started a Schema Registry TEST DOUBLE at http://127.0.0.1:" in out
    assert "\n  key:   00 | schema id 1 | " in out and "\n  value: 00 | schema id 2 | " in out
    assert "UPDATE shop.orders {id=1} status: 1 (new) -> 2 (paid)" in out
    events = [line for line in out.splitlines() if line.startswith("  p")]
    assert len(events) == 10 and not [e for e in events if "WATERMARK" in e or " DDL " in e]
    assert "back into a DataFrame: spark.read.format('ticdc')" in out


@pytest.mark.spark
@pytest.mark.broker
def test_demo_of_simple_opens_each_partition_with_the_tables_schema():
    out = demo_output("--protocol", "simple", "--topic", "simple-demo")
    assert "a Simple message has no key" in out and '\n  value: {"version":1,"type":"BOOTSTRAP","commitTs":0,' in out
    events = [line for line in out.splitlines() if line.startswith("  p")]
    assert "BOOTSTRAP  shop.orders: the table's schema" in events[0]
    assert "status: 1 (new) -> 2 (paid)" in out and re.search(r"DDL ALTER +shop.orders: ALTER TABLE orders", out)
    assert "message(s) decoded" in out


@pytest.mark.spark
@pytest.mark.broker
def test_demo_of_debezium_shows_envelopes_ddl_and_watermarks():
    out = demo_output("--protocol", "debezium", "--topic", "debezium-demo")
    assert "a Debezium message is JSON" in out
    assert '\n  key:   {"payload":{"id":' in out and '"name":"default.shop.orders.Key"' in out
    assert '"connector":"TiCDC","name":"default"' in out and '"name":"default.shop.orders.Envelope"' in out
    assert "status: 1 (new) -> 2 (paid)" in out
    assert re.search(r"DDL ALTER +shop.orders: ALTER TABLE orders ADD COLUMN note", out)
    assert "WATERMARK  ts=" in out and "message(s) decoded" in out


@pytest.mark.spark
@pytest.mark.broker
def test_demo_of_open_protocol_shows_the_frames_events():
    out = demo_output("--protocol", "open-protocol")
    assert "an Open Protocol message packs events" in out
    assert '\n  event 1 key:   {"ts":' in out and '"scm":"shop","tbl":"orders","t":1}' in out
    assert '\n  event 1 value: {"u":{"id":{"t":3,"h":true,"f":11,"v":' in out
    assert "status: 1 (new) -> 2 (paid)" in out
    assert "DDL 5 (add column) shop.orders: ALTER TABLE orders ADD COLUMN note" in out
    assert "WATERMARK  ts=" in out and "message(s) decoded" in out
