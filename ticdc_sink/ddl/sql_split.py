"""SQL text outside quotes and parentheses: what the type grammar and the DDL reader both split."""

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
