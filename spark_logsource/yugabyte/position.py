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
from dataclasses import dataclass
from typing import Any

from spark_logsource.errors import OptionError
from spark_logsource.streaming.stream import Offset

__all__ = ["KIND", "TabletPosition", "offset_of", "parse_offset", "parse_starting_position"]

KIND = "yugabyte-wal"


@dataclass(frozen=True, slots=True)
class TabletPosition:
    seg: int
    pos: int = 0
    index: int | None = None

    def sort_key(self) -> tuple[int, int]:
        return self.seg, self.pos

    def to_json(self) -> dict[str, Any]:
        return {"seg": self.seg, "file": f"wal-{self.seg:09d}", "pos": self.pos, "index": self.index}


def offset_of(tablets: dict[str, TabletPosition]) -> Offset:
    return {"v": 1, "kind": KIND, "tablets": {key: tablets[key].to_json() for key in sorted(tablets)}}


def parse_offset(offset: Offset, option: str = "offset") -> dict[str, TabletPosition]:
    """The per-tablet positions of an offset (OptionError naming ``option`` when it is not one of ours)."""
    if not isinstance(offset, dict) or offset.get("v") != 1 or offset.get("kind") != KIND:
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
