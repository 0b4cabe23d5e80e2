"""The two masters' writes: each owns a key range and changes keys of the other's range, in transactions of one to
five statements, both at once.

Writes that the other master may run concurrently commute, so both masters end with the same content whatever
order each applies the other's rows in: a master inserts, replaces, deletes and sets ``note`` only on its own
keys; the other master's keys it changes only with ``+`` on ``n`` (UPDATE, or UPSERT of a key that exists),
and only keys ``id % 5 == 1``, which their owner inserts first (before the other master writes anything) and never
replaces or deletes. (Tarantool 2.6 logs an UPDATE, in a transaction, of a key that is not there, and it does
nothing: had the other master changed a key its owner inserts concurrently, the masters would apply insert and
update in different orders and end with different content.)
"""

from __future__ import annotations

import random
import threading

from tests.tarantool_replicaset.servers import SPACE, Master

#: First key of each master's range (by replica id); each range holds RANGE keys.
BASE = {1: 0, 2: 10_000}
RANGE = 300


def _own(rng: random.Random, base: int, i: int, tag: str) -> str:
    key = base + i
    kind = rng.choice(("insert", "insert", "update", "upsert", "replace", "delete"))
    if key % 5 == 1 and kind in ("replace", "delete"):
        kind = "update"
    if kind == "insert":
        return f"if s:get({key}) == nil then s:insert{{{key}, '{tag}', {rng.randint(-50, 50)}}} end"
    if kind == "update":
        return f"s:update({key}, {{{{'=', 'note', '{tag}{rng.randint(0, 99)}'}}, {{'+', 'n', 1}}}})"
    if kind == "upsert":
        return f"s:upsert({{{key}, '{tag}', 0}}, {{{{'+', 3, {rng.randint(1, 9)}}}}})"
    if kind == "replace":
        return f"s:replace{{{key}, '{tag}', {rng.randint(-50, 50)}, 'replaced'}}"
    return f"s:delete({key})"


def _other(rng: random.Random, base: int) -> str:
    key = base + 5 * rng.randint(0, RANGE // 5 - 1) + 1
    if rng.random() < 0.5:
        return f"s:update({key}, {{{{'+', 'n', {rng.randint(1, 9)}}}}})"
    return f"if s:get({key}) ~= nil then s:upsert({{{key}, 'x', 0}}, {{{{'+', 'n', {rng.randint(1, 9)}}}}}) end"


def script(me: int, other: int, rng: random.Random, transactions: int, cross: bool) -> str:
    """One Lua line: ``transactions`` transactions of 1 to 5 statements on ``me``'s keys and, when ``cross``,
    ``+`` changes of ``other``'s keys."""
    tag = "ab"[me - 1]
    lines = []
    if not cross:  # the shared keys first, in transactions of five
        shared = list(range(BASE[me] + 1, BASE[me] + RANGE, 5))
        for i in range(0, len(shared), 5):
            lines.append("box.begin() " + " ".join(f"s:insert{{{k}, '{tag}', {rng.randint(-50, 50)}}}"
                                                   for k in shared[i:i + 5]) + " box.commit()")
    for _ in range(transactions):
        stmts = []
        for _ in range(rng.randint(1, 5)):
            if cross and rng.random() < 0.4:
                stmts.append(_other(rng, BASE[other]))
            else:
                stmts.append(_own(rng, BASE[me], rng.randint(0, RANGE - 1), tag))
        lines.append("box.begin() " + " ".join(stmts) + " box.commit()")
    return f"local s = box.space.{SPACE} " + " ".join(lines)


def run_both(a: Master, b: Master, seed: int, transactions: int, cross: bool) -> None:
    """Both masters run their script at the same time (one thread each); an error in either is raised."""
    errors: list[BaseException] = []
    ids = {a: a.replica_id(), b: b.replica_id()}

    def run(server: Master, other: Master) -> None:
        rng = random.Random(seed * 10 + ids[server])
        try:
            server.eval(script(ids[server], ids[other], rng, transactions, cross))
        except BaseException as exc:  # reported below, from the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(a, b)), threading.Thread(target=run, args=(b, a))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
