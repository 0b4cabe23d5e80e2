"""The compiled path of a chunk (``snapshot/fast.py``, ``mysql/_kernel_text.c``) against its Python twin: the same
record batches from the same chunk of a live table, and the packet splitter on the server's own bytes.

Differential: each test runs both twins itself (the chunk read twice gives the same rows: the re-run identity)."""

from __future__ import annotations

import logging
import random
from typing import Any

import pyarrow as pa
import pymysql.err
import pytest

from spark_logsource.errors import CorruptDataError
from spark_logsource.mysql.snapshot import fast, plan_snapshot, read_chunk
from spark_logsource.mysql.snapshot.session import open_session
from spark_logsource.mysql.stream.client import ConnectionSettings
from spark_logsource.options import ParseMode
from tests.mysql_snapshot.conftest import DB, TYPED_COLUMNS, TYPED_DDL, insert_sql, typed_values
from tests.support.twins import activate, compiled

pytestmark = pytest.mark.differential  # C against Python in each test: not again in the pure-Python pass

#: The typed table's columns the compiled path takes (ENUM, SET, BIT, JSON and INET6 are left to Python).
PLAIN_COLUMNS = TYPED_COLUMNS[:TYPED_COLUMNS.index("bl") + 1]
PLAIN_TABLE = f"{DB}.plain"
PLAIN_DDL = TYPED_DDL.split(", en ENUM")[0].replace(f"{DB}.many", PLAIN_TABLE) + ")"


def _plain(r: random.Random, key: int) -> tuple[Any, ...]:
    return typed_values(r, key)[:len(PLAIN_COLUMNS)]


def _fill_plain(server: Any, rows: int, seed: int = 3) -> None:
    server.execute(f"DROP TABLE IF EXISTS {PLAIN_TABLE}")
    server.execute(PLAIN_DDL)
    r = random.Random(seed)
    with server._conn.cursor() as cur:
        cur.execute("SET SESSION time_zone = '+00:00'")
        cur.executemany(insert_sql(PLAIN_TABLE, PLAIN_COLUMNS), [_plain(r, key) for key in range(1, rows + 1)])


def _change_plain(server: Any, seed: int) -> None:
    """Inserts, updates, key changes and deletes, a few per transaction (after the plan: the chunks undo them)."""
    r = random.Random(seed)
    with server._conn.cursor() as cur:
        cur.execute("SET SESSION time_zone = '+00:00'")
        for t in range(30):
            cur.execute("BEGIN")
            key = r.randint(1, 1200)
            cur.execute(insert_sql(PLAIN_TABLE, PLAIN_COLUMNS), _plain(r, 5000 + t))
            values = _plain(r, key)
            cur.execute(f"UPDATE {PLAIN_TABLE} SET vc = %s, dc = %s, dtm = %s WHERE id = %s",
                        (values[21], values[12], values[15], key))
            cur.execute(f"UPDATE {PLAIN_TABLE} SET id = %s WHERE id = %s", (7000 + t, r.randint(1, 1200)))
            cur.execute(f"UPDATE {PLAIN_TABLE} SET id = %s WHERE id = %s", (8000 + t, 7000 + t))
            cur.execute(f"DELETE FROM {PLAIN_TABLE} WHERE id = %s", (r.randint(1, 1200),))
            cur.execute("COMMIT")


def _read_twin(name: str, settings: ConnectionSettings, plan: Any, chunk: Any, **options: Any
               ) -> list[pa.RecordBatch]:
    with pytest.MonkeyPatch.context() as patch:
        activate(name, patch)
        return list(read_chunk(settings, plan, chunk, batch_size=300, **options))


def _assert_same(c_batches: list[pa.RecordBatch], py_batches: list[pa.RecordBatch]) -> None:
    assert [b.num_rows for b in c_batches] == [b.num_rows for b in py_batches]
    for c_batch, py_batch in zip(c_batches, py_batches, strict=True):
        assert c_batch.schema == py_batch.schema
        for name in py_batch.schema.names:
            assert c_batch.column(name).equals(py_batch.column(name)), name


