"""A master-master replica set of two real Tarantool 2.6 instances, written to by both at once, once per session
(the tests only read it)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.support.waiting import STATE_TIMEOUT, expect
from tests.tarantool_replicaset.servers import Master, start_pair
from tests.tarantool_replicaset.workload import run_both


@dataclass(frozen=True)
class ReplicaSet:
    """A and B after the workload, both holding every row of both; ``start`` is A's vclock before it."""

    a: Master
    b: Master
    start: dict[int, int]


def converged(a: Master, b: Master) -> bool:
    return a.has_all_of(b) and b.has_all_of(a)


@pytest.fixture(scope="session")
def replicaset(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplicaSet]:
    a, b = start_pair(tmp_path_factory.mktemp("replicaset"))
    try:
        start = a.vclock()
        run_both(a, b, seed=1, transactions=120, cross=False)
        expect(lambda: converged(a, b), STATE_TIMEOUT, "A and B to hold each other's rows")
        run_both(a, b, seed=2, transactions=120, cross=True)
        expect(lambda: converged(a, b), STATE_TIMEOUT, "A and B to hold each other's rows")
        yield ReplicaSet(a, b, start)
    finally:
        b.stop()
        a.stop()
