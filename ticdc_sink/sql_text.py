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


def outside_quotes(text: str):
    """(position, character, parenthesis depth after it) of each character of SQL text outside quotes
    (a backslash escapes the next character in a '' or "" string)."""
    depth, quote, escaped = 0, None, False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\" and quote != "`":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "'`\"":
            quote = ch
            continue
        depth += 1 if ch == "(" else -1 if ch == ")" else 0
        yield i, ch, depth


def split_top_level(text: str) -> list[str]:
    """Split SQL text at the commas outside parentheses and quotes."""
    items, start = [], 0
    for i, ch, depth in outside_quotes(text):
        if ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return items
