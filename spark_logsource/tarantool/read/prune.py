"""Planning: which xlogs of a listing may hold the LSNs a read asks for (``docs/formats/tarantool-xlog.md``).

An xlog named in a directory holds, for each replica ``r``, the LSNs ``(V[r], V'[r]]`` where ``V`` is its own
``VClock:`` header and ``V'`` the header of the next xlog of the same instance, when that next file's
``PrevVClock:`` says it directly follows (Tarantool writes the vclock at rotation; see ``src/box/wal.c``).
Files whose ranges cannot meet the requested LSN range are not read at all. Snapshots are never pruned by LSN:
their rows carry a counter, not the instance's LSNs.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from spark_logsource.errors import LogSourceError
from spark_logsource.filters import Predicate, allowed_values, value_range
from spark_logsource.io.fs import FileEntry, base_name, display_name, open_input
from spark_logsource.tarantool.position import same_vclock
from spark_logsource.tarantool.xlog.meta import XlogMeta, read_meta

__all__ = ["prune_by_lsn"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _XlogHead:
    entry: FileEntry
    meta: XlogMeta


def prune_by_lsn(files: Sequence[FileEntry], predicates: Iterable[Predicate]) -> list[FileEntry]:
    """``files`` without the xlogs whose LSN ranges cannot satisfy ``predicates`` (order kept)."""
    predicates = list(predicates)
    low, low_inc, high, high_inc = value_range(predicates, "lsn")
    if low is None and high is None:
        return list(files)
    lo = None if low is None else (low if low_inc else low + 1)  # smallest wanted LSN
    hi = None if high is None else (high if high_inc else high - 1)  # largest wanted LSN
    replicas = allowed_values(predicates, "replica_id")
    heads = []
    for entry in files:
        if not base_name(entry.uri).endswith((".xlog", ".xlog.inprogress")):
            continue
        try:
            with open_input(entry.uri) as source:
                meta = read_meta(source, display_name(entry.uri))
        except (LogSourceError, OSError) as exc:  # a broken header: read the file and let modes handle it
            log.info("not pruning %s: %s", display_name(entry.uri), exc)
            continue
        heads.append(_XlogHead(entry, meta))
    skip: set[str] = set()
    by_chain: dict[tuple[str, str | None], list[_XlogHead]] = {}
    for head in heads:
        by_chain.setdefault((posixpath.dirname(head.entry.uri), head.meta.instance_uuid), []).append(head)
    for chain in by_chain.values():
        chain.sort(key=lambda h: (sum(h.meta.vclock.values()), h.entry.uri))
        for i, head in enumerate(chain):
            nxt = chain[i + 1] if i + 1 < len(chain) else None
            upper = nxt.meta.vclock if nxt is not None and _follows(head.meta, nxt.meta) else None
            if not _may_hold(head.meta.vclock, upper, lo, hi, replicas):
                skip.add(head.entry.uri)
    if skip:
        log.info("LSN range [%s, %s] skips %d of %d files", lo, hi, len(skip), len(files))
    return [f for f in files if f.uri not in skip]


def _follows(prev: XlogMeta, nxt: XlogMeta) -> bool:
    if nxt.prev_vclock is not None:
        return same_vclock(nxt.prev_vclock, prev.vclock)
    return all(nxt.vclock.get(r, 0) >= v for r, v in prev.vclock.items())


def _may_hold(
    start: dict[int, int], end: dict[int, int] | None, lo: int | None, hi: int | None, replicas: set[int] | None
) -> bool:
    """Whether a file spanning vclocks (start, end] may hold an LSN in [lo, hi] of one of ``replicas``."""
    if end is None:
        candidates = replicas if replicas is not None else None
        if candidates is None:
            return True  # a replica unknown to the header may have written LSNs from 1 on
        return any(hi is None or start.get(r, 0) < hi for r in candidates)
    candidates = set(replicas) if replicas is not None else set(start) | set(end)
    for r in candidates:
        # A component missing from a header is 0 (vclock_to_string omits zeros); local-space rows (group_id 1)
        # count in component 0 since 2.2 and are covered like any other replica's.
        first, last = start.get(r, 0) + 1, end.get(r, 0)
        if first > last:
            continue
        if (lo is None or last >= lo) and (hi is None or first <= hi):
            return True
    return False


