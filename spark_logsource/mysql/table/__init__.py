"""``view=table``: a table's layout from its DDL and its changes as typed columns."""
