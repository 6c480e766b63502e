"""Open Protocol's options (TiCDC's sink-URI and ``[sink]`` settings of the same names)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..base import ProtocolOptions


@dataclass(frozen=True, repr=False)
class OpenProtocolOptions(ProtocolOptions):
    max_batch_size: int = field(default=16, metadata={"minimum": 1})  # events per Kafka message
    only_output_updated_columns: bool = False
    delete_only_output_handle_key_columns: bool = False  # a DELETE carries its handle-key columns only
