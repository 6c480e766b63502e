"""Row changes as the sink takes them: the input contract, canonical values, TiDB's JSON text; the helpers that
make such input (a Delta change data feed, a layout that keeps each key's commit order); and where each change goes
(its topic and partition)."""
