"""Compiled twin of :func:`spark_logsource.tarantool.rows.decode_payload_py` (``_kernel.c``)."""

def decode_payload(payload: bytes, tuple_format: str, path: str, block_offset: int) -> dict[str, list]:
    """The rows of one block's payload as column lists (keys: ``rows.output_keys(tuple_format)``); raises
    :class:`~spark_logsource.errors.CorruptDataError` naming ``path`` and ``block_offset`` for bad rows."""
