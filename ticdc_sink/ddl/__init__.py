"""DDL statements: the TiDB action a statement is, and what each protocol calls that action."""
