"""The claim-check section of RESULTS.md, which ``--claim-check-only`` rewrites alone between its markers:
Canal-JSON encode-only with its defaults beside claim-check to a local directory, every row kept whole, for what
keeping a row in the storage costs beside the encoder that makes its message."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
from common import Result, in_turns, package_revision
from encode import ENCODE_BATCH_ROWS, encode_sink
from report import command_text, machine, now_text, result_table

CLAIM_CHECK_SECTION_START = "<!-- claim-check: bench/run.py --claim-check-only rewrites this section -->"
CLAIM_CHECK_SECTION_END = "<!-- /claim-check -->"
# Over every feed row's Canal-JSON message (1.1 KB and more), above its claim-check message (about 450 bytes).
CLAIM_CHECK_LIMIT = 700
CLAIM_CHECK_ROWS = 100_000


def claim_check_section(feed: pa.Table, turns: int) -> str:
    """Canal-JSON encoded with its defaults and with claim-check to a local directory, every row over
    max-message-bytes, in turns: what keeping each row whole in the storage costs beside the default encoder.
    On the feed's first CLAIM_CHECK_ROWS rows: a million files in one directory would time the filesystem."""
    table = feed.slice(0, CLAIM_CHECK_ROWS)
    with_extension = {"enable-tidb-extension": "true"}
    kept: list[int] = []  # objects per claim-check turn

    def claim_check() -> Result:
        with tempfile.TemporaryDirectory(prefix="bench-claim-check-") as storage:  # a turn's own, then removed
            extra = {**with_extension, "large-message-handle-option": "claim-check",
                     "max-message-bytes": str(CLAIM_CHECK_LIMIT), "claim-check-storage-uri": f"file://{storage}"}
            name = (f"ticdc-sink canal-json, enable-tidb-extension, claim-check to file:// "
                    f"(max-message-bytes={CLAIM_CHECK_LIMIT}: every row kept whole)")
            result = encode_sink(table, "canal-json", extra=extra, name=name)
            kept.append(sum(1 for _ in Path(storage).iterdir()))
        return result

    results = in_turns({"default": lambda: encode_sink(table, "canal-json", extra=with_extension,
                                                         name="ticdc-sink canal-json, enable-tidb-extension"),
                        "claim-check": claim_check}, turns, "claim-check")
    default, claimed = results
    warm_up = min(table.num_rows, ENCODE_BATCH_ROWS)  # encode_sink's warm-up encodes one batch first
    every_row = all(objects == table.num_rows + warm_up for objects in kept)
    kept_text = ("kept every row whole: one object per row" if every_row else
                 f"wrote {', '.join(f'{objects:,}' for objects in kept)} objects (warm-up included)")
    lines = [
        CLAIM_CHECK_SECTION_START, "## Claim-check (one core)", "",
        f"Measured by `{command_text()}` on {now_text()}, "
        f"{package_revision()}. Machine: {machine()}. Encode-only, as the encode section, on the feed's first "
        f"{table.num_rows:,} rows (a file per row: more would time the directory's growth); the claim-check run "
        f"{kept_text}, as `<uuid>.json` `{{key, value}}` in base64, in the machine's temporary directory, before it "
        "returned each batch's messages; its MB/s are those of the Kafka messages it made. The comparison is the "
        "same encoder with its defaults, in the same run.", "",
        *result_table(results),
        "", f"Claim-check takes {default.rows_per_second / claimed.rows_per_second:.1f}x the default "
        "encoder's time per row when every row is kept whole; rows under max-message-bytes cost what they "
        "cost without it.", CLAIM_CHECK_SECTION_END,
    ]
    return "\n".join(lines) + "\n"
