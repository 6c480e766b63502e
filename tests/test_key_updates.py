"""TiCDC's split of an UPDATE that changes a key into a DELETE and an INSERT (``changes/key_updates.py``)."""

from __future__ import annotations

from pyspark.sql import types as T

from changefeed import build, schema
from ticdc_sink.changes.contract import OP_DELETE, OP_INSERT, OP_UPDATE
from ticdc_sink.changes.key_updates import split_key_updates

COLUMNS = [("id", T.IntegerType(), False), ("email", T.StringType(), True), ("name", T.StringType(), True)]
TABLE = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()),
               ("_before", T.StructType([T.StructField(n, t, nullable) for n, t, nullable in COLUMNS])), *COLUMNS)
OPTIONS = dict(protocol="canal-json", database="d", table="t", primary_key="id", unique_keys="email")


def change(op: str, ts: int, id_: int, email: str | None, name: str, before: tuple | None = None) -> dict:
    old = None if before is None else dict(zip(("id", "email", "name"), before))
    return {"_op": op, "_commit_ts": ts, "id": id_, "email": email, "name": name, "_before": old}


def rows_of(batch) -> list[tuple]:
    names = {OP_INSERT: "INSERT", OP_UPDATE: "UPDATE", OP_DELETE: "DELETE"}
    before = batch.before or {}
    return [(names[int(op)], int(ts), batch.columns["id"][i].as_py(), batch.columns["email"][i].as_py(),
             None if not before or before["id"][i].as_py() is None else before["id"][i].as_py())
            for i, (op, ts) in enumerate(zip(batch.ops, batch.commit_ts))]


def split(rows: list[dict]):
    return split_key_updates(build(TABLE, rows, **OPTIONS)[2])


def test_an_update_of_the_primary_or_a_unique_key_is_a_delete_then_an_insert_at_its_transactions_end():
    batch = split([
        change("UPDATE", 10, 5, "a@x", "n", before=(1, "a@x", "n")),  # the primary key changes
        change("UPDATE", 10, 2, "new@x", "n", before=(2, "old@x", "n")),  # a unique key changes
        change("UPDATE", 10, 3, "c@x", "renamed", before=(3, "c@x", "n")),  # no key changes: stays an UPDATE
        change("INSERT", 10, 4, "d@x", "n"),
        change("UPDATE", 11, 6, None, "n", before=(6, "f@x", "n")),  # a key column becomes NULL
    ])
    assert rows_of(batch) == [
        ("DELETE", 10, 1, "a@x", None), ("DELETE", 10, 2, "old@x", None), ("UPDATE", 10, 3, "c@x", 3),
        ("INSERT", 10, 4, "d@x", None), ("INSERT", 10, 5, "a@x", None), ("INSERT", 10, 2, "new@x", None),
        ("DELETE", 11, 6, "f@x", None), ("INSERT", 11, 6, None, None),
    ]
    assert batch.columns["name"].to_pylist() == ["n", "n", "renamed", "n", "n", "n", "n", "n"]
    assert batch.row_key(4).startswith("{id=5}")  # errors still name the input row


def test_without_old_values_or_a_key_change_the_batch_is_as_it_was():
    unchanged = build(TABLE, [change("UPDATE", 1, 3, "c@x", "m", before=(3, "c@x", "n"))], **OPTIONS)[2]
    assert split_key_updates(unchanged) is unchanged
    no_before = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), *COLUMNS)
    batch = build(no_before, [{"_op": "UPDATE", "_commit_ts": 1, "id": 1, "email": "a", "name": "n"}], **OPTIONS)[2]
    assert split_key_updates(batch) is batch
