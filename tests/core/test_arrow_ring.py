"""The pipe worker's shared-memory ring (``spark_logsource.arrow.ring``), without Spark: a stand-in for the JVM maps
the worker's memory files through ``/proc`` as the JVM does, reads each batch when it is told, and answers."""

from __future__ import annotations

import collections
import gzip
import io
import mmap
import re
from pathlib import Path

import pyarrow as pa
import pytest

import spark_logsource
from spark_logsource.arrow import ring
from spark_logsource.arrow.pipe import serve
from spark_logsource.arrow.ring import BadAnswer
from tests.core.test_arrow_pipe import DAMAGED, SAKILA, XLOG, answers, request

_OFFER = re.compile(rb"ring (\d+) (\d+) (\d+) (\d+)\n")
_BATCH = re.compile(rb"batch ([01]) (\d+) (\d+)\n")
_STATUS = re.compile(rb"(ok \d+|error [^\n]*)\n")


class StandInJvm:
    """Both ends of the worker's pipes: it reads the task lines from ``lines`` and writes the answers here. It reads
    a batch from the worker's file as late as it can: only when the worker waits for an answer, or at the status
    line, and then says ``free``. A worker that wrote a batch into a file before its last batch there was read
    would hand this stand-in the wrong rows."""

    def __init__(self, tasks: bytes, answer_offer: bytes = b"mapped\n") -> None:
        self.lines = collections.deque(io.BytesIO(tasks).readlines())
        self.answer_offer = answer_offer
        self.pending = b""
        self.tasks: list[tuple[list[pa.RecordBatch], str]] = []
        self.batches: list[pa.RecordBatch] = []
        self.files: tuple[str, str] | None = None
        self.stream = io.BytesIO()  # what came as a stream (after a refused offer)
        self.unread: collections.deque[tuple[int, int, int]] = collections.deque()  # (slot, length, file bytes)

    closed = False  # what pyarrow asks of a file it writes a stream to

    def readline(self) -> bytes:
        if self.unread and (not self.lines or self.lines[0] != self.answer_offer):
            self._read_one()  # the worker waits for a free: the oldest batch is read now, not before
        return self.lines.popleft() if self.lines else b""

    def _read_one(self) -> None:
        assert self.files is not None
        slot, length, size = self.unread.popleft()
        with open(self.files[slot], "rb") as f, mmap.mmap(f.fileno(), size, prot=mmap.PROT_READ) as mm:
            self.batches.append(pa.ipc.open_stream(pa.py_buffer(mm[:length])).read_next_batch())
        self.lines.appendleft(b"free\n")

    def flush(self) -> None:
        pass

    def write(self, data: bytes) -> int:
        self.pending += data
        while self._take():
            pass
        return len(data)

    def _take(self) -> bool:
        if (m := _OFFER.match(self.pending)) and len(self.pending) >= m.end() + int(m[4]):
            pid, fd0, fd1 = m[1].decode(), m[2].decode(), m[3].decode()
            if self.answer_offer == b"mapped\n":
                self.files = (f"/proc/{pid}/fd/{fd0}", f"/proc/{pid}/fd/{fd1}")
            self.pending = self.pending[m.end() + int(m[4]):]
            self.lines.appendleft(self.answer_offer)
            return True
        if m := _BATCH.match(self.pending):
            self.unread.append((int(m[1]), int(m[2]), int(m[3])))
            self.pending = self.pending[m.end():]
            return True
        if self.files is not None and (m := _STATUS.match(self.pending)):
            while self.unread:  # the JVM reads every batch before the status line; its frees precede the next task
                self._read_one()
            self.tasks.append((self.batches, m[1].decode()))
            self.batches, self.files = [], None
            self.pending = self.pending[m.end():]
            return True
        if self.files is None and self.answer_offer == b"stream\n" and self.pending:
            self.stream.write(self.pending)
            self.pending = b""
        return False


def sakila_binlog(fixtures_dir: Path, tmp_path: Path) -> str:
    binlog = tmp_path / "mysql-bin.000001"  # uncompressed, so that the binlog has several splits
    binlog.write_bytes(gzip.decompress((fixtures_dir / SAKILA).read_bytes()))
    return str(binlog)


def test_each_batch_comes_through_the_ring_task_after_task(fixtures_dir: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    path = sakila_binlog(fixtures_dir, tmp_path)
    monkeypatch.setattr(ring, "FIRST_SLOT_BYTES", 4096)  # every file grows, more than once
    monkeypatch.setattr(ring, "KEPT_SLOT_BYTES", 4096)  # and gives its pages back after each task
    data, schema = request("mysql-binlog", path, transport="ring", view="table", table="sakila.payment",
                           maxPartitionBytes="1000000", batchSize="500")
    jvm = StandInJvm(data)
    serve(jvm, jvm)  # type: ignore[arg-type]
    assert len(jvm.tasks) > 1 and not jvm.lines  # several tasks, every free read back before the next task
    assert sum(len(batches) for batches, _ in jvm.tasks) > 4  # both files reused
    for batches, status in jvm.tasks:
        assert status == f"ok {sum(b.num_rows for b in batches)}" and all(b.schema == schema for b in batches)
    whole = pa.Table.from_batches([b for batches, _ in jvm.tasks for b in batches], schema)
    assert whole.equals(spark_logsource.read("mysql-binlog", path, view="table", table="sakila.payment"))


def test_a_refused_ring_answers_with_a_stream(fixtures_dir: Path) -> None:
    path = str(fixtures_dir / XLOG / "00000000000000000000.ok.xlog")
    data, _ = request("tarantool-xlog", path, transport="ring")
    jvm = StandInJvm(data, answer_offer=b"stream\n")
    serve(jvm, jvm)  # type: ignore[arg-type]
    [(table, status)] = answers(jvm.stream.getvalue())
    assert table.equals(spark_logsource.read("tarantool-xlog", path)) and status == f"ok {table.num_rows}"


def test_a_failed_task_through_the_ring_leaves_the_worker_in_step(fixtures_dir: Path) -> None:
    bad, _ = request("tarantool-xlog", str(fixtures_dir / DAMAGED), transport="ring", mode="FAILFAST", batchSize="1")
    good_path = str(fixtures_dir / XLOG / "00000000000000000000.ok.xlog")
    good, _ = request("tarantool-xlog", good_path, transport="ring")
    jvm = StandInJvm(bad + good)
    serve(jvm, jvm)  # type: ignore[arg-type]
    [(failed_batches, failed), (batches, status)] = jvm.tasks
    assert failed.startswith("error ChecksumError: ") and str(fixtures_dir / DAMAGED) in failed
    assert len(failed_batches) >= 2  # batches before the damage went through both files, and were freed
    assert pa.Table.from_batches(batches).equals(spark_logsource.read("tarantool-xlog", good_path))
    assert status == f"ok {sum(b.num_rows for b in batches)}" and not jvm.lines


def test_an_answer_outside_the_exchange_stops_the_worker(fixtures_dir: Path) -> None:
    data, _ = request("tarantool-xlog", str(fixtures_dir / XLOG / "00000000000000000000.ok.xlog"), transport="ring")
    jvm = StandInJvm(data, answer_offer=b"what?\n")
    with pytest.raises(BadAnswer, match="the JVM answered the ring with b'what"):
        serve(jvm, jvm)  # type: ignore[arg-type]
