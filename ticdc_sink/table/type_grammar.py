"""The MySQL type grammar of the ``column-types`` option and of the ``mysql_type`` field metadata."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..ddl.sql_split import outside_quotes, split_top_level
from .mysql_types import INTEGER_KINDS, KIND_NAMES, STRING_KINDS, MySQLType, with_defaults

# Names the grammar accepts that are another kind, maybe with the binary charset.
_ALIASES: dict[str, tuple[str, bool]] = {
    "integer": ("int", False),
    "int4": ("int", False),
    "int1": ("tinyint", False),
    "int2": ("smallint", False),
    "int3": ("mediumint", False),
    "int8": ("bigint", False),
    "middleint": ("mediumint", False),
    "dec": ("decimal", False),
    "numeric": ("decimal", False),
    "fixed": ("decimal", False),
    "real": ("double", False),
    "double precision": ("double", False),
    "binary": ("char", True),
    "varbinary": ("varchar", True),
    "tinyblob": ("tinytext", True),
    "blob": ("text", True),
    "mediumblob": ("mediumtext", True),
    "longblob": ("longtext", True),
}


_TYPE_HEAD = re.compile(
    r"\s*(double\s+precision|[a-z_][a-z0-9_]*)\s*(?:\((?P<args>(?:'(?:[^']|'')*'|[^()'])*)\))?",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"\s*'((?:[^']|'')*)'\s*(,|$)")
_ATTRIBUTE = re.compile(
    r"\s*(unsigned|signed|zerofill|binary|"
    r"(?:character\s+set|charset)\s+(?P<charset>\w+)|collate\s+\w+)",
    re.IGNORECASE,
)


class TypeSyntaxError(ValueError):
    """A MySQL type text that the grammar does not accept."""


def parse_mysql_type(text: str) -> MySQLType:
    """Parse a MySQL column type such as ``DECIMAL(10,2) UNSIGNED`` or ``ENUM('a','b')``."""
    head = _TYPE_HEAD.match(text)
    if not head:
        raise TypeSyntaxError(f"{text!r} is not a MySQL type")
    name = re.sub(r"\s+", " ", head.group(1).lower())
    args = head.group("args")
    unsigned = zerofill = binary_charset = False
    rest = text[head.end():]
    while rest.strip():
        attr = _ATTRIBUTE.match(rest)
        if not attr:
            raise TypeSyntaxError(f"unexpected {rest.strip()!r} in MySQL type {text!r}")
        word = attr.group(1).lower()
        if word == "unsigned":
            unsigned = True
        elif word == "zerofill":
            unsigned = zerofill = True
        elif attr.group("charset"):
            binary_charset = attr.group("charset").lower() == "binary"
        rest = rest[attr.end():]

    if name in ("bool", "boolean"):
        if args is not None:
            raise TypeSyntaxError(f"{name.upper()} takes no parameters")
        return MySQLType("tinyint", length=1)
    binary = False
    if name in _ALIASES:
        name, binary = _ALIASES[name]
    if name not in KIND_NAMES:
        raise TypeSyntaxError(f"unknown MySQL type {head.group(1)!r} in {text!r}")
    binary = binary or (binary_charset and name in STRING_KINDS)
    if unsigned and name not in INTEGER_KINDS | {"float", "double", "decimal"}:
        raise TypeSyntaxError(f"{name.upper()} cannot be UNSIGNED")

    if name in ("enum", "set"):
        return MySQLType(name, elements=_parse_elements(name, args, text))

    numbers = _parse_numbers(args, text)
    length = decimals = None
    if name in INTEGER_KINDS:
        length = _one_number(name, numbers, 1, 255)
    elif name in ("float", "double"):
        if len(numbers) == 1 and name == "float":
            # FLOAT(p): precision in bits picks FLOAT or DOUBLE.
            if not 0 <= numbers[0] <= 53:
                raise TypeSyntaxError(f"FLOAT precision {numbers[0]} is out of range 0..53")
            name = "float" if numbers[0] <= 24 else "double"
        elif len(numbers) == 2:
            length, decimals = numbers
            if not (1 <= length <= 255 and 0 <= decimals <= 30 and decimals <= length):
                raise TypeSyntaxError(f"{name.upper()}({length},{decimals}) is out of range")
        elif numbers:
            raise TypeSyntaxError(f"{name.upper()} takes (M,D)")
    elif name == "decimal":
        if len(numbers) > 2:
            raise TypeSyntaxError("DECIMAL takes (precision[,scale])")
        length = numbers[0] if numbers else 10
        decimals = numbers[1] if len(numbers) > 1 else 0
        if not (1 <= length <= 65 and 0 <= decimals <= 30 and decimals <= length):
            raise TypeSyntaxError(
                f"DECIMAL({length},{decimals}) is out of range (precision 1..65, scale 0..30, scale <= precision)"
            )
    elif name == "bit":
        length = _one_number(name, numbers, 1, 64)
    elif name in ("datetime", "timestamp", "time"):
        decimals = _one_number(name, numbers, 0, 6) or 0
    elif name == "year":
        length = _one_number(name, numbers, 4, 4)
    elif name == "char":
        length = _one_number(name, numbers, 0, 255)
    elif name == "varchar":
        if not numbers:
            raise TypeSyntaxError(f"{'VARBINARY' if binary else 'VARCHAR'} needs a length, e.g. VARCHAR(255)")
        length = _one_number(name, numbers, 0, 65535)
    elif name in STRING_KINDS or name in ("date", "json"):
        if name in ("date", "json") and numbers:
            raise TypeSyntaxError(f"{name.upper()} takes no parameters")
        # TEXT(n)/BLOB(n) pick the smallest kind that holds n bytes.
        if numbers and name == "text":
            name = _text_kind_for(numbers[0], binary)
    return with_defaults(
        MySQLType(name, binary=binary, unsigned=unsigned, zerofill=zerofill, length=length, decimals=decimals)
    )


def carried_type(text: str) -> MySQLType:
    """A column's type as a protocol carries it (Canal's ``mysqlType``, Simple's ``dataType``, Debezium's
    ``tidb_type``), which may lack what the grammar asks of a declaration: ENUM and SET without their
    members, VARBINARY without a length.  Such a type keeps its kind and attributes, and no parameters (a
    DECIMAL without them has an unknown precision, not MySQL's default one)."""
    try:
        t = parse_mysql_type(text)
        return replace(t, length=None, decimals=None) if t.kind == "decimal" and "(" not in text else t
    except TypeSyntaxError:
        words = text.lower().replace("(", " ").split()
        name = words[0] if words else ""
        binary = False
        if name in _ALIASES:
            name, binary = _ALIASES[name]
        if name not in KIND_NAMES:
            raise
        return MySQLType(name, binary=binary, unsigned="unsigned" in words, zerofill="zerofill" in words)


def _text_kind_for(n: int, binary: bool) -> str:
    """TEXT(n)/BLOB(n): the smallest kind that holds n characters (4 bytes each in utf8mb4)."""
    size = n if binary else n * 4
    for kind, limit in (("tinytext", 255), ("text", 65535), ("mediumtext", 16777215)):
        if size <= limit:
            return kind
    return "longtext"


def _parse_numbers(args: str | None, text: str) -> list[int]:
    if args is None:
        return []
    parts = [p.strip() for p in args.split(",")]
    if not all(p.isdigit() for p in parts):
        raise TypeSyntaxError(f"expected numbers in the parentheses of {text!r}")
    return [int(p) for p in parts]


def _one_number(name: str, numbers: list[int], low: int, high: int) -> int | None:
    if not numbers:
        return None
    if len(numbers) != 1 or not low <= numbers[0] <= high:
        raise TypeSyntaxError(f"{name.upper()} takes one number in {low}..{high}, got {numbers}")
    return numbers[0]


def _parse_elements(name: str, args: str | None, text: str) -> tuple[str, ...]:
    if not args or not args.strip():
        raise TypeSyntaxError(f"{name.upper()} needs its members, e.g. {name.upper()}('a','b')")
    elements, pos = [], 0
    while pos < len(args):
        m = _QUOTED.match(args, pos)
        if not m:
            raise TypeSyntaxError(f"{name.upper()} members must be quoted strings: {text!r}")
        elements.append(_unescape_literal(m.group(1)))
        pos = m.end()
    if name == "set" and len(elements) > 64:
        raise TypeSyntaxError("a SET has at most 64 members")
    if name == "set" and any("," in e for e in elements):
        raise TypeSyntaxError("SET members cannot contain ','")
    return tuple(elements)


_LITERAL_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}


