"""What a read says of a message it cannot decode: the same line from a task, from the planner of a stream and
from the search for the table's columns, so that a user sees one cause however the read met the message."""

from __future__ import annotations

from ..codec.recognition import NotOfProtocol
from ..codec.shared.compression import compression_hint
from ..codec.shared.schema_registry import SchemaRegistryFailure
from ..table.row_checksum import ChecksumMismatch


def stops_every_message(error: Exception) -> bool:
    """A registry that refuses the login, is not trusted or does not answer: no message decodes until its
    settings are fixed, so on-error=skip does not pass over it (it would read back nothing, and say little)."""
    return isinstance(error, SchemaRegistryFailure) and not error.of_one_message


def undecodable(protocol: str, error: Exception, topic: str, partition: int, offset: int,
                value: bytes | None) -> tuple[str, str]:
    """(what is wrong with the message at ``offset``, what to do about it)."""
    if isinstance(error, NotOfProtocol):
        return f"topic {topic!r} partition {partition} offset {offset}: {error}", "check the protocol option"
    if isinstance(error, ChecksumMismatch):
        return (f"the {protocol} message at {topic} partition {partition} offset {offset} carries {error}",
                "the row was changed after TiCDC wrote it; set on-error=skip to skip such rows")
    if stops_every_message(error):
        return (f"reading {topic} partition {partition} offset {offset}: {error}",
                "every message needs the registry, so on-error=skip does not pass over this")
    return (f"cannot decode the {protocol} message at {topic} partition {partition} offset {offset}: {error}"
            f"{compression_hint(value)}", "check protocol and its options, or set on-error=skip to skip such "
                                          "messages")


def skipped_as(error: Exception) -> str:
    """How a read with on-error=skip counts a message it skipped for ``error``."""
    if isinstance(error, ChecksumMismatch):
        return "of a mismatched checksum"
    return f"not {error.protocol}" if isinstance(error, NotOfProtocol) else "undecodable"
