"""The standard change feed of the benchmark: one table, every common kind of column, with nulls.

80% inserts, 15% updates (with old values), 5% deletes; ids repeat so that
updates and deletes touch earlier rows. Written once as Parquet, so that every
measurement (encoders, Spark jobs, baselines) reads the same data.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

DATABASE, TABLE = "bench", "orders"
COLUMN_TYPES = ("c_ubigint BIGINT UNSIGNED, c_varchar VARCHAR(64), c_text TEXT, c_varbinary VARBINARY(64), "
                "c_datetime DATETIME(3), c_timestamp TIMESTAMP(6), c_json JSON")
TABLE_COLUMNS = [
    pa.field("id", pa.int64(), nullable=False),
    pa.field("c_tinyint", pa.int8()),
    pa.field("c_smallint", pa.int16()),
    pa.field("c_int", pa.int32()),
    pa.field("c_ubigint", pa.decimal128(20, 0)),
    pa.field("c_decimal", pa.decimal128(12, 2)),
    pa.field("c_double", pa.float64()),
    pa.field("c_varchar", pa.string()),
    pa.field("c_text", pa.string()),
    pa.field("c_varbinary", pa.binary()),
    pa.field("c_date", pa.date32()),
    pa.field("c_datetime", pa.timestamp("us")),
    pa.field("c_timestamp", pa.timestamp("us", tz="UTC")),
    pa.field("c_json", pa.string()),
]
SCHEMA = pa.schema([
    pa.field("_op", pa.string(), nullable=False),
    pa.field("_commit_ts", pa.int64(), nullable=False),
    pa.field("_before", pa.struct(TABLE_COLUMNS)),
    *TABLE_COLUMNS,
])
BASE_TSO = int(dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc).timestamp() * 1000) << 18


def _table_values(rng: np.random.Generator, ids: np.ndarray) -> dict[str, pa.Array]:
    n = len(ids)

    def nulls(p=0.1):
        return rng.random(n) < p

    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])
    texts = words[rng.integers(0, len(words), n)]
    micros = (1_700_000_000_000_000 + rng.integers(0, 10**13, n)).astype("datetime64[us]")
    ubig = rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2)
    return {
        "id": pa.array(ids, pa.int64()),
        "c_tinyint": pa.array(rng.integers(-128, 128, n), pa.int8(), mask=nulls()),
        "c_smallint": pa.array(rng.integers(-32768, 32768, n), pa.int16(), mask=nulls()),
        "c_int": pa.array(rng.integers(-2**31, 2**31, n), pa.int32(), mask=nulls()),
        "c_ubigint": pa.array([Decimal(int(v)) for v in ubig], pa.decimal128(20, 0), mask=nulls()),
        "c_decimal": pa.array([Decimal(int(v)).scaleb(-2) for v in rng.integers(-10**9, 10**9, n)],
                              pa.decimal128(12, 2), mask=nulls()),
        "c_double": pa.array(rng.normal(0, 1e6, n), pa.float64(), mask=nulls()),
        "c_varchar": pa.array(np.char.add("name-", ids.astype(str)), pa.string(), mask=nulls()),
        "c_text": pa.array(np.char.add(texts, " <text> & more"), pa.string(), mask=nulls()),
        "c_varbinary": pa.array([bytes(rng.integers(0, 256, 8, dtype=np.uint8)) for _ in range(n)], pa.binary(),
                                mask=nulls()),
        "c_date": pa.array(rng.integers(0, 20000, n), pa.int32()).cast(pa.date32()),
        "c_datetime": pa.array(micros, pa.timestamp("us")),
        "c_timestamp": pa.array(micros, pa.timestamp("us")).cast(pa.timestamp("us", tz="UTC")),
        "c_json": pa.array([f'{{"k": {int(v)}, "tags": ["a", "b"]}}' for v in ids], pa.string(), mask=nulls()),
    }


def make_batch(rng: np.random.Generator, start: int, n: int) -> pa.RecordBatch:
    ops = rng.choice(np.array(["INSERT", "UPDATE", "DELETE"]), size=n, p=[0.80, 0.15, 0.05])
    ids = np.arange(start, start + n, dtype=np.int64)
    # Updates and deletes change rows inserted earlier.
    changed = ops != "INSERT"
    ids[changed] = rng.integers(0, max(start, 1), changed.sum()) if start else ids[changed]
    new = _table_values(rng, ids)
    old = _table_values(rng, ids)
    before = pa.StructArray.from_arrays([old[f.name] for f in TABLE_COLUMNS], fields=TABLE_COLUMNS,
                                        mask=pa.array(ops != "UPDATE"))
    columns = {"_op": pa.array(ops, pa.string()),
               "_commit_ts": pa.array(BASE_TSO + start + np.arange(n), pa.int64()),
               "_before": before, **new}
    return pa.RecordBatch.from_arrays([columns[f.name] for f in SCHEMA], schema=SCHEMA)


def write_feed(path: Path, rows: int, batch_rows: int = 50_000, seed: int = 7) -> Path:
    """Write ``rows`` changes to a Parquet file (once per size and seed)."""
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    with pq.ParquetWriter(path.with_suffix(".tmp"), SCHEMA) as writer:
        for start in range(0, rows, batch_rows):
            writer.write_batch(make_batch(rng, start, min(batch_rows, rows - start)))
    path.with_suffix(".tmp").rename(path)
    return path


# What the bench measures: every protocol, and Simple's Avro encoding as one of its own.
BENCHED = ("open-protocol", "canal-json", "avro", "debezium", "simple", "simple-avro")


def spark_schema():
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(SCHEMA)


def sink_options(bootstrap_servers: str, topic: str, delivery: str = "at-least-once",
                 protocol: str = "canal-json", schema_registry: str | None = None) -> dict[str, str]:
    """The sink's options for writing the feed to ``topic`` (``protocol``: one of BENCHED).

    The avro protocol registers one table's schemas per topic, so its topic
    option must be an expression: ``<topic>_{schema}_{table}`` (``topic_written``
    names the topic it expands to), with the registry at ``schema_registry``
    and the TiDB extension on, without which its updates read as inserts.
    Debezium runs with the TiDB extension too (``tidb_type`` in the field
    schemas, ``commit_ts`` and ``cluster_id`` in the source schema, watermarks),
    as the tests run it. ``simple-avro`` is Simple with ``encoding-format=avro``.
    """
    options = {"kafka.bootstrap.servers": bootstrap_servers, "protocol": protocol, "topic": topic,
               "database": DATABASE, "table": TABLE, "primary-key": "id", "column-types": COLUMN_TYPES,
               "delivery": delivery, "partition": "index-value"}
    if protocol == "avro":
        options.update({"topic": f"{topic}_{{schema}}_{{table}}", "enable-tidb-extension": "true"})
        if schema_registry:
            options["schema-registry"] = schema_registry
    elif protocol == "debezium":
        options["enable-tidb-extension"] = "true"
    elif protocol == "simple-avro":
        options.update({"protocol": "simple", "encoding-format": "avro"})
    return options


def topic_written(options: dict[str, str]) -> str:
    """The topic the feed's rows go to: the topic option with ``{schema}`` and ``{table}`` expanded
    (the feed's names are valid in a topic as they are)."""
    return options["topic"].replace("{schema}", DATABASE).replace("{table}", TABLE)
