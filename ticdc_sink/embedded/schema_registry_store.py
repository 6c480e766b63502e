"""The Schema Registry double's state and rules: subjects, their versions, the global schema ids and the configs.

This is the registry without HTTP: each public method is one endpoint's work, taking its arguments already
taken out of the path, query and body, and answering the body to send or raising a ``RegistryError``.
State lives in memory only. Ids are 1, 2, 3, ...; the same schema under one subject keeps its version and id,
under another subject it gets a new version there and shares the global id. A schema keeps its id for the
double's lifetime, even when it comes back after a permanent delete (GET by id is a 404 meanwhile).
Deletes are soft first, permanent (``permanent=True``) only after that, and refused while a reference exists.
"""

from __future__ import annotations

from .schema_registry_compatibility import incompatibilities, level_from
from .schema_registry_errors import (INVALID_VERSION, SCHEMA_NOT_FOUND, SUBJECT_COMPATIBILITY_NOT_CONFIGURED,
                                     SUBJECT_NOT_SOFT_DELETED, SUBJECT_SOFT_DELETED, VERSION_NOT_SOFT_DELETED,
                                     VERSION_SOFT_DELETED, RegistryError, reference_exists, subject_not_found,
                                     version_not_found)
from .schema_registry_schema import StoredSchema, SubjectVersion, parse_schema

_MAX_VERSION = 2**31 - 1




def _version_id(text: str) -> int | None:
    """None for "latest"; raises 422 42202 like the registry for anything else invalid."""
    if text.strip().lower() == "latest":
        return None
    try:
        version = int(text)
    except ValueError:
        version = 0
    if version == -1:
        return None
    if not 1 <= version <= _MAX_VERSION:
        raise RegistryError(
            422, INVALID_VERSION,
            f"The specified version '{text}' is not a valid version id. "
            'Allowed values are between [1, 2^31-1] and the string "latest"',
        )
    return version


