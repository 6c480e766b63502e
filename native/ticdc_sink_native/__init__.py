"""ticdc-sink's native parts (see native/README.md): the producer path ``_batch_produce`` and the text join ``_text_join``.

``ticdc_sink.kafka.native_produce`` and ``ticdc_sink.table.native_text`` are their only users; nothing here is
meant to be called directly.
"""

from ._batch_produce import bind, produce, registered, take  # noqa: F401
from ._batch_produce import __file__ as PLUGIN_PATH  # noqa: F401  (librdkafka loads this file as its plugin)
