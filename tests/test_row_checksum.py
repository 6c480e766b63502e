"""Row checksums (integrity-check-level=correctness): the sink's, TiCDC's own (the goldens of tests/golden/ticdc,
which TiCDC's encoder wrote with the checksums TiDB's code computed), and the reader's check of them."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from ticdc_sink.codec.avro.decoder import AvroDecoder
from ticdc_sink.codec.simple.decoder import SimpleDecoder
from ticdc_sink.source.undecodable import skipped_as, undecodable
from ticdc_sink.table.row_checksum import ChecksumMismatch, checksum_of, row_checksums, utc_text
from ticdc_sink.table.schema import Column
from ticdc_sink.table.type_grammar import parse_mysql_type

GOLDENS = Path(__file__).parent / "golden" / "ticdc"


def golden(name: str) -> dict:
    return json.loads((GOLDENS / f"{name}.json").read_text(encoding="utf-8"))


def message_bytes(message: dict, part: str) -> bytes | None:
    if part not in message:
        return None
    text = message[part]
    return base64.b64decode(text) if message.get("encoding") == "base64" else text.encode()


def column(name: str, mysql_type: str) -> Column:
    return Column(name=name, type=parse_mysql_type(mysql_type), nullable=True, spark_type=None)


def test_a_rows_checksum_is_tidbs_column_checksum():
    # TiCDC's simple-checksum golden: t_bigint's insert 1, (1, -9223372036854775808), current 2943048164
    columns = {"id": pa.array([1, 2], pa.int32()), "v": pa.array([-2**63, None], pa.int64())}
    sums = row_checksums(columns, [column("id", "int"), column("v", "bigint")], 2)
    assert sums[0] == 2943048164 == zlib.crc32(struct.pack("<qq", 1, -2**63))
    assert sums[1] == zlib.crc32(struct.pack("<q", 2))  # NULL adds nothing
    assert checksum_of([(1, "int"), (-2**63, "bigint")]) == 2943048164


def test_a_timestamp_is_summed_in_utc():
    assert utc_text("2020-01-01 08:00:00.250", "Asia/Shanghai") == "2020-01-01 00:00:00.250"
    assert utc_text("0000-00-00 00:00:00", "Asia/Shanghai") == "0000-00-00 00:00:00"


def simple_rows(config: str):
    """Each table of a Simple golden: its BOOTSTRAP, then its row messages."""
    for name, table in golden(config)["tables"].items():
        yield name, message_bytes(table["bootstrap"], "value"), [
            (m["event"], message_bytes(m, "value")) for m in table["messages"] if "value" in m]


@pytest.mark.parametrize("config", ["simple-checksum", "simple-avro-checksum"])
def test_the_reader_verifies_ticdcs_simple_checksums_of_every_type(config):
    checked = 0
    for name, bootstrap, rows in simple_rows(config):
        decoder = SimpleDecoder()
        decoder.decode(None, bootstrap)
        for event, value in rows:
            assert len(decoder.decode(None, value)) == 1, (name, event)
            checked += b"checksum" in value or config == "simple-avro-checksum"
    assert checked > 100


def tampered_simple_row() -> tuple[SimpleDecoder, bytes]:
    _, bootstrap, rows = next(r for r in simple_rows("simple-checksum") if r[0] == "bigint")
    decoder = SimpleDecoder()
    decoder.decode(None, bootstrap)
    value = rows[0][1].replace(b'"v":"-9223372036854775808"', b'"v":"-9223372036854775807"')
    assert value != rows[0][1]
    return decoder, value


def test_a_simple_row_whose_values_were_changed_fails_naming_the_row():
    decoder, value = tampered_simple_row()
    with pytest.raises(ChecksumMismatch, match=r"INSERT of test.t_bigint at commit ts 450000000000000001, its row: "
                                               r"its values give the row checksum \d+, the message carries 2943048164"):
        decoder.decode(None, value)


def test_a_read_says_which_message_and_skips_it_under_on_error_skip():
    decoder, value = tampered_simple_row()
    with pytest.raises(ChecksumMismatch) as info:
        decoder.decode(None, value)
    what, fix = undecodable("simple", info.value, "tidb_test_t_bigint", 0, 7, value)
    assert "offset 7 carries the INSERT of test.t_bigint" in what and "on-error=skip" in fix
    assert skipped_as(info.value) == "of a mismatched checksum"


class _Registry:
    """The golden's registered schemas by the ids its messages' headers carry (each table's registry numbers them
    from 1 in the order TiCDC registered them: key, then value)."""

    def __init__(self, registered: dict[str, str]):
        self.texts = {}
        for i, subject in enumerate(sorted(registered, key=lambda s: not s.endswith("-key"))):
            self.texts[i + 1] = registered[subject]

    @staticmethod
    def split(data: bytes):
        return struct.unpack(">I", data[1:5])[0], data[5:]

    def schema_text(self, schema_id: int) -> str:
        return self.texts[schema_id]


@pytest.mark.parametrize("config", ["avro-checksum", "avro-checksum-before-value"])
def test_the_reader_verifies_ticdcs_avro_checksums_of_every_type(config):
    checked = 0
    for name, table in golden(config)["tables"].items():
        decoder = AvroDecoder()
        registry = _Registry(table["registered"])
        if len({id_ for id_ in registry.texts}) != len(table["registered"]):
            continue
        decoder._registry = registry
        for message in table["messages"]:
            value = message_bytes(message, "value")
            if value:
                decoder.decode(message_bytes(message, "key"), value)
                checked += 1
    assert checked > 100


def test_an_avro_row_whose_values_were_changed_fails():
    table = golden("avro-checksum")["tables"]["bigint"]
    decoder = AvroDecoder()
    decoder._registry = _Registry(table["registered"])
    message = table["messages"][0]
    key, value = message_bytes(message, "key"), bytearray(message_bytes(message, "value"))
    value[7] ^= 0x02  # the value's first column's varint (id 1 -> another id)
    with pytest.raises(ChecksumMismatch, match="the INSERT of test.t_bigint at commit ts 450000000000000001"):
        decoder.decode(key, bytes(value))
