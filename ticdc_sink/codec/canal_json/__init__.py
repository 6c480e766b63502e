"""The Canal-JSON protocol."""
