"""What every protocol's codec provides, what a protocol may declare it needs, and the events decoders return."""

from __future__ import annotations

import functools
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

import pyarrow as pa

from ..changes.contract import ChangeBatch
from ..changes.dispatch import Routing
from ..changes.table_route import TableRoute
from ..config.option_group import OptionGroup
from ..config.sink import SinkConfig
from ..ddl.statements import DDLChange
from ..kafka.messages import Messages
from ..table.mysql_types import MySQLType
from ..table.schema import TableSchema
from .shared.claim_check import ClaimCheckStorage
from .shared.compression import compress, compress_values, decompress

Table = tuple[str, str]  # (database, table)


class ProtocolOptions(OptionGroup):
    """The options one protocol has (each protocol's ``options.py``): a frozen dataclass whose fields are its
    options, parsed from the same option map as the sink's own (``config/sink_options.py``)."""

    # Whether the protocol can send a row over max-message-bytes another way (large-message-handle-option).
    handles_large_messages: ClassVar[bool] = False

    def resolve(self, config: SinkConfig, *, reading: bool = False) -> "ProtocolOptions":
        """These options checked against the sink's (a topic rule, which a reader skips), with the rules that tie
        options together."""
        return self


def wall_clock_ms() -> int:
    """Milliseconds since the epoch: the build time codecs stamp on messages (Canal ``ts``, ...)."""
    return int(time.time() * 1000)


class Encoder(ABC):
    """Turns ChangeBatches and control events into Kafka messages of one protocol.

    An encoder lives for one task, or for one commit on the driver.  Building
    one does no I/O, so the driver builds one to check options; the clock is
    handed in (tests fix it).  What only some protocols need they declare by
    the classes below (``SendsTableSchemas``, and ``UsesSchemaRegistry`` in
    ``shared/schema_registry.py``).
    """

    # Set on the encoder of ``handle_key_only``: its messages carry TiCDC's mark of a row over max-message-bytes.
    marks_handle_key_only = False

    def __init__(self, config: SinkConfig, table: TableSchema | None, *, clock: Callable[[], int] = wall_clock_ms):
        self.config, self.table, self.clock = config, table, clock
        self.options = config.protocol_options  # the protocol's own options (its ``options.py``)
        self.route = TableRoute(config)  # the names messages carry (target-schema, target-table)
        if table is not None and config.large_message_handle_option == "handle-key-only":
            table.handle_key_only("large-message-handle-option")  # refuses a table without a handle key

    @functools.cached_property
    def handle_key_only(self) -> "Encoder":
        """This protocol's encoder of the table's handle-key columns alone, whose messages are marked as TiCDC
        marks one standing for a row over max-message-bytes (large-message-handle-option=handle-key-only)."""
        encoder = type(self)(self.config, self.table.handle_key_only("large-message-handle-option"),
                             clock=self.clock)
        encoder.marks_handle_key_only = True
        return encoder

    def large_row_messages(self, rows: ChangeBatch, locations: pa.Array | None) -> tuple:
        """``(keys, values)`` that stand for ``rows``, whose messages are over max-message-bytes: their handle key
        alone, marked as handle-key-only, or with claim-check as pointing at ``locations`` (one per row).
        Only the protocols of ``LARGE_MESSAGE_PROTOCOLS`` have them."""
        raise NotImplementedError(f"{self.config.protocol} has no large-message handling")

    def compressed(self, data: pa.Array | bytes | str) -> pa.Array | bytes | str:
        """Messages (an array) or one message compressed by large-message-handle-compression: what TiCDC
        compresses of this protocol's messages is each encoder's call."""
        compression = self.config.large_message_handle_compression
        return compress_values(data, compression) if isinstance(data, pa.Array) else compress(data, compression)

    def keep_whole(self, key: bytes | None, value: bytes) -> str:
        """Claim-check: a message kept whole in the storage before its transaction commits; its location."""
        return self.claim_check.put(key, value)

    @functools.cached_property
    def claim_check(self) -> ClaimCheckStorage:
        """The claim-check storage, opened at the first row that needs it (a local directory made)."""
        storage = ClaimCheckStorage.of(self.config)
        storage.check()
        return storage

    @abstractmethod
    def encode_rows(self, batch: ChangeBatch, routing: Routing) -> Messages:
        """The messages of a batch, in commit-ts order within each partition, ``rows`` set per message; each
        within ``max-message-bytes`` (``shared.assembly.check_sizes``)."""

    def ddl_type(self, ddl: DDLChange) -> str | int | None:
        """The protocol's type of a DDL row (``ddl/protocol_types.ddl_type``), or None for a protocol without DDL
        events; a ``_ddl_type`` override the protocol does not know fails the row."""
        return None

    def check_ddl(self, ddl: DDLChange) -> None:
        """Refuse, on the executor, a DDL row that ``encode_ddl`` would refuse on the driver."""
        self.ddl_type(ddl)

    def encode_ddl(self, ddl: DDLChange, topic: str) -> Messages | None:
        """The DDL event for ``topic`` (``self.table``: the writing table's schema), or None to send none."""
        return None

    def encode_watermark(self, ts: int, topics: list[str]) -> Messages | None:
        """The watermark (resolved ts) events for every partition of ``topics``, or None to send none."""
        return None


