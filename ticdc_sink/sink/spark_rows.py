"""Spark Rows as Arrow record batches, for the writers of pyspark versions without an Arrow stream writer."""

from __future__ import annotations

import datetime
from typing import Iterator

import pyarrow as pa


def _zone_fixer(arrow_type: pa.DataType):
    """Spark hands Rows' zoned timestamps over as naive local time; Arrow needs the instant."""
    if pa.types.is_timestamp(arrow_type) and arrow_type.tz:
        return lambda v: v.astimezone(datetime.timezone.utc) if v is not None and v.tzinfo is None else v
    if pa.types.is_struct(arrow_type):
        fixers = {f.name: fix for f in arrow_type if (fix := _zone_fixer(f.type))}
        if fixers:
            return lambda v: None if v is None else {**v, **{k: fix(v[k]) for k, fix in fixers.items()}}
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        fix = _zone_fixer(arrow_type.value_type)
        if fix:
            return lambda v: None if v is None else [fix(x) for x in v]
    if pa.types.is_map(arrow_type):
        fix = _zone_fixer(arrow_type.item_type)
        if fix:
            return lambda v: None if v is None else {k: fix(x) for k, x in v.items()}
    return None


def rows_to_record_batches(rows: Iterator, arrow_schema: pa.Schema, size: int = 10_000) -> Iterator[pa.RecordBatch]:
    """Re-batch Spark Rows into Arrow (pyspark 4.0 has no Arrow stream writer)."""
    fixers = {f.name: fix for f in arrow_schema if (fix := _zone_fixer(f.type))}
    chunk = []
    for row in rows:
        values = row.asDict(recursive=True)
        for name, fix in fixers.items():
            values[name] = fix(values[name])
        chunk.append(values)
        if len(chunk) >= size:
            yield pa.RecordBatch.from_pylist(chunk, schema=arrow_schema)
            chunk = []
    if chunk:
        yield pa.RecordBatch.from_pylist(chunk, schema=arrow_schema)
