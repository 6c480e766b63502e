"""How every protocol assembles a batch's messages: one per row, old values at the updates, sizes checked."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np
import pyarrow as pa

from ...changes.contract import OP_UPDATE, ChangeBatch
from ...changes.dispatch import Routing
from ...config.sink import SinkConfig
from ...errors import MessageTooLargeError
from ...kafka.messages import MESSAGE_OVERHEAD, Messages, byte_lengths
from ...table.value_text import at_rows

if TYPE_CHECKING:
    from ..base import Encoder


def row_messages(config: SinkConfig, batch: ChangeBatch, routing: Routing, keys: pa.Array | None,
                 values: pa.Array, large: "Encoder | None" = None) -> Messages:
    """One message per row of ``batch`` (its key or none, its value or none), where ``routing`` sends the row.

    ``large``: the encoder whose ``large_row_messages`` stand for the rows over max-message-bytes, where the
    protocol has large-message handling (``large_messages``; TiCDC's encoders do it per row).
    """
    if large is not None:
        keys, values = large_messages(large, batch, keys, values)
    messages = Messages(routing.topics, routing.topic_of_message, routing.partition_of_row, keys, values,
                        np.arange(batch.num_rows))
    check_sizes(config, messages, batch)
    return messages


def large_messages(encoder: "Encoder", batch: ChangeBatch, keys: pa.Array | None, values: pa.Array,
                   framing: int = 0) -> tuple:
    """``(keys, values)`` of the batch's rows (as the encoder compressed them), with each row whose message is over
    max-message-bytes (its key, its value, TiCDC's overhead and ``framing``) handled as
    large-message-handle-option says: with handle-key-only, its handle key alone; with claim-check, the whole
    message kept in the storage first (``encoder.keep_whole``), then its handle key and the location."""
    option = encoder.config.large_message_handle_option
    if option == "none":
        return keys, values
    sizes = byte_lengths(values) + (0 if keys is None else byte_lengths(keys)) + MESSAGE_OVERHEAD + framing
    over = sizes > encoder.config.max_message_bytes
    if not over.any():
        return keys, values
    rows = np.flatnonzero(over)
    locations = None
    if option == "claim-check":
        take = pa.array(rows)
        whole_keys = [None] * len(rows) if keys is None else keys.take(take).cast(pa.binary()).to_pylist()
        whole_values = values.take(take).cast(pa.binary()).to_pylist()
        locations = pa.array([encoder.keep_whole(key, value) for key, value in zip(whole_keys, whole_values)],
                             pa.string())
    small_keys, small_values = encoder.large_row_messages(batch.rows(rows), locations)
    return (None if keys is None else at_rows(keys, over, small_keys, batch.num_rows),
            at_rows(values, over, small_values, batch.num_rows))


def check_sizes(config: SinkConfig, messages: Messages, batch: ChangeBatch) -> None:
    """Refuse a message over ``max-message-bytes`` (TiCDC's ErrMessageTooLarge), naming its (first) row."""
    oversized = messages.first_oversized(config.max_message_bytes)
    if oversized is None:
        return
    index, size = oversized
    row = int(messages.rows[index])
    raise MessageTooLargeError(
        f"the {config.protocol} message of row {batch.row_key(row)} of table {batch.databases[row].as_py()}."
        f"{batch.tables[row].as_py()} is {size} bytes, over max-message-bytes={config.max_message_bytes}; raise "
        "max-message-bytes (and the topic's max.message.bytes)")


def at_updates(batch: ChangeBatch, base: pa.Array | str,
               render: Callable[[dict[str, pa.Array], pa.Array], pa.Array]) -> pa.Array | str:
    """What the UPDATE rows of a batch with old values carry of their old row, in place of ``base`` (an array
    or a constant for every row); ``base`` itself when no row has one.

    ``render(before, updates)`` gets the old values of the updates only and their row numbers (to take
    what else it needs at those rows), so that a batch renders no old value it does not send.
    """
    is_update = batch.ops == OP_UPDATE
    if batch.before is None or not is_update.any():
        return base
    updates = pa.array(np.flatnonzero(is_update))
    before = {name: values.take(updates) for name, values in batch.before.items()}
    return at_rows(base, is_update, render(before, updates), batch.num_rows)
