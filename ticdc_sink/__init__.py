"""ticdc-sink: write Spark row changes to Kafka in TiCDC's message protocols.

``df.writeStream.format("ticdc")`` (or ``df.write.format("ticdc")``) with the
options of the README; ``emit_ddl`` sends one DDL event on its own.
"""

from .datasource import TiCDCDataSource
from .errors import ConfigError, ContractError, DeliveryError, MessageTooLargeError, TiCDCSinkError
from .writer import emit_ddl

__all__ = [
    "TiCDCDataSource", "emit_ddl", "TiCDCSinkError", "ConfigError", "ContractError", "DeliveryError",
    "MessageTooLargeError",
]
