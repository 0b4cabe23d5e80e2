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

import time
from dataclasses import dataclass
from typing import Any

from spark_logsource.errors import OptionError
from spark_logsource.memcached.client import BACKFILL_NOW

KIND = "memcached-tap"


@dataclass(frozen=True, slots=True)
class TapOffset:
    source: str
    name: str
    session: str
    n: int
    seq: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"v": 1, "kind": KIND, "source": self.source, "name": self.name, "session": self.session,
                "n": self.n, "seq": self.seq}

    @classmethod
    def from_json(cls, offset: dict[str, Any] | str, source: str) -> TapOffset:
        if isinstance(offset, str):
            import json

            offset = json.loads(offset)
        if not isinstance(offset, dict) or offset.get("kind") != KIND or offset.get("v") != 1:
            raise OptionError("startingPosition", f"not a {KIND} offset: {offset!r}")
        if offset.get("source") != source:
            raise OptionError("uri", f"the checkpoint's offset is of {offset.get('source')!r}, not {source!r}")
        n = offset.get("n")
        if not isinstance(n, int) or n < 0:
            raise OptionError("startingPosition", f"bad packet count in offset {offset!r}")
        seq = offset.get("seq")
        return cls(source, str(offset.get("name", "")), str(offset.get("session", "")), n,
                   seq if isinstance(seq, int) else None)


def resume_offset(text: str | None, source: str) -> TapOffset | None:
    """The offset ``startingPosition`` holds when it is one (the JSON text ``follow`` printed), else None."""
    if text is None or not text.strip().startswith("{"):
        return None
    try:
        return TapOffset.from_json(text.strip(), source)
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
