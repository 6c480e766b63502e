"""``demo``: a synthetic change feed streamed through Spark into Kafka, read back and explained."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from decimal import Decimal
from typing import Iterator, Mapping

from ..codec.base import Decoder
from ..codec.open_protocol.frames import split_frame
from ..codec.shared.schema_registry import SchemaRegistry, subject
from ..embedded.broker import EmbeddedBroker
from ..embedded.schema_registry import SchemaRegistryDouble
from ..kafka.client_log import ClientErrors
from ..kafka.token_callback import DEFAULT_WITHIN, Within, broker_timeout
from ..kafka.topic_reader import read_messages
from ..table.spark_types import arrow_schema_of
from .output import CommandError, say, spark_failure
from .tail import enum_set_types, print_events, protocol_decoder, uses_registry

DEMO_DATABASE, DEMO_TABLE = "shop", "orders"
# The writer takes amount's from its Spark type, decimal(10,2); a reader of Canal-JSON, which carries no precision,
# needs it declared (without, it reads decimal(38,18)).
DEMO_COLUMN_TYPES = "status ENUM('new','paid','shipped'), amount DECIMAL(10,2)"
DEMO_OPTIONS = {"enable-tidb-extension": "true"}  # the writer's, and so the readers' (commit ts, watermarks)


def demo_feed() -> list[list[dict]]:
    """Three micro-batches of changes to shop.orders, committed a few milliseconds apart."""
    base = int(dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc).timestamp() * 1000)

    def order(i: int, status: str, amount: str) -> dict:
        return {"id": i, "customer": f"customer-{i % 3}", "amount": Decimal(amount), "status": status,
                "updated_at": dt.datetime(2026, 1, 1, 12, i % 60, tzinfo=dt.timezone.utc)}

    def change(op: str, ms: int, row: dict | None, before: dict | None = None, ddl: str | None = None) -> dict:
        empty = dict.fromkeys(["id", "customer", "amount", "status", "updated_at"])
        return {"_op": op, "_commit_ts": (base + ms) << 18, "_before": before, "_ddl": ddl, **(row or empty)}

    first = [change("INSERT", i, order(i, "new", f"{10 * i}.50")) for i in range(1, 6)]
    second = [change("UPDATE", 10 + i, order(i, "paid", f"{10 * i}.50"), before=order(i, "new", f"{10 * i}.50"))
              for i in (1, 2)]
    second.append(change("INSERT", 13, order(6, "new", "99.99")))
    third = [change("DELETE", 20, order(3, "new", "30.50")),
             change("UPDATE", 21, order(6, "shipped", "99.99"), before=order(6, "new", "99.99")),
             change("DDL", 22, None, ddl="ALTER TABLE orders ADD COLUMN note VARCHAR(64)")]
    return [first, second, third]


def demo_schema():
    from pyspark.sql import types as T

    # Nullable because the DDL row leaves the table columns empty; primary-key makes id NOT NULL anyway.
    columns = [
        T.StructField("id", T.IntegerType()),
        T.StructField("customer", T.StringType()),
        T.StructField("amount", T.DecimalType(10, 2)),
        T.StructField("status", T.StringType()),
        T.StructField("updated_at", T.TimestampType()),
    ]
    return T.StructType([
        T.StructField("_op", T.StringType()),
        T.StructField("_commit_ts", T.LongType()),
        T.StructField("_before", T.StructType(columns)),
        T.StructField("_ddl", T.StringType()),
        *columns,
    ])


def write_feed(folder: str, schema) -> None:
    """The feed's micro-batches as Parquet files, oldest first by modification time (the order Spark's file
    stream takes them in); written by pyarrow, since three Spark jobs would take seconds for eleven rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = arrow_schema_of(schema)
    os.makedirs(folder)
    written = time.time()
    for number, batch in enumerate(demo_feed()):
        path = os.path.join(folder, f"batch-{number}.parquet")
        pq.write_table(pa.Table.from_pylist(batch, schema=arrow), path)
        os.utime(path, (written + number, written + number))