class SendsTableSchemas(ABC):
    """Declared by a protocol that sends a table's schema on its own, for consumers that join mid-stream
    (Simple's BOOTSTRAP).

    When a schema is due is the sink's rule (``sink/bootstrap.py``), for a
    whole query; a task hands the encoder that rule (``schedule_bootstraps``)
    and the encoder puts the due tables' schemas ahead of their rows.
    """

    bootstraps_due: Callable[[dict[Table, int]], list[Table]] | None = None

    @property
    @abstractmethod
    def bootstrap_version(self) -> int | None:
        """The version of the writing table's shape, or None when the protocol's settings send no schemas."""

    @abstractmethod
    def bootstrap_messages(self, database: str, table: str, topic: str) -> Messages:
        """The messages that carry the table's schema, for ``topic``."""

    def schedule_bootstraps(self, due: Callable[[dict[Table, int]], list[Table]]) -> None:
        """``due(rows per table of a batch)`` names the tables whose schema goes out ahead of the batch's rows."""
        self.bootstraps_due = due


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
    # Each column's type as far as the protocol carries it (``table.type_grammar.carried_type``).
    column_types: dict[str, MySQLType] = field(default_factory=dict)
    # The message carried the handle-key columns alone, standing for a row over max-message-bytes (Canal-JSON's
    # _tidb.onlyHandleKey, Open Protocol's ohk, Simple's handleKeyOnly): the row's other values were not sent.
    handle_key_only: bool = False
    start_ts: int | None = None  # the transaction's start ts, where the message carries it (Debezium's start_ts)
    # The row's TiKV key, where the message carries it (Canal-JSON's _tidb.rowkey, TiCDC's output-row-key).
    row_key: bytes | None = None


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


Event = RowEvent | DDLEvent | WatermarkEvent


@dataclass
class MessageColumns:
    """A chunk of messages decoded a column at a time, one entry per event (the reader's fast path;
    ``Decoder.decode_columns``)."""

    op: pa.Array  # string: INSERT, UPDATE, DELETE; null for a message that is no row change
    database: pa.Array  # string
    table: pa.Array  # string
    commit_ts: pa.Array  # int64, null where the message carries none
    watermark_ts: pa.Array  # int64: a watermark's ts, null for every other message
    new: dict[str, pa.Array]  # per table column, its TiDB values (``tidb_arrow_type``): the row, or the deleted row
    old: dict[str, pa.Array]  # per table column, an UPDATE's old values
    message: pa.Array | None = None  # int32: the message of each event, where a message may carry several


