"""The Spark data source ``ticdc``: batch and stream writers (options -> a validated ``WritePlan``), and batch and
stream readers (``source/``).

Both writers feed the same pipeline (``sink/task.py``'s ``WritePlan``) with Arrow record
batches: Spark's Arrow writers where this pyspark has them (batch since 4.0,
streaming since 4.1), and on pyspark 4.0 streaming the Row writer re-batched
into Arrow.
"""

from __future__ import annotations

import logging
import uuid
from typing import Iterator

from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, DataSourceStreamWriter

from .codec import check_services
from .config.reader import parse_read_options
from .config.sink_options import SPARK_OWN_OPTIONS, parse_options
from .errors import ConfigError
from .kafka.producer import check_brokers
from .sink.driver import abort_batch, commit_batch
from .sink.report import TaskReport
from .sink.spark_rows import rows_to_record_batches
from .sink.task import WritePlan
from .sink.task_input import spark_batches
from .source.layout import ReadLayout
from .source.reader import TiCDCBatchReader, TiCDCStreamReader, find_layout
from .table.spark_types import arrow_schema_of

try:  # pyspark >= 4.1
    from pyspark.sql.datasource import DataSourceStreamArrowWriter
except ImportError:  # pyspark 4.0
    DataSourceStreamArrowWriter = None

log = logging.getLogger(__name__)

NO_OPTIONS_HELP = (
    "the ticdc sink received no options. Spark does not pass the OPTIONS of "
    "'CREATE TABLE ... USING ticdc' to a Python data source's writer; instead use "
    "'CREATE TEMPORARY VIEW v USING ticdc OPTIONS (...)' then 'INSERT INTO v SELECT ...', "
    "or 'INSERT INTO t WITH ('protocol'='canal-json', ...) SELECT ...', "
    "or df.write.format('ticdc').option(...)"
)


class TiCDCDataSource(DataSource):
    """Writes row changes to Kafka in TiCDC's protocols, and reads TiCDC's topics back as row changes."""

    _found: ReadLayout | None = None  # the layout schema() found, for the reader Spark asks for next

    @classmethod
    def name(cls) -> str:
        return "ticdc"

    def schema(self):
        """A read's schema where the user gave none: its table's columns, from the first of its rows in the
        topics (Spark also asks when a view over the source declares no columns)."""
        self._found = find_layout(parse_read_options(self.options))
        return self._found.schema

    def _layout(self, schema) -> ReadLayout:
        if self._found is not None and self._found.schema == schema:
            return self._found
        return ReadLayout.from_schema(parse_read_options(self.options), schema)

    def reader(self, schema) -> TiCDCBatchReader:
        return TiCDCBatchReader(self._layout(schema))

    def streamReader(self, schema) -> TiCDCStreamReader:
        return TiCDCStreamReader(self._layout(schema))

    def _plan(self, schema, job_id: str | None = None) -> WritePlan:
        own = {k: v for k, v in self.options.items() if str(k).lower() not in SPARK_OWN_OPTIONS}
        if not own:
            raise ConfigError("protocol", None, NO_OPTIONS_HELP)
        return WritePlan.for_schema(parse_options(self.options), schema, job_id)

    def writer(self, schema, overwrite: bool) -> "TiCDCBatchWriter":
        if overwrite:
            raise ConfigError("mode", "overwrite", "a change feed can only be appended: use mode('append')")
        # A batch write is one job (also inside foreachBatch): its transactions get names of their own.
        plan = self._plan(schema, job_id=uuid.uuid4().hex)
        # Once, before any task (brokers, and the schema registry for avro): tasks would each wait out
        # broker-timeout-ms, and their retries again.
        # (Not in streamWriter: pyspark builds one for every commit and abort too, where the task's own
        # error must stay the one reported.)
        check_brokers(plan.config)
        check_services(plan.config)
        return TiCDCBatchWriter(plan)

    def streamWriter(self, schema, overwrite: bool):
        if overwrite:
            raise ConfigError("outputMode", "complete", "a change feed can only be appended: use outputMode('append')")
        plan = self._plan(schema)
        if DataSourceStreamArrowWriter is not None:
            return TiCDCStreamArrowWriter(plan)
        return TiCDCStreamRowWriter(plan, schema)


def register(spark) -> None:
    """Make ``format("ticdc")`` available in ``spark`` where Spark did not find the source by name.

    Spark discovers the installed ``pyspark_ticdc`` module by itself; registering the same
    source again is an error before pyspark 4.1 (DATA_SOURCE_ALREADY_EXISTS), so that case is
    taken as success.  A Spark Connect session sends the class by reference: the server's
    Python imports ``ticdc_sink`` where it runs the source (docs/usage.md, Spark Connect).
    """
    from pyspark.errors import AnalysisException

    try:
        spark.dataSource.register(TiCDCDataSource)
    except AnalysisException as e:
        if e.getCondition() != "DATA_SOURCE_ALREADY_EXISTS":
            raise


class TiCDCBatchWriter(DataSourceArrowWriter):
    def __init__(self, plan: WritePlan):
        self.plan = plan

    def write(self, iterator) -> TaskReport:
        return self.plan.write(spark_batches(iterator))

    def commit(self, messages) -> None:
        commit_batch(self.plan, messages)

    def abort(self, messages) -> None:
        _log_abort(self.plan, messages, "the write")
        abort_batch(self.plan, messages)


class _StreamCommit:
    """Driver side of a streaming query (pyspark makes a new writer for each commit or abort)."""

    plan: WritePlan

    def commit(self, messages, batchId: int) -> None:
        commit_batch(self.plan, messages)

    def abort(self, messages, batchId: int) -> None:
        _log_abort(self.plan, messages, f"micro-batch {batchId}")
        abort_batch(self.plan, messages)


def _log_abort(plan: WritePlan, messages, what: str) -> None:
    written = sum(m.rows for m in messages if m is not None)
    if plan.job_id is not None:  # a batch write: running it again is a new job, with new transactional ids
        log.warning("ticdc sink: %s failed; %d row(s) of Spark partitions that succeeded stay in Kafka, and "
                    "running the write again sends them again", what, written)
    elif plan.config.delivery == "exactly-once":
        log.warning("ticdc sink: %s aborted; %d row(s) of Spark partitions that committed stay in Kafka, and "
                    "the replay of the micro-batch keeps them and discards its own copy", what, written)
    else:
        log.warning("ticdc sink: %s aborted; %d row(s) of Spark partitions that succeeded are in Kafka, and "
                    "the replay of the micro-batch sends them again (at-least-once)", what, written)


if DataSourceStreamArrowWriter is not None:

    class TiCDCStreamArrowWriter(_StreamCommit, DataSourceStreamArrowWriter):
        def __init__(self, plan: WritePlan):
            self.plan = plan

        def write(self, iterator) -> TaskReport:
            return self.plan.write(spark_batches(iterator))


class TiCDCStreamRowWriter(_StreamCommit, DataSourceStreamWriter):
    """pyspark 4.0: Rows re-batched into Arrow, then the same pipeline."""

    def __init__(self, plan: WritePlan, schema):
        self.plan = plan
        self.arrow_schema = arrow_schema_of(schema)

    def write(self, iterator: Iterator) -> TaskReport:
        return self.plan.write(spark_batches(rows_to_record_batches(iterator, self.arrow_schema)))
