"""Which Schema Registry endpoint a request is, and the arguments the store takes for it.

The double speaks the subset of the REST API that confluent-kafka's ``SchemaRegistryClient``,
``AvroSerializer`` and ``AvroDeserializer`` use (paths as the client sends them; unknown query parameters
are ignored)::

    GET    /                                     -> {}
    GET    /schemas/types                        -> ["AVRO"]
    GET    /schemas/ids/{id}                     -> {"schema": ...}          (?subject= and ?format= ignored)
    GET    /schemas/ids/{id}/schema              -> the schema itself
    GET    /schemas/ids/{id}/subjects            -> ["subject", ...]
    GET    /schemas/ids/{id}/versions            -> [{"subject": ..., "version": ...}, ...]
    GET    /subjects                             -> ["subject", ...]         (?deleted, ?deletedOnly, ?subjectPrefix)
    POST   /subjects/{subject}                   -> look a schema up: {"subject","id","version","schema"}
    DELETE /subjects/{subject}                   -> [versions]               (?permanent=true after a soft delete)
    GET    /subjects/{subject}/versions          -> [versions]
    POST   /subjects/{subject}/versions          -> register: {"id": N}
    GET    /subjects/{subject}/versions/{v}      -> {"subject","version","id","schema"}  (v: 1.., "latest" or -1)
    GET    /subjects/{subject}/versions/{v}/schema
    GET    /subjects/{subject}/versions/{v}/referencedby
    DELETE /subjects/{subject}/versions/{v}      -> v                        (?permanent=true after a soft delete)
    GET    /config                               -> {"compatibilityLevel": ...}
    PUT    /config                               -> {"compatibility": ...}
    DELETE /config                               -> the old config; back to the default
    GET    /config/{subject}                     -> 404 40408 unless set (or ?defaultToGlobal=true)
    PUT    /config/{subject}, DELETE /config/{subject}
    POST   /compatibility/subjects/{subject}/versions/{v}   -> {"is_compatible": bool} (+ "messages" with ?verbose=true)
    POST   /compatibility/subjects/{subject}/versions       -> checked as registration would be

Lists take ``?offset=`` and ``?limit=``. Anything else is a 404 ``{"error_code": 404, "message": "HTTP 404
Not Found"}`` as the real registry's REST layer answers. This matters: the client's default subject-name
strategy first asks ``GET /associations/...`` and falls back to ``{topic}-key`` / ``{topic}-value`` on a
404, as it does against a registry that predates associations. A known path with another method is a 405.
"""

from __future__ import annotations

import json

from .schema_registry_errors import method_not_allowed, no_such_resource
from .schema_registry_store import RegistryStore


def _flag(query: dict, *names: str) -> bool:
    return any(query.get(n, ["false"])[-1].strip().lower() == "true" for n in names)


def _page(items: list, query: dict) -> list:
    try:
        offset = int(query.get("offset", ["0"])[-1])
        limit = int(query.get("limit", ["-1"])[-1])
    except ValueError:
        return items
    items = items[max(offset, 0):]
    return items if limit < 0 else items[:limit]


def route(store: RegistryStore, method: str, parts: list, query: dict, payload):
    """The body of the answer to ``method`` on the path ``parts`` (unquoted segments); raises ``RegistryError``."""
    def only(*allowed):
        if method not in allowed:
            raise method_not_allowed()

    n = len(parts)
    head = parts[0] if parts else ""
    if n == 0:
        only("GET")
        return {}
    if head == "schemas" and n >= 2:
        if n == 2 and parts[1] == "types":
            only("GET")
            return ["AVRO"]
        if parts[1] == "ids" and 3 <= n <= 4:
            only("GET")
            schema = store.schema_by_id(parts[2])
            tail = parts[3] if n == 4 else None
            if tail is None:
                return store.schema_body(schema)
            if tail == "schema":
                return json.loads(schema.text)
            deleted = _flag(query, "deleted")
            if tail == "subjects":
                return _page(sorted({e.subject for e in store.subject_versions_of(schema, deleted)}), query)
            if tail == "versions":
                return _page([{"subject": e.subject, "version": e.version}
                              for e in store.subject_versions_of(schema, deleted)], query)
        raise no_such_resource()
    if head == "subjects":
        if n == 1:
            only("GET")
            return _page(store.list_subjects(query.get("subjectPrefix", [""])[-1], _flag(query, "deleted"),
                                             _flag(query, "deletedOnly", "deleted_only")), query)
        subject = parts[1]
        if n == 2:
            only("POST", "DELETE")
            if method == "POST":
                return store.lookup(subject, payload, _flag(query, "deleted"))
            return store.delete_subject(subject, _flag(query, "permanent"))
        if parts[2] != "versions":
            raise no_such_resource()
        if n == 3:
            only("GET", "POST")
            if method == "POST":
                return store.register(subject, payload)
            return _page(store.list_versions(subject, _flag(query, "deleted"),
                                             _flag(query, "deletedOnly", "deleted_only")), query)
        if n == 4:
            only("GET", "DELETE")
            if method == "DELETE":
                return store.delete_version(subject, parts[3], _flag(query, "permanent"))
            return store.version_body(store.get_version(subject, parts[3], _flag(query, "deleted")))
        if n == 5 and parts[4] in ("schema", "referencedby"):
            only("GET")
            entry = store.get_version(subject, parts[3], _flag(query, "deleted"))
            if parts[4] == "schema":
                return json.loads(entry.schema.text)
            return store.referenced_by(subject, entry.version)
        raise no_such_resource()
    if head == "config" and n <= 2:
        only("GET", "PUT", "DELETE")
        subject = parts[1] if n == 2 else None
        if method == "GET":
            return store.get_config(subject, _flag(query, "defaultToGlobal"))
        if method == "PUT":
            return store.put_config(subject, payload)
        return store.delete_config(subject)
    if head == "compatibility" and n in (4, 5) and parts[1] == "subjects" and parts[3] == "versions":
        only("POST")
        return store.test_compatibility(parts[2], parts[4] if n == 5 else None, payload, _flag(query, "verbose"))
    raise no_such_resource()