class RegistryStore:
    """The registry's state and rules. Not thread-safe: the HTTP layer calls it under one lock."""

    def __init__(self, default_compatibility: str, incompatible_error_code: int):
        self._default_compatibility = default_compatibility
        self._incompatible_error_code = incompatible_error_code
        self._global_compatibility: str | None = None
        self._subject_compatibility: dict = {}
        self._schemas_by_id: dict = {}
        self._ids_by_canonical: dict = {}
        self._subjects: dict = {}  # subject -> {version: SubjectVersion}, soft-deleted included
        self._next_id = 1

    # -- schemas ----------------------------------------------------------------------------
    def _referenced(self, subject: str, version: int) -> StoredSchema | None:
        entry = self._subjects.get(subject, {}).get(version)
        return None if entry is None else entry.schema

    def _schema_for(self, body) -> tuple:
        """The stored schema equal to the body's (same canonical form), else an unsaved candidate."""
        canonical, candidate = parse_schema(body, self._referenced)
        schema_id = self._ids_by_canonical.get(canonical)
        if schema_id is not None and schema_id in self._schemas_by_id:
            return self._schemas_by_id[schema_id], canonical
        candidate.id = schema_id or 0
        return candidate, canonical

    def _commit_schema(self, schema: StoredSchema, canonical: str) -> StoredSchema:
        if schema.id == 0:
            schema.id = self._next_id
            self._next_id += 1
        self._ids_by_canonical[canonical] = schema.id
        self._schemas_by_id[schema.id] = schema
        return schema

    def _live_versions(self, subject: str) -> list:
        return self._versions(subject, deleted=False)

    def _versions(self, subject: str, deleted: bool) -> list:
        return [v for _, v in sorted(self._subjects.get(subject, {}).items()) if deleted or not v.deleted]

    def get_version(self, subject: str, version_text: str, deleted: bool) -> SubjectVersion:
        version = _version_id(version_text)
        visible = self._versions(subject, deleted)
        if not visible:
            raise subject_not_found(subject)
        if version is None:
            return visible[-1]
        for entry in visible:
            if entry.version == version:
                return entry
        raise version_not_found(version)

    def compatibility_of(self, subject: str | None) -> str:
        if subject is not None and subject in self._subject_compatibility:
            return self._subject_compatibility[subject]
        return self._global_compatibility or self._default_compatibility

    # -- endpoints ----------------------------------------------------------------------------
    def register(self, subject: str, body) -> dict:
        schema, canonical = self._schema_for(body)
        live = self._live_versions(subject)
        for entry in live:
            if entry.schema is schema:
                return {"id": schema.id}
        messages = incompatibilities(self.compatibility_of(subject), schema, live)
        if messages:
            raise RegistryError(
                409, self._incompatible_error_code,
                f'Schema being registered is incompatible with an earlier schema for subject "{subject}", '
                f"details: [{', '.join(messages)}]",
            )
        schema = self._commit_schema(schema, canonical)
        versions = self._subjects.setdefault(subject, {})
        new_version = max(versions, default=0) + 1
        versions[new_version] = SubjectVersion(subject, new_version, schema)
        return {"id": schema.id}

    def lookup(self, subject: str, body, deleted: bool) -> dict:
        schema, _ = self._schema_for(body)
        visible = self._versions(subject, deleted)
        if not visible:
            raise subject_not_found(subject)
        for entry in reversed(visible):
            if entry.schema is schema:
                return self.version_body(entry)
        raise RegistryError(404, SCHEMA_NOT_FOUND, "Schema not found")

    @staticmethod
    def schema_body(schema: StoredSchema) -> dict:
        body = {"schema": schema.text}
        if schema.references:
            body["references"] = schema.references
        return body

    def version_body(self, entry: SubjectVersion) -> dict:
        return {"subject": entry.subject, "version": entry.version, "id": entry.schema.id,
                **self.schema_body(entry.schema)}

    def schema_by_id(self, schema_id_text: str) -> StoredSchema:
        try:
            schema_id = int(schema_id_text)
        except ValueError:
            schema_id = -1
        schema = self._schemas_by_id.get(schema_id)
        if schema is None:
            raise RegistryError(404, SCHEMA_NOT_FOUND, f"Schema {schema_id_text} not found")
        return schema

    def subject_versions_of(self, schema: StoredSchema, deleted: bool) -> list:
        return [entry for subject in sorted(self._subjects)
                for entry in self._versions(subject, deleted) if entry.schema is schema]

    def list_subjects(self, prefix: str, deleted: bool, deleted_only: bool) -> list:
        prefix = "" if prefix == ":*:" else prefix
        result = []
        for subject, versions in sorted(self._subjects.items()):
            if not versions or not subject.startswith(prefix):
                continue
            all_deleted = all(v.deleted for v in versions.values())
            if (deleted_only and all_deleted) or (not deleted_only and (deleted or not all_deleted)):
                result.append(subject)
        return result

    def list_versions(self, subject: str, deleted: bool, deleted_only: bool) -> list:
        if not self._subjects.get(subject):
            raise subject_not_found(subject)
        if deleted_only:
            return [v.version for v in self._versions(subject, True) if v.deleted]
        if deleted:
            return [v.version for v in self._versions(subject, True)]
        versions = [v.version for v in self._live_versions(subject)]
        if not versions:  # every version soft-deleted: the subject is gone unless asked for
            raise subject_not_found(subject)
        return versions

    def referenced_by(self, subject: str, version: int) -> list:
        return sorted({s.id for s in self._schemas_by_id.values()
                       if any(r["subject"] == subject and r["version"] == version for r in s.references)
                       and self.subject_versions_of(s, deleted=True)})

    def delete_subject(self, subject: str, permanent: bool) -> list:
        versions = self._subjects.get(subject)
        if not versions:
            raise subject_not_found(subject)
        for number in versions:
            if self.referenced_by(subject, number):
                raise reference_exists(subject, number)
        if permanent:
            if any(not v.deleted for v in versions.values()):
                raise RegistryError(404, SUBJECT_NOT_SOFT_DELETED,
                                    f"Subject '{subject}' was not deleted first before being permanently deleted")
            deleted = sorted(versions)
            del self._subjects[subject]
            self._subject_compatibility.pop(subject, None)
            self._forget_unused_schemas()
            return deleted
        live = self._live_versions(subject)
        if not live:
            raise RegistryError(404, SUBJECT_SOFT_DELETED,
                                f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently")
        for entry in live:
            entry.deleted = True
        return [v.version for v in live]

    def delete_version(self, subject: str, version_text: str, permanent: bool) -> int:
        entry = self.get_version(subject, version_text, deleted=permanent)
        if self.referenced_by(subject, entry.version):
            raise reference_exists(subject, entry.version)
        if permanent:
            if not entry.deleted:
                raise RegistryError(404, VERSION_NOT_SOFT_DELETED,
                                    f"Subject '{subject}' Version {entry.version} was not deleted "
                                    "first before being permanently deleted")
            del self._subjects[subject][entry.version]
            self._forget_unused_schemas()
        elif entry.deleted:
            raise RegistryError(404, VERSION_SOFT_DELETED,
                                f"Subject '{subject}' Version {entry.version} was soft deleted."
                                "Set permanent=true to delete permanently")
        else:
            entry.deleted = True
        return entry.version

    def _forget_unused_schemas(self) -> None:
        used = {v.schema.id for versions in self._subjects.values() for v in versions.values()}
        for schema_id in list(self._schemas_by_id):
            if schema_id not in used:
                del self._schemas_by_id[schema_id]

    def test_compatibility(self, subject: str, version_text: str | None, body, verbose: bool) -> dict:
        schema, _ = self._schema_for(body)
        live = self._live_versions(subject)
        if version_text is None:  # against all versions, as registration would check
            previous = live
        else:
            version = _version_id(version_text)
            if version is None:
                previous = live[-1:]
            else:
                previous = [v for v in live if v.version == version]
                if not previous:
                    raise version_not_found(version)
        messages = incompatibilities(self.compatibility_of(subject), schema, previous)
        response = {"is_compatible": not messages}
        if verbose:
            response["messages"] = messages
        return response

    # -- config -------------------------------------------------------------------------------
    def get_config(self, subject: str | None, default_to_global: bool) -> dict:
        if subject is None or default_to_global:
            return {"compatibilityLevel": self.compatibility_of(subject)}
        if subject not in self._subject_compatibility:
            raise RegistryError(404, SUBJECT_COMPATIBILITY_NOT_CONFIGURED,
                                f"Subject '{subject}' does not have subject-level compatibility configured")
        return {"compatibilityLevel": self._subject_compatibility[subject]}

    def put_config(self, subject: str | None, body) -> dict:
        level = level_from(body)
        if subject is None:
            self._global_compatibility = level
        else:
            self._subject_compatibility[subject] = level
        return {"compatibility": level}

    def delete_config(self, subject: str | None) -> dict:
        if subject is None:
            old = self.compatibility_of(None)
            self._global_compatibility = None
            return {"compatibilityLevel": old}
        if subject not in self._subject_compatibility:
            raise subject_not_found(subject)
        return {"compatibilityLevel": self._subject_compatibility.pop(subject)}
