"""Every real-server binlog of the shared fixtures, read whole and checked against MANIFEST.json and
``mariadb-binlog -vv --base64-output=decode-rows`` (positions, end_log_pos, server ids, times, queries, session
variables, Xid values, MariaDB GTIDs and GTID lists, table maps, rows per event)."""

from __future__ import annotations

import collections
import itertools
import re
from pathlib import Path

import pytest

from tests.support.mysql_events import FIXTURE_DIR, fixture_paths, manifest, plain_copy, read_rows, top_level
from tests.support.oracle.mariadb_events import OracleEvent, run_mariadb_binlog

MANIFEST = {entry["path"][2:]: entry for entry in manifest()}
FILES = fixture_paths()


def _raw_header(path: Path, pos: int) -> tuple[int, int, int]:
    """(type, size, flags) of the event at ``pos`` straight from the file bytes."""
    import gzip

    data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    head = data[pos:pos + 19]
    return head[4], int.from_bytes(head[9:13], "little"), int.from_bytes(head[17:19], "little")


@pytest.mark.parametrize("name", FILES)
def test_event_histogram_equals_manifest(name: str) -> None:
    entry = MANIFEST[name]
    rows = read_rows(FIXTURE_DIR / name)
    assert [r["_corrupt_record"] for r in rows if r["_corrupt_record"]] == []
    events = top_level(rows)
    histogram = collections.Counter(r["event_type"] for r in events)
    expected = dict(entry["events"])
    # Unknown events with the IGNORABLE flag are skipped: check each one really is that, then drop it.
    chain_gaps = [(a["next_pos"], b["pos"]) for a, b in itertools.pairwise(events)
                  if a["next_pos"] != b["pos"]]
    for name_in_manifest in [k for k in expected if k.startswith("type_")]:
        assert len(chain_gaps) == expected.pop(name_in_manifest)
    for gap_start, gap_end in chain_gaps:
        type_code, size, flags = _raw_header(FIXTURE_DIR / name, gap_start)
        assert f"type_{type_code}" in entry["events"] and flags & 0x80 and gap_start + size == gap_end
    assert dict(histogram) == expected
    assert events[0]["pos"] == 4 and events[-1]["next_pos"] == entry["end_pos"]
    assert events[0]["flags"] == int(entry["fde_flags"], 16)
    assert events[0]["data"]["server_version"] == entry["fde"]["server_version"]
    assert len(events[0]["data"]["post_header_lens"]) == entry["fde"]["post_header_lens"]


@pytest.mark.parametrize("name", FILES)
def test_changes_rows_match_rows_events(name: str) -> None:
    events = read_rows(FIXTURE_DIR / name)
    changes = read_rows(FIXTURE_DIR / name, view="changes")
    assert [r["_corrupt_record"] for r in changes if r["_corrupt_record"]] == []
    per_event = collections.Counter()
    for r in changes:
        per_event[(r["pos"], r["table"])] += 1
    expected = collections.Counter()
    for r in events:
        if r["event_type"] and "ROWS" in r["event_type"] and r["event_type"] != "ROWS_QUERY":
            expected[(r["pos"], r["table"])] += r["data"]["rows"]
    assert per_event == expected
    # xid: the XID event ending the row's transaction; None when it ends with a COMMIT query (MyISAM)
    ends = sorted((r["pos"], r["data"]["xid"] if r["event_type"] == "XID" else None) for r in top_level(events)
                  if r["event_type"] == "XID" or (r["event_type"] == "QUERY" and r["query"] == "COMMIT"))
    inner_xids = {r["pos"]: r["data"]["xid"] for r in events if r["event_type"] == "XID" and "payload_index" in
                  r["data"]}
    for r in changes:
        if r["pos"] in inner_xids:
            assert r["xid"] == inner_xids[r["pos"]]
            continue
        end = next(xid for pos, xid in ends if pos > r["pos"])
        assert r["xid"] == end
    # gtid: the one of the GTID event opening the transaction
    gtid_events = [(r["pos"], r["gtid"]) for r in top_level(events) if r["event_type"] in ("GTID", "MARIA_GTID",
                                                                                            "ANONYMOUS_GTID")]
    for r in changes:
        opening = [g for pos, g in gtid_events if pos < r["pos"]]
        assert r["gtid"] == (opening[-1] if opening else None)


def _oracle_kind(row: dict) -> str:
    kind = row["event_type"]
    return {"FORMAT_DESCRIPTION": "Start:", "QUERY": "Query", "XID": "Xid", "MARIA_GTID": "GTID",
            "MARIA_GTID_LIST": "Gtid", "MARIA_BINLOG_CHECKPOINT": "Binlog", "ROTATE": "Rotate", "STOP": "Stop",
            "TABLE_MAP": "Table_map:", "WRITE_ROWS_V1": "Write_rows:", "WRITE_ROWS_V2": "Write_rows:",
            "UPDATE_ROWS_V1": "Update_rows:", "UPDATE_ROWS_V2": "Update_rows:", "DELETE_ROWS_V1": "Delete_rows:",
            "DELETE_ROWS_V2": "Delete_rows:"}.get(kind, "Ignorable")


