"""ticdc-sink's native producer path: the C extension ``_batch_produce`` (see native/README.md).

``ticdc_sink.kafka.native_produce`` is its only user; nothing here is meant to be called directly.
"""

from ._batch_produce import bind, produce, registered, take  # noqa: F401
from ._batch_produce import __file__ as PLUGIN_PATH  # noqa: F401  (librdkafka loads this file as its plugin)
