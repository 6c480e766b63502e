"""Open Protocol's options (TiCDC's sink-URI and ``[sink]`` settings of the same names)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...config.sink import SinkConfig
from ...errors import ConfigError
from ..base import ProtocolOptions


@dataclass(frozen=True, repr=False)
class OpenProtocolOptions(ProtocolOptions):
    max_batch_size: int = field(default=16, metadata={"minimum": 1})  # events per Kafka message
    only_output_updated_columns: bool = False
    delete_only_output_handle_key_columns: bool = False  # a DELETE carries its handle-key columns only
    # TiCDC's [sink.open] output-old-value: false leaves an UPDATE's "p" out, even where the input has _before.
    open_output_old_value: bool = True

    handles_large_messages = True

    def resolve(self, config: SinkConfig, *, reading: bool = False) -> "OpenProtocolOptions":
        if (not reading and config.large_message_handle_option == "claim-check" and config.claim_check_raw_value
                and config.claim_check_storage_uri):
            raise ConfigError("claim-check-raw-value", "true", "large message handle is set to claim-check, raw "
                              "value is not supported for the open protocol")
        return self