def _check_event(ours: dict, theirs: OracleEvent) -> None:
    # MariaDB 11 writes log_pos 0 in transactions (our next_pos is pos + event_size there)
    assert ours["next_pos"] == (theirs.end_log_pos or ours["pos"] + ours["event_size"])
    assert ours["server_id"] == theirs.server_id
    assert ours["timestamp"] == theirs.timestamp
    assert _oracle_kind(ours) == theirs.kind, (ours["event_type"], theirs.description)
    data = ours["data"]
    kind = theirs.kind
    if kind == "Ignorable":
        code = re.search(r"# Ignorable event type (\d+)", "\n".join(theirs.lines))
        assert code and int(code.group(1)) == ours["event_type_code"]
    elif kind == "Query":
        assert ours["query"] == theirs.query()
        assert str(data["thread_id"]) == theirs.field("thread_id")
        assert str(data["exec_time"]) == theirs.field("exec_time")
        assert str(data["error_code"]) == theirs.field("error_code")
        status = data["status_vars"]
        printed = theirs.session_vars()
        if "sql_mode" in printed and "sql_mode" in status:
            assert str(status["sql_mode"]) == printed["sql_mode"]
        if "collation_connection" in printed and "charset" in status:
            assert str(status["charset"]["collation_connection"]) == printed["collation_connection"]
            assert str(status["charset"]["collation_server"]) == printed["collation_server"]
        if "auto_increment_increment" in printed and "auto_increment" in status:
            assert str(status["auto_increment"]["increment"]) == printed["auto_increment_increment"]
            assert str(status["auto_increment"]["offset"]) == printed["auto_increment_offset"]
        if "lc_time_names" in printed and "lc_time_names" in status:
            assert str(status["lc_time_names"]) == printed["lc_time_names"]
        if "pseudo_thread_id" in printed:
            assert str(data["thread_id"]) == printed["pseudo_thread_id"]
        if printed.get("explicit_defaults_for_timestamp") is not None and "explicit_defaults_for_timestamp" in status:
            assert str(status["explicit_defaults_for_timestamp"]) == printed["explicit_defaults_for_timestamp"]
        use = [s for s in theirs.statements() if s.startswith("use ")]
        if use:
            assert use[0] == f"use `{ours['database']}`"
    elif kind == "Xid":
        assert theirs.description == f"Xid = {data['xid']}"
    elif kind == "GTID":
        assert theirs.description.split()[1] == data["gtid"] == ours["gtid"]
        assert ("ddl" in theirs.description.split()) == ("ddl" in data["flag_names"])
    elif kind == "Gtid":
        assert theirs.description == f"Gtid list [{','.join(data['gtids'])}]"
    elif kind == "Binlog":
        assert theirs.description == f"Binlog checkpoint {data['binlog_file']}"
    elif kind == "Rotate":
        assert theirs.description == f"Rotate to {data['next_file']}  pos: {data['position']}"
    elif kind == "Table_map:":
        assert theirs.description == (f"Table_map: `{data['database']}`.`{data['table']}` mapped to number "
                                      f"{data['table_id']}")
    elif kind.endswith("_rows:"):
        assert re.search(rf"table id {data['table_id']}\b", theirs.description)
        assert ("STMT_END_F" in theirs.description) == bool(data["flags"] & 1)


@pytest.mark.parametrize("name", FILES)
def test_events_match_mariadb_binlog(name: str, tmp_path: Path) -> None:
    path = plain_copy(name, tmp_path)
    oracle = run_mariadb_binlog(path)
    events = [r for r in top_level(read_rows(FIXTURE_DIR / name))]
    by_pos = {r["pos"]: r for r in events}
    readable = len(oracle.events)
    assert readable > 0
    if "TRANSACTION_PAYLOAD" in MANIFEST[name]["events"]:
        # mariadb-binlog stops at MySQL 8's first TRANSACTION_PAYLOAD: compare the events before it.
        assert "TRANSACTION_PAYLOAD" in oracle.stderr
        first_payload = min(r["pos"] for r in events if r["event_type"] == "TRANSACTION_PAYLOAD")
        assert [e.pos for e in oracle.events] == [r["pos"] for r in events if r["pos"] < first_payload]
    else:
        assert oracle.returncode == 0, oracle.stderr
        assert [e.pos for e in oracle.events] == [r["pos"] for r in events] or (
            # the skipped IGNORABLE unknown event is printed by the oracle
            [e.pos for e in oracle.events if e.pos in by_pos] == [r["pos"] for r in events])
    run_rows = 0  # rows of a statement's rows events printed as a run; the count follows the last one
    for theirs in oracle.events:
        if theirs.pos in by_pos:
            _check_event(by_pos[theirs.pos], theirs)
            if theirs.kind.endswith("_rows:"):
                run_rows += by_pos[theirs.pos]["data"]["rows"]
                count = re.search(r"# Number of rows: (\d+)", "\n".join(theirs.lines))
                if count:
                    assert int(count.group(1)) == run_rows
                    run_rows = 0
        else:
            assert "event type 100" in "\n".join(theirs.lines)


@pytest.mark.parametrize("name", [n for n in FILES if "PREVIOUS_GTIDS" in MANIFEST[n]["events"]])
def test_mysql_gtids_continue_previous_gtids(name: str) -> None:
    """The GTIDs of a file follow its PREVIOUS_GTIDS set (each server's gno goes up by one per transaction)."""
    events = top_level(read_rows(FIXTURE_DIR / name))
    previous = next(r for r in events if r["event_type"] == "PREVIOUS_GTIDS")["data"]
    next_gno = {s["sid"]: s["intervals"][-1][1] + 1 for s in previous["sids"]}
    gtids = [r for r in events if r["event_type"] in ("GTID", "ANONYMOUS_GTID")]
    assert gtids
    for r in gtids:
        data = r["data"]
        if r["event_type"] == "ANONYMOUS_GTID":
            assert data["gno"] == 0 and r["gtid"] is None
            continue
        assert data["gno"] == next_gno.get(data["sid"], 1)
        next_gno[data["sid"]] = data["gno"] + 1
        assert r["gtid"] == f"{data['sid']}:{data['gno']}"
        assert data["lt_type"] == 2 and data["sequence_number"] > data["last_committed"]
