"""Avro's options (TiCDC's sink-URI and ``[sink]`` settings of the same names), with its registry's."""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass, field

from ...config.sink import SinkConfig
from ...errors import ConfigError
from ..base import ProtocolOptions
from ..shared.schema_registry import RegistryOptions

log = logging.getLogger(__name__)
_TOPIC_EXPRESSION = re.compile(r"^[A-Za-z0-9._\-]*\{schema\}[A-Za-z0-9._\-]*\{table\}[A-Za-z0-9._\-]*$")


@dataclass(frozen=True, repr=False)
class AvroOptions(RegistryOptions, ProtocolOptions):
    enable_tidb_extension: bool = False
    avro_decimal_handling_mode: str = field(default="precise", metadata={"choices": ("precise", "string")})
    avro_bigint_unsigned_handling_mode: str = field(default="long", metadata={"choices": ("long", "string")})
    avro_namespace: str = "default"
    # Each value also carries the row before the change (_ticdc_before) and _tidb_op, and a DELETE is a value, not a
    # tombstone: without the TiDB extension, the only way a consumer tells an UPDATE from an INSERT and sees old rows.
    avro_include_before_value: bool = False
    # TiCDC's test-only DDL, watermark and delete events (encoder.py), with enable-tidb-extension only.
    avro_enable_watermark: bool = False

    def resolve(self, config: SinkConfig, *, reading: bool = False) -> "AvroOptions":
        """TiCDC's rules: a topic per table, since its subjects are the topic's; a registry to put them in."""
        if not reading and not _TOPIC_EXPRESSION.match(config.topic):
            raise ConfigError("topic", config.topic,
                              "the avro protocol needs a topic expression with {schema} and {table}")
        self.check_registry("Avro")
        if config.row_checksums and not (self.enable_tidb_extension and self.avro_decimal_handling_mode == "string"
                                         and self.avro_bigint_unsigned_handling_mode == "string"):
            # TiCDC's words (pkg/sink/codec/common/config.go, Validate)
            raise ConfigError("integrity-check-level", config.integrity_check_level,
                              'Avro protocol with row level checksum, should set "enable-tidb-extension" to "true", '
                              'and set "avro-decimal-handling-mode" to "string" and '
                              '"avro-bigint-unsigned-handling-mode" to "string"')
        if self.avro_enable_watermark and not self.enable_tidb_extension:  # TiCDC passes it over silently
            log.warning("avro-enable-watermark is used with enable-tidb-extension only; passed over, as TiCDC does")
            return dataclasses.replace(self, avro_enable_watermark=False)
        return self
