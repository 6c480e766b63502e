"""The input contract (DESIGN section 1): Arrow record batches -> validated ``ChangeBatch``es.

The driver checks the DataFrame's schema once and fixes an ``InputLayout``;
each task then turns Arrow record batches into ``ChangeBatch``es: operations,
commit timestamps, target tables and the table columns converted to one
canonical Arrow form per MySQL type (the values TiDB itself would hold: ENUM
as its index, SET as its bitmask, BIT and BIGINT UNSIGNED as uint64, TIME as
microseconds, JSON as TiDB's text).  Codecs and dispatchers only ever see
canonical values, so every conversion and every contract check lives here,
and every failure names the column, the value and the row's key.
"""

from __future__ import annotations

from decimal import Decimal
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .config import SinkConfig, require_table_names
from .ddl import SCHEMA_LEVEL_ACTIONS, DDLChange, classify
from .errors import ConfigError, ContractError, TiCDCSinkError
from .mysql_types import (INTEGER_KINDS, STRING_KINDS, TSO_LOGICAL_BITS, Column, TableSchema, build_table_schema,
                          now_tso)
from .render import string_scalar

OP_INSERT, OP_UPDATE, OP_DELETE, OP_DDL = 1, 2, 3, 4
_OP_SPELLINGS = ["INSERT", "I", "C", "UPDATE", "U", "DELETE", "D", "DDL"]
_OP_CODES = np.array([OP_INSERT] * 3 + [OP_UPDATE] * 2 + [OP_DELETE] * 2 + [OP_DDL], dtype=np.int8)


# ---------------------------------------------------------------------------
# The layout of the DataFrame, fixed on the driver


@dataclass(frozen=True)
class InputLayout:
    """Which metadata columns the DataFrame has, and the table they describe."""

    table: TableSchema
    has_op: bool
    has_commit_ts: bool
    commit_ts_is_timestamp: bool
    has_before: bool
    has_schema: bool
    has_table: bool
    has_ddl: bool
    has_ddl_type: bool

    @classmethod
    def from_spark_schema(cls, spark_schema, config: SinkConfig) -> "InputLayout":
        """Check the metadata columns' Spark types and build the column model."""
        from pyspark.sql import types as T

        by_name = {f.name: f for f in spark_schema.fields}
        metadata = set(config.metadata_columns())

        def expect(option: str, name: str, allowed: tuple, what: str) -> bool:
            f = by_name.get(name)
            if f is None:
                return False
            if not isinstance(f.dataType, allowed):
                raise ConfigError(option, name, f"column {name!r} is Spark {f.dataType.simpleString()}; "
                                                f"it must be {what}")
            return True

        has_op = expect("op-column", config.op_column, (T.StringType,), "a string (INSERT, UPDATE, DELETE, DDL)")
        has_ts = expect("commit-ts-column", config.commit_ts_column, (T.LongType, T.TimestampType,
                                                                      T.TimestampNTZType),
                        "a long (TiDB TSO) or a timestamp")
        has_schema = expect("schema-column", config.schema_column, (T.StringType,), "a string")
        has_table = expect("table-column", config.table_column, (T.StringType,), "a string")
        has_ddl = expect("ddl-column", config.ddl_column, (T.StringType,), "a string (the DDL statement)")
        has_ddl_type = expect("ddl-type-column", config.ddl_type_column, (T.StringType,), "a string")
        has_before = expect("before-column", config.before_column, (T.StructType,),
                            "a struct with the table columns (the old row)")
        require_table_names(config, has_schema, has_table)

        table_fields = [f for f in spark_schema.fields if f.name not in metadata]
        if not table_fields:
            raise TiCDCSinkError(f"the DataFrame has no table columns, only metadata columns "
                                 f"{[f.name for f in spark_schema.fields]}")
        table = build_table_schema(spark_schema, table_fields, config.column_types, config.primary_key,
                                   config.unique_keys)
        if has_before:
            before = by_name[config.before_column].dataType
            expected = [(f.name, f.dataType) for f in table_fields]
            actual = [(f.name, f.dataType) for f in before.fields]
            if actual != expected:
                raise ContractError(
                    config.before_column, before.simpleString(), "(every row)",
                    f"the old row must have exactly the table columns, in order: "
                    f"struct<{','.join(f'{n}:{t.simpleString()}' for n, t in expected)}>",
                )
        ts_type = by_name[config.commit_ts_column].dataType if has_ts else None
        return cls(
            table=table,
            has_op=has_op,
            has_commit_ts=has_ts,
            commit_ts_is_timestamp=has_ts and not isinstance(ts_type, T.LongType),
            has_before=has_before,
            has_schema=has_schema,
            has_table=has_table,
            has_ddl=has_ddl,
            has_ddl_type=has_ddl_type,
        )


