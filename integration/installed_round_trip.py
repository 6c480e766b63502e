"""A write through Spark and a read back, by the package as a user installed it.

    python installed_round_trip.py                      # the embedded broker, Spark in this process (local)
    spark-submit ... installed_round_trip.py BOOTSTRAP ISOLATION TOPIC   # a broker of the caller's, any master

wheel_check.py runs a copy of this file with the Python of a clean venv that has the wheel, from a folder outside
the repository: ``format("ticdc")`` is found by Spark through the installed ``pyspark_ticdc`` module, and nothing
of the repository can be imported. test_packed_environment.py submits it to a standalone cluster whose executors
get their Python from a packed venv. The changes are the README's complete example; they must come back as
written. It also prints which interpreters the executors' Python workers ran.
"""

from __future__ import annotations

import contextlib
import sys

from pyspark.sql import SparkSession

from ticdc_sink import order_changes

SCHEMA = "_op string, _commit_ts long, id int, status string, _before struct<id:int, status:string>"
CHANGES = [
    ("INSERT", 450000000000000000, 1, "new", None),
    ("INSERT", 450000000000000001, 2, "new", None),
    ("UPDATE", 450000000000000002, 1, "paid", (1, "new")),
    ("DELETE", 450000000000000003, 2, "new", None),
]


def _interpreter(_):
    yield sys.executable


def round_trip(spark: SparkSession, bootstrap_servers: str, isolation: str, topic: str) -> list[tuple]:
    options = {"kafka.bootstrap.servers": bootstrap_servers, "protocol": "canal-json", "topic": topic,
               "database": "shop", "table": "orders", "primary-key": "id", "enable-tidb-extension": "true"}
    changes = spark.createDataFrame(CHANGES, SCHEMA)
    order_changes(changes, options).write.format("ticdc").mode("append").options(**options).save()
    back = (spark.read.format("ticdc").options(**options).option("kafka.isolation.level", isolation)
            .load().select("_op", "_commit_ts", "id", "status", "_before").orderBy("_commit_ts").collect())
    return [(r._op, r._commit_ts, r.id, r.status, None if r._before is None else tuple(r._before)) for r in back]


def main(argv: list[str]) -> int:
    with contextlib.ExitStack() as stack:
        if argv:
            bootstrap_servers, isolation, topic = argv
        else:
            from ticdc_sink.embedded.broker import EmbeddedBroker

            broker = stack.enter_context(EmbeddedBroker())
            # the embedded broker's read (docs/limits.md)
            bootstrap_servers, isolation, topic = broker.bootstrap_servers, "read_uncommitted", "shop_orders"
        spark = (SparkSession.builder.appName("ticdc-sink-installed-round-trip")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        read = round_trip(spark, bootstrap_servers, isolation, topic)
        workers = spark.sparkContext.parallelize(range(4), 4).mapPartitions(_interpreter).distinct().collect()
        spark.stop()
    print(f"executors' Python: {', '.join(sorted(workers))}")
    if read != CHANGES:
        print(f"read back {read}, not the {len(CHANGES)} changes written: {CHANGES}", file=sys.stderr)
        return 1
    print(f"wrote {len(CHANGES)} changes through Spark (canal-json) and read the same {len(read)} back")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
