"""How a task tells an input Spark ended from one it cut short (an operator before the sink failed)."""

import io
import struct

import pyarrow as pa
import pytest

from ticdc_sink.errors import InputCutShortError
from ticdc_sink.sink.task_input import input_ended, spark_batches, worker_input_stream

BATCHES = [pa.RecordBatch.from_pylist([{"id": i}]) for i in range(3)]


def socket_stream(data: bytes) -> io.BufferedReader:
    """What pyspark's worker reads the input from: a buffered reader over the socket."""
    return io.BufferedReader(io.BytesIO(data))


def read_as_the_worker(infile: io.BufferedReader) -> list[pa.RecordBatch]:
    """The writer's call, below a frame holding ``infile`` as pyspark's worker ``main`` does."""
    return list(spark_batches(iter(BATCHES)))


def test_an_input_followed_by_end_of_stream_ended():
    stream = socket_stream(struct.pack("!i", -4))
    assert input_ended(stream)
    assert stream.read() == struct.pack("!i", -4)  # only looked at: the worker reads it next


def test_an_input_followed_by_the_socket_closing_was_cut_short():
    assert not input_ended(socket_stream(b""))


def test_a_complete_input_gives_every_batch():
    assert read_as_the_worker(socket_stream(struct.pack("!i", -4) + b"more")) == BATCHES


def test_a_cut_short_input_fails_after_its_last_batch_and_says_how_many_rows_it_read():
    with pytest.raises(InputCutShortError, match="ended after 3 rows.*operator before the sink failed.*nothing "
                                                 "of this attempt is committed"):
        read_as_the_worker(socket_stream(b""))
    infile = socket_stream(b"")  # the frame's local, as in pyspark's worker
    generator = spark_batches(iter(BATCHES))
    assert [next(generator) for _ in BATCHES] == BATCHES  # every batch first, then the error
    with pytest.raises(InputCutShortError):
        next(generator)
    del infile


def test_outside_a_spark_worker_the_input_is_taken_as_it_comes():
    assert worker_input_stream() is None
    assert list(spark_batches(iter(BATCHES))) == BATCHES
