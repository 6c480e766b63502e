"""Which protocol a message is in, told by its form: a read given the wrong protocol fails saying so.

A decoder takes any message for one of its protocol's: another protocol's
fails on a field it lacks (``KeyError: 'type'``), or reads as something else
(Simple took Canal-JSON's watermark for a DDL).  The forms, as the encoders
write them:

- open-protocol: the key is a frame of version 1 (``open_protocol/frames.py``);
- canal-json: a JSON object with ``isDdl``; debezium: one with ``payload``;
  simple: one with ``version`` and ``type``, or Simple's Avro (first byte 0x16);
- avro and debezium-avro: Confluent's wire format (magic byte 0, schema id), or
  AWS Glue's (header version 3, compression 0, schema version UUID);
  debezium-avro's value schema is a Debezium envelope (``source``, ``ts_ms``),
  avro's the table's columns;
- a tombstone (a key without a value): avro's DELETE, and what Debezium writes
  after a delete for log compaction, told apart by the key's form (a registry's,
  or Debezium's JSON); read as a protocol whose topics hold none, it is named.
"""

from __future__ import annotations

import json
import struct

from .base import Decoder, Event, RowEvent
from .open_protocol.frames import VERSION
from .shared.compression import compression_hint
from .shared.glue_schema_registry import COMPRESSION_NONE, HEADER_SIZE, HEADER_VERSION
from .shared.schema_registry import UsesSchemaRegistry

_OPEN_PROTOCOL_KEY = struct.pack(">Q", VERSION)
_REGISTERED = ("avro", "debezium-avro")  # in a schema registry's wire format
_ANY_TOMBSTONE = ("avro", "debezium", "debezium-avro")  # the protocols whose topics hold tombstones
# The protocols a tombstone may be of, by its key (``_tombstone``), and what such a tombstone is.
_TOMBSTONES = {_REGISTERED: "as avro writes a delete", ("debezium",): "as debezium writes after a delete",
               _ANY_TOMBSTONE: "as avro writes a delete, and debezium after one"}
_JSON_MEMBERS = {"canal-json": ("isDdl",), "debezium": ("payload",), "simple": ("version", "type")}


class NotOfProtocol(ValueError):
    """A message in another protocol's form, or in none: what was tried and what the message looks like."""

    def __init__(self, protocol: str, looks: str):
        self.protocol = protocol
        article = "an" if protocol[0] in "aeiou" else "a"
        super().__init__(f"not {article} {protocol} message ({looks})")


def decode(decoder: Decoder, key: bytes | None, value: bytes | None) -> list[Event]:
    """``decoder.decode``, or NotOfProtocol for a message in another form: where decoding failed (a field
    missing), and where it gave no row (what it took for a control event may be another protocol's)."""
    try:
        events = decoder.decode(key, value)
    except Exception:
        _check(decoder, key, value)
        raise
    if not any(isinstance(event, RowEvent) for event in events):
        _check(decoder, key, value)
    return events


def _check(decoder: Decoder, key: bytes | None, value: bytes | None) -> None:
    """Raise NotOfProtocol where the message's form is not the decoder's protocol's; a message whose bytes cannot
    tell (not JSON, a compressed value) passes, for the decoder's own error to name."""
    protocol = decoder.config.protocol
    forms = _protocols_of(decoder, key, value)
    if forms is None or protocol in forms:
        return
    if value is None:
        looks = f"a tombstone: a key without a value, {_TOMBSTONES[forms]}"
    else:
        looks = f"it looks like {' or '.join(forms)}" if forms else "JSON of no TiCDC protocol"
    raise NotOfProtocol(protocol, looks) from None


def _protocols_of(decoder: Decoder, key: bytes | None, value: bytes | None) -> tuple[str, ...] | None:
    """The protocols whose form the message has (none: a JSON object of no protocol's), or None where its bytes
    cannot tell (not JSON, nor Avro, nor a frame; an LZ4 frame, which large-message-handle-compression is the
    writer's to name)."""
    if key is not None and key.startswith(_OPEN_PROTOCOL_KEY):
        return ("open-protocol",)
    if value is None:
        return _tombstone(decoder, key)
    if compression_hint(value):
        return None
    value = _as_written(decoder, value)
    if _is_registered(value):
        return _registered(decoder, value)
    if value[:1] == b"\x16":
        return ("simple",)
    try:
        document = json.loads(value)
    except ValueError:
        return None
    if not isinstance(document, dict):
        return ()
    return tuple(p for p, members in _JSON_MEMBERS.items() if all(m in document for m in members))


def _registered(decoder: Decoder, value: bytes) -> tuple[str, ...]:
    """avro or debezium-avro, by the value's schema where the decoder's registry has it."""
    if not isinstance(decoder, UsesSchemaRegistry):
        return _REGISTERED
    try:
        schema = json.loads(decoder.registry.schema_text(decoder.registry.split(value)[0]))
        fields = {f["name"] for f in schema["fields"]}
    except Exception:  # the registry's failure is the decoder's to report
        return _REGISTERED
    return ("debezium-avro",) if {"source", "ts_ms"} <= fields else ("avro",)


def _tombstone(decoder: Decoder, key: bytes | None) -> tuple[str, ...]:
    """The protocols whose topics hold a tombstone with this key (a key of ``_TOMBSTONES``): a key in Confluent's
    form is avro's or debezium-avro's, a JSON one debezium's; without a key, or with one of neither form, it may be
    any of theirs."""
    if key is not None:
        key = _as_written(decoder, key)  # TiCDC compresses Debezium's keys as its values
        if _is_registered(key):
            return _REGISTERED
        try:
            json.loads(key)
            return ("debezium",)
        except ValueError:
            pass
    return _ANY_TOMBSTONE


def _as_written(decoder: Decoder, data: bytes) -> bytes:
    """A key's or value's bytes decompressed as the options say, or as they are where they are not so."""
    try:
        return decoder.decompressed(data)
    except Exception:
        return data


def _is_registered(data: bytes) -> bool:
    """Confluent's wire format, or Glue's."""
    return (data[:1] == b"\x00" and len(data) >= 5) or (
        data[:2] == bytes((HEADER_VERSION, COMPRESSION_NONE)) and len(data) >= HEADER_SIZE)
