"""Event headers and statements as ``mariadb-binlog -vv --base64-output=decode-rows`` prints them.

The oracle for the framing and the non-rows events: for each event mariadb-binlog prints ``# at POS`` and a
header line ``#YYMMDD hh:mm:ss server id N  end_log_pos M [CRC32 0x...] <Kind> <details>``, then SQL
(``use``/``SET`` statements and the query, each ended by ``/*!*/;``) or ``###`` row lines. This module runs the
tool with TZ=UTC and parses those parts; rows are parsed by D's ``tests/support/oracle/mariadb_binlog.py``.
"""

from __future__ import annotations

import collections
import datetime as dt
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["OracleEvent", "OracleRun", "parse_output", "run_mariadb_binlog"]

_AT = re.compile(r"^# at (\d+)$")
_HEADER = re.compile(r"^#(\d{6}) +(\d{1,2}:\d{2}:\d{2}) server id (\d+) +end_log_pos (\d+)"
                     r"(?: CRC32 (0x[0-9a-f]+))?\s+(.*)$")
_SET_VAR = re.compile(r"@@session\.(\w+)=([^,]*?)(?=,\s*@@|$)")


@dataclass
class OracleEvent:
    """One event as printed: header fields, the header's text after the server fields, and its SQL lines."""

    pos: int
    end_log_pos: int
    timestamp: dt.datetime
    server_id: int
    crc: int | None
    kind: str  # first word of the description: Start:, Query, Xid, GTID, Gtid, Table_map:, Write_rows:, ...
    description: str
    lines: list[str] = field(default_factory=list)

    def statements(self) -> list[str]:
        """The SQL statements printed for the event (text before each ``/*!*/;``), ``###`` lines left out."""
        out: list[str] = []
        current: list[str] = []
        for line in self.lines:
            if line.startswith("###") or line.startswith("# "):
                continue
            if line.endswith("/*!*/;"):
                current.append(line[: -len("/*!*/;")])
                out.append("\n".join(current).strip("\n"))
                current = []
            else:
                current.append(line)
        return out

    def query(self) -> str | None:
        """The statement of a Query event (the last one printed: after ``use``/``SET``)."""
        statements = self.statements()
        return statements[-1] if statements else None

    def session_vars(self) -> dict[str, str]:
        """``SET @@session.x=v`` assignments printed for the event."""
        out: dict[str, str] = {}
        for statement in self.statements():
            if statement.startswith("SET ") and "@@session." in statement:
                for name, value in _SET_VAR.findall(statement):
                    out[name] = value.strip()
        return out

    def field(self, name: str) -> str | None:
        """A ``name=value`` field of the description (``thread_id=8``)."""
        match = re.search(rf"\b{re.escape(name)}=(\S+)", self.description)
        return match.group(1) if match else None


@dataclass
class OracleRun:
    events: list[OracleEvent]
    stderr: str
    returncode: int


def parse_output(text: str) -> list[OracleEvent]:
    """Parse mariadb-binlog's stdout into events (the lines after a header line belong to its event)."""
    events: list[OracleEvent] = []
    # Rows events of one statement are printed as a run of "# at" lines, then their headers in the same order.
    pending: collections.deque[int] = collections.deque()
    for line in text.splitlines():
        at = _AT.match(line)
        if at:
            pending.append(int(at.group(1)))
            continue
        header = _HEADER.match(line)
        if header and pending:
            pos = pending.popleft()
            date, clock, server_id, end_log_pos, crc, rest = header.groups()
            timestamp = dt.datetime.strptime(f"{date} {clock}", "%y%m%d %H:%M:%S").replace(tzinfo=dt.UTC)
            kind = rest.split(None, 1)[0] if rest.strip() else ""
            events.append(OracleEvent(pos, int(end_log_pos), timestamp, int(server_id),
                                      int(crc, 16) if crc else None, kind, rest.strip()))
            continue
        if events and not line.startswith("# at "):
            events[-1].lines.append(line)
    return events


def run_mariadb_binlog(path: Path | str, *extra: str, timeout: float = 120.0) -> OracleRun:
    """Run ``mariadb-binlog -vv --base64-output=decode-rows`` (TZ=UTC) on ``path`` and parse it."""
    binary = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
    if binary is None:
        raise RuntimeError("mariadb-binlog not found: apt-get install mariadb-client")
    proc = subprocess.run([binary, "-vv", "--base64-output=decode-rows", *extra, str(path)], capture_output=True,
                          timeout=timeout, env={**os.environ, "TZ": "UTC"})
    return OracleRun(parse_output(proc.stdout.decode("utf-8", "replace")), proc.stderr.decode("utf-8", "replace"),
                     proc.returncode)
