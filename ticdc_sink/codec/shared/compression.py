"""TiCDC's ``large-message-handle-compression``: lz4 as an LZ4 frame, snappy as a snappy block (TiCDC
``pkg/compression``), through pyarrow's codecs.

Which bytes a protocol compresses is TiCDC's choice, made in each encoder:
Canal-JSON's and Simple's message values, Open Protocol's event values inside
the frames, Debezium's keys and values; Avro's nothing.  Nothing in a message
says it is compressed, so a consumer is told (as TiCDC's is, by its config).
The sink's frames and blocks are not the bytes Go's compressors make, but any
LZ4 frame or snappy block decoder reads them, and the sink's decoders read Go's
(the goldens in ``tests/golden/compression``).
"""

from __future__ import annotations

import pyarrow as pa

_LZ4_FRAME = b"\x04\x22\x4d\x18"  # an LZ4 frame's magic number


def compress_values(values: pa.Array, compression: str) -> pa.Array:
    """Each message of ``values`` (null: none) compressed, as binary; ``values`` itself for ``none``."""
    if compression == "none":
        return values
    return pa.array([None if value is None else pa.compress(value, codec=compression, asbytes=True)
                     for value in values.cast(pa.binary()).to_pylist()], pa.binary())


def compress(data: bytes | str, compression: str) -> bytes | str:
    """One message compressed; ``data`` itself for ``none``."""
    if compression == "none":
        return data
    return pa.compress(data.encode() if isinstance(data, str) else data, codec=compression, asbytes=True)


def decompress(data: bytes, compression: str) -> bytes:
    """A message as it was before ``compress``; a ValueError names what the bytes are not."""
    if compression == "none":
        return data
    try:
        if compression == "lz4":
            return pa.input_stream(pa.py_buffer(data), compression="lz4").read()
        return pa.decompress(data, decompressed_size=_snappy_length(data), codec="snappy", asbytes=True)
    except (OSError, pa.ArrowException) as error:
        kind = "an LZ4 frame" if compression == "lz4" else "a snappy block"
        raise ValueError(f"the message is not {kind} (large-message-handle-compression={compression}: "
                         f"the writer's setting must be the reader's): {error}") from None


def _snappy_length(data: bytes) -> int:
    """The uncompressed length a snappy block starts with (a varint)."""
    length = shift = 0
    for byte in data[:10]:
        length |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return length
        shift += 7
    raise OSError("no length varint at its start")


def compression_hint(value: bytes | None) -> str:
    """Why a message may not decode, where its bytes tell: an LZ4 frame read by a reader not told of it."""
    if value is not None and value[:4] == _LZ4_FRAME:
        return " (the message is an LZ4 frame: give large-message-handle-compression=lz4)"
    return ""
