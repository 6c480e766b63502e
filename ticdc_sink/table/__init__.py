"""The column model: MySQL types, their grammar, a DataFrame's table as MySQL columns and keys, and TiCDC's text of
a column's values."""
