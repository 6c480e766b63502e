"""AWS Glue's Schema Registry API for the tests: moto's server in this process (``ThreadedMotoServer``), a fresh
registry per test, and what was registered in it, read from moto's backend (moto's Glue has no ListSchemas)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

REGION = "us-east-1"
# moto takes any credentials; these are the sink's options' in the tests, and never a real key.
ACCESS_KEY, SECRET_ACCESS_KEY = "AKIATESTGLUE", "glue-test-secret"
_registry_numbers = itertools.count()


@dataclass(frozen=True)
class GlueSchema:
    """A schema as the registry holds it: how it was created, and its versions' definitions by id, oldest first."""

    data_format: str
    compatibility: str
    versions: dict[str, str]

    @property
    def latest(self) -> str:
        return list(self.versions.values())[-1]


class GlueAPI:
    """moto's Glue on a free loopback port, for the whole session."""

    def __enter__(self) -> "GlueAPI":
        from moto.server import ThreadedMotoServer

        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        return self

    def __exit__(self, *exc) -> None:
        self._server.stop()

    def client(self):
        import boto3

        return boto3.session.Session().client("glue", region_name=REGION, endpoint_url=self.endpoint,
                                              aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_ACCESS_KEY)

    def new_registry(self, name: str | None = None) -> "GlueRegistry":
        name = name or f"ticdc-sink-test-{next(_registry_numbers)}"
        self.client().create_registry(RegistryName=name)
        return GlueRegistry(self, name)

    def reset(self) -> None:
        """Every registry gone, and moto's counts of schemas (which it caps) back to none."""
        from moto.backends import get_backend

        get_backend("glue").reset()


@dataclass(frozen=True)
class GlueRegistry:
    api: GlueAPI
    name: str

    def options(self, **more: str) -> dict[str, str]:
        """The sink's options for this registry, with the test credentials."""
        return {"glue-schema-registry-name": self.name, "glue-schema-registry-region": REGION,
                "glue-schema-registry-endpoint": self.api.endpoint, "glue-schema-registry-access-key": ACCESS_KEY,
                "glue-schema-registry-secret-access-key": SECRET_ACCESS_KEY, **more}

    def schemas(self) -> dict[str, GlueSchema]:
        """Every schema registered in the registry, by name."""
        from moto.backends import get_backend
        from moto.core.models import DEFAULT_ACCOUNT_ID

        registry = get_backend("glue")[DEFAULT_ACCOUNT_ID][REGION].registries[self.name]
        return {name: GlueSchema(schema.data_format, schema.compatibility,
                                 {version_id: version.schema_definition
                                  for version_id, version in schema.schema_versions.items()})
                for name, schema in registry.schemas.items()}
