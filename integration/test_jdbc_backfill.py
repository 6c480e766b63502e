"""docs/recipes.md's JDBC backfill against a real MySQL-compatible server (MariaDB), not a stand-in DataFrame.

The recipe's block runs as written on its MySQL path (``jdbc_backfill.py``, in a process of its own for the
connector's jars) against a throwaway MariaDB (``mariadb_server.py``) whose zone (+02:00) is neither Spark's
JVM's (Asia/Tokyo here) nor the sink's (UTC): the topic must hold the table's CREATE TABLE before its rows,
then every row once, with the table's MySQL types and the values the server holds.  It skips where MariaDB
is not installed, or where Maven Central cannot be reached for the connector.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jdbc_backfill import recipe_block
from mariadb_server import MariaDB

pytestmark = [pytest.mark.spark, pytest.mark.broker]

PROGRAM = Path(__file__).with_name("jdbc_backfill.py")
ROWS = ("(1, 'new', 10.50, 4294967295, '2024-05-01 10:00:00.123', '2024-05-01 10:00:00.123456', '12:34:56', "
        "b'10000001', 1999), "
        "(2, 'paid', NULL, NULL, NULL, NULL, NULL, NULL, NULL), "
        "(3, 'shipped', -1.25, 0, '1999-12-31 23:59:59.999', '2000-02-29 12:00:00', '-838:59:59', b'0', 2155)")
# The table's columns as the server renders them, and as TiCDC's Canal-JSON does (ENUM and BIT as numbers,
# TIMESTAMP in the sink's time-zone, UTC).
AS_CANAL_JSON = ("SET time_zone = '+00:00'; SELECT id, status + 0, amount, qty, created_at, paid_at, ship_by, "
                 "flags + 0, since FROM orders ORDER BY id")
CANAL_MYSQL_TYPES = {"id": "int", "status": "enum", "amount": "decimal", "qty": "int unsigned",
                     "created_at": "datetime", "paid_at": "timestamp", "ship_by": "time", "flags": "bit",
                     "since": "year"}


def documented_create_table() -> str:
    """The block's ``create_table`` statement: the example table the test makes on the server."""
    for node in ast.walk(ast.parse(recipe_block())):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "create_table":
            return ast.literal_eval(node.value)
    raise AssertionError("docs/recipes.md's backfill block defines no create_table")


@pytest.fixture(scope="module")
def backfill(request):
    missing = MariaDB.missing()
    if missing:
        pytest.skip(missing)
    broker = request.getfixturevalue("broker")
    topic = f"jdbc-backfill-{os.getpid()}"
    with MariaDB(time_zone="+02:00") as server:
        server.sql("CREATE DATABASE shop")
        server.sql(f"{documented_create_table()}; INSERT INTO orders VALUES {ROWS}", "shop")
        run = subprocess.run([sys.executable, str(PROGRAM), str(server.port), broker.bootstrap_servers, topic],
                             capture_output=True, text=True, timeout=600,
                             env={**os.environ, "PYSPARK_PYTHON": sys.executable, "TZ": "Asia/Tokyo"})
        if run.returncode and "unresolved dependency" in run.stderr:
            pytest.skip("MySQL's Connector/J could not be fetched from Maven Central (spark.jars.packages)")
        assert run.returncode == 0, run.stderr[-4000:]
        table = server.sql(AS_CANAL_JSON, "shop")
        columns = server.sql("SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE FROM information_schema.COLUMNS "
                             "WHERE TABLE_SCHEMA = 'shop' AND TABLE_NAME = 'orders' ORDER BY ORDINAL_POSITION")
    messages = [(m.partition(), json.loads(m.value())) for m in broker.read(topic)]
    return {"run": json.loads(run.stdout.strip().splitlines()[-1]), "table": table, "columns": columns,
            "messages": messages}


def test_the_create_table_comes_first_one_below_the_snapshot(backfill):
    tso = backfill["run"]["tso"]
    partition, first = backfill["messages"][0]
    assert (partition, first["isDdl"], first["type"]) == (0, True, "CREATE")
    assert first["sql"] == backfill["run"]["create_table"]
    assert first["_tidb"]["commitTs"] == tso - 1


def test_every_row_comes_once_as_an_insert_at_the_snapshot_then_its_watermark(backfill):
    tso = backfill["run"]["tso"]
    rows = [m for _, m in backfill["messages"] if m["data"]]
    assert sorted(int(m["data"][0]["id"]) for m in rows) == [1, 2, 3]
    assert {(m["type"], m["_tidb"]["commitTs"]) for m in rows} == {("INSERT", tso)}
    watermarks = {p: m["_tidb"]["watermarkTs"] for p, m in backfill["messages"] if m["type"] == "TIDB_WATERMARK"}
    assert set(watermarks.values()) == {tso} and len(watermarks) == 3  # every partition


def test_the_rows_carry_the_tables_mysql_types(backfill):
    assert backfill["run"]["column_types"] == ", ".join(f"`{name}` {type_}" for name, type_, _ in backfill["columns"])
    for _, message in backfill["messages"]:
        if message["data"]:
            assert message["mysqlType"] == CANAL_MYSQL_TYPES
            assert message["pkNames"] == ["id"]


def test_the_rows_carry_the_values_the_server_holds(backfill):
    names = list(CANAL_MYSQL_TYPES)
    sent = sorted((m["data"][0] for _, m in backfill["messages"] if m["data"]), key=lambda row: int(row["id"]))
    assert [[row[name] for name in names] for row in sent] == backfill["table"]


def test_not_null_columns_stay_not_null(backfill):
    assert backfill["run"]["nullable"] == {name: nullable == "YES" for name, _, nullable in backfill["columns"]}
