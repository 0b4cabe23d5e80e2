"""resync screens offsets in bulk; it must find exactly the offset a byte-by-byte is_candidate scan finds."""

from __future__ import annotations

import pytest

from spark_logsource.mysql.events import BinlogFile

MANIFEST_DIR = "mysql-binlog"


def test_resync_equals_a_byte_by_byte_scan(fixtures_dir) -> None:
    checked = 0
    for path in sorted((fixtures_dir / MANIFEST_DIR).rglob("*")):
        if not path.is_file() or path.suffix in (".json", ".gz"):
            continue
        bf = BinlogFile(None, str(path))
        try:
            candidates = [p for p in range(bf.size) if bf.is_candidate(p)]
            for start in range(0, bf.size, max(1, bf.size // 97)):
                want = next((p for p in candidates if p >= start), bf.size)
                assert bf.resync(start) == want, (path, start)
                limit = start + 300
                want_limited = next((p for p in candidates if start <= p < limit), bf.size)
                assert bf.resync(start, limit) == want_limited, (path, start, limit)
                checked += 1
        finally:
            bf.close()
    assert checked > 500


@pytest.mark.parametrize("window", [1, 7, 4096])
def test_resync_does_not_depend_on_the_scan_window(fixtures_dir, monkeypatch, window) -> None:
    from spark_logsource.mysql import events

    path = fixtures_dir / MANIFEST_DIR / "osheroff" / "mysql-bin.checksum-crc32"
    bf = BinlogFile(None, str(path))
    try:
        whole = [bf.resync(p) for p in range(0, bf.size, 101)]
        monkeypatch.setattr(events, "_SCAN_WINDOW", window)
        assert [bf.resync(p) for p in range(0, bf.size, 101)] == whole
    finally:
        bf.close()
