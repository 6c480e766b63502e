"""The Simple protocol: one encoder and decoder over two wires, JSON and Avro."""