def _unescape_literal(body: str) -> str:
    """The value of a MySQL single-quoted literal's body: '' and backslash escapes."""
    return re.sub(r"''|\\(.)", lambda m: "'" if m.group(0) == "''" else _LITERAL_ESCAPES.get(m.group(1), m.group(1)),
                  body, flags=re.S)


def declared_types(text: str | None) -> dict[str, MySQLType]:
    """The types the ``column-types`` option declares, by column name."""
    return {name: parse_mysql_type(split_default(type_text)[0]) for name, type_text in split_column_types(text or "")}


@dataclass(frozen=True)
class DefaultLiteral:
    """A DEFAULT clause's literal as written: ``kind`` is ``number`` (``value`` its text), ``string`` (its
    value), ``bits`` (``b'..'``, ``x'..'``, ``0x..``: its bytes), ``now`` (CURRENT_TIMESTAMP and its synonyms:
    the fsp) or ``null``.  ``text`` is the clause as written, for errors."""

    kind: str
    value: object
    text: str


_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?", re.IGNORECASE)
_STRING = re.compile(r"'((?:[^'\\]|\\.|'')*)'", re.S)
_BIT_STRING = re.compile(r"b'([01]*)'|0b([01]+)", re.IGNORECASE)
_HEX_STRING = re.compile(r"x'((?:[0-9a-f]{2})*)'|0x([0-9a-f]+)", re.IGNORECASE)
_NOW = re.compile(r"(?:current_timestamp|now|localtime|localtimestamp)(?:\s*\(\s*(\d*)\s*\))?", re.IGNORECASE)


