"""The protocols: name -> encoder, decoder and options, and the services a protocol declares it needs."""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from typing import Callable, Iterator

from ..config.option_group import parse_choice
from ..config.sink import SinkConfig
from ..table.schema import TableSchema
from .avro.decoder import AvroDecoder
from .avro.encoder import AvroEncoder
from .avro.options import AvroOptions
from .base import (DDLEvent, Decoder, Encoder, Event, ProtocolOptions, RowEvent, SendsTableSchemas, WatermarkEvent,
                   wall_clock_ms)
from .canal_json.decoder import CanalJSONDecoder
from .canal_json.encoder import CanalJSONEncoder
from .canal_json.options import CanalJSONOptions
from .debezium.avro_decoder import DebeziumAvroDecoder
from .debezium.avro_encoder import DebeziumAvroEncoder
from .debezium.avro_options import DebeziumAvroOptions
from .debezium.decoder import DebeziumDecoder
from .debezium.encoder import DebeziumEncoder
from .debezium.options import DebeziumOptions
from .open_protocol.decoder import OpenProtocolDecoder
from .open_protocol.encoder import OpenProtocolEncoder
from .open_protocol.options import OpenProtocolOptions
from .shared.claim_check import ClaimCheckStorage
from .shared.schema_registry import UsesSchemaRegistry, open_registry
from .simple.decoder import SimpleDecoder
from .simple.encoder import SimpleEncoder
from .simple.options import SimpleOptions

_CODECS: dict[str, tuple[type[Encoder], type[Decoder]]] = {
    "open-protocol": (OpenProtocolEncoder, OpenProtocolDecoder),
    "canal-json": (CanalJSONEncoder, CanalJSONDecoder),
    "avro": (AvroEncoder, AvroDecoder),
    "debezium": (DebeziumEncoder, DebeziumDecoder),
    "simple": (SimpleEncoder, SimpleDecoder),
    "debezium-avro": (DebeziumAvroEncoder, DebeziumAvroDecoder),
}
PROTOCOL_OPTIONS: dict[str, type[ProtocolOptions]] = {
    "open-protocol": OpenProtocolOptions,
    "canal-json": CanalJSONOptions,
    "avro": AvroOptions,
    "debezium": DebeziumOptions,
    "simple": SimpleOptions,
    "debezium-avro": DebeziumAvroOptions,
}
PROTOCOLS = tuple(_CODECS)
# The protocols that can send a row over max-message-bytes another way (TiCDC's pkg/config/large_message.go).
LARGE_MESSAGE_PROTOCOLS = tuple(sorted(name for name, options in PROTOCOL_OPTIONS.items()
                                       if options.handles_large_messages))


def parse_protocol(value: str) -> str:
    return parse_choice("protocol", value, PROTOCOLS)


def _codec(protocol: str) -> tuple[type[Encoder], type[Decoder]]:
    return _CODECS[parse_protocol(protocol)]


def _with_options(config: SinkConfig) -> SinkConfig:
    """``config``, with its protocol's default options where none were parsed (a config made in code)."""
    if config.protocol_options is not None:
        return config
    return dataclasses.replace(config, protocol_options=PROTOCOL_OPTIONS[parse_protocol(config.protocol)]())


def encoder_for(config: SinkConfig, table: TableSchema | None, *,
                clock: Callable[[], int] = wall_clock_ms) -> Encoder:
    """The encoder of ``config.protocol`` for ``table`` (None: control events only)."""
    return _codec(config.protocol)[0](_with_options(config), table, clock=clock)


@contextmanager
def open_encoder(config: SinkConfig, table: TableSchema | None) -> Iterator[Encoder]:
    """A task's encoder, and the services it opened (a schema-registry client) closed however the task ends."""
    encoder = encoder_for(config, table)
    try:
        yield encoder
    finally:
        if isinstance(encoder, UsesSchemaRegistry):
            encoder.close_registry()


def check_services(config: SinkConfig) -> None:
    """Fail at once, on the driver, when a service the sink needs (a schema registry, the claim-check storage)
    cannot be used."""
    if config.large_message_handle_option == "claim-check":
        ClaimCheckStorage.of(config).check()
    if issubclass(_codec(config.protocol)[0], UsesSchemaRegistry):
        registry = open_registry(_with_options(config))
        try:
            registry.check_reachable()
        finally:
            registry.close()


def decoder_for(config: SinkConfig | str, *, schema_registry: str | None = None) -> Decoder:
    """The decoder of a sink's config, or of a protocol by name with its default settings
    (avro: and the URL of the registry its schemas are in)."""
    if isinstance(config, str):
        protocol = parse_protocol(config)
        options = PROTOCOL_OPTIONS[protocol](**({"schema_registry": schema_registry} if schema_registry else {}))
        config = SinkConfig(protocol=protocol, topic="", protocol_options=options)
    return _codec(config.protocol)[1](_with_options(config))


__all__ = [
    "Decoder", "DDLEvent", "Encoder", "Event", "RowEvent", "SendsTableSchemas", "WatermarkEvent",
    "encoder_for", "open_encoder", "check_services", "decoder_for", "parse_protocol", "PROTOCOLS",
    "PROTOCOL_OPTIONS", "LARGE_MESSAGE_PROTOCOLS",
]
