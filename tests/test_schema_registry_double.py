"""The Schema Registry TEST DOUBLE behaves as confluent-kafka's real client expects.

Everything here talks to ``SchemaRegistryDouble`` through confluent-kafka's own
``SchemaRegistryClient``, ``AvroSerializer`` and ``AvroDeserializer`` (plus raw HTTP
only where the client has no call: the root resource, the server header, a 401's
headers and a TLS handshake refused). No Spark, no Kafka. A fresh client is used
wherever its cache would otherwise answer instead of the double.
"""

from __future__ import annotations

import base64
import io
import json
import socket
import ssl
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import fastavro
import pytest
from certificates import make_tls_files
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from ticdc_sink.embedded.schema_registry import SchemaRegistryDouble


def record(fields, name="Row", **extra):
    return {"type": "record", "name": name, "namespace": "ticdc.test", "fields": fields, **extra}


def text(schema) -> str:
    return json.dumps(schema)


V1 = record([{"name": "id", "type": "int"}, {"name": "name", "type": "string"}])
V2_ADDS_DEFAULTED = record(V1["fields"] + [{"name": "email", "type": ["null", "string"], "default": None}])
V2_ADDS_REQUIRED = record(V1["fields"] + [{"name": "email", "type": "string"}])
V2_INT_TO_STRING = record([{"name": "id", "type": "string"}, {"name": "name", "type": "string"}])


@pytest.fixture
def registry():
    with SchemaRegistryDouble() as double:
        yield double


@pytest.fixture
def new_client(registry):
    """Makes fresh clients (empty caches) for ``registry``, closed after the test."""
    made = []

    def make(double=None, **conf):
        client = SchemaRegistryClient((double or registry).client_config(**conf))
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def rejected(call) -> SchemaRegistryError:
    with pytest.raises(SchemaRegistryError) as info:
        call()
    return info.value


def avro_reads(writer, reader, datum) -> bool:
    """Whether fastavro can actually read ``datum`` written with ``writer`` using ``reader``."""
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(writer), datum)
    buffer.seek(0)
    try:
        fastavro.schemaless_reader(buffer, fastavro.parse_schema(writer), fastavro.parse_schema(reader))
    except fastavro.read.SchemaResolutionError:
        return False
    return True


# --- registration, lookup, ids ------------------------------------------------------------------

def test_register_lookup_and_get_by_id(registry, new_client):
    schema_id = new_client().register_schema("orders-value", Schema(text(V1)))

    reader = new_client()
    found = reader.lookup_schema("orders-value", Schema(text(V1)))
    assert (found.subject, found.version, found.schema_id) == ("orders-value", 1, schema_id)
    assert json.loads(reader.get_schema(schema_id).schema_str) == V1
    assert reader.get_subjects() == ["orders-value"]
    assert reader.get_versions("orders-value") == [1]
    latest = reader.get_latest_version("orders-value")
    assert (latest.version, latest.schema_id, latest.subject) == (1, schema_id, "orders-value")
    assert json.loads(reader.get_version("orders-value", 1).schema.schema_str) == V1
    assert [(v.subject, v.version) for v in reader.get_schema_versions(schema_id)] == [("orders-value", 1)]
    assert reader.get_subjects_by_schema_id(schema_id) == ["orders-value"]
    assert reader.get_schema_types() == ["AVRO"]


def test_the_same_schema_twice_gets_the_same_id_even_reformatted(registry, new_client):
    first = new_client().register_schema("orders-value", Schema(text(V1)))
    # Another spelling of the same schema: other whitespace, other key order, a primitive
    # written as {"type": ...}, the namespace folded into the name.
    respelled = json.dumps(
        {"fields": [{"type": {"type": "int"}, "name": "id"}, {"name": "name", "type": "string"}],
         "name": "ticdc.test.Row", "type": "record"},
        indent=4,
    )
    second = new_client().register_schema("orders-value", Schema(respelled))
    third = new_client().register_schema("orders-value", Schema(text(V1)))

    assert first == second == third
    assert new_client().get_versions("orders-value") == [1]
    registrations = [r for r in registry.requests if r[0] == "POST" and r[1].startswith("/subjects/orders-value/versions")]
    assert [status for _, _, status in registrations] == [200, 200, 200]  # each reached the double, not a cache


