"""resync screens offsets in bulk; it must find exactly the offset a byte-by-byte is_candidate scan finds."""

from __future__ import annotations

import pytest

from spark_logsource.framing import BadRange
from spark_logsource.mysql.binlog.events import BinlogFile

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
    from spark_logsource.mysql.binlog import events

    path = fixtures_dir / MANIFEST_DIR / "osheroff" / "mysql-bin.checksum-crc32"
    bf = BinlogFile(None, str(path))
    try:
        whole = [bf.resync(p) for p in range(0, bf.size, 101)]
        monkeypatch.setattr(events, "_SCAN_WINDOW", window)
        assert [bf.resync(p) for p in range(0, bf.size, 101)] == whole
    finally:
        bf.close()


class _CountingReader:
    """A binary file that records the size of every read (what resync costs in I/O and memory)."""

    def __init__(self, path) -> None:
        self._file = open(path, "rb")  # noqa: SIM115 (closed by the test)
        self.reads: list[int] = []

    def read(self, n: int = -1) -> bytes:
        data = self._file.read(n)
        self.reads.append(len(data))
        return data

    def seek(self, pos: int, whence: int = 0) -> int:
        return self._file.seek(pos, whence)

    def tell(self) -> int:
        return self._file.tell()

    def close(self) -> None:
        self._file.close()


def test_a_false_header_claiming_megabytes_costs_no_read_of_that_size(fixtures_dir, tmp_path) -> None:
    """Row data is full of zeros, so a false header with ``log_pos`` 0 can claim most of the file: checking it must
    not read (and hold) that many bytes at once. The real file gets 8 MiB of zeros after it (a damaged tail) and a
    header planted in its last event's body claiming everything up to the end."""
    from spark_logsource.mysql.binlog import events
    from spark_logsource.mysql.binlog.event_types import WRITE_ROWS_V2
    from spark_logsource.mysql.binlog.header import HEADER_LEN

    real = (fixtures_dir / MANIFEST_DIR / "osheroff" / "mysql-bin.checksum-crc32").read_bytes()
    bf = BinlogFile(None, str(fixtures_dir / MANIFEST_DIR / "osheroff" / "mysql-bin.checksum-crc32"))
    try:
        last = [e for e in bf.events() if not isinstance(e, BadRange)][-1]
    finally:
        bf.close()
    planted = last.pos + HEADER_LEN  # inside the last event, past its own header
    damaged = bytearray(real + bytes(8 << 20))
    size = len(damaged) - planted
    # timestamp, type, server_id, event_size, log_pos 0, flags
    header = b"\0\0\0\0" + bytes([WRITE_ROWS_V2]) + b"\1\0\0\0" + size.to_bytes(4, "little") + bytes(6)
    damaged[planted:planted + HEADER_LEN] = header
    path = tmp_path / "planted"
    path.write_bytes(bytes(damaged))
    source = _CountingReader(path)
    bf = BinlogFile(source, str(path))
    try:
        assert bf.resync(planted) != planted  # the CRC does not match: not an event
        assert max(source.reads) <= events._CHUNK + HEADER_LEN, max(source.reads)  # a chunk, or a scan window
    finally:
        bf.close()
        source.close()
