"""What a new user meets first with ``mysql-replication``: the server URI given where a path goes (Arrow API, Spark
``load(uri)``, ``spark-logsource sql --view``), and errors that name what is actually wrong (a view not available
live, a misspelt option, a port that is not MySQL, a silent port)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

import spark_logsource
from spark_logsource.errors import OptionError, SourceError
from tests.mysql_stream.conftest import CDC_PASSWORD, Writer
from tests.support.cli_follow import REPO
from tests.support.servers.standin import FakeServer
from tests.support.waiting import until

pytestmark = [pytest.mark.server]


def _range(server: Any) -> tuple[dict, dict]:
    server.flush_logs()
    first = server.binlog_files()[-1].name
    with Writer(server, seed=71) as writer:
        # the range's own rows and rotations, not a file count that earlier tests may have reached already
        writer.wait_for(20)
        assert until(lambda: sum(f.name > first for f in server.binlog_files()) >= 2), "the writer rotated the binlog"
    file, pos = server.query("SHOW MASTER STATUS")[0][:2]
    return {"file": first, "pos": 4}, {"file": file, "pos": int(pos)}


# --- finding 7: the URI where a path goes ---------------------------------------------------------------------------
def test_arrow_api_read_and_follow_take_the_uri_as_the_source(stream_server: Any) -> None:
    start, end = _range(stream_server)
    by_option = spark_logsource.read("mysql-replication", [], uri=stream_server.uri, password=CDC_PASSWORD,
                                     startingPosition=json.dumps(start), endingPosition=json.dumps(end))
    by_path = spark_logsource.read("mysql-replication", stream_server.uri, password=CDC_PASSWORD,
                                   startingPosition=json.dumps(start), endingPosition=json.dumps(end))
    assert by_path.num_rows == by_option.num_rows > 0
    assert by_path.equals(by_option)
    followed = [b for b, _ in spark_logsource.follow("mysql-replication", stream_server.uri, password=CDC_PASSWORD,
                                                     startingPosition=json.dumps(start), stop_when_idle=True)]
    assert sum(len(b) for b in followed) >= by_option.num_rows


def test_uri_as_path_and_a_different_uri_option_is_refused(stream_server: Any) -> None:
    with pytest.raises(OptionError, match="uri"):
        spark_logsource.read("mysql-replication", stream_server.uri, uri="mysql://other@127.0.0.1:1",
                             password=CDC_PASSWORD)


@pytest.mark.spark
def test_spark_load_of_the_uri(spark: Any, stream_server: Any) -> None:
    start, end = _range(stream_server)
    df = (spark.read.format("mysql-replication").option("password", CDC_PASSWORD)
          .option("startingPosition", json.dumps(start)).option("endingPosition", json.dumps(end))
          .load(stream_server.uri))
    want = spark_logsource.read("mysql-replication", [], uri=stream_server.uri, password=CDC_PASSWORD,
                                startingPosition=json.dumps(start), endingPosition=json.dumps(end))
    assert df.count() == want.num_rows > 0


@pytest.mark.spark
def test_cli_sql_view_of_the_uri(stream_server: Any) -> None:
    start, end = _range(stream_server)
    want = spark_logsource.read("mysql-replication", [], uri=stream_server.uri, password=CDC_PASSWORD,
                                startingPosition=json.dumps(start), endingPosition=json.dumps(end)).num_rows
    proc = subprocess.run(
        [sys.executable, "-m", "spark_logsource.cli", "sql", "--view", f"t=mysql-replication:{stream_server.uri}",
         "--option", f"t.password={CDC_PASSWORD}", "--option", f"t.startingPosition={json.dumps(start)}",
         "--option", f"t.endingPosition={json.dumps(end)}", "--format", "json", "SELECT count(*) AS n FROM t"],
        capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.splitlines()[-1]) == {"n": want}


# --- finding 8: errors that name the real problem -------------------------------------------------------------------
def test_view_table_live_names_its_own_options(stream_server: Any) -> None:
    # view=table streams from a live server (tests/mysql_cdc); its password is the source's, not schemaFrom's
    with pytest.raises(OptionError, match=r"option 'table': view=table needs the option table") as info:
        spark_logsource.follow("mysql-replication", stream_server.uri, password=CDC_PASSWORD, view="table")
    assert "password" not in str(info.value) and CDC_PASSWORD not in str(info.value)
    with pytest.raises(OptionError, match=r"option 'schemaFrom': schemaFrom=metadata names each row"):
        next(spark_logsource.follow("mysql-replication", stream_server.uri, password=CDC_PASSWORD, view="table",
                                    table="shop.orders", schemaFrom="metadata"))


def test_a_misspelt_required_option_gets_did_you_mean(tmp_path: Any) -> None:
    with pytest.raises(OptionError, match=r"option 'tabel': unknown option .*did you mean 'table'"):
        spark_logsource.read("mysql-binlog", str(tmp_path), view="table", tabel="shop.orders")


@pytest.fixture
def fake(request: pytest.FixtureRequest) -> Iterator[FakeServer]:
    server = FakeServer(request.param)
    yield server
    server.close()


TARANTOOL_GREETING = (b"Tarantool 2.6.0 (Binary) 3b5fa01f-0000-4000-8000-000000000000".ljust(63) + b"\n"
                      + b"c2FsdHNhbHRzYWx0c2FsdHNhbHRzYWx0c2FsdHNhbHQ=".ljust(63) + b"\n")


@pytest.mark.parametrize("fake", [TARANTOOL_GREETING], indirect=True, ids=["tarantool"])
def test_a_tarantool_port_is_named_as_such(fake: FakeServer) -> None:
    with pytest.raises(SourceError) as info:
        list(spark_logsource.follow("mysql-replication", f"mysql://cdc@127.0.0.1:{fake.port}", password="pw",
                                    stop_when_idle=True, reconnectTimeout=0))
    text = str(info.value)
    assert f"mysql://127.0.0.1:{fake.port}" in text
    assert "is not a MySQL/MariaDB server: it greeted as Tarantool" in text
    assert "sequence" not in text


@pytest.mark.parametrize("fake", [b""], indirect=True, ids=["silent"])
def test_a_silent_port_says_no_greeting(fake: FakeServer) -> None:
    began = time.monotonic()
    with pytest.raises(SourceError) as info:
        list(spark_logsource.follow("mysql-replication", f"mysql://cdc@127.0.0.1:{fake.port}", password="pw",
                                    stop_when_idle=True, connectTimeout=1, reconnectTimeout=0))
    text = str(info.value)
    assert f"no greeting within 1 s from 127.0.0.1:{fake.port}" in text
    assert "dump thread" not in text
    assert time.monotonic() - began < 15