def test_identical_schema_under_two_subjects_shares_one_global_id(new_client):
    client = new_client()
    a = client.register_schema("a-value", Schema(text(V1)))
    b = client.register_schema("b-value", Schema(text(V1)))
    other = client.register_schema("c-value", Schema(text(V2_ADDS_DEFAULTED)))
    assert a == b != other
    assert sorted(new_client().get_subjects_by_schema_id(a)) == ["a-value", "b-value"]
    assert new_client().get_version("b-value", 1).schema_id == a


def test_schema_references_resolve_through_the_client(registry, new_client):
    client = new_client()
    client.register_schema("status", Schema(text({"type": "enum", "name": "ticdc.test.Status",
                                                   "symbols": ["ON", "OFF"]})))
    with_ref = Schema(text(record([{"name": "id", "type": "int"}, {"name": "status", "type": "ticdc.test.Status"}])),
                      references=[SchemaReference("ticdc.test.Status", "status", 1)])
    ref_id = client.register_schema("devices-value", with_ref)

    fetched = new_client().get_schema(ref_id)
    assert [(r.name, r.subject, r.version) for r in fetched.references] == [("ticdc.test.Status", "status", 1)]
    assert new_client().get_referenced_by("status", 1) == [ref_id]
    assert rejected(lambda: client.delete_subject("status")).error_code == 42206  # still referenced
    unresolved = Schema(with_ref.schema_str)  # the same text without its reference
    assert rejected(lambda: new_client().register_schema("x", unresolved)).error_code == 42201

    ctx = SerializationContext("devices", MessageField.VALUE)
    payload = AvroSerializer(new_client(), with_ref, conf={"auto.register.schemas": False,
                                                          "use.latest.version": True})({"id": 1, "status": "OFF"}, ctx)
    assert AvroDeserializer(new_client())(payload, ctx) == {"id": 1, "status": "OFF"}


# --- serializer / deserializer ------------------------------------------------------------------

def test_avro_serializer_to_deserializer_round_trip(registry, new_client):
    ctx = SerializationContext("orders", MessageField.VALUE)
    serializer = AvroSerializer(new_client(), text(V1))
    payload = serializer({"id": 7, "name": "seven"}, ctx)

    schema_id = new_client().get_latest_version("orders-value").schema_id
    assert payload[0] == 0 and int.from_bytes(payload[1:5], "big") == schema_id  # Confluent framing
    assert AvroDeserializer(new_client())(payload, ctx) == {"id": 7, "name": "seven"}
    # The client's default subject strategy asks for associations first; the double answers
    # 404 like a registry without them, and the client falls back to "{topic}-value".
    assert ("GET", "/associations/resources/-/orders?resourceType=topic&associationType=value", 404) \
        in registry.requests


def test_backward_evolution_adding_a_defaulted_field_is_version_2(new_client):
    ctx = SerializationContext("orders", MessageField.VALUE)
    old_payload = AvroSerializer(new_client(), text(V1))({"id": 1, "name": "one"}, ctx)

    v2_id = new_client().register_schema("orders-value", Schema(text(V2_ADDS_DEFAULTED)))

    client = new_client()
    assert client.get_versions("orders-value") == [1, 2]
    latest = client.get_latest_version("orders-value")
    assert (latest.version, latest.schema_id) == (2, v2_id)
    assert client.get_version("orders-value", 1).schema_id != v2_id
    # What BACKWARD promises: a consumer on v2 reads what was written with v1.
    reader = AvroDeserializer(new_client(), text(V2_ADDS_DEFAULTED))
    assert reader(old_payload, ctx) == {"id": 1, "name": "one", "email": None}


