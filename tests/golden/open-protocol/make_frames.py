"""Build the Open Protocol frame goldens (*.bin) from the event goldens (*.json).

Run from anywhere with ``python make_frames.py``; it writes the .bin files next
to itself. ``python make_frames.py --check`` writes nothing and exits 1 if a
.bin file is missing or differs from what the .json files give.

A Kafka message of the Open Protocol carries one or more events:

    key   = uint64 big-endian 1 (protocol version)
            then, per event: uint64 big-endian length + event key bytes
    value = per event: uint64 big-endian length + event value bytes
            (same order as the keys, no version header)

An event without a value file (the resolved event) has an empty value, so its
value part is a length of 0 and nothing after it.

Standard library only.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
VERSION = 1

# frame name -> the events it packs, in order (stems of <stem>.key.json and
# <stem>.value.json). README.md says where each comes from.
FRAMES: dict[str, list[str]] = {
    # (a) one row event alone in a message (log 5).
    "frame-row-insert": ["row-insert"],
    # (b) row events of one partition packed together: partition 0 of the
    # first transaction (logs 5 and 7) ...
    "frame-batch-p0-txn1": ["row-insert", "row-insert-3"],
    # ... and partition 0 of the second transaction (logs 9, 11 and 12).
    "frame-batch-p0-txn2": ["row-delete", "row-update", "row-update-pk-insert"],
    # (c) a resolved event (logs 2 and 4): always a message of its own.
    "frame-resolved": ["resolved"],
    # a DDL event (logs 1 and 3): always a message of its own.
    "frame-ddl": ["ddl-create-table"],
}


def _u64(n: int) -> bytes:
    return struct.pack(">Q", n)


def _read(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""


def build(stems: list[str]) -> tuple[bytes, bytes]:
    key = bytearray(_u64(VERSION))
    value = bytearray()
    for stem in stems:
        key_path = HERE / f"{stem}.key.json"
        if not key_path.exists():
            raise FileNotFoundError(key_path)
        k = key_path.read_bytes()
        v = _read(HERE / f"{stem}.value.json")
        key += _u64(len(k)) + k
        value += _u64(len(v)) + v
    return bytes(key), bytes(value)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    bad = []
    for name, stems in FRAMES.items():
        key, value = build(stems)
        for suffix, data in ((".key.bin", key), (".value.bin", value)):
            path = HERE / f"{name}{suffix}"
            if check:
                if not path.exists() or path.read_bytes() != data:
                    bad.append(path.name)
            else:
                path.write_bytes(data)
                print(f"{path.name}: {len(data)} bytes")
    if bad:
        print("out of date: " + ", ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
