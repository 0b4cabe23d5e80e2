"""Positions in a MySQL / MariaDB binlog stream, as streaming offsets (``docs/formats/mysql-replication.md``).

An offset names the end of the last complete transaction read (or a file start), never a row count::

    {"v": 1, "kind": "mariadb", "server_id": 1, "server_uuid": null,
     "file": "mysql-bin.000012", "pos": 1195, "gtid": "0-1-5"}

``kind`` is ``mariadb`` or ``mysql`` (from the FDE's server version); ``server_id`` / ``server_uuid`` identify
the source (``server_uuid`` is null on MariaDB, which has none); ``file`` is the binlog's base name; ``pos`` the
byte position of the next unread event in it — the end of a transaction (XID, COMMIT, a standalone statement),
or 4 for "the start of the file, FDE included"; ``gtid`` the MariaDB GTID state at that point (the last GTID
of every domain, ``domain-server-seq`` joined by commas in domain order; null when unknown or on MySQL).
Positions always come from the server's own numbers (each event's ``log_pos``, a file's size, ``SHOW MASTER
STATUS``), never from adding event sizes. The directory tailer and the live client use the same grammar, so a
query's checkpoint can move between them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from spark_logsource.errors import OptionError
from spark_logsource.streaming.stream import compare_keys

__all__ = ["FILE_START", "BinlogPosition", "GtidState", "StartingPosition", "parse_starting_position"]

#: ``pos`` of a file's start: reading from there includes the magic's FDE (what a batch read of the file gives).
FILE_START = 4
_GTID_RE = re.compile(r"^\s*(\d+)-(\d+)-(\d+)\s*$")
_BINLOG_NAME_RE = re.compile(r"^(.*?)(\d+)$")


class GtidState:
    """A MariaDB GTID state: the last GTID of each replication domain (``0-1-5,1-2-9``)."""

    __slots__ = ("_by_domain",)

    def __init__(self, by_domain: Mapping[int, tuple[int, int]] | None = None) -> None:
        self._by_domain: dict[int, tuple[int, int]] = dict(by_domain or {})

    @classmethod
    def parse(cls, text: str | None, *, option: str = "gtid") -> GtidState:
        """``"0-1-5,1-2-9"`` (empty or None: the empty state). Raises OptionError naming ``option``."""
        state = cls()
        for part in (text or "").split(","):
            if not part.strip():
                continue
            match = _GTID_RE.match(part)
            if not match:
                raise OptionError(option, f"expected a MariaDB GTID state like 0-1-500 or 0-1-500,1-2-7, "
                                          f"got {text!r}")
            state.add(f"{match.group(1)}-{match.group(2)}-{match.group(3)}")
        return state

    @classmethod
    def of(cls, gtids: Iterable[str]) -> GtidState:
        state = cls()
        for gtid in gtids:
            state.add(gtid)
        return state

    def add(self, gtid: str) -> None:
        """A transaction with ``gtid`` (``domain-server-seq``) was read."""
        domain, server, seq = (int(x) for x in gtid.split("-"))
        self._by_domain[domain] = (server, seq)

    def copy(self) -> GtidState:
        return GtidState(self._by_domain)

    def seq(self, domain: int) -> int | None:
        entry = self._by_domain.get(domain)
        return None if entry is None else entry[1]

    def domains(self) -> dict[int, tuple[int, int]]:
        return dict(self._by_domain)

    def text(self) -> str:
        return ",".join(f"{d}-{s}-{n}" for d, (s, n) in sorted(self._by_domain.items()))

    def __bool__(self) -> bool:
        return bool(self._by_domain)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GtidState) and self._by_domain == other._by_domain

    def __repr__(self) -> str:
        return f"GtidState({self.text()!r})"


def binlog_number(name: str) -> tuple[str, int]:
    """``("mysql-bin.", 12)`` for ``mysql-bin.000012`` (the number orders files of one server)."""
    match = _BINLOG_NAME_RE.match(name)
    if not match:
        return name, -1
    return match.group(1), int(match.group(2))


@dataclass(frozen=True, slots=True)
class BinlogPosition:
    """A transaction boundary of one server's binlog (see the module docstring)."""

    kind: str
    server_id: int | None
    server_uuid: str | None
    file: str
    pos: int
    gtid: str | None = None

    def to_offset(self) -> dict[str, Any]:
        """The offset dict, keys in their fixed order (Spark compares offsets as JSON text)."""
        return {"v": 1, "kind": self.kind, "server_id": self.server_id, "server_uuid": self.server_uuid,
                "file": self.file, "pos": self.pos, "gtid": self.gtid}

    @classmethod
    def from_offset(cls, offset: Mapping[str, Any] | str, *, option: str = "offset") -> BinlogPosition:
        """Parse an offset (dict or JSON text); raises OptionError naming ``option`` when it is not one of ours."""
        if isinstance(offset, str):
            try:
                offset = json.loads(offset)
            except ValueError:
                raise OptionError(option, f"not a JSON offset: {offset!r}") from None
        if not isinstance(offset, Mapping):
            raise OptionError(option, f"expected a JSON object, got {offset!r}")
        if offset.get("v", 1) != 1:
            raise OptionError(option, f"offset version {offset.get('v')!r} (this reader writes 1)")
        file, pos = offset.get("file"), offset.get("pos", FILE_START)
        # "" is the position before the first binlog (a directory stream started before the server wrote one)
        if not isinstance(file, str) or "/" in file:
            raise OptionError(option, f"offset needs \"file\": a binlog file name, got {file!r}")
        if not isinstance(pos, int) or isinstance(pos, bool) or pos < FILE_START:
            raise OptionError(option, f"offset \"pos\" must be an integer >= 4, got {pos!r}")
        gtid = offset.get("gtid")
        if gtid is not None:
            gtid = GtidState.parse(str(gtid), option=option).text() or None
        server_id = offset.get("server_id")
        return cls(str(offset.get("kind") or "mariadb"), int(server_id) if server_id is not None else None,
                   offset.get("server_uuid"), file, pos, gtid)

    def moved(self, file: str, pos: int, gtid: str | None) -> BinlogPosition:
        return replace(self, file=file, pos=pos, gtid=gtid)

    def sort_key(self) -> tuple[str, int, int]:
        prefix, number = binlog_number(self.file)
        return prefix, number, self.pos

    def compare(self, other: BinlogPosition) -> int:
        """-1, 0 or 1 as this position is before, at or after ``other`` (:class:`~.streaming.stream.Position`):
        by binlog file number, then byte position."""
        return compare_keys(self.sort_key(), other.sort_key())

    def describe(self) -> str:
        """``mysql-bin.000012:1195`` (and the GTID state), for messages."""
        text = f"{self.file}:{self.pos}"
        return f"{text} (gtid {self.gtid})" if self.gtid else text


@dataclass(frozen=True, slots=True)
class StartingPosition:
    """``startingPosition``: ``earliest``, ``latest``, a file position (JSON) or a MariaDB GTID state."""

    mode: str  # "earliest" | "latest" | "position" | "gtid"
    position: BinlogPosition | None = None
    gtid: GtidState | None = None


def parse_starting_position(text: str | None, *, option: str = "startingPosition",
                            default: str = "earliest") -> StartingPosition:
    """``earliest`` | ``latest`` | ``{"file": "bin.000042", "pos": 4}`` (or a whole offset) | ``0-1-500``."""
    value = (text or default).strip()
    lowered = value.lower()
    if lowered in ("earliest", "latest"):
        return StartingPosition(lowered)
    if value.startswith("{"):
        return StartingPosition("position", BinlogPosition.from_offset(value, option=option))
    state = GtidState.parse(value, option=option)
    if not state:
        raise OptionError(option, f"expected earliest, latest, a JSON position or a GTID state, got {text!r}")
    return StartingPosition("gtid", gtid=state)