def _wire_text(data: bytes | None) -> str:
    return "(none)" if data is None else data.decode("utf-8", errors="backslashreplace")


def _wire_hex(data: bytes | None) -> str:
    """A Confluent Avro key or value: its magic byte and schema id apart from the record's bytes."""
    if data is None:
        return "(none: a tombstone)"
    return f"{data[:1].hex()} | schema id {int.from_bytes(data[1:5], 'big')} | {data[5:].hex(' ')}"


# What each protocol's message is, as a reader meets it on the wire.
_WIRE_FORMATS = {
    "open-protocol": "an Open Protocol message packs events ({events} here): its key is the version (8 bytes "
                     "big-endian, 1) then each event key after its 8-byte length, its value each event value after "
                     "its length; below, the events of one message share its partition@offset",
    "avro": "an Avro message is in the Confluent wire format: byte 00, the schema's registry id (4 bytes "
            "big-endian), then the Avro binary of one record; the key holds the row's key (here the primary "
            "key), the value every column and the TiDB extension fields (_tidb_op, commit ts, physical time)",
    "debezium-avro": "a debezium-avro message is in the Confluent wire format (byte 00, the schema's registry id, "
                     "the Avro binary): its key a record of the row's key, its value Debezium's envelope (before, "
                     "after, source with the commit ts, op c/u/d, ts_ms), under the subjects <topic>-key and "
                     "<topic>-value; TiCDC sends its DDL and watermarks for its own tests only, so the feed's ALTER "
                     "TABLE is not in the topic",
    "debezium": "a Debezium message is JSON: its key holds the row's key columns (here the primary key), its value "
                "the change (source block with the commit ts, op c/u/d, before and after rows), each with the "
                "Kafka Connect schema that types it; the DDL is a SchemaChangeValue event on every partition",
    "simple": "a Simple message has no key; each partition opens with a BOOTSTRAP (the table's schema, "
              "tableSchema), and a row carries only its schemaVersion: a consumer decodes rows once it holds "
              "the schema of that version, from a BOOTSTRAP or a DDL (encoding-format=avro: TiCDC's Avro schema, "
              "the bytes below in hex)",
}
_AVRO_HAS_NO_CONTROL_EVENTS = (
    "Avro has no DDL or watermark events (TiCDC sends none in this protocol), so the feed's ALTER TABLE is not in "
    "the topic; a DELETE is its key and a null value (a Kafka tombstone), and an UPDATE carries the new row only")


def explain_topic(messages: list, protocol: str, decoder: Decoder, schema_registry: str | None = None,
                  compression: str = "none") -> None:
    """What a reader of the topic meets before the decoded events: a raw message, offset gaps, watermarks."""
    first = next((m for m in messages if m.value() is not None), messages[0])
    say(f"one message as it is on the wire (partition {first.partition()}, offset {first.offset()}):")
    registered = uses_registry(protocol)
    if compression != "none" and not registered:  # TiCDC compresses no Confluent-framed message
        say(f"large-message-handle-compression={compression}: what TiCDC compresses of a {protocol} message is in "
            f"{compression}'s bytes below; a consumer must be told (nothing in the message says so)")
    if protocol == "open-protocol":
        keys, values = split_frame(first.key()), split_frame(first.value(), versioned=False)
        say(_WIRE_FORMATS[protocol].format(events=len(keys)))
        for number, (key, value) in enumerate(zip(keys, values), start=1):
            print(f"  event {number} key:   {_wire_text(key)}")
            print(f"  event {number} value: {_wire_text(value)}", flush=True)
    elif registered:
        say(_WIRE_FORMATS[protocol])
        print(f"  key:   {_wire_hex(first.key())}")
        print(f"  value: {_wire_hex(first.value())}", flush=True)
        if protocol == "avro":
            _show_value_schema(first, schema_registry)
            say(_AVRO_HAS_NO_CONTROL_EVENTS)
    else:
        if protocol in _WIRE_FORMATS:
            say(_WIRE_FORMATS[protocol])
        avro_bytes = protocol == "simple" and first.value()[:1] == b"\x16"  # encoding-format=avro
        print(f"  key:   {_wire_text(first.key())}")
        print(f"  value: {first.value().hex(' ') if avro_bytes else _wire_text(first.value())}", flush=True)
    say("offsets skip numbers: the sink writes in Kafka transactions, and each committed transaction "
        "leaves a control record (its commit marker) that takes an offset but holds no message")
    if decoder.carries_watermarks:
        say("WATERMARK ts is a TiDB TSO, physical milliseconds << 18 | logical counter (its UTC wall time is "
            "shown next to it): every change committed up to ts is in the partition before the watermark")
    enums = ("ENUM values as the decoder restores them, TiDB's index, with the name the message carries"
             if protocol == "avro" else "ENUM numbers with their names from column-types")
    say(f"the decoded {protocol} events ({enums}):")


