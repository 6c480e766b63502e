"""Kafka through librdkafka: the producer, transactions, the sink's markers, messages, and a topic reader."""
