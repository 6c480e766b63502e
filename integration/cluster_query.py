"""The exactly-once checks' streaming query as a Spark application of its own, on a standalone cluster.

    python integration/cluster_query.py --master spark://127.0.0.1:PORT --run DIR --options '{"topic": ...}'

A Python process holds one SparkContext, and the test process has its own, so
a query on a cluster runs in a driver process of its own: one that a test can
kill whole (the application) and start again from the checkpoint.  It runs
``exactly_once_checks.start_query`` over the run's feed and checkpoint
(``--run``) with ``availableNow``, prints each micro-batch's progress as a JSON
line on stdout once the query ends, and exits 1 with the query's error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from exactly_once_checks import ARROW_BATCH_ROWS, Run, start_query

# Two cores hold the driver, two executors and Kafka: the serial collector and only the first JIT tier (no compiler
# threads competing) start an application in about half the time, and its micro-batches are small.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def session(master: str):
    from pyspark.sql import SparkSession

    # The executors run on this machine's Workers and share this venv, where the sink is installed: this
    # interpreter is theirs too (and the driver's own Python workers'), and they import ticdc_sink from it.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # the cluster's loopback, not the host name's address
    return (SparkSession.builder.master(master).appName("ticdc-sink-cluster-faults")
            .config("spark.driver.memory", "512m").config("spark.executor.memory", "512m")
            .config("spark.driver.extraJavaOptions", JVM_OPTIONS).config("spark.executor.extraJavaOptions", JVM_OPTIONS)
            .config("spark.executor.cores", "1").config("spark.cores.max", "2")
            .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
            .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(ARROW_BATCH_ROWS))
            .getOrCreate())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python integration/cluster_query.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--master", required=True, help="the standalone Master, spark://HOST:PORT")
    parser.add_argument("--run", required=True, type=Path, help="the run's folder: its feed/ and chk/")
    parser.add_argument("--options", required=True, type=json.loads, help="the sink's options, a JSON object")
    args = parser.parse_args(argv)
    options = args.options
    spark = session(args.master)
    try:
        query = start_query(spark, Run(args.run, options["topic"], options["transactional-id-prefix"]), options)
        try:
            query.awaitTermination()
        except Exception:  # the query's own error, below
            pass
        for progress in query.recentProgress:
            print(progress.json, flush=True)
        error = query.exception()
    finally:
        spark.stop()
    if error is not None:
        print(f"cluster_query: the query failed: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
