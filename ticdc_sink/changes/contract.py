"""The input contract (docs/input.md): Arrow record batches -> validated ``ChangeBatch``es.

The driver checks the DataFrame's schema once and fixes an ``InputLayout``;
each task then turns Arrow record batches into ``ChangeBatch``es: operations,
commit timestamps, target tables, the rows sorted by commit ts, and the table
columns (and the old row) in canonical form (``canonical.py``).  Codecs and
dispatchers only ever see canonical values; every contract check lives here or
there, and every failure names the column, the value and the row's key.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..config.sink import SinkConfig, require_table_names
from ..ddl.statements import SCHEMA_LEVEL_ACTIONS, DDLChange, classify
from ..errors import ConfigError, ContractError, TiCDCSinkError
from ..table.schema import TableSchema, build_table_schema
from ..table.text_join import string_scalar
from ..tso import TSO_LOGICAL_BITS, now_tso
from .canonical import canonical_columns

OP_INSERT, OP_UPDATE, OP_DELETE, OP_DDL = 1, 2, 3, 4


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
    has_start_ts: bool = False
    has_row_id: bool = False

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
        has_start_ts = expect("start-ts-column", config.start_ts_column, (T.LongType,),
                              "a long (the transaction's start TSO)")
        has_row_id = expect("row-id-column", config.row_id_column, (T.LongType,), "a long (TiDB's _tidb_rowid)")
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
            has_start_ts=has_start_ts,
            has_row_id=has_row_id,
        )


@dataclass
class ChangeBatch:
    """Row changes of one table shape, sorted by commit ts, in canonical column form.

    ``columns`` hold the row after the change (the deleted row for a DELETE);
    ``before`` the row before an UPDATE (null on other rows), or None when the
    stream carries no old values.  ``start_ts`` is each row's transaction start
    TSO: the input's, else its commit ts; ``row_ids`` TiDB's ``_tidb_rowid`` of
    each row where the input has it (null where a row has none), else None.
    """

    table: TableSchema
    ops: np.ndarray  # int8 OP_* per row
    commit_ts: np.ndarray  # uint64 TSO per row
    databases: pa.Array  # string per row
    tables: pa.Array  # string per row
    columns: dict[str, pa.Array]
    before: dict[str, pa.Array] | None
    keys: "RowKeys"
    start_ts: np.ndarray  # uint64 TSO per row
    row_ids: pa.Array | None = None  # int64 per row

    @property
    def num_rows(self) -> int:
        return len(self.ops)

    @property
    def max_commit_ts(self) -> int:
        return int(self.commit_ts.max()) if len(self.commit_ts) else 0

    def row_key(self, row: int) -> str:
        return self.keys.describe(row)

    def rows(self, indices: np.ndarray) -> "ChangeBatch":
        """The batch's rows at ``indices``, in that order (the rows a codec renders another way)."""
        take = pa.array(indices)
        before = None if self.before is None else {name: v.take(take) for name, v in self.before.items()}
        return ChangeBatch(self.table, self.ops[indices], self.commit_ts[indices], self.databases.take(take),
                           self.tables.take(take), {name: v.take(take) for name, v in self.columns.items()},
                           before, self.keys.reordered(indices), self.start_ts[indices],
                           None if self.row_ids is None else self.row_ids.take(take))

    @functools.cached_property
    def tables_of_rows(self) -> tuple[list[tuple[str, str]], np.ndarray]:
        """The batch's distinct (database, table) and, per row, the index of its own (computed once a batch:
        Simple needs them for its table ids and for its due BOOTSTRAPs)."""
        names = pc.binary_join_element_wise(self.databases, self.tables, string_scalar("\x00")).dictionary_encode()
        tables = [tuple(name.split("\x00")) for name in names.dictionary.to_pylist()]
        return tables, names.indices.to_numpy(zero_copy_only=False)


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


def commit_tso(values: pa.Array, is_timestamp: bool) -> np.ndarray:
    """The TSOs (int64) of a commit ts column: as given, or ``physical ms << 18`` of timestamps.

    Negative for timestamps before 1970; nulls are the caller's to refuse.
    """
    if not is_timestamp:
        return pc.fill_null(values, 0).to_numpy()
    millis = np.floor_divide(pc.fill_null(values.cast(pa.int64()), 0).to_numpy(), 1000)
    return np.where(millis < 0, -1, millis << TSO_LOGICAL_BITS)