@pytest.mark.parametrize(
    ("new_schema", "error_type"),
    [(V2_ADDS_REQUIRED, "READER_FIELD_MISSING_DEFAULT_VALUE"), (V2_INT_TO_STRING, "TYPE_MISMATCH")],
    ids=["field-without-default", "int-to-string"],
)
def test_an_incompatible_schema_is_refused_with_409(new_client, new_schema, error_type):
    client = new_client()
    client.register_schema("orders-value", Schema(text(V1)))

    error = rejected(lambda: new_client().register_schema("orders-value", Schema(text(new_schema))))

    assert error.http_status_code == 409 and error.error_code == 409
    assert error.error_message.startswith(
        'Schema being registered is incompatible with an earlier schema for subject "orders-value", details: ['
    )
    assert f"errorType:'{error_type}'" in error.error_message
    assert "{oldSchemaVersion: 1}" in error.error_message
    assert "compatibility: 'BACKWARD'" in error.error_message
    assert new_client().get_versions("orders-value") == [1]
    # The serializer surfaces the same refusal.
    serializer = AvroSerializer(new_client(), text(new_schema))
    with pytest.raises(SchemaRegistryError) as info:
        serializer({"id": "1" if new_schema is V2_INT_TO_STRING else 1, "name": "x", "email": "e"},
                   SerializationContext("orders", MessageField.VALUE))
    assert info.value.http_status_code == 409


def test_incompatible_error_code_can_mimic_newer_registries(new_client):
    with SchemaRegistryDouble(incompatible_error_code=40901) as newer:
        client = new_client(newer)
        client.register_schema("s", Schema(text(V1)))
        error = rejected(lambda: client.register_schema("s", Schema(text(V2_ADDS_REQUIRED))))
    assert (error.http_status_code, error.error_code) == (409, 40901)


# --- compatibility -----------------------------------------------------------------------------

def test_compatibility_endpoint(new_client):
    client = new_client()
    assert client.test_compatibility("nothing-yet", Schema(text(V2_ADDS_REQUIRED))) is True  # no latest to break
    client.register_schema("orders-value", Schema(text(V1)))
    client.register_schema("orders-value", Schema(text(V2_ADDS_DEFAULTED)))

    assert client.test_compatibility("orders-value", Schema(text(V2_ADDS_DEFAULTED))) is True
    assert client.test_compatibility("orders-value", Schema(text(V2_INT_TO_STRING))) is False
    assert client.test_compatibility("orders-value", Schema(text(V2_ADDS_REQUIRED)), version=1) is False
    # v3 drops the defaulted field again: fine against v2 (BACKWARD reads only what it declares)
    assert client.test_compatibility("orders-value", Schema(text(V1)), version=2, verbose=True) is True
    assert client.test_compatibility_all_versions("orders-value", Schema(text(V2_INT_TO_STRING))) is False
    missing = rejected(lambda: client.test_compatibility("orders-value", Schema(text(V1)), version=9))
    assert (missing.http_status_code, missing.error_code) == (404, 40402)
    assert new_client().get_versions("orders-value") == [1, 2]  # testing registers nothing


def _field(type_, **extra):
    return record([{"name": "a", "type": type_, **extra}])


ENUM_ABC = {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}
ENUM_AB = {"type": "enum", "name": "E", "symbols": ["A", "B"]}
NODE = record([{"name": "value", "type": "int"}, {"name": "next", "type": ["null", "Row"], "default": None}])
NODE_PLUS = record(NODE["fields"] + [{"name": "tag", "type": "string", "default": ""}])

