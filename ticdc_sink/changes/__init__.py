"""Row changes as the sink takes them: the input contract, canonical values, TiDB's JSON text."""
