"""The protocol's numbers are named once (``spark_logsource.tarantool.iproto``): each named constant agrees with
the code → name tables the output is written with, so a constant and a name cannot drift apart."""

from __future__ import annotations

from spark_logsource.tarantool import iproto

_REPLICATION_ONLY = {"SUBSCRIBE", "VOTE", "FETCH_SNAPSHOT", "JOIN_META", "JOIN_SNAPSHOT"}


def test_every_key_constant_is_the_key_the_names_table_gives() -> None:
    keys = {name: value for name, value in vars(iproto).items() if name.startswith("K_")}
    assert len(keys) >= 28
    for name, value in keys.items():
        assert iproto.IPROTO_KEYS[value] == name[2:].lower(), name


def test_every_request_type_constant_is_the_type_the_names_table_gives() -> None:
    types = {name: value for name, value in vars(iproto).items()
             if name.isupper() and isinstance(value, int) and not name.startswith(("K_", "BALLOT_", "FLAG_", "ERROR_"))}
    assert {"OK", "SELECT", "UPDATE", "NOP", "RAFT", "ROWINDEX"} <= set(types)
    for name, value in types.items():
        if name in _REPLICATION_ONLY:
            assert value not in iproto.REQUEST_TYPES, name  # never a row of a file: written as its code
        else:
            assert iproto.REQUEST_TYPES[value] == name, name