# ---------------------------------------------------------------------------
# One validated batch of row changes


@dataclass
class ChangeBatch:
    """Row changes of one table shape, sorted by commit ts, in canonical column form.

    ``columns`` hold the row after the change (the deleted row for a DELETE);
    ``before`` the row before an UPDATE (null on other rows), or None when the
    stream carries no old values.
    """

    table: TableSchema
    ops: np.ndarray  # int8 OP_* per row
    commit_ts: np.ndarray  # uint64 TSO per row
    databases: pa.Array  # string per row
    tables: pa.Array  # string per row
    columns: dict[str, pa.Array]
    before: dict[str, pa.Array] | None
    keys: "RowKeys"

    @property
    def num_rows(self) -> int:
        return len(self.ops)

    @property
    def max_commit_ts(self) -> int:
        return int(self.commit_ts.max()) if len(self.commit_ts) else 0

    def row_key(self, row: int) -> str:
        return self.keys.describe(row)


class RowKeys:
    """Describes a row for error messages: its key values and its place in the task's input.

    ``{id=5} (position 17 in Spark partition 3)``: a key alone may be NULL or
    repeated, the position (from 0, across the task's Arrow batches) is not.
    """

    def __init__(self, names: list[str], arrays: list[pa.Array], first_row: int = 0, where: str = "the input",
                 order: np.ndarray | None = None):
        self._names, self._arrays, self._order = names, arrays, order
        self._first_row, self._where = first_row, where

    def reordered(self, order: np.ndarray) -> "RowKeys":
        base = order if self._order is None else self._order[order]
        return RowKeys(self._names, self._arrays, self._first_row, self._where, base)

    def describe(self, row: int) -> str:
        source = int(self._order[row]) if self._order is not None else row
        parts = []
        for name, values in zip(self._names, self._arrays):
            text = repr(values[source].as_py())
            parts.append(f"{name}={text if len(text) <= 64 else text[:61] + '...'}")
        return "{" + ", ".join(parts) + f"}} (position {self._first_row + source} in {self._where})"


class _BadValue(Exception):
    def __init__(self, row: int, value, problem: str):
        super().__init__(problem)
        self.row, self.value, self.problem = row, value, problem


def commit_tso(values: pa.Array, is_timestamp: bool) -> np.ndarray:
    """The TSOs (int64) of a commit ts column: as given, or ``physical ms << 18`` of timestamps.

    Negative for timestamps before 1970; nulls are the caller's to refuse.
    """
    if not is_timestamp:
        return pc.fill_null(values, 0).to_numpy()
    millis = np.floor_divide(pc.fill_null(values.cast(pa.int64()), 0).to_numpy(), 1000)
    return np.where(millis < 0, -1, millis << TSO_LOGICAL_BITS)


