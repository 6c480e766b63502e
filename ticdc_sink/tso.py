"""The MySQL column model every protocol encodes from.

TiCDC messages describe columns by their MySQL (TiDB) type: a type byte, a
flag word, a short name (``int unsigned``) and a full description
(``int(10) unsigned``).  Spark only knows its own types, so this module holds
the one place where a Spark field becomes a MySQL column: the defaults of the
design's type table, the ``column-types`` grammar and the ``mysql_type`` field
metadata that override them, and the key flags that TiCDC derives from the
table's indexes.  It also holds the TSO helpers, since commit timestamps are
TiDB's own kind of value.
"""

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
