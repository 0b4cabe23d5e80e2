"""What the MySQL CDC tests share (``tests/mysql_cdc``, ``tests/cdc_crash``, ``tests/deploy``): the table of several
column types, the writers of seeded multi-row, multi-statement transactions on it (one that writes when called, one
that keeps writing in a thread), the server's ``SELECT *``, the table the change rows of ``view=table`` make
(``docs/cdc.md``), a Delta target's rows, and the comparison of a rebuilt table with the server's."""

from __future__ import annotations

import datetime as dt
import logging
import random
import threading
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from tests.support.waiting import until
from tests.support.writer_thread import WriterThread

log = logging.getLogger(__name__)

#: The columns of the CDC tests' table: a key, text, DECIMAL, DATETIME(3), a signed and an unsigned integer.
COLUMNS = ("id INT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(10,2), at DATETIME(3), flag TINYINT, "
           "big BIGINT UNSIGNED")


def create_table(server: Any, name: str) -> None:
    """Table ``name`` made anew with :data:`COLUMNS`."""
    server.execute(f"DROP TABLE IF EXISTS {name}")
    server.execute(f"CREATE TABLE {name} ({COLUMNS})")


def write_transaction(cur: Any, rng: random.Random, table: str, next_id: int, *, column: str = "name",
                      extra: bool = False, move_keys: bool = False) -> int:
    """One transaction on ``table``: 1 to 5 inserts from key ``next_id`` on, an update of the two newest rows (6 in
    10), with ``extra`` an update of the column ``extra`` (the writer's ALTER added it), a delete of the oldest row
    (3 in 10), with ``move_keys`` a primary key change (1 in 10: a delete of the old key in the flat view). ``column``
    is the text column's name (a test renames it). Returns the next free key."""
    cur.execute("BEGIN")
    rows = []
    for _ in range(rng.randint(1, 5)):
        rows.append((next_id, f"n{next_id}", Decimal(rng.randint(0, 99999)) / 100, rng.choice([None, 0, 1, -5]),
                     rng.randint(0, 2**64 - 1)))
        next_id += 1
    if extra:
        cur.executemany(f"INSERT INTO {table} (id, {column}, amount, at, flag, big, extra) "
                        "VALUES (%s, %s, %s, NOW(3), %s, %s, CONCAT('x', %s))", [(*v, v[0]) for v in rows])
    else:
        cur.executemany(f"INSERT INTO {table} (id, {column}, amount, at, flag, big) "
                        "VALUES (%s, %s, %s, NOW(3), %s, %s)", rows)
    if rng.random() < 0.6:
        # LEFT: a row updated in many transactions in a row stays within VARCHAR(40)
        cur.execute(f"UPDATE {table} SET amount = amount + 1, {column} = CONCAT(LEFT({column}, 30), 'u') "
                    "ORDER BY id DESC LIMIT 2")
    if extra and rng.random() < 0.5:
        cur.execute(f"UPDATE {table} SET extra = CONCAT(LEFT(COALESCE(extra, ''), 50), 'e') ORDER BY id LIMIT 3")
    if rng.random() < 0.3:
        cur.execute(f"DELETE FROM {table} ORDER BY id LIMIT 1")
    if move_keys and rng.random() < 0.1:
        cur.execute(f"UPDATE {table} SET id = id + 1000000 ORDER BY id LIMIT 1")
    cur.execute("COMMIT")
    return next_id


class TableWriter:
    """:func:`write_transaction` on one table when called (``transactions(n)``), seeded."""

    def __init__(self, server: Any, name: str, seed: int = 11) -> None:
        self.server = server
        self.name = name
        self.random = random.Random(seed)
        self.next_id = 1

    def transactions(self, n: int, column: str = "name") -> None:
        import pymysql

        conn = pymysql.connect(unix_socket=str(self.server.socket_path), user="root", autocommit=True)
        try:
            with conn.cursor() as cur:
                for _ in range(n):
                    self.next_id = write_transaction(cur, self.random, self.name, self.next_id, column=column)
        finally:
            conn.close()


