"""The protocol registry: protocol name -> (Encoder, Decoder)."""

from __future__ import annotations

from ..config import PROTOCOLS, SinkConfig
from ..errors import ConfigError
from ..mysql_types import TableSchema
from .base import Decoder, DDLEvent, Encoded, EncodedRows, Encoder, RowEvent, WatermarkEvent
from .canal_json import CanalJSONDecoder, CanalJSONEncoder

_CODECS: dict[str, tuple[type[Encoder], type[Decoder]]] = {
    "canal-json": (CanalJSONEncoder, CanalJSONDecoder),
}

IMPLEMENTED_PROTOCOLS = tuple(p for p in PROTOCOLS if p in _CODECS)


def _codec(protocol: str) -> tuple[type[Encoder], type[Decoder]]:
    if protocol not in _CODECS:
        raise ConfigError("protocol", protocol,
                          f"not available in this version; available: {', '.join(IMPLEMENTED_PROTOCOLS)}")
    return _CODECS[protocol]


def encoder_for(config: SinkConfig, table: TableSchema) -> Encoder:
    return _codec(config.protocol)[0](config, table)


def decoder_for(protocol: str) -> Decoder:
    return _codec(protocol)[1]()


__all__ = [
    "Decoder", "DDLEvent", "Encoded", "EncodedRows", "Encoder", "RowEvent", "WatermarkEvent",
    "encoder_for", "decoder_for", "IMPLEMENTED_PROTOCOLS",
]
