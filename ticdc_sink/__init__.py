"""ticdc-sink: write Spark row changes to Kafka in TiCDC's message protocols.

``df.writeStream.format("ticdc")`` (or ``df.write.format("ticdc")``) with the
options of docs/options.md; ``order_changes`` lays a DataFrame out so that every
key's changes reach Kafka in commit order; ``emit_ddl`` sends one DDL event on
its own; ``register`` makes the source known to a session that did not find it
by name; ``from_delta_cdf`` turns a Delta Lake change data feed into the sink's input.
"""

from .changes.commit_order import order_changes
from .changes.delta_feed import from_delta_cdf
from .datasource import TiCDCDataSource, register
from .errors import ConfigError, ContractError, DeliveryError, MessageTooLargeError, TiCDCSinkError
from .sink.driver import emit_ddl
from .sink.order_check import OrderError

__all__ = [
    "TiCDCDataSource", "register", "order_changes", "emit_ddl", "from_delta_cdf", "TiCDCSinkError", "ConfigError", "ContractError",
    "DeliveryError", "MessageTooLargeError", "OrderError",
]
