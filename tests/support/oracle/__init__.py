"""Parsers and runners for the databases' own log readers (the oracles our decoders are compared with)."""