class ChangeBatchBuilder:
    """Turns a task's record batches into ChangeBatches (and DDL changes).

    Keeps the task's generated commit timestamps strictly increasing when the
    DataFrame has no commit ts column.
    """

    def __init__(self, layout: InputLayout, config: SinkConfig):
        self.layout, self.config = layout, config
        self._last_generated_ts = 0
        self._rows_seen = 0  # rows of earlier record batches, for positions in error messages
        from pyspark import TaskContext

        context = TaskContext.get()
        self._where = f"Spark partition {context.partitionId()}" if context is not None else "the input"

    def build(self, batch: pa.RecordBatch) -> tuple[ChangeBatch | None, list[DDLChange]]:
        layout, config = self.layout, self.config
        n = batch.num_rows
        table_cols = layout.table.columns
        key_columns = [c for c in table_cols if c.handle_key]
        keys = RowKeys([c.name for c in key_columns], [batch.column(c.name) for c in key_columns],
                       self._rows_seen, self._where)
        self._rows_seen += n

        ops = self._ops(batch, keys) if layout.has_op else np.full(n, OP_INSERT, dtype=np.int8)
        commit_ts = self._commit_ts(batch, keys)
        dml = ops != OP_DDL
        databases = self._names(batch, config.schema_column, "database", layout.has_schema, keys,
                                np.ones(n, dtype=bool))
        tables = self._names(batch, config.table_column, "table", layout.has_table, keys, dml)

        ddl_rows = np.flatnonzero(ops == OP_DDL)
        ddls = self._ddls(batch, ddl_rows, commit_ts, databases, tables, keys) if len(ddl_rows) else []
        if len(ddl_rows) == n:
            return None, ddls
        if len(ddl_rows):
            keep = np.flatnonzero(ops != OP_DDL)
            batch, ops, commit_ts = batch.take(pa.array(keep)), ops[keep], commit_ts[keep]
            databases, tables = databases.take(pa.array(keep)), tables.take(pa.array(keep))
            keys = keys.reordered(keep)

        columns = {c.name: self._canonical(batch.column(c.name), c, keys, c.name) for c in table_cols}
        self._check_delete_keys(ops, columns, keys)
        before = None
        if layout.has_before:
            before = self._before(batch, ops, keys)

        if len(commit_ts) > 1 and np.any(np.diff(commit_ts.astype(np.int64)) < 0):
            order = np.argsort(commit_ts, kind="stable")
            take = pa.array(order)
            ops, commit_ts = ops[order], commit_ts[order]
            databases, tables = databases.take(take), tables.take(take)
            columns = {k: v.take(take) for k, v in columns.items()}
            before = {k: v.take(take) for k, v in before.items()} if before is not None else None
            keys = keys.reordered(order)
        return ChangeBatch(layout.table, ops, commit_ts, databases, tables, columns, before, keys), ddls

    # -- metadata columns

    def _ops(self, batch: pa.RecordBatch, keys: RowKeys) -> np.ndarray:
        name = self.config.op_column
        values = batch.column(name)
        found = pc.index_in(pc.utf8_upper(pc.utf8_trim_whitespace(values)), value_set=pa.array(_OP_SPELLINGS))
        if found.null_count:
            row = int(np.flatnonzero(found.is_null().to_numpy(zero_copy_only=False))[0])
            raise ContractError(name, values[row].as_py(), keys.describe(row),
                                "unknown operation: use INSERT, UPDATE, DELETE (or c/u/d, I/U/D) or DDL")
        return _OP_CODES[found.to_numpy(zero_copy_only=False)]

    def _commit_ts(self, batch: pa.RecordBatch, keys: RowKeys) -> np.ndarray:
        n = batch.num_rows
        if not self.layout.has_commit_ts:
            start = max(now_tso(), self._last_generated_ts + 1)
            self._last_generated_ts = start + n - 1
            return np.arange(start, start + n, dtype=np.uint64)
        name = self.config.commit_ts_column
        values = batch.column(name)
        if values.null_count:
            row = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
            raise ContractError(name, None, keys.describe(row), "a row change needs its commit ts")
        tso = commit_tso(values, self.layout.commit_ts_is_timestamp)
        bad = np.flatnonzero(tso < 0 if self.layout.commit_ts_is_timestamp else tso <= 0)
        if len(bad):
            row = int(bad[0])
            if self.layout.commit_ts_is_timestamp:
                raise ContractError(name, values[row].as_py(), keys.describe(row),
                                    "a commit timestamp before 1970 has no TSO")
            raise ContractError(name, int(tso[row]), keys.describe(row),
                                "a TiDB TSO is a positive 64-bit number (physical ms << 18 | logical)")
        return tso.astype(np.uint64)

    def _names(self, batch, column: str, option: str, present: bool, keys: RowKeys,
               needed: np.ndarray) -> pa.Array:
        """Per-row database or table names: the column, else the option (``needed`` rows must have one)."""
        default = getattr(self.config, option)
        if not present:
            return pa.array([default or ""] * batch.num_rows, pa.string())
        values = batch.column(column)
        if values.null_count:
            missing = values.is_null().to_numpy(zero_copy_only=False) & needed
            if default is None and missing.any():
                row = int(np.flatnonzero(missing)[0])
                raise ContractError(column, None, keys.describe(row),
                                    f"needs a name (or set option {option!r} as the default)")
            values = pc.fill_null(values, string_scalar(default or ""))
        return values

    def _ddls(self, batch, rows, commit_ts, databases, tables, keys) -> list[DDLChange]:
        config = self.config
        if not self.layout.has_ddl:
            raise ContractError(config.op_column, "DDL", keys.describe(int(rows[0])),
                                f"a DDL row needs a string column {config.ddl_column!r} with the statement")
        statements = batch.column(config.ddl_column)
        types = batch.column(config.ddl_type_column) if self.layout.has_ddl_type else None
        result = []
        for row in rows.tolist():
            query = statements[row].as_py()
            if not query or not query.strip():
                raise ContractError(config.ddl_column, query, keys.describe(row), "a DDL row needs its statement")
            action = classify(query)
            result.append(DDLChange(
                database=databases[row].as_py(),
                table="" if action in SCHEMA_LEVEL_ACTIONS else tables[row].as_py(),
                query=query,
                commit_ts=int(commit_ts[row]),
                action=action,
                type_override=types[row].as_py() if types is not None else None,
            ))
        return sorted(result, key=lambda d: d.commit_ts)

    def _check_delete_keys(self, ops, columns, keys: RowKeys) -> None:
        deletes = ops == OP_DELETE
        if not deletes.any():
            return
        key_cols = self.layout.table.handle_columns
        missing = np.zeros(len(ops), dtype=bool)
        if self.layout.table.keyless:
            missing = deletes.copy()
            for c in key_cols:
                missing &= columns[c.name].is_null().to_numpy(zero_copy_only=False)
        else:
            for c in key_cols:
                missing |= deletes & columns[c.name].is_null().to_numpy(zero_copy_only=False)
        if missing.any():
            row = int(np.flatnonzero(missing)[0])
            names = ", ".join(c.name for c in key_cols)
            raise ContractError(names, None, keys.describe(row), "a DELETE needs the values of its key columns")

    def _before(self, batch, ops, keys: RowKeys) -> dict[str, pa.Array]:
        name = self.config.before_column
        struct = batch.column(name)
        updates = ops == OP_UPDATE
        missing = updates & struct.is_null().to_numpy(zero_copy_only=False)
        if missing.any():
            row = int(np.flatnonzero(missing)[0])
            raise ContractError(name, None, keys.describe(row), "an UPDATE needs its old row in this column")
        mask = pa.array(updates)
        result = {}
        for i, c in enumerate(self.layout.table.columns):
            child = struct.field(i)
            child = pc.if_else(mask, child, pa.scalar(None, child.type))
            result[c.name] = self._canonical(child, c, keys, f"{name}.{c.name}", rows=updates)
        return result

    # -- table columns

    def _canonical(self, values: pa.Array, column: Column, keys: RowKeys, label: str,
                   rows: np.ndarray | None = None) -> pa.Array:
        """Canonical values of one column; ``rows`` masks the rows whose values count."""
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        if not column.nullable and values.null_count:
            nulls = values.is_null().to_numpy(zero_copy_only=False)
            if rows is not None:
                nulls &= rows
            if nulls.any():
                row = int(np.flatnonzero(nulls)[0])
                raise ContractError(label, None, keys.describe(row), "the column is NOT NULL")
        try:
            return canonical_values(values, column, self.config.time_zone)
        except _BadValue as bad:
            raise ContractError(label, bad.value, keys.describe(bad.row), bad.problem) from None