_OP_SPELLINGS = ["INSERT", "I", "C", "UPDATE", "U", "DELETE", "D", "DDL"]
_OP_CODES = np.array([OP_INSERT] * 3 + [OP_UPDATE] * 2 + [OP_DELETE] * 2 + [OP_DDL], dtype=np.int8)


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
        start_ts = self._start_ts(batch, keys, commit_ts) if layout.has_start_ts else commit_ts
        row_ids = batch.column(config.row_id_column) if layout.has_row_id else None
        dml = ops != OP_DDL
        databases = self._names(batch, config.schema_column, "database", layout.has_schema, keys,
                                np.ones(n, dtype=bool))
        tables = self._names(batch, config.table_column, "table", layout.has_table, keys, dml)

        ddl_rows = np.flatnonzero(ops == OP_DDL)
        ddls = self._ddls(batch, ddl_rows, commit_ts, databases, tables, keys) if len(ddl_rows) else []
        if len(ddl_rows) == n:
            return None, ddls
        # The row changes, sorted by commit ts: the input as it is, or the rows to take from it.
        rows = np.flatnonzero(ops != OP_DDL) if len(ddl_rows) else None
        kept_ts = commit_ts if rows is None else commit_ts[rows]
        if len(kept_ts) > 1 and np.any(np.diff(kept_ts.astype(np.int64)) < 0):
            order = np.argsort(kept_ts, kind="stable")
            rows = order if rows is None else rows[order]
        if rows is not None:
            take = pa.array(rows)
            batch, ops, commit_ts, start_ts = batch.take(take), ops[rows], commit_ts[rows], start_ts[rows]
            row_ids = None if row_ids is None else row_ids.take(take)
            databases, tables = databases.take(take), tables.take(take)
            keys = keys.reordered(rows)

        columns = {c.name: batch.column(c.name) for c in table_cols}
        self._check_not_null(columns, "", keys)
        self._check_delete_keys(ops, columns, keys)
        updates = ops == OP_UPDATE
        before = self._before(batch, updates, keys) if layout.has_before else None
        columns, before = canonical_columns(layout.table, columns, before, keys.describe, self.config.before_column,
                                            self.config.time_zone)
        return ChangeBatch(layout.table, ops, commit_ts, databases, tables, columns, before, keys, start_ts,
                           row_ids), ddls

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

    def _start_ts(self, batch: pa.RecordBatch, keys: RowKeys, commit_ts: np.ndarray) -> np.ndarray:
        """The start TSOs of the input's column; a row without one takes its commit ts."""
        values = batch.column(self.config.start_ts_column)
        start = pc.fill_null(values, 0).to_numpy(zero_copy_only=False).astype(np.int64)
        bad = np.flatnonzero((start < 0) | (start.astype(np.uint64) > commit_ts))
        if len(bad):
            row = int(bad[0])
            raise ContractError(self.config.start_ts_column, int(start[row]), keys.describe(row),
                                f"a transaction's start ts is a TiDB TSO no later than its commit ts "
                                f"{int(commit_ts[row])}")
        return np.where(start == 0, commit_ts, start.astype(np.uint64))

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

    def _check_not_null(self, columns: dict[str, pa.Array], label: str, keys: RowKeys,
                        rows: np.ndarray | None = None) -> None:
        """Refuse a NULL in a NOT NULL column (among ``rows`` only, when given); ``label`` prefixes the column."""
        for column in self.layout.table.columns:
            values = columns[column.name]
            if column.nullable or not values.null_count:
                continue
            nulls = values.is_null().to_numpy(zero_copy_only=False)
            if rows is not None:
                nulls &= rows
            if nulls.any():
                raise ContractError(f"{label}{column.name}", None, keys.describe(int(np.flatnonzero(nulls)[0])),
                                    "the column is NOT NULL")

    def _before(self, batch, updates: np.ndarray, keys: RowKeys) -> dict[str, pa.Array]:
        """The old row's values as given: on the updates, null on the other rows."""
        name = self.config.before_column
        struct = batch.column(name)
        missing = updates & struct.is_null().to_numpy(zero_copy_only=False)
        if missing.any():
            row = int(np.flatnonzero(missing)[0])
            raise ContractError(name, None, keys.describe(row), "an UPDATE needs its old row in this column")
        mask = pa.array(updates)
        result = {}
        for i, c in enumerate(self.layout.table.columns):
            child = struct.field(i)
            result[c.name] = pc.if_else(mask, child, pa.scalar(None, child.type))
        self._check_not_null(result, f"{name}.", keys, rows=updates)
        return result
