"""A real Delta Lake table's change data feed, through ``from_delta_cdf`` and the sink to Kafka, and read back.

    python integration/delta_change_feed.py BOOTSTRAP_SERVERS TOPIC ISOLATION_LEVEL

Delta's jars (``DELTA_FOR_SPARK``, from Maven Central through ``spark.jars.packages``, cached by Ivy) join
Spark's when its JVM starts, so this runs in a process of its own (``test_delta_lake.py`` starts it).  It makes
a table with the change data feed on, changes it the ways Delta records changes (INSERT, UPDATE, DELETE, MERGE,
an update of the key, an overwrite of rows by ``replaceWhere``), writes the feed as the recipe in
docs/recipes.md does, reads the topic back with the sink's reader, and prints one JSON line: the changes read
back, in commit order, and the table as Delta has it at the end.
"""

from __future__ import annotations

import json
import sys
import tempfile

import pyspark

# The Delta Lake build of each Spark line; Delta publishes none for the lines missing here.
DELTA_FOR_SPARK = {
    "4.0": "io.delta:delta-spark_2.13:4.0.1",
    "4.1": "io.delta:delta-spark_4.1_2.13:4.4.0",
    "4.2": "io.delta:delta-spark_4.2_2.13:4.4.0",
}
SPARK_LINE = ".".join(pyspark.__version__.split(".")[:2])


def delta_spark():
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("ticdc-sink delta change feed")
             .config("spark.jars.packages", DELTA_FOR_SPARK[SPARK_LINE])
             # Spark has slf4j-api already, and Ivy fails on the local Maven cache's copy (its pom without its jar).
             .config("spark.jars.excludes", "org.slf4j:slf4j-api")
             .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
             .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
             .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def change_the_table(spark, path: str) -> None:
    table = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {table} (id INT, status STRING, amount DECIMAL(10,2)) USING delta "
              "TBLPROPERTIES (delta.enableChangeDataFeed = true)")                                   # version 0
    spark.sql(f"INSERT INTO {table} VALUES (1, 'new', 10.00), (2, 'new', 20.00), (3, 'new', 30.00)")  # 1
    spark.sql(f"UPDATE {table} SET status = 'paid' WHERE id = 1")                                     # 2
    spark.sql(f"DELETE FROM {table} WHERE id = 2")                                                    # 3
    spark.sql(f"MERGE INTO {table} t USING (SELECT 3 AS id, 'shipped' AS status UNION ALL "           # 4
              "SELECT 4, 'new') s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.status = s.status "
              "WHEN NOT MATCHED THEN INSERT (id, status, amount) VALUES (s.id, s.status, 40.00)")
    spark.sql(f"UPDATE {table} SET id = 5 WHERE id = 4")                                              # 5
    (spark.createDataFrame([(3, "returned", 30.0)], "id int, status string, amount double")          # 6
     .selectExpr("id", "status", "CAST(amount AS DECIMAL(10,2)) AS amount")
     .write.format("delta").mode("overwrite").option("replaceWhere", "id = 3").save(path))


def main(bootstrap_servers: str, topic: str, isolation: str) -> None:
    from ticdc_sink import from_delta_cdf, order_changes

    spark = delta_spark()
    path = tempfile.mkdtemp(prefix="delta-orders-")
    change_the_table(spark, path)
    options = {"kafka.bootstrap.servers": bootstrap_servers, "topic": topic, "protocol": "canal-json",
               "database": "shop", "table": "orders", "primary-key": "id", "enable-tidb-extension": "true"}

    cdf = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 1).load(path)
    changes = from_delta_cdf(cdf, "id")
    order_changes(changes, options).write.format("ticdc").mode("append").options(**options).save()

    back = spark.read.format("ticdc").options(**options, **{"kafka.isolation.level": isolation}).load()
    read_back = [{"op": r["_op"], "commit_ts": r["_commit_ts"], "id": r["id"], "status": r["status"],
                  "amount": f"{r['amount']:.2f}", "before": r["_before"] and r["_before"]["status"]}
                 for r in back.orderBy("_commit_ts", "id").collect()]
    table = [{"id": r["id"], "status": r["status"], "amount": f"{r['amount']:.2f}"}
             for r in spark.read.format("delta").load(path).orderBy("id").collect()]
    versions = [{"version": r["_commit_version"], "millis": r["millis"]} for r in cdf.selectExpr(
        "_commit_version", "unix_millis(_commit_timestamp) AS millis").distinct().orderBy("_commit_version").collect()]
    print(json.dumps({"read_back": read_back, "table": table, "versions": versions}))
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
