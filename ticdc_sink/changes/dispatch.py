"""Topic expressions and partition dispatchers, computed for a whole batch at once.

Both follow TiCDC (``downstreamadapter/sink/eventrouter/`` at pingcap/ticdc@b813e76f): a topic is the expression with
``{schema}``/``{table}`` substituted after replacing characters Kafka forbids
by ``_``; a partition is TiCDC's PositionInertia hash (the XOR of CRC32-IEEE
checksums of ``schema+table`` and of each ``column name + value text``) modulo
the partition count, or ``commit ts % n`` for ``ts``.  NULL values are skipped
as the newer TiCDC does, so the same row key always lands on the same partition.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..config.sink import SinkConfig
from ..errors import ConfigError
from ..table.schema import Column, TableSchema
from ..table.text_join import join
from ..table.value_text import value_text
from .contract import ChangeBatch

_KAFKA_FORBIDDEN = re.compile(r"[^a-zA-Z0-9._\-]")
_KAFKA_TOPIC_MAX_LENGTH = 249


class TopicRouter:
    """Resolves the ``topic`` expression per (schema, table)."""

    def __init__(self, config: SinkConfig):
        self.expression = config.topic
        self.default_topic = config.default_topic or (None if config.topic_has_placeholders else config.topic)

    def topic_for(self, schema: str, table: str) -> str:
        schema = _KAFKA_FORBIDDEN.sub("_", schema)
        table = _KAFKA_FORBIDDEN.sub("_", table)
        topic = self.expression.replace("{schema}", schema).replace("{table}", table)
        # Kafka's limits, as TiCDC applies them: at most 249 characters, and not "." or "..".
        return {".": "_", "..": "__"}.get(topic, topic[:_KAFKA_TOPIC_MAX_LENGTH])

    def topic_for_ddl(self, schema: str, table: str) -> str:
        """A DDL on a database (no table) goes to the default topic, as in TiCDC."""
        if table or "{table}" not in self.expression:
            return self.topic_for(schema, table)
        if self.default_topic is None:
            raise ConfigError(
                "default-topic", None,
                f"a DDL on database {schema!r} has no table for the topic expression {self.expression!r}; "
                "set default-topic to the topic that receives database-level DDL",
            )
        return self.default_topic

    def topics(self, batch: ChangeBatch) -> tuple[list[str], np.ndarray]:
        """The distinct topics of a batch and, per row, the index of its topic."""
        if "{" not in self.expression:
            return [self.expression], np.zeros(batch.num_rows, dtype=np.int32)
        pairs = join(batch.databases, "\x00", batch.tables)
        distinct = pc.unique(pairs)
        names = [self.topic_for(*pair.split("\x00")) for pair in distinct.to_pylist()]
        codes = pc.index_in(pairs, value_set=distinct).to_numpy(zero_copy_only=False).astype(np.int32)
        return names, codes


@dataclass(frozen=True)
class Routing:
    """Where each row of a batch goes, computed before encoding so that batching codecs pack per partition."""

    topics: list[str]
    topic_of_row: np.ndarray  # int32 index into ``topics``
    partition_of_row: np.ndarray  # int32
    partition_counts: dict[str, int]  # every topic of the batch
    # (topic, partition) -> (min, max) commit ts of the batch's rows there, for the driver's order check
    commit_ts_spans: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)

    @property
    def topic_of_message(self) -> np.ndarray | None:
        """``topic_of_row`` for one message per row; None when the batch has one topic."""
        return self.topic_of_row if len(self.topics) > 1 else None


def route(batch: ChangeBatch, router: TopicRouter, dispatcher: "PartitionDispatcher",
          partition_count: Callable[[str], int]) -> Routing:
    """The topic and partition of every row of ``batch``."""
    topics, topic_of_row = router.topics(batch)
    counts = np.array([partition_count(t) for t in topics], dtype=np.uint64)
    partition_of_row = (dispatcher.routing_values(batch) % counts[topic_of_row]).astype(np.int32)
    return Routing(topics, topic_of_row, partition_of_row, dict(zip(topics, counts.tolist())),
                   _commit_ts_spans(topics, topic_of_row, partition_of_row, batch.commit_ts))


def _commit_ts_spans(topics: list[str], topic_of_row: np.ndarray, partition_of_row: np.ndarray,
                     commit_ts: np.ndarray) -> dict[tuple[str, int], tuple[int, int]]:
    """The first and last commit ts of each (topic, partition) of a batch sorted by commit ts."""
    where = topic_of_row.astype(np.int64) << 32 | partition_of_row.astype(np.int64)
    keys, first = np.unique(where, return_index=True)
    _, from_end = np.unique(where[::-1], return_index=True)
    last = len(where) - 1 - from_end
    return {(topics[key >> 32], key & 0xFFFFFFFF): (int(commit_ts[i]), int(commit_ts[j]))
            for key, i, j in zip(keys.tolist(), first.tolist(), last.tolist())}


class PartitionDispatcher:
    """The ``partition`` rule (``default``/``table``, ``index-value``, ``ts``, ``columns``) for one table."""

    def __init__(self, config: SinkConfig, table: TableSchema):
        self.rule = config.partition
        self.time_zone = config.time_zone
        self.columns: tuple[Column, ...] = ()
        if self.rule == "index-value":
            if config.partition_index:
                index = table.find_index(config.partition_index)
                if index is None:
                    known = ", ".join(i.name for i in table.indexes) or "none (set primary-key or unique-keys)"
                    raise ConfigError("partition-index", config.partition_index, f"no such index; indexes: {known}")
                self.columns = tuple(table.column_named(name) for name in index.columns)
            else:
                # TiCDC hashes the handle columns only; a table without a handle hashes schema and table.
                self.columns = tuple(c for c in table.columns if c.handle_key)
        elif self.rule == "columns":
            resolved = []
            for name in config.partition_columns:
                column = table.find_column(name)
                if column is None:
                    raise ConfigError("partition-columns", ",".join(config.partition_columns),
                                      f"{name!r} is not a table column; columns are {list(table.names)}")
                resolved.append(column)
            self.columns = tuple(resolved)

    def routing_values(self, batch: ChangeBatch) -> np.ndarray:
        """Per row, the number whose remainder by the partition count is the partition.

        The commit ts for ``ts``; otherwise the PositionInertia hash of the row.
        """
        return self.routing_of(batch.databases, batch.tables, batch.commit_ts, batch.columns)

    def routing_of(self, databases: pa.Array, tables: pa.Array, commit_ts: np.ndarray | None,
                   columns: dict[str, pa.Array]) -> np.ndarray:
        """``routing_values`` from the parts of a batch: ``columns`` in canonical form, the ones hashed at least."""
        if self.rule == "ts":
            return commit_ts
        hashes = _table_hashes(databases, tables)
        for column in self.columns:
            hashes ^= _column_hashes(columns[column.name], column, self.time_zone)
        return hashes.astype(np.uint64)


def _crc_of_texts(texts: list, start: int) -> np.ndarray:
    crc = zlib.crc32
    return np.fromiter((crc(t, start) if t is not None else 0 for t in texts), dtype=np.uint32, count=len(texts))


def _table_hashes(databases: pa.Array, tables: pa.Array) -> np.ndarray:
    pairs = join(databases, tables)
    distinct = pc.unique(pairs)
    crcs = np.array([zlib.crc32(s.encode()) for s in distinct.to_pylist()], dtype=np.uint32)
    return crcs[pc.index_in(pairs, value_set=distinct).to_numpy(zero_copy_only=False)]


def _column_hashes(values: pa.Array, column: Column, time_zone: str) -> np.ndarray:
    """crc32(name + value text) per row; 0 (no effect on the XOR) for NULL, which TiCDC skips."""
    text = value_text(values, column.type, time_zone, nan_as_zero=True)
    raw = text.cast(pa.binary()).to_pylist()
    return _crc_of_texts(raw, zlib.crc32(column.name.encode()))