def split_default(text: str) -> tuple[str, DefaultLiteral | None]:
    """Split ``"VARCHAR(20) DEFAULT 'x'"`` into the type's text and its DEFAULT literal (None without a clause)."""
    at = _default_keyword(text)
    if at is None:
        return text, None
    return text[:at].strip(), parse_default(text[at + len("default"):].strip())


def _default_keyword(text: str) -> int | None:
    """Where the word DEFAULT is in ``text``, outside quotes and parentheses (None: nowhere)."""
    def word_at(i: int) -> bool:
        return text[i:i + 7].lower() == "default" and not _word_char(text[i - 1:i]) and not _word_char(text[i + 7:i + 8])

    return next((i for i, _, depth in outside_quotes(text) if depth == 0 and word_at(i)), None)


_WORD_LITERAL = re.compile(r"null|true|false", re.IGNORECASE)


def definition_default(definition: str) -> DefaultLiteral | None:
    """The DEFAULT literal of a column definition, whatever options follow it; None without a DEFAULT or when
    it is not a literal."""
    at = _default_keyword(definition)
    if at is None:
        return None
    text = definition[at + len("default"):].lstrip()
    for pattern in (_STRING, _BIT_STRING, _HEX_STRING, _NOW, _WORD_LITERAL, _NUMBER):
        m = pattern.match(text)
        if m and not _word_char(text[m.end():m.end() + 1]):
            return parse_default(m.group(0))
    return None


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def parse_default(text: str) -> DefaultLiteral:
    """A DEFAULT clause's literal (what follows the keyword); a lone ``(expression)`` is refused."""
    def whole(pattern: re.Pattern):
        return pattern.fullmatch(text)

    if text.upper() == "NULL":
        return DefaultLiteral("null", None, text)
    if text.upper() in ("TRUE", "FALSE"):
        return DefaultLiteral("number", "1" if text.upper() == "TRUE" else "0", text)
    if m := whole(_NUMBER):
        return DefaultLiteral("number", m.group(0), text)
    if m := whole(_STRING):
        return DefaultLiteral("string", _unescape_literal(m.group(1)), text)
    if m := whole(_BIT_STRING):
        digits = m.group(1) if m.group(1) is not None else m.group(2)
        return DefaultLiteral("bits", int(digits or "0", 2).to_bytes((len(digits) + 7) // 8, "big"), text)
    if m := whole(_HEX_STRING):
        digits = m.group(1) if m.group(1) is not None else m.group(2)
        return DefaultLiteral("bits", bytes.fromhex(digits.rjust(len(digits) + len(digits) % 2, "0")), text)
    if m := whole(_NOW):
        return DefaultLiteral("now", int(m.group(1) or 0), text)
    raise TypeSyntaxError(f"DEFAULT {text!r} is not a literal: write a number, a quoted string, NULL, TRUE, FALSE, "
                          "b'..', x'..' or CURRENT_TIMESTAMP")


def split_column_types(text: str) -> list[tuple[str, str]]:
    """Split ``"id INT UNSIGNED, st ENUM('a','b')"`` into (column, type) pairs.

    Commas inside parentheses and quotes do not separate; a column name may be
    back-quoted (with ```` for a back-quote) to hold spaces or commas.
    """
    items = split_top_level(text)
    pairs = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        quoted = re.match(r"`((?:[^`]|``)*)`", item)
        if quoted:
            name, type_text = quoted.group(1).replace("``", "`"), item[quoted.end():].strip()
        elif item.startswith("`"):
            raise TypeSyntaxError(f"unclosed back-quote in {item!r}")
        else:
            name = item.split(None, 1)[0]
            type_text = item[len(name):]
            type_text = type_text.strip()
        if not type_text:
            raise TypeSyntaxError(f"{item!r} has no type: write 'column TYPE'")
        pairs.append((name, type_text))
    return pairs
