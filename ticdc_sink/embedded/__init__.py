"""Stand-ins that need no JVM or Docker, for the demo and the tests: a Kafka-compatible broker and a Schema Registry."""
