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
import logging
import sys
import time
from pathlib import Path

from ..codec import PROTOCOLS
from ..embedded.broker import BrokerError
from ..errors import TiCDCSinkError
from ..kafka.client_log import LIBRDKAFKA_LOG
from ..kafka.token_callback import check as check_token_callback
from .broker_command import run_broker
from .demo import run_demo
from .demo import token_within as demo_token_within
from .output import CommandError, complain
from .tail import run_tail
from .tail import token_within as tail_token_within

# Above every level: without --verbose the CLI reports a client problem in one line of its own instead.
_SILENT = logging.CRITICAL + 1


def program_name() -> str:
    """How the user ran the command line: the ``ticdc-sink`` console script, or ``python -m ticdc_sink``."""
    return "ticdc-sink" if Path(sys.argv[0]).name == "ticdc-sink" else "python -m ticdc_sink"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=program_name(), description=__doc__)
    parser.set_defaults(verbose=False)  # broker has no Kafka client to be verbose about
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--verbose", action="store_true", help="show the Kafka client's (librdkafka's) log lines")
    common.add_argument("-X", dest="kafka_settings", action="append", type=_option, default=[], metavar="KEY=VALUE",
                        help="a librdkafka setting of the Kafka clients (repeatable), e.g. "
                             "-X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN -X sasl.username=U")
    common.add_argument("-o", "--option", dest="options", action="append", type=_option, default=[],
                        metavar="NAME=VALUE",
                        help="an option of the ticdc format, as the writer took it (repeatable), e.g. "
                             "-o large-message-handle-compression=lz4 -o claim-check-storage-uri=file:///tmp/cc")
    commands = parser.add_subparsers(dest="command", required=True)

    demo_help = "stream a synthetic change feed through Spark into Kafka and show what a reader sees"
    demo = commands.add_parser("demo", parents=[common], help=demo_help, description=demo_help)
    demo.add_argument("--protocol", default="canal-json", choices=PROTOCOLS)
    demo.add_argument("--bootstrap-servers", metavar="HOST:PORT[,HOST:PORT...]",
                      help="an existing Kafka cluster (default: start the embedded broker)")
    demo.add_argument("--topic", default=f"ticdc-demo-{int(time.time())}",
                      help="the topic (avro: its prefix; the topic is <prefix>_shop_orders)")
    demo.add_argument("--schema-registry", metavar="URL",
                      help="avro: a Confluent Schema Registry (default: start the package's in-memory test double)")

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
    broker = commands.add_parser("broker", help=broker_help, description=broker_help)
    broker.add_argument("--port", type=int, help="the loopback port to serve on (default: a free one), e.g. 9092")
    return parser


def _option(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    return name.strip(), value


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.verbose:
        logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s: %(message)s")
    LIBRDKAFKA_LOG.setLevel(logging.NOTSET if args.verbose else _SILENT)
    try:
        if args.command != "broker":  # before any client or Spark starts, bounded as the command's clients
            within = tail_token_within(args.timeout_seconds) if args.command == "tail" \
                else demo_token_within(dict(args.options))
            check_token_callback(dict(args.kafka_settings), prefix="-X ", within=within)
        if args.command == "demo":
            return run_demo(args.protocol, args.bootstrap_servers, args.topic, args.schema_registry,
                            dict(args.options), dict(args.kafka_settings))
        if args.command == "broker":
            return run_broker(args.port)
        return run_tail(args.bootstrap_servers, args.topic, args.protocol, args.idle_seconds, args.max_messages,
                        args.timeout_seconds, args.column_types, args.schema_registry, args.read_uncommitted,
                        dict(args.options), dict(args.kafka_settings))
    except (CommandError, BrokerError, TiCDCSinkError) as e:
        complain(str(e))
        return 1
    except KeyboardInterrupt:
        return 130
