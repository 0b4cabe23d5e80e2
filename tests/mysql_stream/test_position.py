"""Offsets, GTID states, starting positions and connection URIs (no server needed)."""

from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_logsource.errors import OptionError
from spark_logsource.mysql.position import BinlogPosition, GtidState, parse_starting_position
from spark_logsource.mysql.stream.client import Secret, parse_uri
from spark_logsource.streaming.stream import offset_json


@given(file_no=st.integers(1, 999_999), pos=st.integers(4, 2**40), seqs=st.dictionaries(
    st.integers(0, 2**32 - 1), st.tuples(st.integers(1, 2**32 - 1), st.integers(1, 2**63)), max_size=4))
def test_offsets_round_trip_through_json_with_a_fixed_key_order(file_no: int, pos: int, seqs: dict) -> None:
    gtid = GtidState(seqs).text() or None
    position = BinlogPosition("mariadb", 1, None, f"mysql-bin.{file_no:06d}", pos, gtid)
    offset = position.to_offset()
    assert list(offset) == ["v", "kind", "server_id", "server_uuid", "file", "pos", "gtid"]
    again = BinlogPosition.from_offset(json.loads(offset_json(offset)))
    assert again == position and offset_json(again.to_offset()) == offset_json(offset)


def test_gtid_state_keeps_the_last_gtid_of_each_domain() -> None:
    state = GtidState.parse("1-2-7, 0-1-5")
    state.add("0-3-9")
    assert state.text() == "0-3-9,1-2-7"
    with pytest.raises(OptionError, match="startingPosition"):
        GtidState.parse("0-1", option="startingPosition")


def test_starting_positions() -> None:
    assert parse_starting_position(None).mode == "earliest"
    assert parse_starting_position("LATEST").mode == "latest"
    explicit = parse_starting_position('{"file": "bin.000042", "pos": 4}')
    assert explicit.mode == "position" and explicit.position.file == "bin.000042" and explicit.position.pos == 4
    gtid = parse_starting_position("0-1-500")
    assert gtid.mode == "gtid" and gtid.gtid.text() == "0-1-500"
    for bad in ('{"file": "../etc/passwd", "pos": 4}', '{"file": "bin.1", "pos": 2}', "yesterday", "{nope"):
        with pytest.raises(OptionError, match="startingPosition"):
            parse_starting_position(bad)


def test_uri_and_password_never_show() -> None:
    settings = parse_uri("mysql://cdc@db1:3307", "hunter2-secret")
    assert (settings.host, settings.port, settings.user, settings.source) == ("db1", 3307, "cdc", "mysql://db1:3307")
    assert "hunter2" not in repr(settings) and "hunter2" not in str(settings.password)
    assert settings.password.reveal() == "hunter2-secret"
    assert pickle.loads(pickle.dumps(settings)).password == Secret("hunter2-secret")
    assert parse_uri("mysql://cdc@db1", None).port == 3306
    with pytest.raises(OptionError, match="password option"):
        parse_uri("mysql://cdc:pw@db1:3306", None)
    with pytest.raises(OptionError, match="uri"):
        parse_uri("http://db1", None)


@pytest.mark.parametrize(("option", "value", "message"), [
    ("startPosition", "4", "startingPosition"),
    ("stopPosition", "1000", "endingPosition"),
])
def test_file_positions_are_refused_by_the_live_source(option: str, value: str, message: str) -> None:
    from spark_logsource.api import make_format

    with pytest.raises(OptionError, match=message) as err:
        make_format("mysql-replication", [], {"uri": "mysql://cdc@db1:3306", "password": "pw", option: value})
    assert err.value.option == option and "pw" not in str(err.value)
