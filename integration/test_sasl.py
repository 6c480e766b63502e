"""SASL/PLAIN on a broker that refuses clients without the login.

The login, given as ``kafka.*`` options or in a TiCDC sink URI, must reach every
client of the sink: the producer and its transactions, the admin client that
checks and creates topics, and the consumer groups that keep the markers and
Simple's BOOTSTRAP state.  Simple with exactly-once delivery uses all of them.
"""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from pyspark.errors import PySparkException

from protocols import ProtocolUnderTest
from test_end_to_end import write_stream
from test_spark_sink import row, row_columns, sink_options, write_batch
from ticdc_sink.codec.base import RowEvent

pytestmark = [pytest.mark.spark, pytest.mark.broker]

ROWS = [row(i, ts=i) for i in range(1, 11)]
SIMPLE = ProtocolUnderTest("simple")


def login_options(security: dict) -> dict:
    return {f"kafka.{name}": value for name, value in security.items()}


def rows_read_back(broker, topic: str) -> list[tuple[int, dict]]:
    decoder = SIMPLE.decoder()
    messages = broker.read(topic, idle_seconds=1, expect=len(ROWS))
    return sorted((e.columns["id"], e.columns) for m in messages for e in decoder.decode(m.key(), m.value())
                  if isinstance(e, RowEvent))


@pytest.mark.parametrize("mode", ["batch", "streaming"])
def test_a_sasl_plain_login_in_kafka_options_reaches_every_client(spark, sasl_broker, topic, tmp_path, mode):
    options = sink_options(sasl_broker, topic, SIMPLE, **login_options(sasl_broker.security),
                           delivery="exactly-once")
    if mode == "batch":
        write_batch(spark, ROWS, options)
    else:
        write_stream(spark, ROWS, options, tmp_path)
    assert rows_read_back(sasl_broker, topic) == [(r["id"], row_columns(r)) for r in ROWS]


def test_a_sasl_plain_login_in_a_sink_uri(spark, sasl_broker, topic):
    login = sasl_broker.security
    uri = (f"kafka://{sasl_broker.bootstrap_servers}/{topic}?protocol=simple"
           f"&sasl-user={quote(login['sasl.username'])}&sasl-password={quote(login['sasl.password'])}"
           "&sasl-mechanism=PLAIN")
    write_batch(spark, ROWS, {"sink-uri": uri, "database": "shop", "table": "orders", "primary-key": "id",
                              "broker-timeout-ms": "10000"})
    assert rows_read_back(sasl_broker, topic) == [(r["id"], row_columns(r)) for r in ROWS]


def test_a_wrong_password_fails_before_any_task_in_one_line_naming_the_login(spark, sasl_broker, topic):
    wrong = {**sasl_broker.security, "sasl.password": "not-the-password"}
    options = sink_options(sasl_broker, topic, SIMPLE, **login_options(wrong), **{"broker-timeout-ms": "5000"})
    with pytest.raises(PySparkException) as failure:
        write_batch(spark, ROWS, options)
    line = re.search(f"cannot reach the Kafka brokers {re.escape(sasl_broker.bootstrap_servers)}.*",
                     str(failure.value)).group()
    assert "SASL authentication error" in line  # librdkafka's own words, from its error callback
    assert "not-the-password" not in str(failure.value)


def test_tail_reads_a_secured_cluster_with_its_login_as_x_settings(spark, sasl_broker, topic):
    import subprocess
    import sys

    write_batch(spark, ROWS, sink_options(sasl_broker, topic, SIMPLE, **login_options(sasl_broker.security)))
    settings = [part for name, value in sasl_broker.security.items() for part in ("-X", f"{name}={value}")]
    tail = [sys.executable, "-m", "ticdc_sink", "tail", "--bootstrap-servers", sasl_broker.bootstrap_servers,
            "--topic", topic, "--protocol", "simple", "--idle-seconds", "2"]
    result = subprocess.run([*tail, *settings], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "INSERT shop.orders {amount=1.25, id=1, name='n1'," in result.stdout  # Simple's members sorted
    assert result.stdout.count("INSERT shop.orders") == len(ROWS)
    refused = subprocess.run(tail, capture_output=True, text=True, timeout=120)  # without the login
    assert refused.returncode == 1 and sasl_broker.security["sasl.password"] not in refused.stdout + refused.stderr