# (id, writer = the registered schema, reader = the new schema, datum written, readable?)
RESOLUTION_CASES = [
    ("add-defaulted-field", record([{"name": "a", "type": "int"}]),
     record([{"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": "x"}]), {"a": 1}, True),
    ("add-required-field", record([{"name": "a", "type": "int"}]),
     record([{"name": "a", "type": "int"}, {"name": "b", "type": "string"}]), {"a": 1}, False),
    ("remove-field", record([{"name": "a", "type": "int"}, {"name": "b", "type": "int"}]),
     record([{"name": "a", "type": "int"}]), {"a": 1, "b": 2}, True),
    ("int-to-long", _field("int"), _field("long"), {"a": 1}, True),
    ("int-to-float", _field("int"), _field("float"), {"a": 1}, True),
    ("int-to-double", _field("int"), _field("double"), {"a": 1}, True),
    ("long-to-float", _field("long"), _field("float"), {"a": 1}, True),
    ("long-to-double", _field("long"), _field("double"), {"a": 1}, True),
    ("float-to-double", _field("float"), _field("double"), {"a": 1.5}, True),
    ("string-to-bytes", _field("string"), _field("bytes"), {"a": "x"}, True),
    ("bytes-to-string", _field("bytes"), _field("string"), {"a": b"x"}, True),
    ("long-to-int", _field("long"), _field("int"), {"a": 1}, False),
    ("double-to-float", _field("double"), _field("float"), {"a": 1.5}, False),
    ("int-to-string", _field("int"), _field("string"), {"a": 1}, False),
    ("int-to-boolean", _field("int"), _field("boolean"), {"a": 1}, False),
    ("made-optional", _field("string"), _field(["null", "string"], default=None), {"a": "x"}, True),
    ("null-to-optional", _field("null"), _field(["null", "string"], default=None), {"a": None}, True),
    ("optional-made-required", _field(["null", "string"]), _field("string"), {"a": None}, False),
    ("union-loses-branch", _field(["null", "int", "string"]), _field(["null", "int"]), {"a": "s"}, False),
    ("union-branch-promoted", _field(["null", "int"]), _field(["null", "long"]), {"a": 1}, True),
    ("enum-gains-symbol", _field(ENUM_AB), _field(ENUM_ABC), {"a": "B"}, True),
    ("enum-loses-symbol", _field(ENUM_ABC), _field(ENUM_AB), {"a": "C"}, False),
    ("enum-loses-symbol-with-default", _field(ENUM_ABC), _field({**ENUM_AB, "default": "A"}), {"a": "C"}, True),
    ("fixed-resized", _field({"type": "fixed", "name": "F", "size": 4}),
     _field({"type": "fixed", "name": "F", "size": 8}), {"a": b"abcd"}, False),
    ("record-renamed", record([{"name": "a", "type": "int"}]),
     record([{"name": "a", "type": "int"}], name="Other"), {"a": 1}, False),
    ("record-renamed-with-alias", record([{"name": "a", "type": "int"}]),
     record([{"name": "a", "type": "int"}], name="Other", aliases=["ticdc.test.Row"]), {"a": 1}, True),
    ("field-renamed-with-alias", record([{"name": "old", "type": "int"}]),
     record([{"name": "new", "type": "int", "aliases": ["old"]}]), {"old": 1}, True),
    ("array-items-promoted", _field({"type": "array", "items": "int"}),
     _field({"type": "array", "items": "long"}), {"a": [1]}, True),
    ("map-values-changed", _field({"type": "map", "values": "int"}),
     _field({"type": "map", "values": "string"}), {"a": {"k": 1}}, False),
    ("nested-record-adds-required",
     _field(record([{"name": "x", "type": "int"}], name="Inner")),
     _field(record([{"name": "x", "type": "int"}, {"name": "y", "type": "int"}], name="Inner")),
     {"a": {"x": 1}}, False),
    ("recursive-record-adds-defaulted", NODE, NODE_PLUS,
     {"value": 1, "next": {"value": 2, "next": None}}, True),
]


@pytest.mark.parametrize(("writer", "reader", "datum", "readable"),
                         [case[1:] for case in RESOLUTION_CASES], ids=[case[0] for case in RESOLUTION_CASES])
def test_backward_check_agrees_with_real_avro_resolution(new_client, writer, reader, datum, readable):
    assert avro_reads(writer, reader, datum) is readable  # the case table itself is right
    client = new_client()
    client.register_schema("s", Schema(text(writer)))
    assert client.test_compatibility("s", Schema(text(reader))) is readable
    if readable:
        assert client.register_schema("s", Schema(text(reader))) > 0
    else:
        assert rejected(lambda: client.register_schema("s", Schema(text(reader)))).http_status_code == 409


@pytest.mark.parametrize(
    ("level", "new_schema", "accepted"),
    [
        ("FORWARD", V2_ADDS_REQUIRED, True),  # old readers ignore the new field
        ("FORWARD", record([{"name": "id", "type": "int"}]), False),  # old readers need "name"
        ("FULL", V2_ADDS_DEFAULTED, True),
        ("FULL", V2_ADDS_REQUIRED, False),
        ("FULL", record([{"name": "id", "type": "int"}]), False),
        ("NONE", V2_INT_TO_STRING, True),
        ("NONE", record([{"name": "x", "type": "boolean"}], name="Unrelated"), True),
    ],
)
def test_forward_full_and_none(new_client, level, new_schema, accepted):
    client = new_client()
    client.set_compatibility("s", level)
    client.register_schema("s", Schema(text(V1)))
    assert client.test_compatibility("s", Schema(text(new_schema))) is accepted
    if accepted:
        client.register_schema("s", Schema(text(new_schema)))
        assert new_client().get_versions("s") == [1, 2]
    else:
        error = rejected(lambda: client.register_schema("s", Schema(text(new_schema))))
        assert error.http_status_code == 409 and f"compatibility: '{level}'" in error.error_message


