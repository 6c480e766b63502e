"""Build the Avro envelope goldens (*.bin) from the schema goldens (schema-*.json).

Run from anywhere with ``python make_envelopes.py``; it writes the .bin files
next to itself. ``python make_envelopes.py --check`` writes nothing and exits 1
if a .bin file is missing or differs from what the schemas and the rows below
give, or if a tombstone has a value file.

A Kafka key or value in the Confluent wire format is

    byte 0x00 (magic), int32 big-endian schema id, Avro binary of one record

The Avro binary is written here by hand, walking the record's fields in the
order of its schema file:

    int, long   zigzag, then a base-128 varint (low 7 bits first, high bit = more)
    string      long byte length, then the UTF-8 bytes
    bytes       long byte length, then the bytes
    union       long branch index (0 for "null" in ["null", T]), then the value
    record      its fields one after another, no separators, no field count

A DELETE is a tombstone: a key and no value, so it has no .value.bin file.

Standard library only (no fastavro), so the goldens do not depend on the
library an encoder under test might use.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MAGIC = b"\x00"
# A fresh Schema Registry hands out ids from 1, and TiCDC encodes (registers)
# the key before the value: the key schema gets 1, the value schema 2.
KEY_SCHEMA_ID = 1
VALUE_SCHEMA_ID = 2

# Commit TSOs of the examples; the physical time is ts >> 18 (milliseconds).
TS_INSERT = 429918007904436226  # physical 1640007049196
TS_UPDATE = (1640007050196 << 18) | 1  # one second later, logical 1

# envelope name -> (key schema, key row, value schema or None, value row or None).
# The table is test.t (id INT PRIMARY KEY, name VARCHAR(32)); README.md says
# where each row comes from.
ENVELOPES: dict[str, tuple[str, dict, str | None, dict | None]] = {
    # INSERT (1, 'Zoë'), enable-tidb-extension off. Without the extension an
    # UPDATE's value is the same bytes as an INSERT of the new row.
    "insert": ("schema-key.json", {"id": 1},
               "schema-value.json", {"id": 1, "name": "Zoë"}),
    # INSERT (2, NULL): the nullable column takes union branch 0.
    "insert-null-name": ("schema-key.json", {"id": 2},
                         "schema-value.json", {"id": 2, "name": None}),
    # The INSERT of "insert" with enable-tidb-extension=true.
    "insert-tidb-extension": (
        "schema-key.json", {"id": 1},
        "schema-value-tidb-extension.json",
        {"id": 1, "name": "Zoë", "_tidb_op": "c", "_tidb_commit_ts": TS_INSERT,
         "_tidb_commit_physical_time": TS_INSERT >> 18}),
    # UPDATE t SET name = 'Zoe' WHERE id = 1, enable-tidb-extension=true: the
    # new row, op "u"; the old row is not sent.
    "update-tidb-extension": (
        "schema-key.json", {"id": 1},
        "schema-value-tidb-extension.json",
        {"id": 1, "name": "Zoe", "_tidb_op": "u", "_tidb_commit_ts": TS_UPDATE,
         "_tidb_commit_physical_time": TS_UPDATE >> 18}),
    # DELETE FROM t WHERE id = 1: the key of the deleted row and a tombstone
    # (no value), with or without the extension.
    "delete": ("schema-key.json", {"id": 1}, None, None),
}

_RANGES = {"int": (-(1 << 31), (1 << 31) - 1), "long": (-(1 << 63), (1 << 63) - 1)}


def _varint(u: int) -> bytes:
    out = bytearray()
    while True:
        b = u & 0x7F
        u >>= 7
        if u:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _long(n: int) -> bytes:
    return _varint(((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF)


def _type_name(schema) -> str:
    # A TiCDC column type is {"type": <primitive>, "connect.parameters": {...}}.
    if isinstance(schema, dict):
        if "logicalType" in schema:
            raise NotImplementedError(f"logical type {schema['logicalType']!r}")
        return _type_name(schema["type"]) if schema["type"] != "record" else "record"
    return schema


def encode(schema, value) -> bytes:
    if isinstance(schema, list):  # union
        if value is None:
            return _long(schema.index("null"))
        branches = [i for i, s in enumerate(schema) if s != "null"]
        if len(branches) != 1:
            raise NotImplementedError(f"union {schema!r}")
        return _long(branches[0]) + encode(schema[branches[0]], value)
    name = _type_name(schema)
    if name == "record":
        names = [f["name"] for f in schema["fields"]]
        if sorted(names) != sorted(value):
            raise ValueError(f"row {sorted(value)} does not match fields {names}")
        return b"".join(encode(f["type"], value[f["name"]]) for f in schema["fields"])
    if name in _RANGES:
        lo, hi = _RANGES[name]
        if not isinstance(value, int) or not lo <= value <= hi:
            raise ValueError(f"{value!r} is not an Avro {name}")
        return _long(value)
    if name == "string":
        data = value.encode("utf-8")
        return _long(len(data)) + data
    if name == "bytes":
        return _long(len(value)) + bytes(value)
    if name == "float":
        return struct.pack("<f", value)
    if name == "double":
        return struct.pack("<d", value)
    if name == "boolean":
        return b"\x01" if value else b"\x00"
    raise NotImplementedError(f"type {name!r}")


def envelope(schema_file: str, schema_id: int, row: dict) -> bytes:
    schema = json.loads((HERE / schema_file).read_bytes())
    return MAGIC + struct.pack(">i", schema_id) + encode(schema, row)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    bad = []
    for name, (key_schema, key_row, value_schema, value_row) in ENVELOPES.items():
        outputs = [(HERE / f"{name}.key.bin", envelope(key_schema, KEY_SCHEMA_ID, key_row))]
        value_path = HERE / f"{name}.value.bin"
        if value_schema is None:
            if value_path.exists():
                bad.append(f"{value_path.name} (a tombstone has no value file)")
        else:
            outputs.append((value_path, envelope(value_schema, VALUE_SCHEMA_ID, value_row)))
        for path, data in outputs:
            if check:
                if not path.exists() or path.read_bytes() != data:
                    bad.append(path.name)
            else:
                path.write_bytes(data)
                print(f"{path.name}: {len(data)} bytes: {data.hex()}")
    if bad:
        print("out of date: " + ", ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
