"""What a user would write without the sink: per protocol, a hand-written encoder and its serialisers.

The hand-written encoders are the per-row code a team would write, with the
feed's types hard-coded: a Python dict per row, then ``json.dumps`` (or
``orjson.dumps`` when installed), confluent-kafka's ``AvroSerializer`` or
fastavro. Each turns rows (dicts) into Kafka messages ``(partition, key,
value)``; the encoders themselves are in ``handwritten_json.py``,
``handwritten_avro.py`` and ``handwritten_simple.py``. The Spark workers import
this module too (the hand-written ``foreachPartition`` job).
"""

from __future__ import annotations

import json

try:
    import orjson
except ImportError:  # optional: the baseline then uses json.dumps only
    orjson = None

from handwritten_avro import AvroSerializers, AvroTarget, handwritten_avro
from handwritten_json import handwritten_canal_json, handwritten_debezium, handwritten_open_protocol
from handwritten_simple import (SimpleAvroWriter, SimpleJSONDumps, SimpleTableIdentity, handwritten_simple,
                                handwritten_simple_avro)

HANDWRITTEN = {"canal-json": handwritten_canal_json, "open-protocol": handwritten_open_protocol,
               "avro": handwritten_avro, "debezium": handwritten_debezium, "simple": handwritten_simple,
               "simple-avro": handwritten_simple_avro}

# The serialiser of each protocol's hand-written encoder that the encode target is measured against, and that
# the hand-written Spark job uses.
STANDARD_SERIALIZER = {"canal-json": "json.dumps", "open-protocol": "json.dumps", "avro": "AvroSerializer",
                       "debezium": "json.dumps", "simple": "json.dumps", "simple-avro": "fastavro"}


def serializer_choices(protocol: str, avro: AvroTarget | None = None) -> dict[str, object]:
    """The serialisers a hand-written encoder of ``protocol`` would use, by name.

    TiCDC writes Open Protocol and Debezium JSON without spaces or ``\\u``
    escapes; a user matching it makes one such ``JSONEncoder`` (``json.dumps``
    with options would build one per call).  Avro's is confluent-kafka's
    ``AvroSerializer`` for the registry, topic and schemas of ``avro``.
    """
    if protocol == "avro":
        return {"AvroSerializer": AvroSerializers(avro)}
    if protocol == "simple-avro":
        return {"fastavro": SimpleAvroWriter(SimpleTableIdentity.of_the_sink())}
    if protocol in ("open-protocol", "debezium", "simple"):
        choices = {"json.dumps": json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode}
    else:
        choices = {"json.dumps": json.dumps}
    if orjson is not None:
        choices["orjson.dumps"] = orjson.dumps
    if protocol == "simple":
        identity = SimpleTableIdentity.of_the_sink()
        choices = {name: SimpleJSONDumps(dumps) for name, dumps in choices.items()}
        for dumps in choices.values():
            dumps.identity = identity
    return choices
