"""debezium-avro's options (TiCDC's sink-URI and ``[sink]`` settings of the same names), with its registry's."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...config.sink import SinkConfig
from ..base import ProtocolOptions
from ..shared.schema_registry import RegistryOptions


@dataclass(frozen=True, repr=False)
class DebeziumAvroOptions(RegistryOptions, ProtocolOptions):
    enable_tidb_extension: bool = False  # tidb_type on every column field
    avro_decimal_handling_mode: str = field(default="precise", metadata={"choices": ("precise", "string")})
    avro_bigint_unsigned_handling_mode: str = field(default="long", metadata={"choices": ("long", "string")})
    # DDL and watermark events, with enable-tidb-extension only (TiCDC sends them for its own tests).
    avro_enable_watermark: bool = False
    cluster_id: str = "default"  # the ``source.name`` of every message, and the first part of its schema names
    # TiCDC's [sink.debezium] output-old-value: false sends an UPDATE's "before" as null.
    debezium_output_old_value: bool = True

    def resolve(self, config: SinkConfig, *, reading: bool = False) -> "DebeziumAvroOptions":
        """TiCDC's rules: a registry to put the schemas in."""
        self.check_registry("Debezium Avro")
        return self