# ---------------------------------------------------------------------------
# Canonical column values


def _first_failing(values: pa.Array, check) -> tuple[int, object]:
    """The first row whose Python value fails ``check`` (the slow path of an error)."""
    for i, v in enumerate(values.to_pylist()):
        if v is not None and not check(v):
            return i, v
    return 0, values[0].as_py() if len(values) else None


def _first_true(mask: pa.Array) -> int | None:
    rows = np.flatnonzero(pc.fill_null(mask, False).to_numpy(zero_copy_only=False))
    return int(rows[0]) if len(rows) else None


def canonical_values(values: pa.Array, column: Column, time_zone: str) -> pa.Array:
    """Convert one input column to the canonical form of its MySQL type (raises _BadValue)."""
    t = column.type
    kind = t.kind
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        _check_utf8(values)
    if kind in INTEGER_KINDS or kind == "year":
        return _integers(values, t)
    if kind in ("float", "double"):
        target = pa.float32() if kind == "float" else pa.float64()
        if pa.types.is_decimal(values.type):
            # Through the decimal text: Arrow's decimal-to-float cast is not correctly rounded.
            values = values.cast(pa.string())
        return values.cast(target, safe=False)
    if kind == "decimal":
        target = pa.decimal128(t.length, t.decimals) if t.length <= 38 else pa.decimal256(t.length, t.decimals)
        try:
            return values.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            row, value = _first_failing(values, lambda v: _fits_decimal(v, t.length, t.decimals))
            raise _BadValue(row, value, f"does not fit DECIMAL({t.length},{t.decimals})")
    if kind == "bit":
        return _bits(values, t.length)
    if kind == "enum":
        return _enum(values, t.elements)
    if kind == "set":
        return _set(values, t.elements)
    if kind == "date":
        return values
    if kind in ("datetime", "timestamp"):
        return _round_fsp(_wall_clock(values, kind, time_zone), t.fsp)
    if kind == "time":
        return _duration(values, t.fsp)
    if kind == "json":
        return _json(values)
    if kind in STRING_KINDS:
        if t.binary:
            values = values.cast(pa.binary()) if not pa.types.is_binary(values.type) else values
            return _pad_binary(values, t.length) if kind == "char" else values
        if pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type):
            try:
                values = values.cast(pa.string())
            except pa.ArrowInvalid:
                row, value = _first_failing(values, _is_utf8)
                raise _BadValue(row, value, f"{t.short_name} needs UTF-8 text; declare it BINARY/VARBINARY/BLOB")
        # TiDB drops CHAR's trailing spaces when it reads a value.
        return pc.utf8_rtrim(values, " ") if kind == "char" else values
    raise _BadValue(0, None, f"unsupported MySQL type {t.full_name}")


