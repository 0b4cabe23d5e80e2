"""Shared support for the yugabyte-wal tests: the synthesized fixture segments and their expected records."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

WAL_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "yugabyte-wal" / "wals"


@dataclass(frozen=True)
class Expected:
    """One fixture segment and the records of its ``.expected.jsonl``."""

    path: Path
    segment: dict[str, Any]
    entries: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    end: dict[str, Any]

    @property
    def name(self) -> str:
        return f"{self.path.parent.name}/{self.path.name}"


def load_expected(path: Path) -> Expected:
    records = [json.loads(line) for line in Path(f"{path}.expected.jsonl").read_text().splitlines() if line.strip()]
    assert records[0]["record"] == "segment" and records[-1]["record"] == "end"
    return Expected(path, records[0], [r for r in records if r["record"] == "entry"],
                    [r for r in records if r["record"] == "row"], records[-1])


def all_expected() -> list[Expected]:
    return [load_expected(Path(str(p)[: -len(".expected.jsonl")]))
            for p in sorted(WAL_FIXTURES.rglob("wal-*.expected.jsonl"))]


@pytest.fixture(scope="session")
def wal_dir() -> Path:
    return WAL_FIXTURES


@pytest.fixture(scope="session")
def expected_segments() -> list[Expected]:
    found = all_expected()
    assert len(found) == 8
    return found


def plain_hex(text: str | None) -> str | None:
    """A transaction id as the fixtures spell it (32 hex digits, no dashes)."""
    return None if text is None else text.replace("-", "")


@pytest.fixture
def reference_batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The offsets of the entry batches the C path handed to the reference to decode (``reference_item``), for the
    kernels' differential tests (test_kernel.py, test_kernel_writes.py)."""
    import sys

    from spark_logsource.framing import BadRange
    from spark_logsource.yugabyte import fast
    from spark_logsource.yugabyte import reader as reader_module

    seen: list[int] = []
    original = reader_module._TabletReader.reference_item

    def counting(self: Any, scanner: Any, seg: Any, item: Any) -> Any:
        # the C path's hand-over (not the reference walk), of a batch to decode (not a bad range to report)
        if sys._getframe(1).f_code is fast.read_entries_fast.__code__ and not isinstance(item, BadRange):
            seen.append(item.offset)
        return original(self, scanner, seg, item)

    monkeypatch.setattr(reader_module._TabletReader, "reference_item", counting)
    return seen
