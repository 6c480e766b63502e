"""Lets Spark find the ``ticdc`` data source by name, with no registration call.

Spark 4 looks up Python data sources in top-level modules named
``pyspark_*`` that define ``DefaultSource``.
"""

from ticdc_sink.datasource import TiCDCDataSource as DefaultSource

__all__ = ["DefaultSource"]
