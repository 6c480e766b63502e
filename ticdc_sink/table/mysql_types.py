"""MySQL (TiDB) column types as TiCDC's messages describe them: type codes, flags, names and widths.

TiCDC messages describe columns by their MySQL type: a type byte, a flag word,
a short name (``int unsigned``) and a full description (``int(10) unsigned``).
``MySQLType`` holds one type as TiDB's ``FieldType`` would; the text users write
is parsed by ``type_grammar.py``, and a table's columns are ``schema.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pyarrow as pa

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


BLOB_CODES = frozenset({TYPE_TINY_BLOB, TYPE_MEDIUM_BLOB, TYPE_LONG_BLOB, TYPE_BLOB})  # TEXT and BLOB kinds
KIND_NAMES = frozenset(_KINDS)  # the base types the column model knows
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
        return self.base_name + self._attributes

    @property
    def _attributes(self) -> str:
        """`` unsigned`` and `` zerofill`` as TiDB writes them (never for BIT and YEAR, whose flags are implied)."""
        text = " unsigned" if self.unsigned and self.kind not in {"bit", "year"} else ""
        return text + (" zerofill" if self.zerofill and self.kind != "year" else "")

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
        return name + self._attributes

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


def with_defaults(t: MySQLType) -> MySQLType:
    kind = _KINDS[t.kind]
    if t.length is None and kind.default_width is not None:
        width = kind.unsigned_width if t.unsigned and kind.unsigned_width else kind.default_width
        t = replace(t, length=width)
    if t.kind == "decimal" and t.decimals is None:
        t = replace(t, decimals=0)
    return t


_KIND_OF_CODE = {kind.code: name for name, kind in reversed(list(_KINDS.items()))}  # first kind per code wins


def type_of_code(code: int, flag: int) -> MySQLType:
    """The type an Open Protocol column's type code and flags tell: its kind, charset and sign; no widths,
    scales or members (the protocol carries none)."""
    kind = _KIND_OF_CODE.get(code)
    if kind is None:
        raise ValueError(f"unknown MySQL type code {code}")
    binary = bool(flag & FLAG_BINARY) and kind in STRING_KINDS
    unsigned = bool(flag & FLAG_UNSIGNED) and (kind in INTEGER_KINDS or kind in ("float", "double", "decimal"))
    return MySQLType(kind, binary=binary, unsigned=unsigned)


SPARK_MAX_PRECISION = 38  # Spark's and Arrow's decimal128
UNKNOWN_PRECISION = (38, 18)  # a DECIMAL whose precision the protocol does not carry


def decimal_precision(t: MySQLType) -> tuple[int, int]:
    """(precision, scale) of a DECIMAL's values as Spark and Arrow hold them."""
    if t.length is None:
        return UNKNOWN_PRECISION
    return min(t.length, SPARK_MAX_PRECISION), min(t.decimals or 0, SPARK_MAX_PRECISION)


def tidb_arrow_type(t: MySQLType) -> pa.DataType:
    """The Arrow type of a column of TiDB values of type ``t``, as the decoders give them: integers (and BIT, SET
    bitmasks) unsigned where TiDB's are, ENUM indexes, naive DATETIME and TIMESTAMP (the latter in the
    rendering time zone), TIME and JSON as text."""
    if t.is_integer:
        return pa.uint64() if t.unsigned else pa.int64()
    if t.kind in ("bit", "set"):
        return pa.uint64()
    if t.kind in ("year", "enum"):
        return pa.int64()
    if t.kind in ("float", "double"):
        return pa.float64()
    if t.kind == "decimal":
        return pa.decimal128(*decimal_precision(t))
    if t.kind == "date":
        return pa.date32()
    if t.kind in ("datetime", "timestamp"):
        return pa.timestamp("us")
    return pa.binary() if t.is_string and t.binary else pa.string()
