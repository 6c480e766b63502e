"""The Simple protocol's options (TiCDC's sink-URI and ``[sink]`` settings of the same names)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..base import ProtocolOptions


@dataclass(frozen=True, repr=False)
class SimpleOptions(ProtocolOptions):
    encoding_format: str = field(default="json", metadata={"choices": ("json", "avro")})
    send_bootstrap_interval_in_sec: int = 120
    send_bootstrap_in_msg_count: int = 10000
    send_bootstrap_to_all_partition: bool = True
    table_id: int = 0  # the ``tableID`` of the messages; 0: derived from the table's name
    schema_version: int = 0  # the ``schemaVersion``; 0: derived from the table's shape

    handles_large_messages = True

    @property
    def sends_bootstrap(self) -> bool:
        """BOOTSTRAP messages: either setting at 0 turns them off (TiCDC ``ShouldSendBootstrapMsg``)."""
        return self.send_bootstrap_interval_in_sec > 0 and self.send_bootstrap_in_msg_count > 0
