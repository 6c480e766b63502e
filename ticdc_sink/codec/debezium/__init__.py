"""TiCDC's Debezium protocol (JSON)."""
