"""Framing of binlogs: the event header, FORMAT_DESCRIPTION, checksums, payloads, boundaries, splits."""
