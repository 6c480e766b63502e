"""What the protocols share: JSON text and Avro binary a column at a time, message assembly, decoding, DDL types, names and the schema registry."""
