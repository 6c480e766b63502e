"""The options of the sink and the reader, and where they come from: option maps, a TiCDC sink URI, a changefeed TOML."""