def _pad_binary(values: pa.Array, length: int) -> pa.Array:
    """BINARY(n) holds exactly n bytes: TiDB pads shorter values with 0x00."""
    too_long = _first_true(pc.greater(pc.binary_length(values), length))
    if too_long is not None:
        raise _BadValue(too_long, values[too_long].as_py(), f"is longer than BINARY({length})")
    if not pc.any(pc.less(pc.binary_length(values), length)).as_py():
        return values
    return pa.array([None if v is None else v.ljust(length, b"\0") for v in values.to_pylist()], pa.binary())


def _check_utf8(values: pa.Array) -> None:
    """Spark does not check that strings are UTF-8 (CAST(X'FF' AS STRING)); TiDB would refuse them."""
    try:
        values.validate(full=True)
    except pa.ArrowInvalid:
        row, value = _first_failing(values.cast(pa.binary()), _is_utf8)
        raise _BadValue(row, value, "is not valid UTF-8 text") from None


def _is_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _fits_decimal(value, precision: int, scale: int) -> bool:
    exact = Decimal(value)
    return exact == round(exact, scale) and abs(exact) < Decimal(10) ** (precision - scale)


def _integers(values: pa.Array, t) -> pa.Array:
    low, high = t.int_bounds if t.kind != "year" else (0, 2155)
    target = pa.uint64() if t.unsigned else pa.int64()
    out_of_range = f"is out of range for {t.short_name} [{low}, {high}]"
    if pa.types.is_boolean(values.type):
        values = values.cast(pa.int8())
    if pa.types.is_decimal(values.type):
        try:
            values = values.cast(target)
        except pa.ArrowInvalid:
            row, value = _first_failing(values, lambda v: low <= v <= high and v == int(v))
            raise _BadValue(row, value, out_of_range)
    elif t.unsigned:
        negative = _first_true(pc.less(values, 0))
        if negative is not None:
            raise _BadValue(negative, values[negative].as_py(), out_of_range)
    values = values.cast(target)
    bad = _first_true(pc.or_(pc.less(values, pa.scalar(low, target)), pc.greater(values, pa.scalar(high, target))))
    if bad is not None:
        raise _BadValue(bad, values[bad].as_py(), out_of_range)
    if t.kind == "year":
        bad = _first_true(pc.and_(pc.greater(values, 0), pc.less(values, 1901)))
        if bad is not None:
            raise _BadValue(bad, values[bad].as_py(), "a YEAR is 0 or 1901..2155")
    return values


