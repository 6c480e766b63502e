"""See the sink work (demo), read a topic it wrote (tail), run a local Kafka broker (broker).

demo streams a synthetic change feed (inserts, updates with old values,
deletes and a DDL, in a few micro-batches) through Spark into Kafka (the
embedded broker unless --bootstrap-servers is given), reads the topic back and
prints one raw message and then every message decoded.  tail prints the
decoded events of any topic.  broker runs the embedded broker until it is
interrupted, for demo, tail and your own Spark jobs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from .broker import BrokerError, EmbeddedBroker
from .codec import PROTOCOLS, decoder_for
from .codec.base import DDLEvent, Decoder, RowEvent, WatermarkEvent
from .codec.open_protocol import split_frame
from .ddl import ACTION_CODES
from .errors import DeliveryError, TiCDCSinkError
from .kafka_io import LIBRDKAFKA_LOG, ClientErrors, iter_messages, read_messages
from .mysql_types import MySQLType, TypeSyntaxError, parse_mysql_type, split_column_types, tso_physical_ms
from .schema_registry import SchemaRegistry, subject

# Above every level: without --verbose the CLI reports a client problem in one line of its own instead.
_SILENT = logging.CRITICAL + 1
_EPOCH = dt.datetime(1970, 1, 1)
_BROKER_CHECK_SECONDS = 1.0


class CommandError(Exception):
    """A failure the CLI reports in one line, without a traceback."""


ACTION_NAMES = {code: name for name, code in ACTION_CODES.items()}  # Open Protocol's DDL type is the code


def say(text: str) -> None:
    print(f"[ticdc-sink] {text}", flush=True)


def complain(text: str) -> None:
    print(f"[ticdc-sink] error: {text}", file=sys.stderr, flush=True)


def tso_wall_time(tso: int) -> str:
    """The UTC wall time of a TiDB TSO: its physical milliseconds sit above 18 logical bits."""
    moment = _EPOCH + dt.timedelta(milliseconds=tso_physical_ms(tso))
    return moment.isoformat(sep=" ", timespec="milliseconds") + " UTC"


def enum_set_types(column_types: str) -> dict[str, MySQLType]:
    """The ENUM and SET columns of a column-types option: their messages carry numbers, not member names."""
    types = {name: parse_mysql_type(text) for name, text in split_column_types(column_types)}
    return {name: t for name, t in types.items() if t.kind in ("enum", "set")}


def _member_names(number: int, column_type: MySQLType) -> str | None:
    """ENUM: the 1-based index's member; SET: the members of the bitmask (None when out of range)."""
    members = column_type.elements
    if column_type.kind == "enum":
        return members[number - 1] if 1 <= number <= len(members) else None
    if number >> len(members):
        return None
    return ",".join(m for bit, m in enumerate(members) if number >> bit & 1)


def _show(value, column_type: MySQLType | None = None) -> str:
    if column_type is not None and isinstance(value, int):
        names = _member_names(value, column_type)
        return f"{value} ({names})" if names is not None else str(value)
    if isinstance(value, (str, bytes)):
        return repr(value)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    return str(value)


def format_event(event, enum_set_columns: Mapping[str, MySQLType] | None = None) -> str:
    """One readable line per decoded event; ENUM and SET numbers of ``enum_set_columns`` get their names."""
    if isinstance(event, WatermarkEvent):
        return f"WATERMARK  ts={event.ts} ({tso_wall_time(event.ts)})"
    if isinstance(event, DDLEvent) and event.type == "BOOTSTRAP":  # Simple: a table's schema, no statement
        return f"BOOTSTRAP  {event.database}.{event.table}: the table's schema"
    if isinstance(event, DDLEvent):
        committed = "" if event.commit_ts is None else \
            f" (commit ts {event.commit_ts}, {tso_wall_time(event.commit_ts)})"
        kind = event.type if isinstance(event.type, str) else f"{event.type} ({ACTION_NAMES.get(event.type, '?')})"
        return f"DDL {kind:<9} {event.database}.{event.table}: {event.query}{committed}"
    assert isinstance(event, RowEvent)
    types = enum_set_columns or {}

    def show(name: str, value) -> str:
        return _show(value, types.get(name))

    def row(values: dict) -> str:
        return "{" + ", ".join(f"{k}={show(k, v)}" for k, v in values.items()) + "}"

    where = f"{event.database}.{event.table}"
    if event.type == "UPDATE" and event.old is not None:
        changed = {k: f"{show(k, event.old.get(k))} -> {show(k, v)}" for k, v in event.columns.items()
                   if k in event.old and event.old[k] != v}
        keys = {k: event.columns[k] for k in event.primary_keys}
        return f"UPDATE {where} {row(keys)} " + ", ".join(f"{k}: {c}" for k, c in changed.items())
    return f"{event.type:<6} {where} {row(event.columns)}"