def test_transitive_levels_check_every_live_version(new_client):
    v1 = record([{"name": "a", "type": "int"}])
    v2 = record([{"name": "a", "type": "int"}, {"name": "b", "type": "int", "default": 0}])
    v3 = record([{"name": "a", "type": "int"}, {"name": "b", "type": "int"}])  # reads v2 data, not v1 data
    client = new_client()
    for subject, level in (("plain", "BACKWARD"), ("transitive", "BACKWARD_TRANSITIVE")):
        client.set_compatibility(subject, level)
        client.register_schema(subject, Schema(text(v1)))
        client.register_schema(subject, Schema(text(v2)))
    assert client.register_schema("plain", Schema(text(v3))) > 0
    error = rejected(lambda: client.register_schema("transitive", Schema(text(v3))))
    assert error.http_status_code == 409 and "{oldSchemaVersion: 1}" in error.error_message


# --- config --------------------------------------------------------------------------------------

def test_compatibility_config_globally_and_per_subject(new_client):
    client = new_client()
    assert client.get_compatibility() == "BACKWARD"
    unset = rejected(lambda: client.get_compatibility("loose-value"))
    assert (unset.http_status_code, unset.error_code) == (404, 40408)

    assert client.set_compatibility("loose-value", "none") == {"compatibility": "NONE"}
    assert client.get_compatibility("loose-value") == "NONE"
    assert client.get_config("loose-value").compatibility_level.value == "NONE"
    for subject in ("loose-value", "strict-value"):
        client.register_schema(subject, Schema(text(V1)))
    client.register_schema("loose-value", Schema(text(V2_INT_TO_STRING)))  # NONE allows anything
    assert rejected(lambda: client.register_schema("strict-value", Schema(text(V2_INT_TO_STRING)))).http_status_code == 409

    assert client.delete_config("loose-value").compatibility_level.value == "NONE"
    assert rejected(lambda: client.get_compatibility("loose-value")).error_code == 40408

    assert client.set_compatibility(level="FULL") == {"compatibility": "FULL"}
    assert client.get_compatibility() == "FULL"
    invalid = rejected(lambda: client.set_compatibility("x", "SIDEWAYS"))
    assert (invalid.http_status_code, invalid.error_code) == (422, 42203)


# --- errors and deletes ----------------------------------------------------------------------------

def test_not_found_and_invalid_requests(new_client):
    client = new_client()
    client.register_schema("orders-value", Schema(text(V1)))

    def status(call):
        error = rejected(call)
        return error.http_status_code, error.error_code

    assert status(lambda: new_client().get_schema(999)) == (404, 40403)
    assert status(lambda: client.lookup_schema("nobody", Schema(text(V1)))) == (404, 40401)
    assert status(lambda: client.lookup_schema("orders-value", Schema(text(V2_ADDS_DEFAULTED)))) == (404, 40403)
    assert status(lambda: client.get_version("orders-value", 9)) == (404, 40402)
    assert status(lambda: client.get_version("orders-value", 0)) == (422, 42202)
    assert status(lambda: client.get_latest_version("nobody")) == (404, 40401)
    assert status(lambda: client.get_versions("nobody")) == (404, 40401)
    assert status(lambda: client.register_schema("x", Schema('{"type": "record", "name": "R"}'))) == (422, 42201)
    assert status(lambda: client.register_schema("x", Schema('{"type": "nope"}'))) == (422, 42201)
    bad_default = text(record([{"name": "a", "type": "int", "default": "text"}]))
    assert status(lambda: client.register_schema("x", Schema(bad_default))) == (422, 42201)
    assert status(lambda: client.register_schema("x", Schema('{"type": "object"}', "JSON"))) == (422, 42201)


