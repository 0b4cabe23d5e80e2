"""Rows events straight to encoded output columns: the Python side of the C twin (``_kernel*.c``)."""