class MySQLWriterThread(WriterThread):
    """A :class:`WriterThread` on one root connection over the server's socket: :meth:`run_once` until stopped,
    ``pause`` seconds between two."""

    pause = 0.0

    def run_once(self, conn: Any) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        import pymysql

        try:
            conn = pymysql.connect(unix_socket=str(self.server.socket_path), user="root", autocommit=True)
            try:
                while not self._stop.is_set():
                    self.run_once(conn)
                    if self.pause:
                        self._stop.wait(self.pause)
            finally:
                conn.close()
        except BaseException as exc:  # reported by stop() / wait_for()
            log.exception("the writer failed")
            self.error = exc


class TableWriterThread(MySQLWriterThread):
    """:func:`write_transaction` on one table every 0.1 s until stopped; :meth:`add_column` makes it run ``ALTER
    TABLE … ADD COLUMN extra`` between two transactions and fill the new column afterwards."""

    name = "cdc-writer"
    pause = 0.1

    def __init__(self, server: Any, *, seed: int, table: str, first_id: int = 1, move_keys: bool = True) -> None:
        super().__init__(server, seed=seed)
        self.table = table
        self.next_id = first_id
        self.move_keys = move_keys
        self.altered = False
        self._alter = threading.Event()

    def add_column(self) -> None:
        self._alter.set()
        assert until(lambda: self.altered or self.error is not None), "the writer ran the ALTER"
        assert self.error is None, f"the writer failed: {self.error}"

    def run_once(self, conn: Any) -> None:
        with conn.cursor() as cur:
            if self._alter.is_set() and not self.altered:
                cur.execute(f"ALTER TABLE {self.table} ADD COLUMN extra VARCHAR(60) AFTER name")
                self.altered = True
            self.next_id = write_transaction(cur, self.random, self.table, self.next_id, extra=self.altered,
                                             move_keys=self.move_keys)
        self.transactions += 1


def server_rows(server: Any, table: str, key: str = "id") -> dict[Any, dict[str, Any]]:
    """The server's ``SELECT *`` of ``table`` by ``key``, each row a dict as pymysql gives it."""
    import pymysql.cursors

    conn = pymysql.connect(unix_socket=str(server.socket_path), user="root", cursorclass=pymysql.cursors.DictCursor)
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT * FROM {table}")
            return {r[key]: r for r in cur.fetchall()}
    finally:
        conn.close()


def rebuild(rows: Sequence[dict[str, Any]], key: str = "id") -> dict[Any, dict[str, Any]]:
    """The table the changes make: the last change per key by ``seq``, deletes removed, a TRUNCATE empties it."""
    table: dict[Any, dict[str, Any]] = {}
    for row in sorted(rows, key=lambda r: r["seq"]):
        if row["op"] == "t":
            table.clear()
        elif row["op"] == "d":
            table.pop(row["before"][key], None)
        else:
            table[row["after"][key]] = row["after"]
    return table


def plain(value: Any) -> Any:
    """A value of ours as pymysql gives the server's: a DATETIME without a zone (a stream or a target may keep it
    as UTC)."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


def delta_rows(path: Path, key: str = "id") -> dict[Any, dict[str, Any]]:
    """A Delta target's rows by ``key``, without the ``seq`` column the merge keeps."""
    from deltalake import DeltaTable

    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    out = {r[key]: {k: v for k, v in r.items() if k != "seq"} for r in rows}
    assert len(out) == len(rows), "one row per key in the target"
    return out


def assert_same_table(got: dict[Any, dict[str, Any]], want: dict[Any, dict[str, Any]], *,
                      exact: bool = False) -> None:
    """``got`` (a rebuilt table or a target) has the keys of ``want`` (the server's) and, value for value (a datetime
    taken as :func:`plain`), every column of each of its rows; with ``exact``, no other column either. A column
    ``got`` lacks is NULL there (a row last written before an ADD COLUMN)."""
    assert got.keys() == want.keys()
    for key, row in want.items():
        ours = got[key]
        if exact:
            assert ours.keys() == row.keys(), (key, ours, row)
        assert {k: plain(ours.get(k)) for k in row} == row, (key, ours, row)


def table_in_new_binlog(server: Any, name: str, seed: int) -> tuple[str, TableWriter]:
    """Rotate the binlog, then make table ``name`` anew (:func:`create_table`): the new binlog's name (where a stream
    that must see the CREATE starts) and a :class:`TableWriter` of the table."""
    server.flush_logs()
    first = str(server.binlog_files()[-1].name)
    create_table(server, name)
    return first, TableWriter(server, name, seed=seed)
