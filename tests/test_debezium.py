"""protocol=debezium: TiCDC's DML and WATERMARK messages byte for byte (golden/debezium/).

The encoding clock is frozen at the goldens' placeholder, so ``payload.ts_ms``
is compared too.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from pyspark.sql import types as T

from changefeed import build, schema
from ticdc_sink.codec.debezium import DebeziumEncoder
from ticdc_sink.dispatch import Routing

GOLDEN = Path(__file__).resolve().parent / "golden" / "debezium"
CLOCK_MS = 1701326309000  # the goldens' payload.ts_ms
TABLE1 = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("tiny", T.ByteType(), False),
                ("_before", T.StructType([T.StructField("tiny", T.ByteType(), False)])))
TABLE1_NO_OLD = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("tiny", T.ByteType(), False))


def golden(name: str) -> str:
    return (GOLDEN / name).read_text(encoding="utf-8")


def encoder(spark_schema, rows: list[dict], **options):
    config, layout, changes, _ = build(spark_schema, rows, database="test", table="table1", primary_key="tiny",
                                       column_types="tiny TINYINT")
    config = dataclasses.replace(config, protocol="debezium", cluster_id="test_cluster",
                                 **{k: v for k, v in options.items()})
    return DebeziumEncoder(config, layout.table, clock=lambda: CLOCK_MS), changes


def encode(spark_schema, rows: list[dict], **options) -> list[tuple[str, str]]:
    debezium, changes = encoder(spark_schema, rows, **options)
    n = changes.num_rows
    messages = debezium.encode_rows(changes, Routing(["t"], np.zeros(n, np.int32), np.zeros(n, np.int32), {"t": 1}))
    return list(zip(messages.keys.to_pylist(), messages.values.to_pylist()))


UPDATE = {"_op": "UPDATE", "_commit_ts": 1, "tiny": 1, "_before": {"tiny": 2}}


@pytest.mark.parametrize("name, options", [
    ("dml-update", {}),
    ("dml-update-disable-schema", {"debezium_disable_schema": True}),
    ("dml-update-tidb-extension", {"enable_tidb_extension": True}),
])
def test_the_documents_update_is_ticdcs_bytes(name, options):
    [(key, value)] = encode(TABLE1, [UPDATE], **options)
    assert key == golden(f"{name}.key.json")
    assert value == golden(f"{name}.value.json")


def test_an_update_without_old_values_has_no_before():
    [(key, value)] = encode(TABLE1_NO_OLD, [{k: v for k, v in UPDATE.items() if k != "_before"}])
    assert (key, value) == (golden("dml-update-no-old-value.key.json"), golden("dml-update-no-old-value.value.json"))


def test_insert_and_delete_are_ticdcs_bytes():
    rows = [{"_op": "INSERT", "_commit_ts": 429918007904436226, "tiny": 1, "_before": None},
            {"_op": "DELETE", "_commit_ts": 429918008166580225, "tiny": 2, "_before": None}]
    (insert_key, insert_value), (delete_key, delete_value) = encode(TABLE1, rows)
    assert (insert_key, insert_value) == (golden("dml-insert.key.json"), golden("dml-insert.value.json"))
    assert (delete_key, delete_value) == (golden("dml-delete.key.json"), golden("dml-delete.value.json"))


def test_the_watermark_is_ticdcs_bytes_and_needs_the_extension():
    debezium, _ = encoder(TABLE1, [UPDATE], enable_tidb_extension=True)
    messages = debezium.encode_watermark(3, ["t1", "t2"])
    assert messages.keys.to_pylist() == [golden("watermark.key.json")] * 2
    assert messages.values.to_pylist() == [golden("watermark.value.json")] * 2
    assert messages.topics == ["t1", "t2"] and messages.partitions.tolist() == [-1, -1]  # every partition
    plain, _ = encoder(TABLE1, [UPDATE])
    assert plain.encode_watermark(3, ["t1"]) is None


def test_each_table_of_a_batch_gets_its_own_schema_names():
    table = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("_schema", T.StringType()),
                   ("_table", T.StringType()), ("id", T.IntegerType(), False))
    rows = [{"_op": "INSERT", "_commit_ts": 1, "_schema": db, "_table": t, "id": i}
            for i, (db, t) in enumerate([("a", "x"), ("b", "y.z"), ("a", "x")])]
    config, layout, changes, _ = build(table, rows, primary_key="id")
    debezium = DebeziumEncoder(dataclasses.replace(config, protocol="debezium", cluster_id="c-1"), layout.table,
                               clock=lambda: CLOCK_MS)
    messages = debezium.encode_rows(changes, Routing(["t"], np.zeros(3, np.int32), np.zeros(3, np.int32), {"t": 1}))
    names = [json.loads(v)["schema"]["name"] for v in messages.values.to_pylist()]
    assert names == ["c_1.a.x.Envelope", "c_1.b.y.z.Envelope", "c_1.a.x.Envelope"]
    assert [json.loads(k)["schema"]["name"] for k in messages.keys.to_pylist()] == [
        "c_1.a.x.Key", "c_1.b.y.z.Key", "c_1.a.x.Key"]