def test_soft_and_permanent_subject_deletion(new_client):
    client = new_client()
    v1_id = client.register_schema("orders-value", Schema(text(V1)))
    client.register_schema("orders-value", Schema(text(V2_ADDS_DEFAULTED)))
    early = rejected(lambda: client.delete_subject("orders-value", permanent=True))
    assert (early.http_status_code, early.error_code) == (404, 40405)

    assert client.delete_subject("orders-value") == [1, 2]
    assert new_client().get_subjects() == []
    assert new_client().get_subjects(deleted=True) == ["orders-value"]
    assert json.loads(new_client().get_schema(v1_id).schema_str) == V1  # ids outlive a soft delete
    assert rejected(lambda: client.delete_subject("orders-value")).error_code == 40404

    assert client.delete_subject("orders-value", permanent=True) == [1, 2]
    assert new_client().get_subjects(deleted=True) == []
    assert rejected(lambda: new_client().get_schema(v1_id)).error_code == 40403
    again = new_client().register_schema("orders-value", Schema(text(V2_INT_TO_STRING)))  # nothing to be compatible with
    assert new_client().get_latest_version("orders-value").version == 1 and again > 0


def test_a_deleted_version_is_not_checked_against(new_client):
    client = new_client()
    client.register_schema("s", Schema(text(V1)))
    client.register_schema("s", Schema(text(V2_ADDS_DEFAULTED)))
    assert client.delete_version("s", 2) == 2
    assert new_client().get_versions("s") == [1]
    assert new_client().get_versions("s", deleted=True) == [1, 2]
    new_client().register_schema("s", Schema(text(V2_ADDS_DEFAULTED)))  # back, as a new version
    assert new_client().get_versions("s") == [1, 3]


# --- auth ------------------------------------------------------------------------------------------

def test_basic_auth_accepts_the_right_credentials_and_rejects_others(new_client):
    with SchemaRegistryDouble(basic_auth="sink:s3cr3t") as secured:
        assert secured.client_config()["basic.auth.user.info"] == "sink:s3cr3t"
        good = new_client(secured)
        schema_id = good.register_schema("orders-value", Schema(text(V1)))
        in_url = SchemaRegistryClient({"url": secured.url.replace("http://", "http://sink:s3cr3t@")})
        assert in_url.get_schema(schema_id).schema_str
        in_url.close()

        for conf in ({"url": secured.url},
                     {"url": secured.url, "basic.auth.user.info": "sink:wrong"},
                     {"url": secured.url, "basic.auth.user.info": "other:s3cr3t"}):
            anonymous = SchemaRegistryClient(conf)
            error = rejected(lambda: anonymous.get_schema(schema_id))
            anonymous.close()
            assert (error.http_status_code, error.error_code, error.error_message) == (401, 401, "Unauthorized")
        assert [r[2] for r in secured.requests][-3:] == [401, 401, 401]


def https_get(url: str, ca, login: str | None = None) -> tuple:
    """(status, JSON body, headers) of a GET that trusts the CA file ``ca`` and sends ``login`` as basic auth."""
    request = urllib.request.Request(url)
    if login is not None:
        request.add_header("Authorization", "Basic " + base64.b64encode(login.encode()).decode())
    try:
        with urllib.request.urlopen(request, context=ssl.create_default_context(cafile=ca), timeout=10) as response:
            return response.status, json.loads(response.read()), response.headers
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read()), refused.headers


def test_tls_with_basic_auth_serves_who_trusts_the_ca_and_has_the_login(tls_files, new_client):
    with SchemaRegistryDouble(basic_auth="sink:s3cr3t", certificate=tls_files.server_keystore) as secured:
        assert secured.url.startswith("https://127.0.0.1:")
        client = new_client(secured, **{"ssl.ca.location": str(tls_files.ca)})
        schema_id = client.register_schema("orders-value", Schema(text(V1)))
        assert json.loads(new_client(secured, **{"ssl.ca.location": str(tls_files.ca)})
                          .get_schema(schema_id).schema_str) == V1
        for login in (None, "sink:wrong", "other:s3cr3t"):
            status, body, headers = https_get(secured.url + "/subjects", tls_files.ca, login)
            assert (status, body) == (401, {"error_code": 401, "message": "Unauthorized"})
            assert headers["WWW-Authenticate"].startswith("Basic ")
        assert https_get(secured.url + "/subjects", tls_files.ca, "sink:s3cr3t")[:2] == (200, ["orders-value"])