def _show_value_schema(message, schema_registry: str) -> None:
    """The registered schema of an Avro message's value, as the registry gives it."""
    if message.value() is None:
        return
    value_id = int.from_bytes(message.value()[1:5], "big")
    registry = SchemaRegistry.at(schema_registry)
    try:
        schema = registry.schema_text(value_id)
    finally:
        registry.close()
    print(f"  value schema {value_id} (subject {subject(message.topic(), 'value')}): {schema}", flush=True)


@contextmanager
def demo_registry(protocol: str, url: str | None) -> Iterator[str | None]:
    """Avro's schema registry for the demo: the one given, else the package's Schema Registry TEST DOUBLE."""
    if not uses_registry(protocol) or url:
        yield url
        return
    with SchemaRegistryDouble() as double:
        say(f"started a Schema Registry TEST DOUBLE at {double.url} (ticdc_sink.embedded.schema_registry: in memory, "
            "for the tests and this demo only; give --schema-registry URL to use a real registry)")
        yield double.url


def token_within(options: Mapping[str, str]) -> Within:
    """How long the demo's token callback (``-X oauth_cb``) may take to give a token: its ``broker-timeout-ms``
    (``-o``), as the sink's own clients take it; one the sink refuses leaves the default here."""
    given = str(options.get("broker-timeout-ms", "")).strip()
    return broker_timeout(int(given)) if given.isdigit() and int(given) > 0 else DEFAULT_WITHIN


def run_demo(protocol: str, bootstrap_servers: str | None, topic: str, schema_registry: str | None = None,
             options: dict[str, str] | None = None, kafka_settings: dict[str, str] | None = None) -> int:
    """``options``: more of the ticdc format's options, for the write, the decoder and the read back alike;
    ``kafka_settings``: librdkafka settings (``-X``), for every Kafka client of the demo."""
    kafka_settings = kafka_settings or {}
    options = {**{f"kafka.{key}": value for key, value in kafka_settings.items()}, **(options or {})}
    with demo_registry(protocol, schema_registry) as registry:
        return _demo(protocol, bootstrap_servers, topic, registry, options, kafka_settings)


