"""``from_delta_cdf``: a Delta Lake change data feed as the sink's input.

Delta's feed (``spark.read.option("readChangeFeed", "true").table(...)``) has
the table's columns and ``_change_type`` (``insert``, ``update_preimage``,
``update_postimage``, ``delete``), ``_commit_version`` and ``_commit_timestamp``.
The sink's input has ``_op``, ``_commit_ts`` (a TiDB TSO) and, for an UPDATE,
``_before``.  An update's pre-image and post-image are paired by the primary
key within their commit version; an update that changed the key has no pair,
so its pre-image becomes a DELETE and its post-image an INSERT (as TiCDC splits
such an update).  The commit ts is the commit timestamp's milliseconds as the
TSO's physical part and the version as its logical part, so that two commits
within one millisecond keep their order.
"""

from __future__ import annotations

from typing import Sequence

from pyspark.sql import Column, DataFrame, functions as F, types as T

from .errors import ConfigError
from .tso import TSO_LOGICAL_BITS

CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP = "_change_type", "_commit_version", "_commit_timestamp"


def from_delta_cdf(cdf: DataFrame, primary_key: str | Sequence[str]) -> DataFrame:
    """The changes of a Delta change data feed as the sink takes them: ``_op``, ``_commit_ts``, the table's
    columns and ``_before``; ``primary_key`` (a column or several, as the sink's ``primary-key`` option) pairs
    an update's images."""
    keys = [primary_key] if isinstance(primary_key, str) else list(primary_key)
    missing = [c for c in (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP) if c not in cdf.columns]
    if missing:
        raise ConfigError("from_delta_cdf", ", ".join(missing), "a Delta change data feed has _change_type, "
                          "_commit_version and _commit_timestamp: read it with option readChangeFeed=true")
    columns = [c for c in cdf.columns if c not in (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)]
    absent = [k for k in keys if k not in columns]
    if not keys or absent:
        raise ConfigError("primary_key", ", ".join(absent) or None, f"the key columns, among {', '.join(columns)}")

    commit_ts = (F.shiftleft(F.expr(f"unix_millis({COMMIT_TIMESTAMP})"), TSO_LOGICAL_BITS)
                 + F.pmod(F.col(COMMIT_VERSION), F.lit(1 << TSO_LOGICAL_BITS)))
    changes = cdf.withColumn("_commit_ts", commit_ts)
    image = F.struct(*[F.col(c) for c in columns])
    pairing = ["_commit_ts", *keys]
    pre = changes.where(F.col(CHANGE_TYPE) == "update_preimage")
    post = changes.where(F.col(CHANGE_TYPE) == "update_postimage")
    befores = pre.select(*pairing, image.alias("_before"))

    updates = post.join(befores, pairing, "left")
    paired = updates.where(F.col("_before").isNotNull())
    no_before = F.lit(None).cast(T.StructType([cdf.schema[c] for c in columns]))
    rows = [
        _changes(changes.where(F.col(CHANGE_TYPE) == "insert"), "INSERT", columns, no_before),
        _changes(changes.where(F.col(CHANGE_TYPE) == "delete"), "DELETE", columns, no_before),
        _changes(paired, "UPDATE", columns, F.col("_before")),
        # An update whose key changed: its images have no pair, and go as TiCDC splits such an update.
        _changes(pre.join(post.select(*pairing), pairing, "left_anti"), "DELETE", columns, no_before),
        _changes(updates.where(F.col("_before").isNull()), "INSERT", columns, no_before),
    ]
    result = rows[0]
    for more in rows[1:]:
        result = result.unionByName(more)
    return result


def _changes(frame: DataFrame, op: str, columns: list[str], before: Column) -> DataFrame:
    return frame.select(F.lit(op).alias("_op"), F.col("_commit_ts"), *[F.col(c) for c in columns],
                        before.alias("_before"))
