"""memcached / Couchbase TAP change streams: captured byte streams and a live TAP consumer.

Layouts and protocol facts: ``docs/formats/memcached-tap.md``.
"""