def _demo(protocol: str, bootstrap_servers: str | None, topic: str, schema_registry: str | None,
          options: dict[str, str], kafka_settings: dict[str, str]) -> int:
    broker = None
    if bootstrap_servers is None:
        say("starting the embedded Kafka broker (Tansu) ...")
        broker = EmbeddedBroker().start()
        bootstrap_servers = broker.bootstrap_servers
        say(f"broker ready at {bootstrap_servers}")
    workdir = tempfile.mkdtemp(prefix="ticdc-demo-")
    try:
        spark = _local_spark()
        schema = demo_schema()
        feed_dir = os.path.join(workdir, "feed")
        write_feed(feed_dir, schema)
        say(f"wrote a change feed of {sum(len(b) for b in demo_feed())} changes in 3 files; streaming it, "
            "one file per micro-batch")
        changes = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1) \
            .option("recursiveFileLookup", "true").parquet(feed_dir)
        topic_option = topic
        if protocol == "avro":  # TiCDC's rule: one table per topic, named by an expression
            topic_option, topic = f"{topic}_{{schema}}_{{table}}", f"{topic}_{DEMO_DATABASE}_{DEMO_TABLE}"
        query = (changes.writeStream.format("ticdc")
                 .option("kafka.bootstrap.servers", bootstrap_servers)
                 .option("protocol", protocol)
                 .option("topic", topic_option)
                 .option("database", DEMO_DATABASE)
                 .option("table", DEMO_TABLE)
                 .option("primary-key", "id")
                 .option("partition", "index-value")
                 .option("column-types", DEMO_COLUMN_TYPES)
                 .options(**DEMO_OPTIONS)
                 .options(**({"schema-registry": schema_registry} if schema_registry else {}))
                 .options(**options)
                 .option("checkpointLocation", os.path.join(workdir, "checkpoint"))
                 .trigger(availableNow=True)
                 .start())
        reported = 0
        while query.isActive or reported < len(query.recentProgress):
            progress = query.recentProgress
            for p in progress[reported:]:
                say(f"micro-batch {p['batchId']}: {p['numInputRows']} change(s) written to Kafka")
            reported = len(progress)
            if not query.isActive:
                break
            time.sleep(0.5)
        try:
            query.awaitTermination()
        except Exception as error:  # Spark's, carrying the task's failure
            raise CommandError(f"the write failed: {spark_failure(error)}") from None
        say(f"reading topic {topic!r} back, in partition order:")
        messages = read_messages(bootstrap_servers, topic, idle_seconds=3,
                                 settings={**kafka_settings, **ClientErrors().settings},
                                 within=token_within(options))
        if not messages:
            raise CommandError(f"topic {topic!r} on {bootstrap_servers} has no messages")
        decoder = protocol_decoder(protocol, schema_registry, {**DEMO_OPTIONS, **options})
        explain_topic(messages, protocol, decoder, schema_registry,
                      options.get("large-message-handle-compression", "none"))
        count = print_events(messages, decoder, enum_set_types(DEMO_COLUMN_TYPES))
        say(f"{count} message(s) decoded")
        show_read_back(spark, bootstrap_servers, protocol, topic, schema_registry, options,
                       embedded=broker is not None)
        spark.stop()
        return 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if broker is not None:
            broker.stop()
            say("embedded broker stopped")


def show_read_back(spark, bootstrap_servers: str, protocol: str, topic: str, schema_registry: str | None,
                   options: dict[str, str], embedded: bool) -> None:
    """The topic read back into a DataFrame by the ticdc format's reader: the changes as the sink took them."""
    say(f"reading topic {topic!r} back into a DataFrame: spark.read.format('ticdc')")
    frame = (spark.read.format("ticdc")
             .option("kafka.bootstrap.servers", bootstrap_servers)
             .option("protocol", protocol)
             .option("topic", topic)
             .option("column-types", DEMO_COLUMN_TYPES)
             .options(**DEMO_OPTIONS)
             .options(**({"schema-registry": schema_registry} if schema_registry else {}))
             .options(**options)
             # The embedded broker's read_committed view can stall (docs/limits.md); real Kafka's cannot.
             .options(**({"kafka.isolation.level": "read_uncommitted"} if embedded else {}))
             .load())
    frame.orderBy("_commit_ts").drop("_schema", "_table").show(truncate=False)


def _local_spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    say("starting a local Spark session ...")
    spark = (SparkSession.builder.master("local[2]").appName("ticdc-sink-demo")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("OFF")  # a failure is reported in one line (spark_failure)
    return spark
