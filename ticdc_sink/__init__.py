"""ticdc-sink: write Spark row changes to Kafka in TiCDC's message protocols.

``df.writeStream.format("ticdc")`` (or ``df.write.format("ticdc")``) with the
options of the README; ``emit_ddl`` sends one DDL event on its own; ``register``
makes the source known to a session that did not find it by name.
"""

from .datasource import TiCDCDataSource, register
from .errors import ConfigError, ContractError, DeliveryError, MessageTooLargeError, TiCDCSinkError
from .writer import emit_ddl

__all__ = [
    "TiCDCDataSource", "register", "emit_ddl", "TiCDCSinkError", "ConfigError", "ContractError", "DeliveryError",
    "MessageTooLargeError",
]