def print_events(messages: Iterable, decoder: Decoder,
                 enum_set_columns: Mapping[str, MySQLType] | None = None) -> int:
    """Decode and print messages as they come; returns how many were read."""
    count = 0
    for message in messages:
        count += 1
        for event in decoder.decode(message.key(), message.value()):
            print(f"  p{message.partition()}@{message.offset():<4} {format_event(event, enum_set_columns)}",
                  flush=True)
    return count


def check_topic(bootstrap_servers: str, topic: str, timeout_seconds: float, errors: ClientErrors) -> None:
    """Fail in one line, within the timeout, when the brokers cannot be reached or the topic is missing."""
    admin = AdminClient({"bootstrap.servers": bootstrap_servers, **errors.settings})
    try:
        topics = admin.list_topics(timeout=timeout_seconds).topics
    except KafkaException as e:
        admin.poll(0)  # serves error_cb: the connection errors behind the failure
        cause = errors.distinct[0] if errors.distinct else e.args[0].str()
        raise CommandError(
            f"cannot reach Kafka at {bootstrap_servers} within {timeout_seconds:g} s ({cause}); "
            "check --bootstrap-servers, or start a broker with: python -m ticdc_sink broker") from None
    if topic not in topics:
        raise CommandError(f"topic {topic!r} does not exist on {bootstrap_servers}")


def protocol_decoder(protocol: str, schema_registry: str | None) -> Decoder:
    """The decoder of the protocol; Avro's reads its schemas from the registry."""
    if protocol == "avro" and not schema_registry:
        raise CommandError("--protocol avro needs --schema-registry URL: the registry the sink registered the "
                           "schemas in")
    return decoder_for(protocol, schema_registry=schema_registry if protocol == "avro" else None)


def run_tail(bootstrap_servers: str, topic: str, protocol: str, idle_seconds: float, max_messages: int | None,
             timeout_seconds: float, column_types: str | None, schema_registry: str | None = None,
             read_uncommitted: bool = False) -> int:
    try:
        enum_set_columns = enum_set_types(column_types or "")
    except TypeSyntaxError as e:
        raise CommandError(f"--column-types: {e}") from None
    decoder = protocol_decoder(protocol, schema_registry)
    errors = ClientErrors()
    check_topic(bootstrap_servers, topic, timeout_seconds, errors)
    isolation = "read_uncommitted" if read_uncommitted else "read_committed"
    messages = iter_messages(bootstrap_servers, topic, idle_seconds=idle_seconds, max_messages=max_messages,
                             settings={**errors.settings, "isolation.level": isolation})
    try:
        count = print_events(messages, decoder, enum_set_columns)
    except (DeliveryError, KafkaException) as e:
        detail = e.args[0].str() if isinstance(e, KafkaException) else str(e)
        raise CommandError(f"reading {topic!r} from {bootstrap_servers} failed: {detail}") from None
    say(f"{count} message(s) decoded")
    if errors.distinct:
        say(f"the client reported errors while reading (the topic may hold more than was read): "
            f"{'; '.join(errors.distinct)}")
    return 0


# ---------------------------------------------------------------------------
# broker

def run_broker() -> int:
    """Serve the embedded broker until SIGINT or SIGTERM, then stop it: no Tansu process outlives the command."""
    # Both unwind as KeyboardInterrupt; SIGINT too, since a shell starts background jobs with SIGINT ignored.
    for stop_signal in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop_signal, signal.default_int_handler)
    broker = EmbeddedBroker().start()  # stops what it started when it fails or is interrupted
    try:
        address = broker.bootstrap_servers
        print(address, flush=True)
        say(f"embedded Kafka broker (Tansu, data in memory) running until Ctrl-C; use it with "
            f"demo/tail --bootstrap-servers {address}, or the Spark option kafka.bootstrap.servers={address}")
        port = int(address.rsplit(":", 1)[1])
        while _accepts_connections(port):
            time.sleep(_BROKER_CHECK_SECONDS)
        raise CommandError(f"the broker at {address} stopped by itself; the end of its log:\n"
                           + broker.log_path.read_text(errors="replace")[-2000:])
    except KeyboardInterrupt:
        say("stopping the broker")
        return 0
    finally:
        for stop_signal in (signal.SIGINT, signal.SIGTERM):  # a second Ctrl-C must not cut the stop short
            signal.signal(stop_signal, signal.SIG_IGN)
        broker.stop()
        say("broker stopped")


def _accepts_connections(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=_BROKER_CHECK_SECONDS):
            return True
    except OSError:
        return False


# ---------------------------------------------------------------------------
# demo

