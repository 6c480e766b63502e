"""TiCDC's Avro protocol, with a Confluent Schema Registry."""
