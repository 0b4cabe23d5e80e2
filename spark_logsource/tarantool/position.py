"""Positions in a Tarantool WAL directory, as the JSON offsets Spark checkpoints (``docs/streaming.md``).

::

    {"v": 1, "kind": "tarantool-xlog", "instance": "<uuid of the xlog meta>",
     "file": "00000000000000000123.xlog", "pos": 81234, "vclock": {"1": 5120}}

``pos`` is the byte offset of the next unread block of ``file`` (a block boundary is a transaction boundary:
Tarantool never splits a transaction across blocks, ``docs/formats/tarantool-xlog.md``); ``vclock`` is the
instance's vclock after the last transaction before ``pos`` (the file's ``VClock:`` header plus the rows read),
keys as strings in replica-id order. ``file`` is None (and ``pos`` 0) before the directory held any xlog.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from spark_logsource.errors import OptionError
from spark_logsource.streaming.stream import compare_keys

__all__ = ["KIND", "DirPosition", "file_signature", "parse_starting_position", "vclock_rows", "vclock_text"]

KIND = "tarantool-xlog"
VERSION = 1


def file_signature(name: str) -> int:
    """The vclock signature in an xlog's name (``00000000000000000123.xlog`` → 123); files sort by it."""
    stem = posixpath.basename(name).split(".", 1)[0]
    try:
        return int(stem)
    except ValueError:
        raise OptionError("path", f"{name!r} is not named by a vclock signature (like 00000000000000000123.xlog)") \
            from None


def vclock_text(vclock: Mapping[int, int] | None) -> str:
    """Tarantool's spelling of a vclock: ``{1: 5120, 2: 7}`` (``{}`` for none)."""
    if vclock is None:
        return "{}"
    return "{" + ", ".join(f"{r}: {lsn}" for r, lsn in sorted(vclock.items())) + "}"


def vclock_rows(newer: Mapping[int, int], older: Mapping[int, int]) -> int:
    """Rows written between two vclocks of one instance (each row takes one LSN of one component)."""
    return sum(max(0, lsn - older.get(r, 0)) for r, lsn in newer.items())


def same_vclock(a: Mapping[int, int], b: Mapping[int, int]) -> bool:
    """Equal as vclocks (a missing component is 0)."""
    return all(a.get(k, 0) == b.get(k, 0) for k in set(a) | set(b))


@dataclass(frozen=True, slots=True)
class DirPosition:
    """A boundary between transactions in a WAL directory (see the module docstring)."""

    instance: str | None
    file: str | None
    pos: int
    vclock: dict[int, int] = field(default_factory=dict)

    @property
    def signature(self) -> int:
        return -1 if self.file is None else file_signature(self.file)

    def sort_key(self) -> tuple[int, int]:
        return (self.signature, self.pos)

    def compare(self, other: DirPosition) -> int:
        """-1, 0 or 1 as this position is before, at or after ``other`` (:class:`~.streaming.stream.Position`)."""
        return compare_keys(self.sort_key(), other.sort_key())

    def to_offset(self) -> dict[str, Any]:
        """The JSON offset, keys in their fixed order."""
        return {
            "v": VERSION,
            "kind": KIND,
            "instance": self.instance,
            "file": self.file,
            "pos": self.pos,
            "vclock": {str(r): lsn for r, lsn in sorted(self.vclock.items())},
        }

    def describe(self) -> str:
        """For messages: ``00000000000000000123.xlog at byte 81234 (vclock {1: 5120})``."""
        if self.file is None:
            return "the start of the directory"
        return f"{self.file} at byte {self.pos} (vclock {vclock_text(self.vclock)})"

    @classmethod
    def from_offset(cls, offset: Mapping[str, Any], option: str = "startingPosition") -> DirPosition:
        """Parse and check an offset (from Spark's checkpoint, ``follow()`` or ``startingPosition``)."""
        if not isinstance(offset, Mapping):
            raise OptionError(option, f"expected a JSON object, got {offset!r}")
        if offset.get("v") != VERSION:
            raise OptionError(option, f"unsupported offset version {offset.get('v')!r} (this package writes {VERSION})")
        if offset.get("kind") != KIND:
            raise OptionError(option, f"offset of kind {offset.get('kind')!r} given to the {KIND} directory source")
        file = offset.get("file")
        pos = offset.get("pos")
        instance = offset.get("instance")
        raw_vclock = offset.get("vclock", {})
        if file is not None and (not isinstance(file, str) or "/" in file):
            raise OptionError(option, f"'file' must be a file name, got {file!r}")
        if file is not None:
            file_signature(file)
        if not isinstance(pos, int) or isinstance(pos, bool) or pos < 0:
            raise OptionError(option, f"'pos' must be a byte offset, got {pos!r}")
        if instance is not None and not isinstance(instance, str):
            raise OptionError(option, f"'instance' must be a UUID string, got {instance!r}")
        if not isinstance(raw_vclock, Mapping):
            raise OptionError(option, f"'vclock' must be an object of replica id to LSN, got {raw_vclock!r}")
        try:
            vclock = {int(r): int(lsn) for r, lsn in raw_vclock.items()}
        except (TypeError, ValueError):
            raise OptionError(option, f"'vclock' must map replica ids to LSNs, got {raw_vclock!r}") from None
        return cls(instance, file, pos, vclock)


def parse_starting_position(text: str | None) -> str | DirPosition:
    """``earliest`` (default), ``latest``, or a JSON offset."""
    if text is None:
        return "earliest"
    t = text.strip()
    if t.lower() in ("earliest", "latest"):
        return t.lower()
    try:
        decoded = json.loads(t)
    except ValueError:
        raise OptionError("startingPosition", f"expected earliest, latest or a JSON offset, got {text!r}") from None
    return DirPosition.from_offset(decoded)