class Decoder(ABC):
    """Turns Kafka messages of a protocol back into events, in the order a consumer must apply them.

    ``decode`` returns the events a message completes.  A message may carry
    several events (Open Protocol's frames), none (Debezium's tombstone after a delete),
    or rows that cannot be typed yet, which a decoder that ``LearnsTableSchemas``
    holds back.  What only some protocols need they declare by the classes
    below, as encoders do.
    """

    def __init__(self, config: SinkConfig | None = None):
        self.config = config
        self.options = config.protocol_options if config is not None else None
        self._storages: dict[str, ClaimCheckStorage] = {}

    def decompressed(self, data: bytes) -> bytes:
        """A message's bytes as the writer had them before large-message-handle-compression (the reader's setting
        must be the writer's: nothing in a message says)."""
        return data if self.config is None else decompress(data, self.config.large_message_handle_compression)

    def decompressed_all(self, values: list[bytes]) -> list[bytes]:
        """``decompressed``, message by message."""
        if self.config is None or self.config.large_message_handle_compression == "none":
            return values
        return [self.decompressed(value) for value in values]

    def claimed(self, location: str) -> tuple[bytes | None, bytes]:
        """The key and value of a message kept whole by claim-check at ``location``: read from this reader's
        claim-check-storage-uri, by the location's name (as TiCDC's consumers do), or where the location says."""
        uri = self.config.claim_check_storage_uri if self.config is not None else None
        root = uri or location.rsplit("/", 1)[0]
        storage = self._storages.get(root)
        if storage is None:
            storage = self._storages[root] = ClaimCheckStorage.of(self.config, root) if self.config is not None \
                else ClaimCheckStorage(root)
        return storage.get(location)

    @abstractmethod
    def decode(self, key: bytes | None, value: bytes | None) -> list[Event]:
        ...

    def decode_columns(self, keys: list[bytes | None], values: list[bytes],
                       types: dict[str, MySQLType]) -> MessageColumns | None:
        """The messages with these keys and values a column at a time, the table's columns typed by ``types``;
        or None where this protocol, or this chunk (a DDL in it, a message it cannot parse), needs ``decode``."""
        return None

    @property
    def carries_watermarks(self) -> bool:
        """Whether a topic of this protocol, with these options, holds watermark events (resolved ts)."""
        return False


class LearnsTableSchemas(ABC):
    """Declared by a decoder whose rows are typed by table schemas that travel in the topic (Simple's BOOTSTRAP
    and DDL messages): it holds a row back until its table's schema arrives (``waiting``)."""

    @property
    @abstractmethod
    def waiting(self) -> int:
        """Rows held back until what types them arrives."""

    @property
    @abstractmethod
    def table_schemas(self) -> tuple[dict, ...]:
        """The table schemas this decoder learned from messages, for another decoder to start with."""

    @abstractmethod
    def learn_table_schemas(self, schemas: tuple[dict, ...]) -> None:
        """Start with table schemas another decoder learned: a reader that starts mid-topic types rows by the
        schemas found earlier in it."""

    @abstractmethod
    def type_unknown_rows_by(self, database: str, table: str, types: dict[str, MySQLType]) -> None:
        """Type the rows of ``database.table`` whose table schema has not arrived by these column types, rather
        than hold them back: a reader knows the columns of the table it reads."""


def learned_table_schemas(decoder: Decoder) -> tuple[dict, ...]:
    """What ``decoder`` learned of table schemas from the messages it decoded (none: it needs none)."""
    return decoder.table_schemas if isinstance(decoder, LearnsTableSchemas) else ()


class TakesDeclaredTypes(ABC):
    """Declared by a decoder that types values by column types a read declares, where its messages leave them
    untyped (Debezium's without the TiDB extension or without field schemas)."""

    @abstractmethod
    def declare_types(self, database: str | None, table: str | None, types: dict[str, MySQLType]) -> None:
        """The column types a read declares for ``database.table`` (a name None: any table's), by ``column-types``,
        its schema's ``mysql_type`` metadata or Spark types, not by its messages."""
