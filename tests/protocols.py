"""Each protocol as the tests that run for every protocol see it: its options, its topic and what it carries.

The facts come from the protocol documents: Avro sends no DDL or watermark
events, no old values, and a delete as its key; its topic must name the schema
and the table, and it needs a schema registry (here the test double).
Debezium runs with the TiDB extension, without which it sends no watermarks
and its values do not say which are unsigned, decimal or binary; its DDL goes
to every partition as a tableChanges type.  Simple carries everything, and its
rows decode only after their table's schema (a BOOTSTRAP or a DDL): the tests
for every protocol read it with the BOOTSTRAP events left out of what they
count, and test_simple_spark checks those.
"""

from __future__ import annotations

from dataclasses import dataclass

from ticdc_sink.codec import decoder_for
from ticdc_sink.codec.base import Decoder


@dataclass(frozen=True)
class Carries:
    old_values: bool  # an update's old row
    whole_deleted_row: bool  # a delete's every column, else only its key
    watermarks: bool
    ddl: tuple[list[int], object] | None  # the partitions of a DDL event (of 2) and its type for ADD COLUMN


CARRIES = {
    "canal-json": Carries(True, True, True, ([0], "ALTER")),
    "open-protocol": Carries(True, True, True, ([0, 1], 5)),
    "avro": Carries(False, False, False, None),
    "debezium": Carries(True, True, True, ([0, 1], "ALTER")),
    "simple": Carries(True, True, True, ([0, 1], "ALTER")),
    # TiCDC sends debezium-avro's DDL and watermarks for its own tests only; the sink sends none.
    "debezium-avro": Carries(True, True, False, None),
}
# Options a protocol is tested with besides its name, topic and registry.
# debezium-avro as TiCDC's integration test runs it: in long mode a BIGINT UNSIGNED over 2^63-1 fails, as in TiCDC.
EXTRA_OPTIONS = {"debezium": {"enable-tidb-extension": "true"},
                 "debezium-avro": {"enable-tidb-extension": "true", "avro-bigint-unsigned-handling-mode": "string"}}


@dataclass(frozen=True)
class ProtocolUnderTest:
    name: str
    registry_url: str | None = None  # the Schema Registry test double, for avro
    database: str = "shop"
    table: str = "orders"

    @property
    def carries(self) -> Carries:
        return CARRIES[self.name]

    def options(self, topic: str) -> dict:
        """``protocol``, ``topic`` (avro: an expression that gives ``kafka_topic(topic)``), the registry and
        the protocol's EXTRA_OPTIONS."""
        if self.name == "debezium-avro":
            return {"protocol": self.name, "topic": topic, "schema-registry": self.registry_url,
                    **EXTRA_OPTIONS.get(self.name, {})}
        if self.name != "avro":
            return {"protocol": self.name, "topic": topic, **EXTRA_OPTIONS.get(self.name, {})}
        return {"protocol": "avro", "topic": topic + "_{schema}_{table}", "schema-registry": self.registry_url}

    def kafka_topic(self, topic: str) -> str:
        """Where the rows of database.table go with ``options(topic)``."""
        return f"{topic}_{self.database}_{self.table}" if self.name == "avro" else topic

    def decoder(self) -> Decoder:
        decoder = decoder_for(self.name, schema_registry=self.registry_url)
        return WithoutBootstraps(decoder) if self.name == "simple" else decoder


class WithoutBootstraps(Decoder):
    """A decoder whose BOOTSTRAP events (Simple's table schemas, sent on the writer's rule) are left out."""

    def __init__(self, decoder: Decoder):
        super().__init__()
        self.decoder = decoder

    def decode(self, key, value) -> list:
        return [e for e in self.decoder.decode(key, value) if getattr(e, "type", None) != "BOOTSTRAP"]


CANAL = ProtocolUnderTest("canal-json")
