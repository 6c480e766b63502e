"""A writer task's input from Spark, and whether it ended or was cut short.

When an operator before the sink fails (a UDF raises, a source file vanishes),
Spark fails the task and closes the socket of the sink's Python worker.  pyarrow
reads that end of the socket, at a batch boundary, as the end of the stream, so
``write()`` would see a complete input and commit a transaction of part of the
partition's rows, which Spark's retry then writes again.  What tells the two
apart is what follows the Arrow stream on the socket: Spark ends a complete
input with its END_OF_STREAM code, an input cut short with nothing.  So once the
batches are read, the sink looks at the next bytes of the worker's input
(without consuming them, pyspark's worker reads them next) and fails the task
when there are none, before anything commits.
"""

from __future__ import annotations

import struct
import sys
from typing import Iterable, Iterator

import pyarrow as pa

from ..errors import InputCutShortError

# pyspark.serializers.SpecialLengths.END_OF_STREAM, as Spark writes it after a complete input.
_END_OF_STREAM = struct.pack("!i", -4)


def worker_input_stream():
    """The socket stream pyspark's worker reads the task's input from (its ``infile``), or None.

    pyspark does not hand it to data sources, so it is found in the frames of the
    worker's ``main(infile, outfile)`` that called the writer; outside a Spark
    worker (tests, a driver) there is none.
    """
    frame = sys._getframe(1)
    while frame is not None:
        stream = frame.f_locals.get("infile")
        if stream is not None and hasattr(stream, "peek"):
            return stream
        frame = frame.f_back
    return None


def input_ended(stream) -> bool:
    """Whether Spark ended the input on purpose (END_OF_STREAM follows), not by closing the socket."""
    return stream.peek(len(_END_OF_STREAM))[:len(_END_OF_STREAM)] == _END_OF_STREAM


def spark_batches(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The task's batches; raises ``InputCutShortError`` at their end if Spark cut the input short."""
    stream = worker_input_stream()
    rows = 0
    for batch in batches:
        rows += batch.num_rows
        yield batch
    if stream is not None and not input_ended(stream):
        raise InputCutShortError(
            f"the task's input ended after {rows} rows because Spark stopped feeding it (an operator before the "
            "sink failed); nothing of this attempt is committed, and Spark's retry or the query's restart writes "
            "the partition whole")
