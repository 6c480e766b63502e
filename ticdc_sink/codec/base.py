"""What every protocol codec provides, and the events its decoder returns."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable

from ..changes import ChangeBatch
from ..config import SinkConfig
from ..ddl import DDLChange
from ..dispatch import Routing
from ..messages import Messages
from ..mysql_types import TableSchema


def wall_clock_ms() -> int:
    """Milliseconds since the epoch: the build time codecs stamp on messages (Canal ``ts``, ...)."""
    return int(time.time() * 1000)


class Encoder(ABC):
    """Turns ChangeBatches and control events into Kafka messages of one protocol.

    An encoder lives for one task and may keep state across batches (``finish``
    sends what is pending).  Building one does no I/O, so the driver builds one to
    check options; the clock and the schema-registry client are handed in.
    """

    def __init__(self, config: SinkConfig, table: TableSchema | None, *,
                 clock: Callable[[], int] = wall_clock_ms, registry: Any = None):
        self.config, self.table, self.clock, self.registry = config, table, clock, registry

    @abstractmethod
    def encode_rows(self, batch: ChangeBatch, routing: Routing) -> Messages:
        """The messages of a batch, in commit-ts order within each partition; ``rows`` set per message."""

    def finish(self) -> Messages | None:
        """What is still pending at the end of the task (a protocol that packs rows into frames)."""
        return None

    def check_services(self) -> None:
        """Fail at once, on the driver, when a service the protocol needs (a schema registry) cannot be used."""

    def close(self) -> None:
        """Release what the encoder opened (a schema-registry client); the task calls it however it ends."""

    def check_ddl(self, ddl: DDLChange) -> None:
        """Refuse, on the executor, a DDL row that ``encode_ddl`` would refuse on the driver."""

    def encode_ddl(self, ddl: DDLChange, topic: str) -> Messages | None:
        """The DDL event for ``topic`` (``self.table``: the writing table's schema), or None to send none."""
        return None

    def encode_watermark(self, ts: int, topics: list[str]) -> Messages | None:
        """The watermark (resolved ts) events for every partition of ``topics``, or None to send none."""
        return None

    @property
    def bootstrap_version(self) -> int | None:
        """The table shape's version when the protocol sends it on its own for consumers that join mid-stream
        (Simple's BOOTSTRAP), else None; when it is sent is the writer's rule (``bootstrap``)."""
        return None

    def bootstrap_messages(self, database: str, table: str, topic: str) -> Messages:
        """The messages that carry the table's schema, for ``topic``."""
        raise NotImplementedError(f"{self.config.protocol} sends no table schema on its own")


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
    type: str | int  # the protocol's DDL type: Canal's name, Open Protocol's TiDB action code
    commit_ts: int | None


@dataclass
class WatermarkEvent:
    ts: int


class Decoder(ABC):
    """Turns one Kafka message of a protocol back into events."""

    def __init__(self, config: SinkConfig | None = None):
        self.config = config

    @abstractmethod
    def decode(self, key: bytes | None, value: bytes) -> list[RowEvent | DDLEvent | WatermarkEvent]:
        ...
