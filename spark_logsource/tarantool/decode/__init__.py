"""Decoding of block payloads into columns: rows, MsgPack extensions, names, column builders."""
