"""The column model every protocol encodes from: a DataFrame's table columns as MySQL columns, with their keys.

Spark only knows its own types, so this is the one place where a Spark field
becomes a MySQL column: the Spark types' default MySQL types (docs/input.md,
"Column types"), the ``column-types`` option and the ``mysql_type`` metadata
that override them, and the key flags that TiCDC derives from the table's
indexes.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from ..errors import ConfigError
from .mysql_types import (DEFAULT_VARCHAR_LENGTH, FLAG_BINARY, FLAG_HANDLE_KEY, FLAG_MULTIPLE_KEY, FLAG_NULLABLE,
                          FLAG_PRIMARY_KEY, FLAG_UNIQUE_KEY, FLAG_UNSIGNED, INTEGER_KINDS, STRING_KINDS, MySQLType,
                          with_defaults)
from .column_default import InvalidDefault, stored_default
from .type_grammar import DefaultLiteral, TypeSyntaxError, parse_mysql_type, split_column_types, split_default


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
            return with_defaults(MySQLType(kind))
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


# Which Spark type families can carry values of each MySQL kind (docs/input.md, "Column types").
_ACCEPTS: dict[str, frozenset[str]] = {
    **{k: frozenset({"integral", "boolean"}) for k in INTEGER_KINDS},
    "year": frozenset({"integral"}),
    "float": frozenset({"fractional", "integral", "decimal"}),
    "double": frozenset({"fractional", "integral", "decimal"}),
    "decimal": frozenset({"decimal", "integral", "string"}),  # text: Spark's decimals stop at 38 digits, MySQL's at 65
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
    # The DEFAULT as TiDB stores it (column_default.py); None without one or for DEFAULT NULL.
    default: str | None = None

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
    # column forms the row key (docs/input.md, "Keys").
    keyless: bool = False
    # The table before column-selectors chose its columns (``select``); None when these are all of them.
    whole: "TableSchema | None" = None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def primary_key_names(self) -> list[str]:
        return [c.name for c in self.columns if c.primary_key]

    @property
    def tidb_primary_key(self) -> tuple[str, ...]:
        """TiDB's primary key (its ``GetPrimaryKey``): the declared one, else the first unique key whose columns
        are all NOT NULL, else none.  TiCDC names it in Simple's and Debezium's table schemas."""
        not_null = {c.name for c in self.columns if not c.nullable}
        key = next((i for i in self.indexes if i.primary), None) or \
            next((i for i in self.indexes if set(i.columns) <= not_null), None)
        return key.columns if key else ()

    @property
    def handle_columns(self) -> tuple[Column, ...]:
        """The row key: TiCDC's handle columns, or every column of a keyless table."""
        if self.keyless:
            return self.columns
        return tuple(c for c in self.columns if c.handle_key)

    def select(self, names: list[str]) -> "TableSchema":
        """The table as messages that carry only the columns ``names`` show it (``column-selectors``), in table
        order; ``whole`` keeps the table, which a protocol that describes it (Simple's tableSchema) still needs."""
        kept = tuple(c for c in self.columns if c.name in set(names))
        kept_names = {c.name for c in kept}
        return dataclasses.replace(self, columns=kept, whole=self.whole or self,
                                   indexes=tuple(i for i in self.indexes if set(i.columns) <= kept_names))

    def handle_key_only(self, option: str) -> "TableSchema":
        """The table as TiCDC's messages that carry only the handle key show it (a DELETE under
        ``delete-only-output-handle-key-columns``, a row over max-message-bytes): its handle-key columns.  A
        table without a handle key is refused for ``option`` (TiCDC's messages would carry no column)."""
        if self.keyless:
            raise ConfigError(option, "true", "the table has no handle key (no primary key or NOT NULL unique key): "
                              "name it with primary-key or unique-keys")
        return self.select([c.name for c in self.handle_columns])

    def column_named(self, name: str) -> Column:
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


def _unused_index_name(column: str, indexes: list[Index]) -> str:
    """An unnamed key's name as MySQL and TiDB give it: its first column's, with _2, _3, ... if that is taken."""
    taken = {i.name.lower() for i in indexes}
    name, n = column, 2
    while name.lower() in taken:
        name, n = f"{column}_{n}", n + 1
    return name


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
    then the Spark defaults; a DEFAULT clause after a declared type is the
    column's default (``column_default.py``). Keys follow TiCDC: every member of the primary key
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
    defaults: dict[str, tuple[str, DefaultLiteral]] = {}  # column -> (option or metadata, literal)
    if column_types:
        try:
            pairs = split_column_types(column_types)
        except TypeSyntaxError as e:
            raise ConfigError("column-types", column_types, str(e)) from None
        for col, type_text in pairs:
            real = resolve("column-types", column_types, col)
            try:
                type_text, literal = split_default(type_text)
                overrides[real] = parse_mysql_type(type_text)
            except TypeSyntaxError as e:
                raise ConfigError("column-types", column_types, f"column {real!r}: {e}") from None
            if literal is not None:
                defaults[real] = ("column-types", literal)

    types: dict[str, MySQLType] = {}
    for f in table_fields:
        if f.name in overrides:
            t = overrides[f.name]
            source = "column-types"
        elif f.metadata and "mysql_type" in f.metadata:
            source = f"metadata 'mysql_type' of column {f.name!r}"
            try:
                type_text, literal = split_default(str(f.metadata["mysql_type"]))
                t = parse_mysql_type(type_text)
            except TypeSyntaxError as e:
                raise ConfigError(source, f.metadata["mysql_type"], str(e)) from None
            if literal is not None:
                defaults[f.name] = (source, literal)
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
        for name, cols in _parse_key_list("unique-keys", unique_keys):
            cols = tuple(resolve("unique-keys", unique_keys, c) for c in cols)
            indexes.append(Index(name or _unused_index_name(cols[0], indexes), cols))

    primary = next((i for i in indexes if i.primary), None)
    handle: Index | None = primary
    if handle is None:
        candidates = [i for i in indexes if all(not nullable[c] for c in i.columns)]
        if candidates:
            handle = min(candidates, key=lambda i: len(i.columns))  # ties: first declared
    handle_names = set(handle.columns) if handle else set()

    stored: dict[str, str | None] = {}
    for name, (source, literal) in defaults.items():
        try:
            stored[name] = stored_default(literal, types[name], nullable[name])
        except InvalidDefault as e:
            value = column_types if source == "column-types" else literal.text
            raise ConfigError(source, value, f"column {name!r}: invalid default value {literal.text}: {e}") from None

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
                default=stored.get(f.name),
            )
        )
    return TableSchema(tuple(columns), tuple(indexes), keyless=handle is None)
