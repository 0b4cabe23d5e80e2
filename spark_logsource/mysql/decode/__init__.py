"""Decoding of binlog event bodies and row images into Python values (the reference decoders)."""
