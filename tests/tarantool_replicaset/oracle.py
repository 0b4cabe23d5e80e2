"""What Tarantool's own reader (``xlog.pairs()``) finds in a master's WAL: every row's origin, LSN and space, in
file order, and the vclock signature after each row folded from those rows alone."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.support.oracle.tarantool_xlog import dump_file, plain


@dataclass(frozen=True)
class WalRow:
    file: str
    replica_id: int
    lsn: int
    tsn: int
    space_id: int | None
    signature: int  # the sum of the vclock's components once this row is written


def wal_rows(directory: Path) -> tuple[list[WalRow], list[tuple[str, int]]]:
    """Every logged row of the directory's xlogs, and per file its name's signature next to the fold's signature
    before its first row (they must agree when no file is missing)."""
    vclock: dict[int, int] = {}
    rows: list[WalRow] = []
    starts: list[tuple[str, int]] = []
    for path in sorted(directory.glob("*.xlog")):
        starts.append((path.name, sum(vclock.values())))
        for row in dump_file(path).rows:
            lsn = plain(row.header.get("lsn", 0)) or 0
            if not lsn:
                continue
            replica = plain(row.header.get("replica_id", 0)) or 0
            assert lsn > vclock.get(replica, 0), f"{path.name}: lsn {lsn} of replica {replica} is not above its vclock"
            vclock[replica] = lsn
            tsn = plain(row.header.get("tsn", lsn))
            space = plain(row.body.get("space_id")) if row.body else None
            rows.append(WalRow(path.name, replica, lsn, tsn if tsn is not None else lsn, space, sum(vclock.values())))
    return rows, starts
