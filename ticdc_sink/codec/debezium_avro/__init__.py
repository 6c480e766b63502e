"""TiCDC's ``debezium-avro`` protocol: the Debezium envelope in Avro, with a Confluent Schema Registry."""
