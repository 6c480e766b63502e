"""What every protocol codec provides, and the events its decoder returns."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..changes import ChangeBatch
from ..config import SinkConfig
from ..ddl import DDLChange
from ..errors import MessageTooLargeError
from ..mysql_types import TableSchema

# TiCDC's per-message overhead in its size check (common/message.go MaxRecordOverhead).
MESSAGE_OVERHEAD = 36


@dataclass
class EncodedRows:
    """The messages of a batch of rows, column-wise: the producer walks them in one tight loop."""

    topics: list[str]
    topic_of_message: np.ndarray | None  # index into ``topics`` per message; None: all go to topics[0]
    partitions: list[int]
    keys: list[bytes] | None  # None: no keys
    values: list[str | bytes]

    def __len__(self) -> int:
        return len(self.values)


class Encoded(NamedTuple):
    """Key and value of a control event; ``partition`` None means every partition."""

    key: bytes | None
    value: bytes | str
    partition: int | None


class Encoder(ABC):
    """Turns ChangeBatches and control events into Kafka messages of one protocol."""

    def __init__(self, config: SinkConfig, table: TableSchema | None):
        self.config, self.table = config, table

    @abstractmethod
    def encode_rows(self, batch: ChangeBatch, topics: list[str], topic_of_row: np.ndarray,
                    partition_of_row: np.ndarray) -> EncodedRows:
        """The messages of a batch, in commit-ts order within each partition."""

    @abstractmethod
    def encode_ddl(self, ddl: DDLChange) -> Encoded | None:
        """The DDL event, or None when the protocol sends none."""

    @abstractmethod
    def encode_watermark(self, ts: int) -> Encoded | None:
        """The watermark (resolved ts) event, or None when the protocol sends none."""

    def check_sizes(self, batch: ChangeBatch, values: pa.Array, key_length: int = 0) -> None:
        """Refuse rows whose message exceeds ``max-message-bytes`` (TiCDC's ErrMessageTooLarge)."""
        limit = self.config.max_message_bytes
        lengths = pc.binary_length(values).to_numpy(zero_copy_only=False) + (key_length + MESSAGE_OVERHEAD)
        too_big = np.flatnonzero(lengths > limit)
        if len(too_big):
            row = int(too_big[0])
            raise MessageTooLargeError(
                f"the {self.config.protocol} message of row {batch.row_key(row)} of table "
                f"{batch.databases[row].as_py()}.{batch.tables[row].as_py()} is {int(lengths[row])} bytes, "
                f"over max-message-bytes={limit}; raise max-message-bytes (and the topic's max.message.bytes)"
            )


@dataclass
class RowEvent:
    """A decoded row change; values as the protocol typed them (see each decoder)."""

    type: str  # INSERT, UPDATE, DELETE
    database: str
    table: str
    commit_ts: int | None
    columns: dict[str, Any]
    old: dict[str, Any] | None = None
    primary_keys: list[str] = field(default_factory=list)
    mysql_types: dict[str, str] = field(default_factory=dict)


@dataclass
class DDLEvent:
    database: str
    table: str
    query: str
    type: str
    commit_ts: int | None


@dataclass
class WatermarkEvent:
    ts: int


class Decoder(ABC):
    """Turns one Kafka message of a protocol back into events."""

    @abstractmethod
    def decode(self, key: bytes | None, value: bytes) -> list[RowEvent | DDLEvent | WatermarkEvent]:
        ...
