"""The protocol registry: protocol name -> (Encoder, Decoder)."""

from __future__ import annotations

from typing import Any, Callable

from ..config import PROTOCOLS, SinkConfig, parse_protocol
from ..mysql_types import TableSchema
from .base import Decoder, DDLEvent, Encoder, RowEvent, WatermarkEvent, wall_clock_ms
from .avro import AvroDecoder, AvroEncoder
from .canal_json import CanalJSONDecoder, CanalJSONEncoder
from .debezium import DebeziumDecoder, DebeziumEncoder
from .open_protocol import OpenProtocolDecoder, OpenProtocolEncoder
from .simple import SimpleDecoder, SimpleEncoder

_CODECS: dict[str, tuple[type[Encoder], type[Decoder]]] = {
    "open-protocol": (OpenProtocolEncoder, OpenProtocolDecoder),
    "canal-json": (CanalJSONEncoder, CanalJSONDecoder),
    "avro": (AvroEncoder, AvroDecoder),
    "debezium": (DebeziumEncoder, DebeziumDecoder),
    "simple": (SimpleEncoder, SimpleDecoder),
}


def _codec(protocol: str) -> tuple[type[Encoder], type[Decoder]]:
    return _CODECS[parse_protocol(protocol)]


def encoder_for(config: SinkConfig, table: TableSchema | None, *, clock: Callable[[], int] = wall_clock_ms,
                registry: Any = None) -> Encoder:
    """The encoder of ``config.protocol`` for ``table`` (None: control events only)."""
    return _codec(config.protocol)[0](config, table, clock=clock, registry=registry)


def decoder_for(config: SinkConfig | str, *, schema_registry: str | None = None) -> Decoder:
    """The decoder of a sink's config, or of a protocol by name with its default settings
    (avro: and the URL of the registry its schemas are in)."""
    if isinstance(config, str):
        if schema_registry is None:
            return _codec(config)[1]()
        config = SinkConfig(protocol=parse_protocol(config), topic="", schema_registry=schema_registry)
    return _codec(config.protocol)[1](config)


__all__ = [
    "Decoder", "DDLEvent", "Encoder", "RowEvent", "WatermarkEvent",
    "encoder_for", "decoder_for", "PROTOCOLS",
]
