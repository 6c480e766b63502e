"""large-message-handle-compression and the claim-check storage: TiCDC's compressed bytes read back, objects
written and read on a local directory and on an S3 API (moto's server), and failures in one line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from changefeed import BASE_OPTIONS

from ticdc_sink.codec.shared.claim_check import ClaimCheckError, ClaimCheckStorage, object_content
from ticdc_sink.codec.shared.compression import compress, decompress
from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.errors import ConfigError

GOLDEN = Path(__file__).resolve().parent / "golden" / "compression"


@pytest.mark.parametrize("name", ["empty", "hello", "canal-head", "64a"])
@pytest.mark.parametrize("compression", ["lz4", "snappy"])
def test_what_ticdcs_compressors_wrote_decompresses(name, compression):
    assert decompress((GOLDEN / f"{name}.{compression}").read_bytes(), compression) == \
        (GOLDEN / f"{name}.txt").read_bytes()


@pytest.mark.parametrize("compression", ["lz4", "snappy"])
def test_compressed_messages_come_back(compression):
    for data in (b"", b"x", b'{"id":0,"database":"test"}' * 1000, os.urandom(70_000)):
        packed = compress(data, compression)
        assert decompress(packed, compression) == data
    assert compress("text", "none") == "text" and decompress(b"{}", "none") == b"{}"


@pytest.mark.parametrize("compression", ["lz4", "snappy"])
def test_an_uncompressed_message_read_as_compressed_says_the_settings_must_agree(compression):
    with pytest.raises(ValueError, match=f"large-message-handle-compression={compression}: the writer's setting must "
                                         "be the reader's"):
        decompress(b'{"id":0,"database":"test","table":"t"}', compression)


def test_the_object_is_go_s_json_of_key_and_value():
    stored = (GOLDEN / "open-protocol-claim-check-object.json").read_bytes()
    key = bytes.fromhex("0000000000000001" "0000000000000025") + b'{"ts":1,"scm":"test","tbl":"t","t":1}'
    value = bytes.fromhex("000000000000002a") + b'{"u":{"id":{"t":3,"h":true,"f":11,"v":1}}}'
    assert object_content(key, value) == stored
    assert object_content(None, b"\x08\x1c{\"id\":0}") == (GOLDEN / "canal-json-claim-check-object.snappy.json") \
        .read_bytes()


def test_objects_are_written_and_read_on_a_local_directory(tmp_path):
    storage = ClaimCheckStorage(f"file://{tmp_path}/a/b")
    storage.check()  # makes the directory, as TiCDC's local storage does
    location = storage.put(None, b"whole")
    assert location.startswith(f"file://{tmp_path}/a/b/") and location.endswith(".json")
    assert storage.get(location) == (None, b"whole")
    assert storage.get("s3://another/place/" + location.rsplit("/", 1)[1]) == (None, b"whole")  # by its name
    raw = ClaimCheckStorage(f"file://{tmp_path}/a/b", raw_value=True)
    assert (tmp_path / "a" / "b" / raw.put(b"k", b"whole").rsplit("/", 1)[1]).read_bytes() == b"whole"


def test_an_unwritable_storage_fails_in_one_line_naming_it(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")
    storage = ClaimCheckStorage(f"file://{blocked}/claims")
    with pytest.raises(ClaimCheckError) as failure:
        storage.check()
    assert str(failure.value).startswith(f"claim-check-storage-uri=file://{blocked}/claims cannot be used: ")
    assert "\n" not in str(failure.value)
    with pytest.raises(ClaimCheckError, match="cannot read claim-check object gone.json"):
        ClaimCheckStorage(f"file://{tmp_path}").get("file:///x/gone.json")


def test_an_object_that_is_not_key_and_value_json_names_claim_check_raw_value(tmp_path):
    (tmp_path / "raw.json").write_bytes(b"\x04\x22\x4d\x18")
    with pytest.raises(ClaimCheckError, match="claim-check-raw-value"):
        ClaimCheckStorage(f"file://{tmp_path}").get("file:///x/raw.json")


def options(**given) -> dict:
    return {**BASE_OPTIONS, "protocol": "simple", **{k.replace("_", "-"): v for k, v in given.items()}}


@pytest.mark.parametrize("uri, says", [
    ("gs://bucket/p", "a file:///path or s3://bucket/prefix URI"),
    ("file://tmp/x", "file:///absolute/path (three slashes)"),
    ("s3:///prefix", "names its bucket"),
    ("s3://b/p?endpoint=127.0.0.1:9000", "needs a scheme and a host"),
    ("s3://b/p?sse=aws:kms", "the S3 parameter 'sse' is not supported by the sink"),
    ("s3://b/p?access-key=AK", "access-key and secret-access-key go together"),
])
def test_a_storage_uri_the_sink_cannot_use_is_refused_before_any_task(uri, says):
    with pytest.raises(ConfigError, match="claim-check-storage-uri") as refused:
        parse_options(options(large_message_handle_option="claim-check", claim_check_storage_uri=uri))
    assert says in str(refused.value)


def test_secrets_in_the_storage_uri_are_masked_where_shown():
    uri = "s3://b/p?access-key=AKIA&secret-access-key=hunter2&sse=x"
    with pytest.raises(ConfigError) as refused:
        parse_options(options(large_message_handle_option="claim-check", claim_check_storage_uri=uri))
    assert "hunter2" not in str(refused.value) and "AKIA" not in str(refused.value)
    config = parse_options(options(large_message_handle_option="claim-check",
                                   claim_check_storage_uri="s3://b/p?access-key=AKIA&secret-access-key=hunter2"))
    assert "hunter2" not in repr(config) and "AKIA" not in repr(config)


@pytest.fixture(scope="module")
def s3_endpoint():
    """An S3 API on localhost: moto's server, with a bucket."""
    import urllib.request

    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/claims", method="PUT")).read()  # the bucket
    yield endpoint
    server.stop()


def test_objects_are_written_and_read_on_s3_with_ticdcs_uri_parameters(s3_endpoint):
    uri = (f"s3://claims/cdc/large?endpoint={s3_endpoint}&region=us-east-1&access-key=AK&secret-access-key=SK"
           "&force-path-style=true")
    storage = ClaimCheckStorage(uri)
    storage.check()
    location = storage.put(None, b"whole message")
    assert location.startswith("s3://claims/cdc/large/")  # the URI without its query, as TiCDC's location
    assert storage.get(location) == (None, b"whole message")


def test_an_unreachable_s3_fails_in_one_line_within_the_timeout():
    storage = ClaimCheckStorage("s3://claims/p?endpoint=http://127.0.0.1:9&region=us-east-1&access-key=AK"
                                "&secret-access-key=hunter2", timeout_s=2)
    with pytest.raises(ClaimCheckError) as failure:
        storage.put(None, b"x")
    assert "cannot write claim-check object" in str(failure.value) and "\n" not in str(failure.value)
    assert "hunter2" not in str(failure.value)