def _bits(values: pa.Array, width: int) -> pa.Array:
    limit = 2**width - 1
    if pa.types.is_binary(values.type):
        numbers = [None if v is None else int.from_bytes(v, "big") for v in values.to_pylist()]
        for i, v in enumerate(numbers):
            if v is not None and v > limit:
                raise _BadValue(i, values[i].as_py(), f"has more than {width} bits for BIT({width})")
        return pa.array(numbers, pa.uint64())
    if pa.types.is_boolean(values.type):
        return values.cast(pa.uint64())
    if width == 64 and pa.types.is_int64(values.type):
        # A BIT(64) value with the top bit set arrives as a negative long.
        return pa.array(pc.fill_null(values, 0).to_numpy().view(np.uint64),
                        pa.uint64(), mask=values.is_null().to_numpy(zero_copy_only=False))
    return _unsigned_within(values, limit, f"does not fit BIT({width}) [0, {limit}]")


def _unsigned_within(values: pa.Array, limit: int, problem: str) -> pa.Array:
    """Integral values as uint64, each in [0, limit] (``problem`` names the rule otherwise)."""
    if not pa.types.is_unsigned_integer(values.type):
        negative = _first_true(pc.less(values, 0))
        if negative is not None:
            raise _BadValue(negative, values[negative].as_py(), problem)
    try:
        unsigned = values.cast(pa.uint64())
    except pa.ArrowInvalid:
        row, value = _first_failing(values, lambda v: v == int(v) and 0 <= v <= limit)
        raise _BadValue(row, value, problem)
    bad = _first_true(pc.greater(unsigned, pa.scalar(limit, pa.uint64())))
    if bad is not None:
        raise _BadValue(bad, values[bad].as_py(), problem)
    return unsigned


def _member_indexes(values: pa.Array, elements: tuple[str, ...]) -> pa.Array:
    """0-based member positions of strings (case-insensitive, as MySQL compares them)."""
    return pc.index_in(pc.utf8_lower(values), value_set=pa.array([e.lower() for e in elements], pa.string()))


