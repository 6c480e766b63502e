"""A write through Spark and a read back, by the package as a user installed it.

wheel_check.py runs a copy of this file with the Python of a clean venv that has the wheel, from a folder outside
the repository: ``format("ticdc")`` is found by Spark through the installed ``pyspark_ticdc`` module, and nothing
of the repository can be imported. The changes are the README's complete example; they must come back as written.
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession

from ticdc_sink import order_changes
from ticdc_sink.broker import EmbeddedBroker

SCHEMA = "_op string, _commit_ts long, id int, status string, _before struct<id:int, status:string>"
CHANGES = [
    ("INSERT", 450000000000000000, 1, "new", None),
    ("INSERT", 450000000000000001, 2, "new", None),
    ("UPDATE", 450000000000000002, 1, "paid", (1, "new")),
    ("DELETE", 450000000000000003, 2, "new", None),
]


def main() -> int:
    with EmbeddedBroker() as broker:
        spark = (SparkSession.builder.master("local[2]").appName("ticdc-sink-wheel-check")
                 .config("spark.ui.enabled", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "protocol": "canal-json",
                   "topic": "shop_orders", "database": "shop", "table": "orders", "primary-key": "id",
                   "enable-tidb-extension": "true"}
        changes = spark.createDataFrame(CHANGES, SCHEMA)
        order_changes(changes, options).write.format("ticdc").mode("append").options(**options).save()
        back = (spark.read.format("ticdc").options(**options)
                .option("kafka.isolation.level", "read_uncommitted")  # the embedded broker's read (docs/limits.md)
                .load().select("_op", "_commit_ts", "id", "status", "_before").orderBy("_commit_ts").collect())
        spark.stop()
    read = [(r._op, r._commit_ts, r.id, r.status, None if r._before is None else tuple(r._before)) for r in back]
    if read != CHANGES:
        print(f"read back {read}, not the {len(CHANGES)} changes written: {CHANGES}", file=sys.stderr)
        return 1
    print(f"wrote {len(CHANGES)} changes through Spark (canal-json) and read the same {len(read)} back")
    return 0


if __name__ == "__main__":
    sys.exit(main())
