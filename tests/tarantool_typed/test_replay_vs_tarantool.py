"""The Python replay of UPDATE operations against the real tarantool, on random tuples and operations.

Random cases (seeded) are applied by tarantool 2.6 (``update_oracle.lua``) and by ``replay.apply_update``: where
tarantool succeeds, the replay must give the same tuple; where tarantool refuses the operation, the replay must
refuse it too (such a request never reaches the WAL, so agreeing there is a bonus, checked as a rate).
"""

from __future__ import annotations

import random
from pathlib import Path

import msgpack
import pytest

from spark_logsource.tarantool.table.replay import ReplayError, TupleStore
from tests.support.oracle.tarantool_xlog import unpack
from tests.support.servers.tarantool import TarantoolError, run_script

ORACLE = Path(__file__).resolve().parent / "update_oracle.lua"
CASES = 600


def _value(rng: random.Random, depth: int = 0):
    kind = rng.choice(["int", "int", "neg", "float", "str", "str", "arr", "map"] if depth < 2 else ["int", "str"])
    if kind == "int":
        return rng.randint(0, 300)
    if kind == "neg":
        return rng.randint(-300, -1)
    if kind == "float":
        return rng.randint(-50, 50) + 0.5
    if kind == "str":
        return "".join(rng.choice("abcxyz") for _ in range(rng.randint(0, 6)))
    if kind == "arr":
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {k: _value(rng, depth + 1) for k in rng.sample(["a", "b", "c"], rng.randint(0, 3))}


def _field(rng: random.Random, tup: list):
    n = len(tup)
    choice = rng.random()
    if choice < 0.6:
        return rng.randint(2, n + 2)
    if choice < 0.8:
        return -rng.randint(1, n)
    # a JSON path into a container field, when there is one
    containers = [i for i, v in enumerate(tup) if isinstance(v, list | dict) and i > 0]
    if not containers:
        return rng.randint(2, n + 1)
    i = rng.choice(containers)
    inner = tup[i]
    if isinstance(inner, list):
        return f"[{i + 1}][{rng.randint(1, len(inner) + 1)}]"
    return f"[{i + 1}].{rng.choice(['a', 'b', 'c'])}"


def _op(rng: random.Random, tup: list) -> list:
    op = rng.choice("=+-&|^:!#")
    field = _field(rng, tup)
    if op == ":":
        return [op, field, rng.randint(-4, 6), rng.randint(-3, 4), rng.choice(["", "Q", "QRS"])]
    if op == "#":
        return [op, field, rng.randint(1, 2)]
    if op in "+-":
        return [op, field, rng.choice([rng.randint(-5, 5), 1.5, -0.25])]
    if op in "&|^":
        return [op, field, rng.randint(0, 255)]
    return [op, field, _value(rng, 1)]


def _cases(seed: int) -> list[list]:
    rng = random.Random(seed)
    cases = []
    for n in range(CASES):
        tup = [n + 1] + [_value(rng) for _ in range(rng.randint(1, 5))]
        cases.append([tup, [_op(rng, tup)]])
    return cases


@pytest.fixture(scope="module")
def oracle_results(tmp_path_factory):
    directory = tmp_path_factory.mktemp("update_oracle")
    cases = _cases(12)
    (directory / "cases.mp").write_bytes(msgpack.packb(cases))
    try:
        run_script(ORACLE, directory)
    except TarantoolError as exc:
        pytest.fail(str(exc))
    return cases, unpack((directory / "results.mp").read_bytes()), unpack((directory / "upserts.mp").read_bytes())


def test_replay_matches_tarantool_on_random_updates(oracle_results):
    cases, results, _upserts = oracle_results
    assert len(results) == len(cases)
    succeeded = refused_by_both = 0
    wrong: list[str] = []
    for (tup, ops), (ok, outcome) in zip(cases, results, strict=True):
        store = TupleStore([0])
        store.replace(list(tup))
        try:
            store.update([tup[0]], ops, 1, {}, None)
            ours, error = store.rows[(tup[0],)], None
        except (ReplayError, IndexError, TypeError) as exc:
            ours, error = None, exc
        if ok:
            succeeded += 1
            if error is not None or ours != outcome:
                wrong.append(f"{tup} {ops}: tarantool {outcome}, ours {ours if error is None else error}")
        elif error is not None:
            refused_by_both += 1
    print(f"tarantool applied {succeeded}, refused {len(cases) - succeeded}, both refused {refused_by_both}")
    assert succeeded > CASES // 3  # the generator makes enough valid operations to mean something
    assert wrong == [], "\n".join(wrong[:20])
    refused = len(cases) - succeeded
    assert refused_by_both >= refused * 0.9, f"we accept {refused - refused_by_both} of {refused} refused operations"


def test_upsert_on_an_existing_key_matches_tarantool(oracle_results):
    """UPSERT skips the operations that fail and keeps the old tuple if the key would change."""
    cases, _results, upserts = oracle_results
    wrong = []
    changed = 0
    for (tup, ops), (ok, after) in zip(cases, upserts, strict=True):
        if not ok:  # refused as a whole (e.g. a key field of the wrong type): never in a WAL
            continue
        changed += after != tup
        store = TupleStore([0])
        store.replace(list(tup))
        store.upsert(list(tup), ops, 1, {})
        if store.rows[(tup[0],)] != after:
            wrong.append(f"{tup} {ops}: tarantool {after}, ours {store.rows[(tup[0],)]}")
    assert changed > CASES // 4  # the upserts did change tuples
    assert wrong == [], "\n".join(wrong[:20])
