"""Streaming offsets of a live TAP source, and ``startingPosition``.

TAP has no position a client can ask for: a server streams from where it keeps a registered client's cursor
(or from a backfill age), and re-sends what was not acknowledged. So an offset counts packets *received in one
driver session* (one TAP connection): ``{"v": 1, "kind": "memcached-tap", "source": "tap://h:p", "name": ...,
"session": <random id of the connection>, "n": <packets received up to here>, "seq": <highest TAP sequence
number up to packet n>}``. An offset of an earlier session means "everything of that session up to ``n`` was
committed"; the server re-sends whatever it was not acknowledged for (``docs/formats/memcached-tap.md``,
delivery guarantees).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spark_logsource.errors import OptionError
from spark_logsource.memcached.client import BACKFILL_NOW
from spark_logsource.streaming.stream import Offset, compare_keys

KIND = "memcached-tap"


@dataclass(frozen=True, slots=True)
class TapOffset:
    """Packets received up to here in one session (the module docstring); a
    :class:`~spark_logsource.streaming.stream.Position`, ordered within its session only."""

    source: str
    name: str
    session: str
    n: int
    seq: int | None = None

    def to_offset(self) -> Offset:
        return {"v": 1, "kind": KIND, "source": self.source, "name": self.name, "session": self.session,
                "n": self.n, "seq": self.seq}

    @classmethod
    def from_offset(cls, offset: Mapping[str, Any] | str, *, option: str = "startingPosition",
                    source: str | None = None) -> TapOffset:
        """The offset (or its JSON text); with ``source``, an offset of another server is refused."""
        if isinstance(offset, str):
            offset = json.loads(offset)
        if not isinstance(offset, Mapping) or offset.get("kind") != KIND or offset.get("v") != 1:
            raise OptionError(option, f"not a {KIND} offset: {offset!r}")
        if source is not None and offset.get("source") != source:
            raise OptionError("uri", f"the checkpoint's offset is of {offset.get('source')!r}, not {source!r}")
        source = str(offset.get("source", ""))
        n = offset.get("n")
        if not isinstance(n, int) or n < 0:
            raise OptionError(option, f"bad packet count in offset {offset!r}")
        seq = offset.get("seq")
        return cls(source, str(offset.get("name", "")), str(offset.get("session", "")), n,
                   seq if isinstance(seq, int) else None)

    def compare(self, other: TapOffset) -> int:
        """By packet count within one session; offsets of two sessions are not ordered by themselves (the stream
        puts its own session's after every other)."""
        if self.session != other.session:
            raise ValueError(f"offsets of two TAP sessions ({self.session}, {other.session}) are not ordered")
        return compare_keys(self.n, other.n)

    def describe(self) -> str:
        return f"packet {self.n} of session {self.session} of {self.source}"


def resume_offset(text: str | None, source: str) -> TapOffset | None:
    """The offset ``startingPosition`` holds when it is one (the JSON text ``follow`` printed), else None."""
    if text is None or not text.strip().startswith("{"):
        return None
    try:
        return TapOffset.from_offset(text.strip(), source=source)
    except ValueError as exc:  # OptionError is a ValueError; so is bad JSON
        raise OptionError("startingPosition", f"not a {KIND} offset: {exc}") from None


def backfill_age(text: str | None, default: str = "backfill") -> int:
    """The TAP backfill age for ``startingPosition``: ``backfill`` (0: every item), ``now``, or an epoch second.

    An offset printed by an earlier run (JSON) resumes: the server keeps a registered name's place, and if it does
    not any more, a full backfill (age 0) is the only start that loses nothing.
    """
    if text is not None and text.strip().startswith("{"):
        return 0
    value = (text if text is not None else default).strip().lower()
    if value in ("backfill", "earliest"):
        return 0
    if value in ("now", "latest"):
        return BACKFILL_NOW
    try:
        second = int(value)
    except ValueError:
        raise OptionError("startingPosition", f"expected backfill, now or an epoch second, got {text!r}") from None
    if second < 0 or second > 4102444800:  # year 2100: a bigger number is a mistake (milliseconds?)
        raise OptionError("startingPosition", f"{second} is not an epoch second between 0 and 4102444800")
    if second > time.time() + 86400:
        raise OptionError("startingPosition", f"{second} is in the future")
    return second
