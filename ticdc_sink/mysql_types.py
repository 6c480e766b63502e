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

import re
import time
from dataclasses import dataclass, field, replace

from .errors import ConfigError

# ---------------------------------------------------------------------------
# TSO (TiDB timestamp oracle) helpers

TSO_LOGICAL_BITS = 18


def tso_from_unix_ms(ms: int) -> int:
    """A TSO whose physical part is ``ms`` and whose logical part is 0."""
    return int(ms) << TSO_LOGICAL_BITS


def tso_physical_ms(tso: int) -> int:
    """Milliseconds since the epoch of a TSO (``oracle.ExtractPhysical``)."""
    return int(tso) >> TSO_LOGICAL_BITS


def now_tso() -> int:
    return tso_from_unix_ms(time.time_ns() // 1_000_000)


# ---------------------------------------------------------------------------
# MySQL type bytes (``mysql.Type*`` in TiDB's parser)

TYPE_TINY = 1
TYPE_SHORT = 2
TYPE_LONG = 3
TYPE_FLOAT = 4
TYPE_DOUBLE = 5
TYPE_TIMESTAMP = 7
TYPE_LONGLONG = 8
TYPE_INT24 = 9
TYPE_DATE = 10
TYPE_DURATION = 11
TYPE_DATETIME = 12
TYPE_YEAR = 13
TYPE_VARCHAR = 15
TYPE_BIT = 16
TYPE_JSON = 245
TYPE_NEWDECIMAL = 246
TYPE_ENUM = 247
TYPE_SET = 248
TYPE_TINY_BLOB = 249
TYPE_MEDIUM_BLOB = 250
TYPE_LONG_BLOB = 251
TYPE_BLOB = 252
TYPE_STRING = 254

# Column flag bits (TiCDC's ColumnFlagType, Open Protocol ``f``).
FLAG_BINARY = 1
FLAG_HANDLE_KEY = 2
FLAG_PRIMARY_KEY = 8
FLAG_UNIQUE_KEY = 16
FLAG_MULTIPLE_KEY = 32
FLAG_NULLABLE = 64
FLAG_UNSIGNED = 128


@dataclass(frozen=True)
class _Kind:
    code: int
    short: str  # TiDB ``TypeToStr`` with a non-binary charset
    binary_short: str | None = None  # the name with the binary charset
    default_width: int | None = None  # ``GetDefaultFieldLengthAndDecimal``
    unsigned_width: int | None = None
    int_range: tuple[int, int] | None = None  # signed range; unsigned is [0, 2**bits)
    int_bits: int | None = None


_KINDS: dict[str, _Kind] = {
    "tinyint": _Kind(TYPE_TINY, "tinyint", None, 4, 3, (-(2**7), 2**7 - 1), 8),
    "smallint": _Kind(TYPE_SHORT, "smallint", None, 6, 5, (-(2**15), 2**15 - 1), 16),
    "mediumint": _Kind(TYPE_INT24, "mediumint", None, 9, 8, (-(2**23), 2**23 - 1), 24),
    "int": _Kind(TYPE_LONG, "int", None, 11, 10, (-(2**31), 2**31 - 1), 32),
    "bigint": _Kind(TYPE_LONGLONG, "bigint", None, 20, 20, (-(2**63), 2**63 - 1), 64),
    "float": _Kind(TYPE_FLOAT, "float"),
    "double": _Kind(TYPE_DOUBLE, "double"),
    "decimal": _Kind(TYPE_NEWDECIMAL, "decimal", None, 10),
    "bit": _Kind(TYPE_BIT, "bit", None, 1),
    "date": _Kind(TYPE_DATE, "date"),
    "datetime": _Kind(TYPE_DATETIME, "datetime"),
    "timestamp": _Kind(TYPE_TIMESTAMP, "timestamp"),
    "time": _Kind(TYPE_DURATION, "time"),
    "year": _Kind(TYPE_YEAR, "year", None, 4),
    "char": _Kind(TYPE_STRING, "char", "binary", 1),
    "varchar": _Kind(TYPE_VARCHAR, "varchar", "varbinary"),
    "tinytext": _Kind(TYPE_TINY_BLOB, "tinytext", "tinyblob"),
    "text": _Kind(TYPE_BLOB, "text", "blob"),
    "mediumtext": _Kind(TYPE_MEDIUM_BLOB, "mediumtext", "mediumblob"),
    "longtext": _Kind(TYPE_LONG_BLOB, "longtext", "longblob"),
    "json": _Kind(TYPE_JSON, "json"),
    "enum": _Kind(TYPE_ENUM, "enum"),
    "set": _Kind(TYPE_SET, "set"),
}

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

INTEGER_KINDS = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint"})
STRING_KINDS = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext"})

# Spark's strings and binaries have no length; these are the widths we declare.
DEFAULT_VARCHAR_LENGTH = 255
# TiDB's default charset and collation: the sink's input does not carry a table's, so its text columns have these.
TABLE_CHARSET, TABLE_COLLATION = "utf8mb4", "utf8mb4_bin"


@dataclass(frozen=True)
class MySQLType:
    """One MySQL column type, as TiDB's ``FieldType`` would hold it."""

    kind: str  # a key of _KINDS: the base type with a non-binary charset
    binary: bool = False  # binary charset: binary/varbinary/blob
    unsigned: bool = False
    zerofill: bool = False
    length: int | None = None  # display width, char length, bit width, decimal precision
    decimals: int | None = None  # decimal scale, fsp, float decimals
    elements: tuple[str, ...] = ()  # ENUM / SET members

    @property
    def code(self) -> int:
        return _KINDS[self.kind].code

    @property
    def is_integer(self) -> bool:
        return self.kind in INTEGER_KINDS

    @property
    def is_string(self) -> bool:
        return self.kind in STRING_KINDS

    @property
    def is_blob(self) -> bool:
        """TiDB's blob types (codes 249-252): the TEXT kinds and, with the binary charset, the BLOBs."""
        return self.kind in {"tinytext", "text", "mediumtext", "longtext"}

    @property
    def fsp(self) -> int:
        return self.decimals or 0

    @property
    def int_bounds(self) -> tuple[int, int]:
        kind = _KINDS[self.kind]
        if self.unsigned:
            return 0, 2**kind.int_bits - 1
        return kind.int_range

    @property
    def has_binary_charset(self) -> bool:
        """TiDB's charset is ``binary`` for every non-string type and binary strings."""
        return self.binary or not (self.is_string or self.kind in {"enum", "set"})

    @property
    def base_name(self) -> str:
        """TiDB's ``TypeToStr``: the type's name by kind and charset (``blob`` for binary TEXT)."""
        kind = _KINDS[self.kind]
        return kind.binary_short if self.binary and kind.binary_short else kind.short

    @property
    def short_name(self) -> str:
        """``TypeToStr`` plus ``unsigned``/``zerofill``: Canal's ``mysqlType``."""
        name = self.base_name
        if self.unsigned and self.kind not in {"bit", "year"}:
            name += " unsigned"
        if self.zerofill and self.kind != "year":
            name += " zerofill"
        return name

    @property
    def full_name(self) -> str:
        """TiDB's ``GetTypeDesc``: the short name with its parameters."""
        name = self.base_name
        if self.kind in {"enum", "set"}:
            quoted = (e.replace("\\", "\\\\").replace("'", "''") for e in self.elements)
            name += "('" + "','".join(quoted) + "')"
        elif self.kind in {"datetime", "timestamp", "time"}:
            if self.fsp:
                name += f"({self.fsp})"
        elif self.kind in {"float", "double"}:
            if self.decimals:
                name += f"({self.length},{self.decimals})"
        elif self.kind == "decimal":
            name += f"({self.length},{self.decimals})"
        elif self.kind in INTEGER_KINDS or self.kind in {"bit", "year", "char", "varchar"}:
            name += f"({self.length})"
        if self.unsigned and self.kind not in {"bit", "year"}:
            name += " unsigned"
        if self.zerofill and self.kind != "year":
            name += " zerofill"
        return name

    @property
    def flen(self) -> int:
        """TiDB's ``Flen``: the width, precision or length TiDB stores for the column, defaults included."""
        if self.kind in {"enum", "set"}:
            sizes = [len(e.rstrip(" ").encode()) for e in self.elements]  # TiDB keeps members trimmed
            return max(sizes, default=0) if self.kind == "enum" else sum(sizes) + max(len(sizes) - 1, 0)
        if self.kind in _FRACTIONAL_KINDS:
            return _DEFAULT_FLEN[self.kind] + (1 + self.fsp if self.fsp else 0)
        return self.length if self.length is not None else _DEFAULT_FLEN[self.kind]

    def __str__(self) -> str:
        return self.full_name


_FRACTIONAL_KINDS = frozenset({"datetime", "timestamp", "time"})
# TiDB's Flen of the kinds the column model keeps no width for (or only when given, as float(M,D)); the
# fractional kinds' is without fsp.
_DEFAULT_FLEN = {"float": 12, "double": 22, "date": 10, "datetime": 19, "timestamp": 19, "time": 10,
                 "tinytext": 255, "text": 65_535, "mediumtext": 16_777_215, "longtext": 4_294_967_295,
                 "json": 4_294_967_295, "varchar": DEFAULT_VARCHAR_LENGTH}


def default_width(kind: str) -> int | None:
    """TiDB's default width of a kind (``GetDefaultFieldLengthAndDecimal``), where the column model applies one."""
    return _KINDS[kind].default_width


def _with_defaults(t: MySQLType) -> MySQLType:
    kind = _KINDS[t.kind]
    if t.length is None and kind.default_width is not None:
        width = kind.unsigned_width if t.unsigned and kind.unsigned_width else kind.default_width
        t = replace(t, length=width)
    if t.kind == "decimal" and t.decimals is None:
        t = replace(t, decimals=0)
    return t


# ---------------------------------------------------------------------------
# The MySQL type grammar of ``column-types`` and ``mysql_type`` metadata

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
    if name not in _KINDS:
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
    return _with_defaults(
        MySQLType(name, binary=binary, unsigned=unsigned, zerofill=zerofill, length=length, decimals=decimals)
    )


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


# ---------------------------------------------------------------------------
# Spark types and their MySQL defaults

def default_mysql_type(spark_type) -> MySQLType:
    """The design's default MySQL type for a Spark ``DataType``."""
    from pyspark.sql import types as T

    if isinstance(spark_type, T.BooleanType):
        return MySQLType("tinyint", length=1)
    simple = {
        T.ByteType: "tinyint",
        T.ShortType: "smallint",
        T.IntegerType: "int",
        T.LongType: "bigint",
        T.FloatType: "float",
        T.DoubleType: "double",
        T.DateType: "date",
        T.TimestampType: "timestamp",
        T.TimestampNTZType: "datetime",
    }
    for spark_class, kind in simple.items():
        if isinstance(spark_type, spark_class):
            return _with_defaults(MySQLType(kind))
    if isinstance(spark_type, T.DecimalType):
        return MySQLType("decimal", length=spark_type.precision, decimals=spark_type.scale)
    if isinstance(spark_type, (T.StringType, T.VarcharType, T.CharType)):
        return MySQLType("varchar", length=DEFAULT_VARCHAR_LENGTH)
    if isinstance(spark_type, T.BinaryType):
        return MySQLType("varchar", binary=True, length=DEFAULT_VARCHAR_LENGTH)
    if isinstance(spark_type, (T.ArrayType, T.MapType, T.StructType)):
        return MySQLType("json")
    raise TypeError(f"Spark type {spark_type.simpleString()} has no MySQL equivalent")


def _spark_family(spark_type) -> str:
    from pyspark.sql import types as T

    if isinstance(spark_type, T.BooleanType):
        return "boolean"
    if isinstance(spark_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return "integral"
    if isinstance(spark_type, T.DecimalType):
        return "integral" if spark_type.scale == 0 else "decimal"
    if isinstance(spark_type, (T.FloatType, T.DoubleType)):
        return "fractional"
    if isinstance(spark_type, (T.StringType, T.VarcharType, T.CharType)):
        return "string"
    if isinstance(spark_type, T.BinaryType):
        return "binary"
    if isinstance(spark_type, T.DateType):
        return "date"
    if isinstance(spark_type, (T.TimestampType, T.TimestampNTZType)):
        return "timestamp"
    if isinstance(spark_type, (T.ArrayType, T.MapType, T.StructType)):
        return "nested"
    return "other"


# Which Spark type families can carry values of each MySQL kind (DESIGN section 1).
_ACCEPTS: dict[str, frozenset[str]] = {
    **{k: frozenset({"integral", "boolean"}) for k in INTEGER_KINDS},
    "year": frozenset({"integral"}),
    "float": frozenset({"fractional", "integral", "decimal"}),
    "double": frozenset({"fractional", "integral", "decimal"}),
    "decimal": frozenset({"decimal", "integral"}),
    "bit": frozenset({"integral", "boolean", "binary"}),
    "enum": frozenset({"string", "integral"}),
    "set": frozenset({"string", "integral"}),
    "date": frozenset({"date"}),
    "datetime": frozenset({"timestamp", "date"}),
    "timestamp": frozenset({"timestamp", "date"}),
    "time": frozenset({"string"}),
    "json": frozenset({"string", "nested"}),
    **{k: frozenset({"string", "binary"}) for k in STRING_KINDS},
}


# ---------------------------------------------------------------------------
# Columns and tables

@dataclass(frozen=True)
class Column:
    """A table column: its name, MySQL type, and the flags TiCDC derives."""

    name: str
    type: MySQLType
    spark_type: object = field(compare=False, repr=False)
    nullable: bool = True
    primary_key: bool = False
    unique_key: bool = False
    multiple_key: bool = False
    handle_key: bool = False

    @property
    def flag(self) -> int:
        """TiCDC's column flag word (Open Protocol ``f``)."""
        bits = 0
        if self.type.has_binary_charset:
            bits |= FLAG_BINARY
        if self.handle_key:
            bits |= FLAG_HANDLE_KEY
        if self.primary_key:
            bits |= FLAG_PRIMARY_KEY
        if self.unique_key:
            bits |= FLAG_UNIQUE_KEY
        if self.multiple_key:
            bits |= FLAG_MULTIPLE_KEY
        if self.nullable:
            bits |= FLAG_NULLABLE
        # TiDB flags BIT and YEAR columns unsigned whatever their declaration says.
        if self.type.unsigned or self.type.kind in ("bit", "year"):
            bits |= FLAG_UNSIGNED
        return bits


@dataclass(frozen=True)
class Index:
    name: str
    columns: tuple[str, ...]
    primary: bool = False


@dataclass(frozen=True)
class TableSchema:
    """The shape of the table a DataFrame carries: its columns in order and its keys."""

    columns: tuple[Column, ...]
    indexes: tuple[Index, ...] = ()
    # True when neither a primary key nor a NOT NULL unique key exists, so every
    # column forms the row key (DESIGN section 1).
    keyless: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def primary_key_names(self) -> list[str]:
        return [c.name for c in self.columns if c.primary_key]

    @property
    def handle_columns(self) -> tuple[Column, ...]:
        """The row key: TiCDC's handle columns, or every column of a keyless table."""
        if self.keyless:
            return self.columns
        return tuple(c for c in self.columns if c.handle_key)

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    def find_column(self, name: str) -> Column | None:
        """Case-insensitive lookup, as TiDB resolves column names."""
        lowered = name.lower()
        return next((c for c in self.columns if c.name.lower() == lowered), None)

    def find_index(self, name: str) -> Index | None:
        lowered = name.lower()
        return next((i for i in self.indexes if i.name.lower() == lowered), None)


def _parse_key_list(option: str, text: str) -> list[tuple[str | None, list[str]]]:
    """``"a,b"`` or ``"uk_email(email);a,b"`` -> [(name or None, [columns])]."""
    keys = []
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        named = re.fullmatch(r"(\w+)\s*\((.*)\)", part)
        name, cols = (named.group(1), named.group(2)) if named else (None, part)
        columns = [c.strip().strip("`") for c in cols.split(",") if c.strip()]
        if not columns:
            raise ConfigError(option, text, "each key lists one or more column names")
        keys.append((name, columns))
    return keys


def build_table_schema(
    spark_schema,
    table_fields: list,
    column_types: str | None,
    primary_key: str | None,
    unique_keys: str | None,
) -> TableSchema:
    """Build the column model from the DataFrame's table fields and the options.

    ``table_fields`` are the ``StructField``s of the table columns, in order.
    Types come from ``column-types``, then the field's ``mysql_type`` metadata,
    then the Spark defaults. Keys follow TiCDC: every member of the primary key
    gets PrimaryKey, of a unique key UniqueKey, multi-column keys MultipleKey;
    the handle is the primary key, else the unique key with fewest columns whose
    columns are all NOT NULL, else (no handle in TiDB terms) every column.
    """
    names = [f.name for f in table_fields]
    by_lower = {n.lower(): n for n in names}

    def resolve(option: str, text: str, col: str) -> str:
        real = col if col in names else by_lower.get(col.lower())
        if real is None:
            raise ConfigError(option, text, f"column {col!r} is not a table column; columns are {names}")
        return real

    overrides: dict[str, MySQLType] = {}
    if column_types:
        try:
            pairs = split_column_types(column_types)
        except TypeSyntaxError as e:
            raise ConfigError("column-types", column_types, str(e)) from None
        for col, type_text in pairs:
            real = resolve("column-types", column_types, col)
            try:
                overrides[real] = parse_mysql_type(type_text)
            except TypeSyntaxError as e:
                raise ConfigError("column-types", column_types, f"column {real!r}: {e}") from None

    types: dict[str, MySQLType] = {}
    for f in table_fields:
        if f.name in overrides:
            t = overrides[f.name]
            source = "column-types"
        elif f.metadata and "mysql_type" in f.metadata:
            source = f"metadata 'mysql_type' of column {f.name!r}"
            try:
                t = parse_mysql_type(str(f.metadata["mysql_type"]))
            except TypeSyntaxError as e:
                raise ConfigError(source, f.metadata["mysql_type"], str(e)) from None
        else:
            try:
                types[f.name] = default_mysql_type(f.dataType)
            except TypeError as e:
                raise ConfigError(
                    "column-types", column_types or "", f"column {f.name!r}: {e}; declare its MySQL type"
                ) from None
            continue
        family = _spark_family(f.dataType)
        if family not in _ACCEPTS[t.kind]:
            raise ConfigError(
                source,
                t.full_name,
                f"column {f.name!r} is Spark {f.dataType.simpleString()}, which cannot carry "
                f"MySQL {t.short_name.upper()} values (it takes Spark {', '.join(sorted(_ACCEPTS[t.kind]))})",
            )
        types[f.name] = t

    nullable = {f.name: bool(f.nullable) for f in table_fields}
    indexes: list[Index] = []
    if primary_key:
        keys = _parse_key_list("primary-key", primary_key)
        if len(keys) != 1:
            raise ConfigError("primary-key", primary_key, "a table has one primary key: write 'id' or 'a,b'")
        cols = tuple(resolve("primary-key", primary_key, c) for c in keys[0][1])
        indexes.append(Index("PRIMARY", cols, primary=True))
        for c in cols:
            nullable[c] = False  # primary key columns are NOT NULL in MySQL
    if unique_keys:
        for i, (name, cols) in enumerate(_parse_key_list("unique-keys", unique_keys), start=1):
            cols = tuple(resolve("unique-keys", unique_keys, c) for c in cols)
            indexes.append(Index(name or f"uk_{i}", cols))

    primary = next((i for i in indexes if i.primary), None)
    handle: Index | None = primary
    if handle is None:
        candidates = [i for i in indexes if all(not nullable[c] for c in i.columns)]
        if candidates:
            handle = min(candidates, key=lambda i: len(i.columns))  # ties: first declared
    handle_names = set(handle.columns) if handle else set()

    columns = []
    for f in table_fields:
        in_pk = bool(primary and f.name in primary.columns)
        in_uk = any(f.name in i.columns for i in indexes if not i.primary)
        multiple = any(f.name in i.columns and len(i.columns) > 1 for i in indexes)
        columns.append(
            Column(
                name=f.name,
                type=types[f.name],
                spark_type=f.dataType,
                nullable=nullable[f.name],
                primary_key=in_pk,
                unique_key=in_uk,
                multiple_key=multiple,
                handle_key=f.name in handle_names,
            )
        )
    return TableSchema(tuple(columns), tuple(indexes), keyless=handle is None)