DEMO_DATABASE, DEMO_TABLE = "shop", "orders"
DEMO_COLUMN_TYPES = "status ENUM('new','paid','shipped')"


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


def _wire_text(data: bytes | None) -> str:
    return "(none)" if data is None else data.decode("utf-8", errors="backslashreplace")


def _wire_hex(data: bytes | None) -> str:
    """A Confluent Avro key or value: its magic byte and schema id apart from the record's bytes."""
    if data is None:
        return "(none: a tombstone)"
    return f"{data[:1].hex()} | schema id {int.from_bytes(data[1:5], 'big')} | {data[5:].hex(' ')}"


def explain_topic(messages: list, protocol: str, schema_registry: str | None = None) -> None:
    """What a reader of the topic meets before the decoded events: a raw message, offset gaps, watermarks."""
    first = next((m for m in messages if m.value() is not None), messages[0])
    say(f"one message as it is on the wire (partition {first.partition()}, offset {first.offset()}):")
    if protocol == "open-protocol":
        keys, values = split_frame(first.key()), split_frame(first.value(), versioned=False)
        say(f"an Open Protocol message packs events ({len(keys)} here): its key is the version (8 bytes "
            "big-endian, 1) then each event key after its 8-byte length, its value each event value after its "
            "length; below, the events of one message share its partition@offset")
        for number, (key, value) in enumerate(zip(keys, values), start=1):
            print(f"  event {number} key:   {_wire_text(key)}")
            print(f"  event {number} value: {_wire_text(value)}", flush=True)
    elif protocol == "avro":
        say("an Avro message is in the Confluent wire format: byte 00, the schema's registry id (4 bytes "
            "big-endian), then the Avro binary of one record; the key holds the row's key (here the primary "
            "key), the value every column and the TiDB extension fields (_tidb_op, commit ts, physical time)")
        print(f"  key:   {_wire_hex(first.key())}")
        print(f"  value: {_wire_hex(first.value())}", flush=True)
        if first.value() is not None:
            value_id = int.from_bytes(first.value()[1:5], "big")
            registry = SchemaRegistry.at(schema_registry)
            try:
                schema = registry.schema_text(value_id)
            finally:
                registry.close()
            print(f"  value schema {value_id} (subject {subject(first.topic(), 'value')}): {schema}", flush=True)
        say("Avro has no DDL or watermark events (TiCDC sends none in this protocol), so the feed's ALTER TABLE "
            "is not in the topic; a DELETE is its key and a null value (a Kafka tombstone), and an UPDATE "
            "carries the new row only")
    else:
        if protocol == "debezium":
            say("a Debezium message is JSON: its key holds the row's key columns (here the primary key), its value "
                "the change (source block with the commit ts, op c/u/d, before and after rows), each with the "
                "Kafka Connect schema that types it; the DDL is a SchemaChangeValue event on every partition")
        elif protocol == "simple":
            say("a Simple message has no key; each partition opens with a BOOTSTRAP (the table's schema, "
                "tableSchema), and a row carries only its schemaVersion: a consumer decodes rows once it holds "
                "the schema of that version, from a BOOTSTRAP or a DDL (encoding-format=avro: TiCDC's Avro schema, "
                "the bytes below in hex)")
        avro_bytes = protocol == "simple" and first.value()[:1] == b"\x16"
        print(f"  key:   {_wire_text(first.key())}")
        print(f"  value: {first.value().hex(' ') if avro_bytes else _wire_text(first.value())}", flush=True)
    say("offsets skip numbers: the sink writes in Kafka transactions, and each committed transaction "
        "leaves a control record (its commit marker) that takes an offset but holds no message")
    if protocol != "avro":
        say("WATERMARK ts is a TiDB TSO, physical milliseconds << 18 | logical counter (its UTC wall time is "
            "shown next to it): every change committed up to ts is in the partition before the watermark")
    enums = ("ENUM values as the decoder restores them, TiDB's index, with the name the message carries"
             if protocol == "avro" else "ENUM numbers with their names from column-types")
    say(f"the decoded {protocol} events ({enums}):")


@contextmanager
def demo_registry(protocol: str, url: str | None) -> Iterator[str | None]:
    """Avro's schema registry for the demo: the one given, else the repository's Schema Registry TEST DOUBLE."""
    if protocol != "avro" or url:
        yield url
        return
    path = Path(__file__).resolve().parents[1] / "tests" / "schema_registry_double.py"
    if not path.exists():
        raise CommandError("the avro demo starts the Schema Registry test double of the repository's tests/ "
                           f"folder, which is not at {path}: run it from a clone, or give --schema-registry URL")
    spec = importlib.util.spec_from_file_location("schema_registry_double", path)
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # its dataclasses look it up there
    spec.loader.exec_module(module)
    with module.SchemaRegistryDouble() as double:
        say(f"started a Schema Registry TEST DOUBLE at {double.url} (tests/schema_registry_double.py: in memory, "
            "for the tests and this demo only; give --schema-registry URL to use a real registry)")
        yield double.url