def test_twins_give_the_same_batches_under_changes(snap_server: Any, settings: ConnectionSettings,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    compiled("spark_logsource.mysql._kernel")
    caplog.set_level(logging.INFO, logger="spark_logsource.mysql.snapshot")
    _fill_plain(snap_server, 1200)
    plan = plan_snapshot(settings, PLAIN_TABLE, chunks=4)
    _change_plain(snap_server, seed=5)
    calls: list[int] = []
    real = fast.read_columns

    def counted(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        calls.append(out[0])
        return out

    monkeypatch.setattr(fast, "read_columns", counted)
    total = 0
    for chunk in plan.chunks:
        c_batches = _read_twin("c", settings, plan, chunk)
        py_batches = _read_twin("python", settings, plan, chunk)
        _assert_same(c_batches, py_batches)
        total += sum(b.num_rows for b in c_batches)
    assert len(calls) == len(plan.chunks)  # every chunk took the compiled path in the "c" twin
    assert not [rec for rec in caplog.records if "read by the Python path" in rec.getMessage()]
    assert total == 1200  # the rows at the plan's position: the changes were all rolled back


def test_a_declined_value_reads_the_chunk_by_python(snap_server: Any, settings: ConnectionSettings,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    compiled("spark_logsource.mysql._kernel")
    caplog.set_level(logging.INFO, logger="spark_logsource.mysql.snapshot")
    snap_server.execute(f"DROP TABLE IF EXISTS {DB}.zeros")
    snap_server.execute(f"CREATE TABLE {DB}.zeros (id INT PRIMARY KEY, d DATE, t VARCHAR(10))")
    with snap_server._conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")
        cur.executemany(f"INSERT INTO {DB}.zeros VALUES (%s, %s, %s)",
                        [(i, "0000-00-00" if i % 5 == 0 else f"2024-01-{i % 28 + 1:02d}", f"t{i}") for i in range(50)])
    plan = plan_snapshot(settings, f"{DB}.zeros", chunks=1)
    options = {"mode": ParseMode.PERMISSIVE, "corrupt_column": "_corrupt"}
    from spark_logsource.mysql.snapshot.chunk import snapshot_schema
    from spark_logsource.mysql.table.layout import union_columns

    schema = snapshot_schema(union_columns([plan.layout]), "_corrupt")
    c_batches = _read_twin("c", settings, plan, plan.chunks[0], schema=schema, **options)
    py_batches = _read_twin("python", settings, plan, plan.chunks[0], schema=schema, **options)
    _assert_same(c_batches, py_batches)
    errors = [e for b in c_batches for e in b.column("_corrupt").to_pylist() if e is not None]
    assert len(errors) == 10
    assert any("read by the Python path" in rec.getMessage() and "row 0, column #2" in rec.getMessage()
               for rec in caplog.records)


def test_twins_agree_on_a_composite_text_key(snap_server: Any, settings: ConnectionSettings,
                                             caplog: pytest.LogCaptureFixture) -> None:
    """A case-insensitive key: the server's order is not Python's, and the window moves keys between chunks."""
    compiled("spark_logsource.mysql._kernel")
    caplog.set_level(logging.INFO, logger="spark_logsource.mysql.snapshot")
    words = ["apple", "Banana", "cherry", "ÉCLAIR", "éclair2", "Zeta", "zz"]
    snap_server.execute(f"DROP TABLE IF EXISTS {DB}.pairs")
    snap_server.execute(f"CREATE TABLE {DB}.pairs (k VARCHAR(20), n INT, v DECIMAL(6,2), PRIMARY KEY (k, n))")
    with snap_server._conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {DB}.pairs VALUES (%s, %s, %s)",
                        [(w, n, n / 4) for w in words for n in range(40)])
    plan = plan_snapshot(settings, f"{DB}.pairs", chunks=3)
    snap_server.execute(f"UPDATE {DB}.pairs SET k = 'APPLE', n = n + 100 WHERE k = 'zz' AND n < 5")
    snap_server.execute(f"DELETE FROM {DB}.pairs WHERE k = 'cherry' AND n > 30")
    snap_server.execute(f"INSERT INTO {DB}.pairs VALUES ('BANANA', 999, 1), ('aaa', 0, 3)")
    snap_server.execute(f"UPDATE {DB}.pairs SET v = -v WHERE n < 3")
    total = 0
    for chunk in plan.chunks:
        c_batches = _read_twin("c", settings, plan, chunk)
        _assert_same(c_batches, _read_twin("python", settings, plan, chunk))
        total += sum(b.num_rows for b in c_batches)
    assert total == len(words) * 40
    assert not [rec for rec in caplog.records if "read by the Python path" in rec.getMessage()]


# -- the packet splitter on the server's bytes -------------------------------------------------------------------


def _record(settings: ConnectionSettings, sql: str, kinds: tuple[tuple[int, ...], ...]) -> bytes:
    """The raw bytes of a SELECT's rows, from the first row packet to the EOF packet, as the server sent them."""
    k = compiled("spark_logsource.mysql._kernel")
    from pymysql.constants import COMMAND

    with open_session(settings, PLAIN_TABLE) as session:
        conn = session.conn
        conn._execute_command(COMMAND.COM_QUERY, sql)
        count = conn._read_packet().read_length_encoded_integer()
        for _ in range(count + 1):
            conn._read_packet()
        cols = k.text_columns(kinds, "probe")
        raw = bytearray()
        while True:
            raw += conn._rfile.read1(1 << 16)
            _consumed, status = k.text_feed(cols, raw, False)
            if status == 1:
                return bytes(raw)


def _plain_kinds(settings: ConnectionSettings) -> tuple[tuple[int, ...], ...]:
    from spark_logsource.mysql.table.layout import arrow_type

    plan = plan_snapshot(settings, PLAIN_TABLE, chunks=1)
    return fast.text_kinds(plan.columns, [arrow_type(c.spec) for c in plan.columns])


def _parts(k: Any, kinds: tuple[tuple[int, ...], ...], pieces: list[bytes]) -> tuple[int, Any]:
    cols = k.text_columns(kinds, "probe")
    pending = b""
    ended = 0
    for piece in pieces:
        pending += piece
        consumed, status = k.text_feed(cols, pending, True)
        assert status != 2
        ended += status
        pending = pending[consumed:]
    assert ended == 1 and pending == b""  # the EOF packet once, after every row
    assert k.text_declined(cols) is None
    return k.text_take(cols)  # type: ignore[no-any-return]


def test_splitter_cut_at_every_offset(snap_server: Any, settings: ConnectionSettings) -> None:
    k = compiled("spark_logsource.mysql._kernel")
    _fill_plain(snap_server, 40, seed=9)
    kinds = _plain_kinds(settings)
    raw = _record(settings, f"SELECT {', '.join(PLAIN_COLUMNS)} FROM {PLAIN_TABLE} ORDER BY id", kinds)
    whole = _parts(k, kinds, [raw])
    assert whole[0] == 40
    for cut in range(len(raw) + 1):
        assert _parts(k, kinds, [raw[:cut], raw[cut:]]) == whole, cut
    assert _parts(k, kinds, [raw[i:i + 1] for i in range(len(raw))]) == whole  # a byte at a time


def test_splitter_bad_bytes(snap_server: Any, settings: ConnectionSettings) -> None:
    k = compiled("spark_logsource.mysql._kernel")
    _fill_plain(snap_server, 5, seed=13)
    kinds = _plain_kinds(settings)
    raw = _record(settings, f"SELECT {', '.join(PLAIN_COLUMNS)} FROM {PLAIN_TABLE} ORDER BY id", kinds)
    first_len = int.from_bytes(raw[:3], "little")
    # a result cut short: the whole rows before the cut are taken, the cut row waits, never read past the end
    cols = k.text_columns(kinds, "probe")
    cut = 4 + first_len + 10
    consumed, status = k.text_feed(cols, raw[:cut], True)
    assert (consumed, status) == (4 + first_len, 0)
    assert k.text_take(cols)[0] == 1
    # ... and the reader that meets the end of the connection there says so
    with pytest.raises(pymysql.err.OperationalError, match="Lost connection"):
        fast._read_rows(_Ends([raw[:cut]]), k, k.text_columns(kinds, "probe"))
    # an absurd cell length (the first cell's length made 2**62): an error naming the row, no over-read
    row = bytearray(raw[4:4 + first_len])
    bad = bytes(row[:0]) + b"\xfe" + (1 << 62).to_bytes(8, "little") + bytes(row[1 + row[0]:])
    packet = len(bad).to_bytes(3, "little") + raw[3:4] + bad
    with pytest.raises(CorruptDataError, match="row 0 of the result of probe: a cell longer than its row"):
        k.text_feed(k.text_columns(kinds, "probe"), packet + raw[4 + first_len:], True)
    # a row with a cell fewer than the columns
    short = raw[4:4 + first_len][:1 + raw[4]]
    with pytest.raises(CorruptDataError, match="fewer cells than columns"):
        k.text_feed(k.text_columns(kinds, "probe"), len(short).to_bytes(3, "little") + b"\x01" + short, True)
    # a packet announcing 16 MiB - 1 bytes (a first fragment) with a few bytes behind it: it waits, no over-read
    big = b"\xff\xff\xff\x01" + raw[4:4 + first_len]
    assert k.text_feed(k.text_columns(kinds, "probe"), big, True) == (0, 0)


class _Ends:
    """A socket file that gives its blocks, then the end of the connection."""

    def __init__(self, blocks: list[bytes]) -> None:
        self.blocks = list(blocks)

    def read1(self, n: int) -> bytes:
        return self.blocks.pop(0)[:n] if self.blocks else b""
