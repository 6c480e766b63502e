"""The sink's configuration: one frozen ``SinkConfig``, validated on the driver and shipped to executors.

It holds what every protocol shares (topics, dispatch, delivery, the input's
columns, Kafka client settings); each protocol's own options are its
``protocol_options`` (the protocol package's ``options.py``).  How options and
a ``sink-uri`` become a ``SinkConfig`` is ``sink_options.py``; which protocols
exist is the codec registry's (``codec/__init__.py``).  ``SinkConfig``
keeps secrets (librdkafka needs them) but its repr shows them masked
(``redact``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from .option_group import APART, SETTINGS, OptionGroup

DISPATCHERS = ("default", "table", "index-value", "ts", "columns")
DELIVERY_MODES = ("exactly-once", "at-least-once")
ORDER_CHECKS = ("warn", "error", "off")
LARGE_MESSAGE_OPTIONS = ("none", "handle-key-only", "claim-check")
COMPRESSIONS = ("none", "lz4", "snappy")  # TiCDC's pkg/compression
INTEGRITY_CHECK_LEVELS = ("none", "correctness")  # TiCDC's pkg/config/integrity.go
NATIVE_PRODUCER_MODES = ("auto", "on", "off")  # the ticdc-sink-native package's path (kafka/native_produce.py)
_AT_LEAST_ONE = {"minimum": 1}


@dataclass(frozen=True, repr=False)
class SinkConfig(OptionGroup):
    """Everything a task needs to know, validated. Picklable, so it travels to executors."""

    protocol: str
    topic: str
    kafka_settings: tuple[tuple[str, str], ...] = field(default=(), metadata={SETTINGS: True})
    protocol_options: Any = field(default=None, metadata={APART: True})  # the protocol's own (its ``options.py``)
    default_topic: str | None = None
    max_message_bytes: int = field(default=10 * 1024 * 1024, metadata=_AT_LEAST_ONE)
    # What a message over max-message-bytes becomes (TiCDC's large-message-handle-option): an error (none), the
    # row's handle-key columns only, marked so (handle-key-only), or those and where the whole message is kept
    # (claim-check, in claim_check_storage_uri: ``codec/shared/claim_check.py``).
    large_message_handle_option: str = "none"
    # How message bytes are compressed, where TiCDC compresses them (``codec/shared/compression.py``).
    large_message_handle_compression: str = "none"
    claim_check_storage_uri: str | None = field(default=None, metadata={"verbatim": True})
    claim_check_raw_value: bool = False  # the object is the message's value alone, not {"key","value"} JSON
    # TiCDC's output-raw-change-event: an UPDATE that changes a key goes as it is, not as a DELETE and an INSERT.
    output_raw_change_event: bool = False
    partition_num: int = field(default=3, metadata=_AT_LEAST_ONE)
    replication_factor: int = field(default=1, metadata=_AT_LEAST_ONE)
    auto_create_topic: bool = True
    partition: str = "default"
    partition_columns: tuple[str, ...] = ()
    partition_index: str | None = None
    # Table routing (a dispatch rule's target-schema/target-table): the names messages carry, from {schema} and
    # {table}; topics and partitions keep the source names (``changes/table_route.py``).
    target_schema: str | None = None
    target_table: str | None = None
    delivery: str = "exactly-once"
    # When two tasks of one micro-batch wrote a Kafka partition, so that a key's changes
    # may be out of commit-ts order: log a warning, fail the batch, or say nothing.
    order_check: str = "warn"
    transactional_id_prefix: str | None = None
    task_timeout_ms: int = field(default=600_000, metadata=_AT_LEAST_ONE)
    marker_topic: str = "__ticdc_sink_markers"
    broker_timeout_ms: int = field(default=30000, metadata=_AT_LEAST_ONE)
    # How messages reach librdkafka: a batch in one call where ticdc-sink-native is installed (auto), always that
    # (on: an error without it), or one produce() call per message (off).
    native_producer: str = field(default="auto", metadata={"choices": NATIVE_PRODUCER_MODES})
    database: str | None = None
    table: str | None = None
    time_zone: str = "UTC"
    column_types: str | None = field(default=None, metadata={"verbatim": True})
    primary_key: str | None = None
    unique_keys: str | None = None
    column_selectors: str | None = field(default=None, metadata={"verbatim": True})  # table/selectors.py
    # TiCDC's [sink.integrity] integrity-check-level: "correctness" sends each row's checksum where the protocol
    # carries one (Avro with the TiDB extension, Simple: ``table/row_checksum.py``).
    integrity_check_level: str = field(default="none", metadata={"choices": INTEGRITY_CHECK_LEVELS})
    op_column: str = "_op"
    commit_ts_column: str = "_commit_ts"
    before_column: str = "_before"
    schema_column: str = "_schema"
    table_column: str = "_table"
    ddl_column: str = "_ddl"
    ddl_type_column: str = "_ddl_type"
    start_ts_column: str = "_start_ts"
    row_id_column: str = "_tidb_rowid"

    @property
    def row_checksums(self) -> bool:
        """Whether rows carry their checksums (integrity-check-level "correctness")."""
        return self.integrity_check_level == "correctness"

    @property
    def kafka(self) -> dict[str, str]:
        """The ``kafka.*`` settings, as librdkafka takes them."""
        return dict(self.kafka_settings)

    @property
    def bootstrap_servers(self) -> str:
        return self.kafka["bootstrap.servers"]

    @property
    def topic_has_placeholders(self) -> bool:
        return "{" in self.topic

    def metadata_columns(self) -> tuple[str, ...]:
        return (
            self.op_column,
            self.commit_ts_column,
            self.before_column,
            self.schema_column,
            self.table_column,
            self.ddl_column,
            self.ddl_type_column,
            self.start_ts_column,
            self.row_id_column,
        )


def require_table_names(config: SinkConfig, has_schema_column: bool, has_table_column: bool) -> None:
    """Without per-row ``_schema``/``_table`` columns the options must name the table."""
    if not has_schema_column and not config.database:
        raise ConfigError(
            "database", None, f"required when the DataFrame has no {config.schema_column!r} column"
        )
    if not has_table_column and not config.table:
        raise ConfigError("table", None, f"required when the DataFrame has no {config.table_column!r} column")