def _enum(values: pa.Array, elements: tuple[str, ...]) -> pa.Array:
    if pa.types.is_integer(values.type):
        return _unsigned_within(values, len(elements), f"an ENUM index is 0..{len(elements)}")
    found = _member_indexes(values, elements)
    # '' is MySQL's error value (index 0) unless the ENUM declares it as a member.
    empty = pc.and_(pc.equal(values, string_scalar("")), pa.scalar("" not in elements, pa.bool_()))
    bad = _first_true(pc.and_(pc.is_null(found), pc.and_(pc.is_valid(values), pc.invert(empty))))
    if bad is not None:
        raise _BadValue(bad, values[bad].as_py(), f"is not a member of ENUM{elements}")
    index = pc.add(found.cast(pa.uint64()), pa.scalar(1, pa.uint64()))
    return pc.if_else(empty, pa.scalar(0, pa.uint64()), index)


def _set(values: pa.Array, elements: tuple[str, ...]) -> pa.Array:
    if pa.types.is_integer(values.type):
        limit = 2 ** len(elements) - 1
        return _unsigned_within(values, limit, f"a SET bitmask of {len(elements)} members is 0..{limit}")
    members = pc.split_pattern(pc.fill_null(values, string_scalar("")), ",")
    flat = pc.utf8_trim_whitespace(pc.list_flatten(members))
    found = _member_indexes(flat, elements)
    unknown = pc.and_(pc.is_null(found), pc.not_equal(flat, string_scalar("")))
    bad_member = _first_true(unknown)
    if bad_member is not None:
        parents = pc.list_parent_indices(members).to_numpy()
        row = int(parents[bad_member])
        raise _BadValue(row, values[row].as_py(), f"{flat[bad_member].as_py()!r} is not a member of SET{elements}")
    bits = np.where(found.is_null().to_numpy(zero_copy_only=False), 0,
                    np.left_shift(np.uint64(1), pc.fill_null(found, 0).to_numpy().astype(np.uint64)))
    offsets = members.offsets.to_numpy()
    sums = np.zeros(len(values), dtype=np.uint64)
    lengths = np.diff(offsets)
    nonempty = lengths > 0
    if len(bits):
        sums[nonempty] = np.bitwise_or.reduceat(bits.astype(np.uint64), offsets[:-1][nonempty])
    return pa.array(sums, pa.uint64(), mask=values.is_null().to_numpy(zero_copy_only=False))


def _wall_clock(values: pa.Array, kind: str, time_zone: str) -> pa.Array:
    """DATETIME: naive wall-clock time; TIMESTAMP: an instant in UTC.

    Zoned input becomes DATETIME as wall-clock time in ``time-zone``; naive input
    becomes TIMESTAMP by reading it as wall-clock time in ``time-zone``.
    """
    if pa.types.is_date(values.type):
        values = values.cast(pa.timestamp("us"))
    values = values.cast(pa.timestamp("us", tz=values.type.tz))
    zoned = values.type.tz is not None
    if kind == "datetime":
        return pc.local_timestamp(values.cast(pa.timestamp("us", tz=time_zone))) if zoned else values
    if not zoned:
        values = pc.assume_timezone(values, time_zone, ambiguous="earliest", nonexistent="earliest")
    return values.cast(pa.timestamp("us", tz="UTC"))


