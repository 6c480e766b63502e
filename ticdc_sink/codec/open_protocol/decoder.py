"""Open Protocol messages back into events: frames split (``frames.py``), values typed by type code and flags."""

from __future__ import annotations

import base64
import datetime as dt
import functools
import json
from decimal import Decimal
from typing import Any

from ...table.mysql_types import (BLOB_CODES, FLAG_BINARY, FLAG_PRIMARY_KEY, TYPE_BIT, TYPE_DATE, TYPE_DATETIME,
                                  TYPE_DOUBLE, TYPE_ENUM, TYPE_FLOAT, TYPE_INT24, TYPE_LONG, TYPE_LONGLONG,
                                  TYPE_NEWDECIMAL, TYPE_SET, TYPE_SHORT, TYPE_STRING, TYPE_TIMESTAMP, TYPE_TINY,
                                  TYPE_VARCHAR, TYPE_YEAR, type_of_code)
from ..base import DDLEvent, Decoder, MessageColumns, RowEvent, WatermarkEvent
from ..shared.decoding import typed_row
from ..shared.json_text import go_unquote_body
from .columns import decode_columns
from .encoder import DDL_EVENT, RESOLVED_EVENT
from .frames import split_frame


class OpenProtocolDecoder(Decoder):
    """Splits a message's frames and restores each event's typed values.

    Column values come back as Python values by their type code: integers
    (ENUM index, SET bitmask, BIT and YEAR too), floats, ``Decimal``, ``date``,
    naive ``datetime`` (in the rendering time zone), ``str`` for TIME, JSON and
    text, ``bytes`` for binary strings and BLOBs.  An update without old values
    cannot be told from an insert, and reads as INSERT.
    """

    @property
    def carries_watermarks(self) -> bool:
        return True

    def decode_columns(self, keys: list, values: list[bytes], types: dict) -> MessageColumns | None:
        return decode_columns(keys, values, types, self.decompressed)

    def decode(self, key: bytes | None, value: bytes) -> list:
        keys = split_frame(key or b"")
        values = split_frame(value or b"", versioned=False)
        if len(keys) != len(values):
            raise ValueError(f"an Open Protocol message with {len(keys)} event keys and {len(values)} values")
        events = []
        for event_key, event_value in zip(keys, values):
            event_key = json.loads(event_key)
            if event_key.get("ccl"):  # the event's whole key and value, framed, are in the claim-check storage
                events += self.decode(*self.claimed(event_key["ccl"]))
            else:
                events.append(self._event(event_key, event_value))
        return events

    def _event(self, key: dict, value: bytes):
        kind = key["t"]
        if kind == RESOLVED_EVENT:
            return WatermarkEvent(key["ts"])
        document = json.loads(self.decompressed(value))
        if kind == DDL_EVENT:
            return DDLEvent(key.get("scm", ""), key.get("tbl", ""), document["q"], document["t"], key["ts"])
        if "d" in document:
            event_type, row = "DELETE", document["d"]
        else:
            event_type, row = ("UPDATE" if "p" in document else "INSERT"), document["u"]
        return RowEvent(type=event_type, database=key["scm"], table=key["tbl"], commit_ts=key["ts"],
                        columns=typed_row(row, _column_value), old=typed_row(document.get("p"), _column_value),
                        primary_keys=[name for name, c in row.items() if c["f"] & FLAG_PRIMARY_KEY],
                        column_types={name: _type_of_code(c["t"], c["f"]) for name, c in row.items()},
                        handle_key_only=bool(key.get("ohk")))


_type_of_code = functools.lru_cache(maxsize=None)(type_of_code)


def _column_value(name: str, column: dict) -> Any:
    return decode_value(column["v"], column["t"], column["f"])


_NUMBER_CODES = {TYPE_TINY, TYPE_SHORT, TYPE_LONG, TYPE_LONGLONG, TYPE_INT24, TYPE_YEAR, TYPE_BIT, TYPE_ENUM,
                 TYPE_SET}


def decode_value(value: Any, code: int, flag: int) -> Any:
    """A column's ``v`` back to a Python value, by its type code and flags."""
    if value is None:
        return None
    if code in _NUMBER_CODES:
        return int(value)
    if code in (TYPE_FLOAT, TYPE_DOUBLE):
        return float(value)
    if code == TYPE_NEWDECIMAL:
        return Decimal(value)
    if code == TYPE_DATE:
        return dt.date.fromisoformat(value)
    if code in (TYPE_TIMESTAMP, TYPE_DATETIME):
        return dt.datetime.fromisoformat(value)
    if code in BLOB_CODES:
        data = base64.b64decode(value)
        return data if flag & FLAG_BINARY else data.decode("utf-8")
    if code in (TYPE_VARCHAR, TYPE_STRING) and flag & FLAG_BINARY:
        return go_unquote_body(value)
    return value
