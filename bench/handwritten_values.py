"""The feed's values as the hand-written encoders render them, shared by every protocol's.

A team writing its own encoders would share such helpers too; keeping them in
one place lets each protocol's module hold only what differs.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

ANY_PARTITION = -1  # confluent-kafka's "the partitioner decides"
_HALF_MILLISECOND = dt.timedelta(microseconds=500)


def text(value) -> str | None:
    """A value as TiCDC's JSON protocols write it: binary as ISO-8859-1, DATETIME with microseconds."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return value.decode("latin-1")
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    return str(value)


def encoded(document, dumps) -> bytes:
    """``dumps(document)`` in bytes, whichever of str or bytes the serialiser returns."""
    result = dumps(document)
    return result if isinstance(result, bytes) else result.encode()


def datetime3(value: dt.datetime) -> str:
    """DATETIME(3), rounded to milliseconds."""
    return text(value + _HALF_MILLISECOND)[:-3]


def signed64(value: Decimal | int) -> int:
    """BIGINT UNSIGNED as a signed 64-bit ``long`` (Avro, Debezium): the same 64 bits, read as signed."""
    number = int(value)
    return number - 2**64 if number >= 2**63 else number


def go_number(value: float):
    """A float64 as Go prints it: a whole number without a fraction (``100``, not ``100.0``). Otherwise
    Python's shortest text is Go's in the feed's range (they differ from 1e16 up and below 1e-4)."""
    return int(value) if value.is_integer() else value