def _round_fsp(values: pa.Array, fsp: int) -> pa.Array:
    """Round to the column's fractional seconds, as MySQL does when it stores a value."""
    if fsp >= 6:
        return values
    unit = 10 ** (6 - fsp)
    micros = pc.fill_null(values.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
    rounded = np.floor_divide(micros + unit // 2, unit) * unit
    mask = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None
    return pa.array(rounded, pa.int64(), mask=mask).cast(values.type)


_TIME = r"^\s*(?P<sign>-?)(?P<h>\d{1,3}):(?P<m>\d{1,2}):(?P<s>\d{1,2})(?:\.(?P<f>\d{0,6}))?\s*$"
_MAX_TIME_US = (838 * 3600 + 59 * 60 + 59) * 1_000_000


def _duration(values: pa.Array, fsp: int) -> pa.Array:
    parts = pc.extract_regex(values, _TIME)
    bad = _first_true(pc.and_(pc.is_valid(values), pc.is_null(parts)))
    if bad is not None:
        raise _BadValue(bad, values[bad].as_py(), "a TIME is [-]hh:mm:ss[.ffffff]")

    def number(name):
        return pc.fill_null(pc.struct_field(parts, name), string_scalar("0")).to_numpy(zero_copy_only=False)

    h, m, s = (np.array([int(x or 0) for x in number(n)], dtype=np.int64) for n in ("h", "m", "s"))
    fraction = np.array([int((x or "").ljust(6, "0")) for x in number("f")], dtype=np.int64)
    micros = ((h * 3600 + m * 60 + s) * 1_000_000) + fraction
    unit = 10 ** (6 - fsp)
    micros = (micros + unit // 2) // unit * unit
    bad_rows = np.flatnonzero((m > 59) | (s > 59) | (micros > _MAX_TIME_US))
    mask = values.is_null().to_numpy(zero_copy_only=False)
    bad_rows = bad_rows[~mask[bad_rows]]
    if len(bad_rows):
        row = int(bad_rows[0])
        raise _BadValue(row, values[row].as_py(), "a TIME is within -838:59:59..838:59:59 with minutes and "
                                                   "seconds under 60")
    negative = pc.fill_null(pc.equal(pc.struct_field(parts, "sign"), string_scalar("-")), False)
    negative = negative.to_numpy(zero_copy_only=False)
    return pa.array(np.where(negative, -micros, micros), pa.int64(), mask=mask)


def _json(values: pa.Array) -> pa.Array:
    """JSON columns as TiDB's JSON text, from JSON strings or from Spark arrays, maps and structs."""
    from .tidb_json import InvalidJSON, tidb_json_column, tidb_json_text

    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        try:
            return tidb_json_column(values)
        except InvalidJSON as e:
            raise _BadValue(e.row, e.document, f"is not valid JSON ({e.reason})") from None
    convert = _json_converter(values.type)
    try:
        texts = [tidb_json_text(convert(v)) for v in values.drop_null().to_pylist()]
    except ValueError as e:
        raise _BadValue(0, None, f"holds a value JSON cannot ({e})") from None
    if not values.null_count:
        return pa.array(texts, pa.string())
    result = pa.array([None] * len(values), pa.string())
    return pc.replace_with_mask(result, values.is_valid(), pa.array(texts, pa.string()))


def _json_converter(arrow_type: pa.DataType):
    """A function from Arrow's Python form of a nested value to plain JSON data, led by the type."""
    if pa.types.is_map(arrow_type):
        item = _json_converter(arrow_type.item_type)
        return lambda v: None if v is None else {str(k): item(x) for k, x in v}
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        item = _json_converter(arrow_type.value_type)
        return lambda v: None if v is None else [item(x) for x in v]
    if pa.types.is_struct(arrow_type):
        fields = [(f.name, _json_converter(f.type)) for f in arrow_type]
        return lambda v: None if v is None else {name: convert(v[name]) for name, convert in fields}
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return lambda v: None if v is None else v.decode("latin-1")
    if pa.types.is_decimal(arrow_type):
        return lambda v: None if v is None else float(v)  # TiDB's JSON holds numbers as doubles
    if pa.types.is_timestamp(arrow_type):
        return lambda v: None if v is None else v.isoformat(sep=" ")
    if pa.types.is_date(arrow_type):
        return lambda v: None if v is None else v.isoformat()
    return lambda v: v
