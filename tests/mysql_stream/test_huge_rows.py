"""A row bigger than one protocol packet: a 20 MB BLOB reaches the live source whole (issue: huge rows).

The server sends an event over 16 MiB - 1 bytes as several packets (the protocol's packet size limit); the
client must join them into one event. The live rows must equal the server's own binlog files and the bytes the
test inserted.
"""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

import spark_logsource
from tests.mysql_stream.conftest import CDC_PASSWORD

pytestmark = [pytest.mark.server]

BLOB_BYTES = 20 * 1024 * 1024


def _blob(seed: int) -> bytes:
    """Deterministic, incompressible bytes (a SHA-256 chain), so nothing along the way can shrink them."""
    out = bytearray()
    block = seed.to_bytes(8, "big")
    while len(out) < BLOB_BYTES:
        block = hashlib.sha256(block).digest()
        out += block
    return bytes(out[:BLOB_BYTES])


def test_a_20_mb_blob_arrives_whole_live_and_equals_the_files(stream_server) -> None:
    stream_server.execute("CREATE TABLE IF NOT EXISTS shop.blobs (id INT PRIMARY KEY, b LONGBLOB)")
    stream_server.flush_logs()
    start_file, start_pos = stream_server.query("SHOW MASTER STATUS")[0][:2]
    blobs = {1: _blob(1), 2: _blob(2)}
    stream_server.execute("INSERT INTO shop.blobs VALUES (%s, %s)", 1, blobs[1])
    stream_server.execute("UPDATE shop.blobs SET id = 2, b = %s WHERE id = 1", blobs[2])
    end_file, end_pos = stream_server.query("SHOW MASTER STATUS")[0][:2]
    options = {"uri": stream_server.uri, "password": CDC_PASSWORD, "serverId": "4343", "tables": "shop.blobs",
               "rowFormat": "json",
               "startingPosition": json.dumps({"file": str(start_file), "pos": int(start_pos)}),
               "endingPosition": json.dumps({"file": str(end_file), "pos": int(end_pos)})}
    live = spark_logsource.read("mysql-replication", [], **options).to_pylist()
    files = spark_logsource.read("mysql-binlog", str(stream_server.binlog_dir), tables="shop.blobs",
                                 rowFormat="json").to_pylist()
    files = [r for r in files if (r["file"].rsplit("/", 1)[-1], r["pos"]) >= (str(start_file), int(start_pos))]
    assert [r["op"] for r in live] == ["insert", "update"]
    for row in live + files:
        row["file"] = row["file"].rsplit("/", 1)[-1]
    assert live == files
    # rowFormat=json carries binary values as base64 text
    inserted = json.loads(live[0]["after"])
    assert base64.b64decode(inserted["b"]) == blobs[1]
    updated_before, updated_after = json.loads(live[1]["before"]), json.loads(live[1]["after"])
    assert base64.b64decode(updated_before["b"]) == blobs[1] and updated_before["id"] == 1
    assert base64.b64decode(updated_after["b"]) == blobs[2] and updated_after["id"] == 2
