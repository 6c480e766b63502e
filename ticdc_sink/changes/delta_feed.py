"""``from_delta_cdf``: a Delta Lake change data feed as the sink's input.

Delta's feed (``spark.read.option("readChangeFeed", "true").table(...)``) has
the table's columns and ``_change_type`` (``insert``, ``update_preimage``,
``update_postimage``, ``delete``), ``_commit_version`` and ``_commit_timestamp``.
The sink's input has ``_op``, ``_commit_ts`` (a TiDB TSO) and, for an UPDATE,
``_before``.

Within one commit version a key's old image (an update's pre-image, or a
delete) and its new image (a post-image, or an insert) are one UPDATE, as TiDB
records a transaction that deletes and re-inserts a key; an old image without a
new one is a DELETE and a new one without an old one an INSERT (so an update
that changed the key is split, as TiCDC splits it).  A key therefore changes at
most once per commit ts, and the sink's commit-ts order is the table's order.

A version's commit ts is the TSO of its commit's millisecond (logical part 0),
or the commit ts of the version before it plus one where that is higher:
Delta's timestamps need not grow with the version (without in-commit
timestamps they are file times), and a commit ts must.  A feed read by ranges
of versions continues above the last commit ts of the range before
(``after_commit_ts``).
"""

from __future__ import annotations

from typing import Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..errors import ConfigError
from ..tso import TSO_LOGICAL_BITS

CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP = "_change_type", "_commit_version", "_commit_timestamp"
OLD_IMAGES, NEW_IMAGES = ("update_preimage", "delete"), ("update_postimage", "insert")


def from_delta_cdf(cdf: DataFrame, primary_key: str | Sequence[str], after_commit_ts: int = 0) -> DataFrame:
    """The changes of a Delta change data feed as the sink takes them: ``_op``, ``_commit_ts``, the table's
    columns and ``_before``; ``primary_key`` (a column or several, as the sink's ``primary-key`` option, unique
    in the table) pairs a version's old and new images of a row.  Every commit ts is above ``after_commit_ts``:
    give the highest one sent from the range of versions before this one."""
    keys = [primary_key] if isinstance(primary_key, str) else list(primary_key)
    missing = [c for c in (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP) if c not in cdf.columns]
    if missing:
        raise ConfigError("from_delta_cdf", ", ".join(missing), "a Delta change data feed has _change_type, "
                          "_commit_version and _commit_timestamp: read it with option readChangeFeed=true")
    columns = [c for c in cdf.columns if c not in (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)]
    absent = [k for k in keys if k not in columns]
    if not keys or absent:
        raise ConfigError("primary_key", ", ".join(absent) or None, f"the key columns, among {', '.join(columns)}")

    changes = cdf.join(F.broadcast(_commit_ts_of_versions(cdf, after_commit_ts)), COMMIT_VERSION)
    pairing = ["_commit_ts", *keys]
    olds = changes.where(F.col(CHANGE_TYPE).isin(*OLD_IMAGES))
    news = changes.where(F.col(CHANGE_TYPE).isin(*NEW_IMAGES))
    befores = olds.select(*pairing, F.struct(*[F.col(c) for c in columns]).alias("_before"))
    news = news.join(befores, pairing, "left")
    no_before = F.lit(None).cast(befores.schema["_before"].dataType)
    deletes = olds.join(news.select(*pairing), pairing, "left_anti").withColumn("_before", no_before)
    op = F.when(F.col(CHANGE_TYPE).isin(*OLD_IMAGES), "DELETE").when(F.col("_before").isNull(), "INSERT")
    return news.unionByName(deletes.select(news.columns)).select(
        op.otherwise("UPDATE").alias("_op"), F.col("_commit_ts"), *[F.col(c) for c in columns], F.col("_before"))


def _commit_ts_of_versions(cdf: DataFrame, after_commit_ts: int) -> DataFrame:
    """``_commit_version`` and its ``_commit_ts``, one row per version of the feed: few rows, however many
    changes, so one partition orders them (the constant partition says so to Spark).

    The n-th version's commit ts is the highest of its own millisecond's TSO, the one before it plus one, and
    ``after_commit_ts`` plus n: that is n plus the running maximum of (TSO - n), floored at ``after_commit_ts``.
    """
    versions = cdf.select(COMMIT_VERSION, F.expr(f"unix_millis({COMMIT_TIMESTAMP})").alias("millis")).distinct()
    in_order = Window.partitionBy(F.lit(0)).orderBy(COMMIT_VERSION)
    versions = versions.withColumn("n", F.row_number().over(in_order))
    headroom = F.max(F.shiftleft(F.col("millis"), TSO_LOGICAL_BITS) - F.col("n")).over(
        in_order.rowsBetween(Window.unboundedPreceding, 0))
    return versions.select(COMMIT_VERSION,
                           (F.col("n") + F.greatest(headroom, F.lit(after_commit_ts))).alias("_commit_ts"))
