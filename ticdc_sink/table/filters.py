"""TiDB's table-filter and column-filter rules, as TiCDC's ``column-selectors`` use them.

A table rule is ``[!]schema.table``, a column rule ``[!]column``.  Each part
is a wildcard pattern (``*`` any run of characters, ``?`` one character,
``[a-z]`` and ``[!a-z]`` classes, ``\\`` escaping the next character), a
quoted name (``"a.b"`` or ```a.b```, a doubled quote inside), or a regular
expression between slashes (``/^t_[0-9]+$/``).  The last rule that matches
decides, and ``!`` makes it exclude.  A table matching no rule is not
matched; a column matching no rule is left out.  Names match case-insensitively
(TiDB ``pkg/util/table-filter``; TiCDC ``pkg/sink/columnselector``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


class FilterSyntaxError(ValueError):
    """A rule that is not TiDB's filter syntax; the message says where."""


@dataclass(frozen=True)
class _Rule:
    parts: tuple[re.Pattern, ...]  # one per dotted part
    include: bool

    def matches(self, names: tuple[str, ...]) -> bool:
        return all(p.fullmatch(n) for p, n in zip(self.parts, names))


def _parse_part(rule: str, i: int, dotted: bool) -> tuple[re.Pattern, int]:
    """The pattern of the part starting at ``rule[i]``, and the index after it."""
    if i < len(rule) and rule[i] == "/":
        end = i + 1
        while end < len(rule) and rule[end] != "/":
            end += 2 if rule[end] == "\\" else 1
        if end >= len(rule):
            raise FilterSyntaxError(f"{rule!r}: a regular expression without its closing '/'")
        try:
            return re.compile(rule[i + 1:end], re.IGNORECASE), end + 1
        except re.error as e:
            raise FilterSyntaxError(f"{rule!r}: {e}") from None
    if i < len(rule) and rule[i] in "\"`":
        quote, name, j = rule[i], [], i + 1
        while True:
            if j >= len(rule):
                raise FilterSyntaxError(f"{rule!r}: a quoted name without its closing {quote}")
            if rule[j] == quote:
                if rule[j + 1:j + 2] != quote:
                    break
                j += 1
            name.append(rule[j])
            j += 1
        return re.compile(re.escape("".join(name)), re.IGNORECASE), j + 1
    regex, j = [], i
    while j < len(rule) and not (dotted and rule[j] == "."):
        c = rule[j]
        if c == "\\":
            if j + 1 >= len(rule):
                raise FilterSyntaxError(f"{rule!r}: '\\' at the end escapes nothing")
            regex.append(re.escape(rule[j + 1]))
            j += 2
            continue
        if c == "[":
            end = rule.find("]", j + 2)
            if end < 0:
                raise FilterSyntaxError(f"{rule!r}: a '[' class without its ']'")
            body = rule[j + 1:end]
            regex.append("[" + ("^" + re.escape(body[1:]).replace("\\-", "-") if body.startswith("!")
                                else re.escape(body).replace("\\-", "-")) + "]")
            j = end + 1
            continue
        regex.append(".*" if c == "*" else "." if c == "?" else re.escape(c))
        j += 1
    if j == i:
        raise FilterSyntaxError(f"{rule!r}: an empty name pattern")
    return re.compile("".join(regex), re.IGNORECASE), j


def _parse_rule(rule: str, parts: int) -> _Rule:
    text = rule.strip()
    include = not text.startswith("!")
    text = text if include else text[1:]
    if not text or text.startswith(("#", "@")):
        raise FilterSyntaxError(f"{rule!r}: not a rule (comments and @file imports are the changefeed file's)")
    patterns, i = [], 0
    for number in range(parts):
        pattern, i = _parse_part(text, i, dotted=parts > 1)
        patterns.append(pattern)
        if number < parts - 1:
            if text[i:i + 1] != ".":
                raise FilterSyntaxError(f"{rule!r}: a table rule is schema.table")
            i += 1
    if i != len(text):
        raise FilterSyntaxError(f"{rule!r}: unexpected {text[i:]!r}")
    return _Rule(tuple(patterns), include)


class TableFilter:
    """Table rules (``schema.table``): whether a table is matched."""

    def __init__(self, rules: list[str]):
        self._rules = [_parse_rule(r, 2) for r in rules]

    def matches(self, schema: str, table: str) -> bool:
        for rule in reversed(self._rules):
            if rule.matches((schema, table)):
                return rule.include
        return False


class ColumnFilter:
    """Column rules: whether a column is kept."""

    def __init__(self, rules: list[str]):
        self._rules = [_parse_rule(r, 1) for r in rules]

    def keeps(self, column: str) -> bool:
        for rule in reversed(self._rules):
            if rule.matches((column,)):
                return rule.include
        return False
