"""The column model: MySQL types, their grammar, and a DataFrame's table as MySQL columns and keys."""