def run_demo(protocol: str, bootstrap_servers: str | None, topic: str, schema_registry: str | None = None) -> int:
    with demo_registry(protocol, schema_registry) as registry:
        return _demo(protocol, bootstrap_servers, topic, registry)


def _demo(protocol: str, bootstrap_servers: str | None, topic: str, schema_registry: str | None) -> int:
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
        for number, batch in enumerate(demo_feed()):
            spark.createDataFrame(batch, schema).coalesce(1).write.parquet(os.path.join(feed_dir, f"batch={number}"))
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
                 .option("enable-tidb-extension", "true")
                 .options(**({"schema-registry": schema_registry} if schema_registry else {}))
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
        query.awaitTermination()
        spark.stop()
        say(f"reading topic {topic!r} back, in partition order:")
        messages = read_messages(bootstrap_servers, topic, idle_seconds=3, settings=ClientErrors().settings)
        if not messages:
            raise CommandError(f"topic {topic!r} on {bootstrap_servers} has no messages")
        explain_topic(messages, protocol, schema_registry)
        count = print_events(messages, protocol_decoder(protocol, schema_registry), enum_set_types(DEMO_COLUMN_TYPES))
        say(f"{count} message(s) decoded")
        return 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if broker is not None:
            broker.stop()
            say("embedded broker stopped")


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
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m ticdc_sink", description=__doc__)
    parser.set_defaults(verbose=False)  # broker has no Kafka client to be verbose about
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--verbose", action="store_true", help="show the Kafka client's (librdkafka's) log lines")
    commands = parser.add_subparsers(dest="command", required=True)

    demo_help = "stream a synthetic change feed through Spark into Kafka and show what a reader sees"
    demo = commands.add_parser("demo", parents=[common], help=demo_help, description=demo_help)
    demo.add_argument("--protocol", default="canal-json", choices=PROTOCOLS)
    demo.add_argument("--bootstrap-servers", metavar="HOST:PORT[,HOST:PORT...]",
                      help="an existing Kafka cluster (default: start the embedded broker)")
    demo.add_argument("--topic", default=f"ticdc-demo-{int(time.time())}",
                      help="the topic (avro: its prefix; the topic is <prefix>_shop_orders)")
    demo.add_argument("--schema-registry", metavar="URL",
                      help="avro: a Confluent Schema Registry (default: start the repository's test double)")

    tail_help = "print the decoded events of a topic, from its beginning"
    tail = commands.add_parser("tail", parents=[common], help=tail_help, description=tail_help)
    tail.add_argument("--bootstrap-servers", required=True, metavar="HOST:PORT[,HOST:PORT...]")
    tail.add_argument("--topic", required=True)
    tail.add_argument("--protocol", required=True, choices=PROTOCOLS)
    tail.add_argument("--idle-seconds", type=float, default=5.0,
                      help="stop after this long without a new message (default 5)")
    tail.add_argument("--max-messages", type=int, help="stop after this many messages")
    tail.add_argument("--timeout-seconds", type=float, default=10.0,
                      help="give up when the brokers do not answer within this time (default 10)")
    tail.add_argument("--schema-registry", metavar="URL", help="avro: the registry the schemas are in")
    tail.add_argument("--column-types", help="the sink's column-types option, to show ENUM and SET members "
                                             "next to their numbers, e.g. \"status ENUM('new','paid')\"")
    tail.add_argument("--read-uncommitted", action="store_true",
                      help="also show messages of transactions not committed (yet): those an open or hanging "
                           "transaction holds back, or that the embedded broker's read_committed view stopped at")

    broker_help = ("run the embedded Kafka-compatible broker (Tansu, data in memory) until Ctrl-C or SIGTERM; "
                   "its address is the first line of output")
    commands.add_parser("broker", help=broker_help, description=broker_help)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.verbose:
        logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s: %(message)s")
    LIBRDKAFKA_LOG.setLevel(logging.NOTSET if args.verbose else _SILENT)
    try:
        if args.command == "demo":
            return run_demo(args.protocol, args.bootstrap_servers, args.topic, args.schema_registry)
        if args.command == "broker":
            return run_broker()
        return run_tail(args.bootstrap_servers, args.topic, args.protocol, args.idle_seconds, args.max_messages,
                        args.timeout_seconds, args.column_types, args.schema_registry, args.read_uncommitted)
    except (CommandError, BrokerError, TiCDCSinkError) as e:
        complain(str(e))
        return 1
    except KeyboardInterrupt:
        return 130