def test_tls_closes_a_connection_that_refuses_its_certificate_or_speaks_plain_http_and_serves_on(
        tls_files, tmp_path, capfd):
    stranger = make_tls_files(tmp_path).ca  # another CA, which did not sign the double's certificate
    with SchemaRegistryDouble(certificate=tls_files.server_keystore) as secured:
        port = int(secured.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)):  # connected, and never starts its handshake
            with pytest.raises(urllib.error.URLError) as untrusted:
                https_get(secured.url, stranger)
            assert isinstance(untrusted.value.reason, ssl.SSLCertVerificationError)
            with pytest.raises((urllib.error.URLError, ConnectionError)) as plain:  # as it sends, or as it reads
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10)
            assert isinstance(getattr(plain.value, "reason", plain.value), ConnectionError)
            assert https_get(secured.url, tls_files.ca)[:2] == (200, {})
    assert secured.requests == [("GET", "/", 200)]
    assert capfd.readouterr().err == ""  # a refused handshake is no error of the double's


def test_tls_takes_the_key_apart_from_the_certificate_and_refuses_a_file_without_one(tls_files, tmp_path,
                                                                                    new_client):
    pem = tls_files.server_keystore.read_text()
    key_end = pem.index("-----END PRIVATE KEY-----\n") + len("-----END PRIVATE KEY-----\n")
    (tmp_path / "server.key").write_text(pem[:key_end])
    (tmp_path / "server.crt").write_text(pem[key_end:])
    with SchemaRegistryDouble(certificate=tmp_path / "server.crt", key=tmp_path / "server.key") as secured:
        assert new_client(secured, **{"ssl.ca.location": str(tls_files.ca)}).get_subjects() == []
    with pytest.raises(ssl.SSLError):  # at construction, not at each handshake
        SchemaRegistryDouble(certificate=tmp_path / "server.crt")
    with pytest.raises(ValueError, match="key needs the certificate"):
        SchemaRegistryDouble(key=tmp_path / "server.key")


# --- the server itself ---------------------------------------------------------------------------

def test_it_names_itself_a_test_double_and_speaks_plain_rest(registry):
    with urllib.request.urlopen(registry.url + "/") as response:
        assert json.loads(response.read()) == {}
        assert "SchemaRegistryDouble" in response.headers["Server"]
        assert "test double" in response.headers["Server"]
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(registry.url + "/no/such/thing")
    assert info.value.code == 404
    assert json.loads(info.value.read()) == {"error_code": 404, "message": "HTTP 404 Not Found"}


def test_it_is_quiet_unless_asked(capfd, new_client):
    with SchemaRegistryDouble() as quiet:
        new_client(quiet).get_subjects()
    assert capfd.readouterr().err == ""
    with SchemaRegistryDouble(log_requests=True) as loud:
        new_client(loud).get_subjects()
    assert "[SchemaRegistryDouble" in capfd.readouterr().err


def test_concurrent_clients_register_safely(registry):
    def register(n):
        client = SchemaRegistryClient(registry.client_config())
        try:
            return client.register_schema(f"subject-{n % 4}", Schema(text(V1)))
        finally:
            client.close()

    with ThreadPoolExecutor(max_workers=16) as pool:
        ids = list(pool.map(register, range(32)))
    assert len(set(ids)) == 1
    client = SchemaRegistryClient(registry.client_config())
    assert client.get_subjects() == [f"subject-{n}" for n in range(4)]
    assert all(client.get_versions(f"subject-{n}") == [1] for n in range(4))
    client.close()


def test_it_stops_cleanly(new_client):
    before = {t.name for t in threading.enumerate()}
    double = SchemaRegistryDouble()
    with double:
        assert double.running and double.url.startswith("http://127.0.0.1:")
        client = new_client(double, **{"max.retries": 0})
        client.register_schema("s", Schema(text(V1)))
        port = int(double.url.rsplit(":", 1)[1])
    assert not double.running
    assert "SchemaRegistryDouble" not in {t.name for t in threading.enumerate()} - before
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    with pytest.raises(Exception) as refused:  # the client's HTTP layer (httpx or httpx2) cannot connect
        client.get_subjects()
    assert type(refused.value).__name__ == "ConnectError"
    double.stop()  # stopping twice is harmless

    with SchemaRegistryDouble() as second:  # and a new one starts from nothing
        assert new_client(second).get_subjects() == []
