"""The addresses of an Arrow binary or string array's buffers, as ticdc-sink-native's extensions read them
(``native/ticdc_sink_native/_arrow_binary.h``): the producer's keys and values, the text join's parts."""

from __future__ import annotations

import pyarrow as pa


def buffer_addresses(array: pa.Array, large: bool) -> tuple[int, int, int, int, bool]:
    """(validity, offsets, data, offset, large) of ``array``, which the caller keeps alive while they are read;
    0 for no validity (no nulls) and for no data; ``large``: 64-bit offsets."""
    validity, offsets, data = array.buffers()[:3]
    return (validity.address if validity is not None and array.null_count else 0, offsets.address,
            data.address if data is not None else 0, array.offset, large)
