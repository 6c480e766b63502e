"""``tail``: the decoded events of a topic, one readable line each."""

from __future__ import annotations

import datetime as dt
from typing import Iterable, Mapping

from confluent_kafka import KafkaException

from ..codec import PROTOCOL_OPTIONS, decoder_for, recognition
from ..codec.base import DDLEvent, Decoder, RowEvent, WatermarkEvent
from ..codec.shared.compression import compression_hint
from ..codec.shared.schema_registry import RegistryOptions
from ..config.sink_options import parse_options
from ..ddl.statements import ACTION_CODES
from ..errors import DeliveryError, TiCDCSinkError
from ..kafka import clients
from ..kafka.client_log import ClientErrors
from ..kafka.token_callback import Within
from ..kafka.topic_reader import iter_messages
from ..table.mysql_types import MySQLType
from ..table.type_grammar import TypeSyntaxError, parse_mysql_type, split_column_types
from ..tso import tso_physical_ms
from .output import CommandError, say

_EPOCH = dt.datetime(1970, 1, 1)


ACTION_NAMES = {code: name for name, code in ACTION_CODES.items()}  # Open Protocol's DDL type is the code


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
    if event.handle_key_only:  # TiCDC sent the row's key alone: it was over max-message-bytes
        return f"{event.type:<6} {where} {row(event.columns)} (handle key only: the row was over max-message-bytes)"
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
        try:
            events = recognition.decode(decoder, message.key(), message.value())
        except recognition.NotOfProtocol as e:
            raise CommandError(f"topic {message.topic()!r} partition {message.partition()} offset "
                               f"{message.offset()}: {e}; check --protocol") from None
        except TiCDCSinkError:
            raise
        except Exception as e:  # a message this decoder, with these options, cannot read
            raise CommandError(f"cannot decode the message at partition {message.partition()} offset "
                               f"{message.offset()}: {type(e).__name__}: {e}{compression_hint(message.value())}; "
                               "check --protocol and the writer's options (-o NAME=VALUE)") from None
        for event in events:
            print(f"  p{message.partition()}@{message.offset():<4} {format_event(event, enum_set_columns)}",
                  flush=True)
    return count


def token_within(timeout_seconds: float) -> Within:
    """How long tail's token callback (``-X oauth_cb``) may take to give a token: ``--timeout-seconds``."""
    return Within(timeout_seconds, f"--timeout-seconds={timeout_seconds:g}")


def _reach_hint(kafka_settings: Mapping[str, str]) -> str:
    """What to check when no broker answered: a secured cluster's settings, or whether a broker runs at all."""
    if any(key.startswith(("security.", "sasl.", "ssl.")) for key in kafka_settings):
        return "check --bootstrap-servers and the -X security settings"
    return "check --bootstrap-servers, or start a broker with: python -m ticdc_sink broker"


def check_topic(bootstrap_servers: str, topic: str, timeout_seconds: float, errors: ClientErrors,
                kafka_settings: Mapping[str, str] | None = None) -> None:
    """Fail in one line, within the timeout, when the brokers cannot be reached or the topic is missing."""
    try:
        admin = clients.admin({**(kafka_settings or {}), "bootstrap.servers": bootstrap_servers, **errors.settings},
                              token_within(timeout_seconds))
    except KafkaException as e:  # a setting librdkafka does not take; its message names it, not its value
        raise CommandError(f"-X: {e.args[0].str()}") from None
    try:
        topics = admin.list_topics(timeout=timeout_seconds).topics
    except KafkaException as e:
        admin.poll(0)  # serves error_cb: the connection errors behind the failure
        raise CommandError(
            f"cannot reach Kafka at {bootstrap_servers} within {timeout_seconds:g} s "
            f"({errors.cause(e.args[0], kafka_settings or {})}); {_reach_hint(kafka_settings or {})}") from None
    if topic not in topics:
        raise CommandError(f"topic {topic!r} does not exist on {bootstrap_servers}")


def uses_registry(protocol: str) -> bool:
    """Whether the protocol's schemas are in a Schema Registry (avro, debezium-avro)."""
    return issubclass(PROTOCOL_OPTIONS[protocol], RegistryOptions)


def protocol_decoder(protocol: str, schema_registry: str | None, options: Mapping[str, str] | None = None) -> Decoder:
    """The decoder of the protocol with the writer's ``options`` (compression, claim-check storage, ...); Avro's
    reads its schemas from the registry."""
    registered = uses_registry(protocol)
    glue = any(name.startswith("glue-schema-registry-") for name in options or {})
    if registered and not schema_registry and not glue:
        raise CommandError(f"--protocol {protocol} needs --schema-registry URL (or AWS Glue's: -o "
                           "glue-schema-registry-name=... -o glue-schema-registry-region=...): the registry the sink "
                           "registered the schemas in")
    given = {"protocol": protocol, "topic": "-", "kafka.bootstrap.servers": "-", **(options or {})}
    if registered and schema_registry:
        given["schema-registry"] = schema_registry
    return decoder_for(parse_options(given, reading=True))


def run_tail(bootstrap_servers: str, topic: str, protocol: str, idle_seconds: float, max_messages: int | None,
             timeout_seconds: float, column_types: str | None, schema_registry: str | None = None,
             read_uncommitted: bool = False, options: Mapping[str, str] | None = None,
             kafka_settings: Mapping[str, str] | None = None) -> int:
    """``kafka_settings``: librdkafka settings of the consumer (security, ...), as ``-X`` gives them."""
    try:
        enum_set_columns = enum_set_types(column_types or "")
    except TypeSyntaxError as e:
        raise CommandError(f"--column-types: {e}") from None
    decoder = protocol_decoder(protocol, schema_registry, options)
    errors = ClientErrors(named="-X ")
    check_topic(bootstrap_servers, topic, timeout_seconds, errors, kafka_settings)
    isolation = "read_uncommitted" if read_uncommitted else "read_committed"
    messages = iter_messages(bootstrap_servers, topic, idle_seconds=idle_seconds, max_messages=max_messages,
                             settings={**(kafka_settings or {}), **errors.settings, "isolation.level": isolation},
                             within=token_within(timeout_seconds))
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
