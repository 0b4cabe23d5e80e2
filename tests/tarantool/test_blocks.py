"""Framing facts checked on every real fixture block: CRC-32C formula, fixheaders, zstd frames."""

from __future__ import annotations

import crc32c
import pytest

from spark_logsource.tarantool.xlog.blocks import (
    FIXHEADER_SIZE,
    ZSTD_MAGIC,
    Block,
    block_crc32c,
    decompress_block,
    parse_fixheader,
)
from tests.support.tarantool_files import all_blocks


def test_every_block_checksum_is_crc32c_init0_no_final_xor() -> None:
    blocks = all_blocks()
    assert len(blocks) > 300 and all(isinstance(b, Block) for _, b in blocks)
    compressed = 0
    for data, block in blocks:
        fix = parse_fixheader(data[block.offset : block.offset + FIXHEADER_SIZE])
        stored = data[block.offset + FIXHEADER_SIZE : block.offset + block.size]
        assert block_crc32c(stored) == fix.crc32c
        assert crc32c.crc32c(stored) != fix.crc32c  # the standard CRC-32C matches no block
        if data[block.offset : block.offset + 4] == ZSTD_MAGIC:
            compressed += 1
            assert decompress_block(stored) == block.payload
            with pytest.raises(ValueError, match="expands beyond"):
                decompress_block(stored, limit=len(block.payload) - 1)
            with pytest.raises(ValueError):
                decompress_block(stored[:-3])
    assert compressed > 10
