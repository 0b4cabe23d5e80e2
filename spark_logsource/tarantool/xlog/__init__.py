"""Framing of Tarantool xlog/snap files: the meta header, fixheaders, checksums, blocks."""
