"""Positions in a WAL directory: per tablet, the next entry batch to read (segment, byte offset, last index).

An offset (``docs/formats/yugabyte-wal.md``, "Streaming")::

    {"v": 1, "kind": "yugabyte-wal",
     "tablets": {"table-<id>/tablet-<id>": {"seg": 2, "file": "wal-000000002", "pos": 809, "index": 15}, ...}}

``pos`` 0 means the first entry of the segment; ``index`` is the Raft index of the last entry before ``pos``
(informative: the position itself is ``seg`` and ``pos``). Tablets are keyed by their folder relative to the
streamed directory, in sorted order; a tablet missing from an offset has not been read yet.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from spark_logsource.errors import OptionError
from spark_logsource.io.fs import display_name
from spark_logsource.streaming.stream import Offset, compare_keys

__all__ = ["KIND", "SEGMENT_NAME", "TabletPosition", "WalPosition", "offset_of", "parse_offset",
           "parse_starting_position", "segment_seqno"]

KIND = "yugabyte-wal"
#: A segment's file name, ``wal-<sequence number>``: the ``seg`` of a position, and the order of a tablet's files.
SEGMENT_NAME = re.compile(r"^wal-(\d+)$")


def segment_seqno(uri: str) -> int | None:
    """The sequence number in a segment's file name (``wal-000000002`` → 2); None for another name."""
    m = SEGMENT_NAME.match(posixpath.basename(display_name(uri)))
    return int(m.group(1)) if m else None


@dataclass(frozen=True, slots=True)
class TabletPosition:
    seg: int
    pos: int = 0
    index: int | None = None

    def sort_key(self) -> tuple[int, int]:
        return self.seg, self.pos

    def to_json(self) -> dict[str, Any]:
        return {"seg": self.seg, "file": f"wal-{self.seg:09d}", "pos": self.pos, "index": self.index}

    def describe(self) -> str:
        return f"wal-{self.seg:09d} at byte {self.pos}"


@dataclass(frozen=True)
class WalPosition:
    """The position of a whole WAL directory: each tablet's (:class:`~spark_logsource.streaming.stream.Position`).

    Positions are ordered tablet by tablet: one is before another when it is behind on some tablet and ahead on
    none (a tablet it does not name is not read yet, behind any position of it); two that are each ahead on some
    tablet are not ordered.
    """

    tablets: dict[str, TabletPosition] = field(default_factory=dict)

    def to_offset(self) -> Offset:
        return offset_of(self.tablets)

    @classmethod
    def from_offset(cls, offset: Mapping[str, Any], *, option: str = "offset") -> WalPosition:
        return cls(parse_offset(offset, option))

    def compare(self, other: WalPosition) -> int:
        a, b = self.tablets, other.tablets
        keys = set(a) | set(b)
        less = any(k not in a or (k in b and compare_keys(a[k].sort_key(), b[k].sort_key()) < 0) for k in keys)
        more = any(k not in b or (k in a and compare_keys(a[k].sort_key(), b[k].sort_key()) > 0) for k in keys)
        if less and not more:
            return -1
        if more and not less:
            return 1
        if not less and not more:
            return 0
        raise ValueError("offsets are not ordered (each is ahead on some tablet)")

    def describe(self) -> str:
        if not self.tablets:
            return "the start of the directory"
        return "; ".join(f"{key}: {self.tablets[key].describe()}" for key in sorted(self.tablets))


def offset_of(tablets: dict[str, TabletPosition]) -> Offset:
    return {"v": 1, "kind": KIND, "tablets": {key: tablets[key].to_json() for key in sorted(tablets)}}


def parse_offset(offset: Mapping[str, Any], option: str = "offset") -> dict[str, TabletPosition]:
    """The per-tablet positions of an offset (OptionError naming ``option`` when it is not one of ours)."""
    if not isinstance(offset, Mapping) or offset.get("v") != 1 or offset.get("kind") != KIND:
        raise OptionError(option, f"not a yugabyte-wal offset (v 1): {json.dumps(offset)[:200]}")
    tablets = offset.get("tablets")
    if not isinstance(tablets, dict):
        raise OptionError(option, "a yugabyte-wal offset needs a 'tablets' object")
    out = {}
    for key, value in tablets.items():
        try:
            seg, pos = int(value["seg"]), int(value["pos"])
            index = value.get("index")
            out[str(key)] = TabletPosition(seg, pos, None if index is None else int(index))
        except (KeyError, TypeError, ValueError):
            raise OptionError(option, f"bad position of tablet {key!r}: {value!r}") from None
        if seg < 0 or pos < 0:
            raise OptionError(option, f"negative position of tablet {key!r}")
    return out


def parse_starting_position(text: str | None) -> str | dict[str, TabletPosition]:
    """``earliest`` (default), ``latest``, or an offset's JSON text."""
    if text is None or text.strip().lower() == "earliest":
        return "earliest"
    if text.strip().lower() == "latest":
        return "latest"
    try:
        value = json.loads(text)
    except ValueError:
        raise OptionError("startingPosition", "expected earliest, latest or an offset's JSON text") from None
    return parse_offset(value, "startingPosition")
