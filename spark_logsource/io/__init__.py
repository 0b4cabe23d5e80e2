"""Bytes in: bounded windows over files, push buffers for sockets, bounded decompression."""
