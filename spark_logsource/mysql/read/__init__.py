"""A split of a binlog read into the record batches of the ``changes`` and ``events`` views."""
