"""TiCDC's split of an UPDATE that changes a key: a DELETE of the old row and an INSERT of the new one.

Unless ``output-raw-change-event`` is set, TiCDC's Kafka sink sends an UPDATE
that changes the primary key or a unique key (any column of one) as a DELETE
with the old values, in the UPDATE's place, and an INSERT with the new values
after the other changes of its transaction (pingcap/ticdc
``pkg/eventservice/event_scanner.go``, ``pkg/common/event/codec.go``
``IsUKChanged``).  Consumers that key by the Kafka key (a compacted topic, an
upsert table) then drop the old key's row.  A transaction here is the changes
of one commit ts.  Without old values (no ``_before``) a change of key cannot
be seen, and the UPDATE goes as it is.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .contract import OP_DELETE, OP_INSERT, OP_UPDATE, ChangeBatch


def split_key_updates(batch: ChangeBatch) -> ChangeBatch:
    """The batch with each UPDATE that changes a key column split as TiCDC splits it (the module's docstring)."""
    key_columns = sorted({name for index in batch.table.indexes for name in index.columns})
    if batch.before is None or not key_columns:
        return batch
    is_update = batch.ops == OP_UPDATE
    if not is_update.any():
        return batch
    changed = np.zeros(batch.num_rows, dtype=bool)
    for name in key_columns:
        new, old = batch.columns[name], batch.before[name]
        differs = pc.fill_null(pc.not_equal(new, old), False)
        null_changed = pc.not_equal(new.is_null(), old.is_null())
        changed |= pc.or_(differs, null_changed).to_numpy(zero_copy_only=False)
    split = is_update & changed
    if not split.any():
        return batch
    return _expanded(batch, split)


def _expanded(batch: ChangeBatch, split: np.ndarray) -> ChangeBatch:
    """Every row, a split one as its DELETE; then, at the end of each commit ts's rows, the split ones' INSERTs."""
    n = batch.num_rows
    inserts = np.flatnonzero(split)
    source = np.concatenate([np.arange(n), inserts])
    is_insert = np.concatenate([np.zeros(n, dtype=bool), np.ones(len(inserts), dtype=bool)])
    # The batch is in commit-ts order: an INSERT goes after the last row of its commit ts.
    group = np.concatenate([[0], np.cumsum(batch.commit_ts[1:] != batch.commit_ts[:-1])])
    order = np.lexsort((source, is_insert, group[source]))
    source, is_insert = source[order], is_insert[order]
    is_delete = split[source] & ~is_insert
    take, deleted = pa.array(source), pa.array(is_delete)

    ops = batch.ops[source].copy()
    ops[is_delete], ops[is_insert] = OP_DELETE, OP_INSERT
    columns = {name: pc.if_else(deleted, batch.before[name].take(take), values.take(take))
               for name, values in batch.columns.items()}
    no_before = pa.array(is_delete | is_insert)
    before = {name: pc.if_else(no_before, pa.nulls(len(source), values.type), values.take(take))
              for name, values in batch.before.items()}
    return ChangeBatch(batch.table, ops, batch.commit_ts[source], batch.databases.take(take),
                       batch.tables.take(take), columns, before, batch.keys.reordered(source),
                       batch.start_ts[source], None if batch.row_ids is None else batch.row_ids.take(take))
