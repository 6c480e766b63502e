"""TiDB's timestamps (TSO): physical milliseconds above 18 logical bits."""

from __future__ import annotations

import time

TSO_LOGICAL_BITS = 18


def tso_from_unix_ms(ms: int) -> int:
    """A TSO whose physical part is ``ms`` and whose logical part is 0."""
    return int(ms) << TSO_LOGICAL_BITS


def tso_physical_ms(tso: int) -> int:
    """Milliseconds since the epoch of a TSO (``oracle.ExtractPhysical``)."""
    return int(tso) >> TSO_LOGICAL_BITS


def now_tso() -> int:
    return tso_from_unix_ms(time.time_ns() // 1_000_000)
