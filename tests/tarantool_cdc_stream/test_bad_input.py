"""Bad input for ``view=space`` in a stream, against a real Tarantool 2.6: a space that does not exist (the error
lists the spaces seen), users without read access to ``_space`` or to the space's rows (the replication stream), a
format change the query's schema cannot follow (a field renamed, a field's type changed), and xlogs collected
before the query read them (``checkpoint_count=1``: a ``box.snapshot()`` removes the older xlogs), which is a
``DataLossError`` naming the vclock gap unless ``failOnDataLoss=false``. Each error is one of our exception classes
naming the directory or server and, once there is one, the position; no error, offset or log record of these
tests shows a password.

Covered elsewhere: a new field and a drop (``test_tail.py``, ``test_live.py``)."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from spark_logsource.errors import AuthenticationError, DataLossError, OptionError, SchemaChangeError
from spark_logsource.registry import format_class
from spark_logsource.streaming.stream import LogStream, Offset, ReadBudget, offset_json
from spark_logsource.tarantool.position import vclock_text
from tests.support.servers.tarantool_live import NOPERM_PASSWORD, NOPERM_USER, PASSWORD, LiveTarantool
from tests.support.waiting import until
from tests.tarantool_cdc_stream.support import DictTarget, create_space, drain, server_rows, stream_of, transactions

pytestmark = pytest.mark.server

NAMES = ["id", "name", "n"]
#: Can read the space definitions (``_space``, ``_index``) but has no replication role: the stream is refused.
CATALOG_ONLY = ("catonly", "catonly-Pw_3381")
PASSWORDS = (PASSWORD, NOPERM_PASSWORD, CATALOG_ONLY[1])


@pytest.fixture(autouse=True)
def no_password_in_logs(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.DEBUG)
    yield
    for record in caplog.records:
        text = record.getMessage() + (record.exc_text or "")
        for password in PASSWORDS:
            assert password not in text, f"a log record shows a password: {record.name}: {text[:300]}"


def _clean(error: BaseException | str) -> str:
    text = str(error)
    for password in PASSWORDS:
        assert password not in text
    return text


def _checked(offset: Offset) -> Offset:
    text = offset_json(offset)
    for password in PASSWORDS:
        assert password not in text
    return json.loads(text)  # as Spark's offset log gives it back


def _live(server: LiveTarantool, *, user: tuple[str, str] | None = None, **options: Any) -> LogStream:
    opts = server.options(mode="FAILFAST", **options)
    if user is not None:
        opts["uri"] = f"tarantool://{user[0]}@127.0.0.1:{server.port}"
        opts["password"] = user[1]
    return format_class("tarantool-replication")(opts).stream()


def _collect(server: LiveTarantool, space: str, rng: random.Random, before: set[str]) -> None:
    """Write until the xlogs rotate, then checkpoint until every xlog of ``before`` is collected."""
    base = 100
    while set(p.name for p in server.xlog_files()) & before == before or len(server.xlog_files()) < 2:
        transactions(server, space, rng, 40, base)
        base += 40
        server.eval("box.snapshot()")
        if not (set(p.name for p in server.xlog_files()) & before):
            break
    assert until(lambda: not (set(p.name for p in server.xlog_files()) & before)), "the old xlogs were not collected"


# -- names and privileges ------------------------------------------------------------------------------------------
def test_tail_space_that_does_not_exist_lists_the_spaces_seen(cdc_server: LiveTarantool) -> None:
    create_space(cdc_server, "seen_a")
    directory = str(cdc_server.directory)
    with pytest.raises(OptionError) as caught:
        stream_of(directory, view="space", space="nope", startingPosition="earliest").initial_offset()
    message = _clean(caught.value)
    assert "'nope'" in message and directory in message
    listed = message.split("spaces found:", 1)[1]
    assert "seen_a" in listed and "_space" in listed
    assert listed.index("seen_a") < listed.index("_space")  # the user's spaces first


def test_live_space_that_does_not_exist_lists_the_spaces_seen(cdc_server: LiveTarantool) -> None:
    create_space(cdc_server, "seen_b")
    with pytest.raises(OptionError) as caught:
        _live(cdc_server, view="space", space="nope", startingPosition="latest")
    message = _clean(caught.value)
    assert f"127.0.0.1:{cdc_server.port}" in message and "'nope'" in message
    listed = message.split("spaces found:", 1)[1]
    assert "seen_b" in listed and "t" in listed.split(", ")


def test_live_user_without_read_on_space_catalog(cdc_server: LiveTarantool) -> None:
    with pytest.raises(AuthenticationError) as caught:
        _live(cdc_server, user=(NOPERM_USER, NOPERM_PASSWORD), view="space", space="t")
    message = _clean(caught.value)
    assert f"127.0.0.1:{cdc_server.port}" in message and "'_space'" in message and f"'{NOPERM_USER}'" in message


def test_live_user_without_read_on_the_space(cdc_server: LiveTarantool) -> None:
    create_space(cdc_server, "guarded")
    user, password = CATALOG_ONLY
    cdc_server.eval(f"box.schema.user.create('{user}', {{password = '{password}', if_not_exists = true}}) "
                    f"box.schema.user.grant('{user}', 'read', 'space', '_space', {{if_not_exists = true}}) "
                    f"box.schema.user.grant('{user}', 'read', 'space', '_index', {{if_not_exists = true}})")
    cdc_server.eval("box.space.guarded:insert{1, 'one', 1}")
    # the definitions can be read, the rows cannot: the stream is refused before it promises an offset
    stream = _live(cdc_server, user=CATALOG_ONLY, view="space", space="guarded", startingPosition="earliest")
    with pytest.raises(AuthenticationError) as caught:
        drain(stream, stream.initial_offset(), ReadBudget(), lambda batch: None)
    message = _clean(caught.value)
    assert f"127.0.0.1:{cdc_server.port}" in message and f"'{user}'" in message and "'replication' role" in message


# -- format changes the query cannot follow ------------------------------------------------------------------------
def test_tail_field_renamed_stops_naming_the_change(cdc_server: LiveTarantool) -> None:
    rng = random.Random(31)
    create_space(cdc_server, "renf")
    transactions(cdc_server, "renf", rng, 10, 0)
    directory = str(cdc_server.directory)
    stream = stream_of(directory, view="space", space="renf", startingPosition="earliest")
    target = DictTarget(directory, "renf", fixed=True)
    offset = drain(stream, _checked(stream.initial_offset()), ReadBudget(), target.apply)
    transactions(cdc_server, "renf", rng, 4, 0)
    before = server_rows(cdc_server, "renf", NAMES)
    change_lsn = int(cdc_server.value("box.info.lsn")) + 1
    cdc_server.eval("box.space.renf:format({{'id', 'unsigned'}, {'label', 'string'}, {'n', 'integer'}})")
    cdc_server.eval("box.space.renf:replace{900, 'nine hundred', 9}")
    committed: list[Offset] = []
    with pytest.raises(SchemaChangeError) as caught:
        drain(stream, offset, ReadBudget(), target.apply, committed)
    message = _clean(caught.value)
    assert directory in message and f"lsn {change_lsn}" in message and "'label'" in message
    assert "UPDATE of _space" in message or "REPLACE of _space" in message
    assert target.plain(NAMES) == before and 900 not in target.rows  # every change before it, none after
    with pytest.raises(SchemaChangeError, match=f"lsn {change_lsn}"):  # asked again: the same stop
        stream.latest_offset(_checked(committed[-1]), ReadBudget())


def test_live_field_type_changed_stops_naming_the_change(cdc_server: LiveTarantool) -> None:
    rng = random.Random(37)
    create_space(cdc_server, "typf")
    stream = _live(cdc_server, view="space", space="typf", startingPosition="latest")
    seen: list[pa.Table] = []
    offset = drain(stream, _checked(stream.initial_offset()), ReadBudget(), seen.append)
    transactions(cdc_server, "typf", rng, 6, 0)
    change_lsn = int(cdc_server.value("box.info.lsn")) + 1
    cdc_server.eval("box.space.typf:format({{'id', 'unsigned'}, {'name', 'string'}, {'n', 'number'}})")
    cdc_server.eval("box.space.typf:replace{800, 'eight hundred', 1.5}")
    committed: list[Offset] = []
    with pytest.raises(SchemaChangeError) as caught:
        drain(stream, offset, ReadBudget(), seen.append, committed)
    message = _clean(caught.value)
    assert f"127.0.0.1:{cdc_server.port}" in message and f"lsn {change_lsn}" in message
    assert "'n'" in message and "number" in message
    rows = pa.concat_tables(seen).to_pylist() if seen else []
    assert rows and all(r["id"] != 800 for r in rows)
    assert max(r["lsn"] for r in rows) < change_lsn
    _checked(committed[-1])


# -- xlogs collected before the query read them --------------------------------------------------------------------
def _behind_tail(server: LiveTarantool, space: str, **options: Any) -> tuple[LogStream, Offset, dict[int, int]]:
    rng = random.Random(41)
    create_space(server, space)
    transactions(server, space, rng, 10, 0)
    directory = str(server.directory)
    stream = stream_of(directory, view="space", space=space, startingPosition="earliest", **options)
    offset = _checked(drain(stream, stream.initial_offset(), ReadBudget(), lambda batch: None))
    vclock = server.vclock()
    transactions(server, space, rng, 5, 0)
    _collect(server, space, rng, {p.name for p in server.xlog_files()})
    return stream, offset, vclock


def test_tail_xlogs_collected_is_data_loss_naming_the_vclock_gap(cdc_server: LiveTarantool) -> None:
    stream, offset, vclock = _behind_tail(cdc_server, "gcd")
    with pytest.raises(DataLossError) as caught:
        stream.latest_offset(offset, ReadBudget())
    message = _clean(caught.value)
    assert str(cdc_server.directory) in message
    # the gap: from the offset's vclock (at least what was read before the checkpoint) up to a later one
    # the server wrote nothing after its checkpoint: the rows are up to the newest snapshot's vclock, its own
    assert f"rows after vclock {vclock_text(offset['vclock'])}" in message
    assert f"up to vclock {vclock_text(cdc_server.vclock())}" in message and "snapshot only" in message
    assert all(offset["vclock"].get(str(r), 0) >= lsn for r, lsn in vclock.items())
    assert "failOnDataLoss=false" in message


def test_tail_xlogs_collected_without_fail_on_data_loss_warns(cdc_server: LiveTarantool,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    stream, offset, _vclock = _behind_tail(cdc_server, "gcw", failOnDataLoss="false")
    cdc_server.eval("box.space.gcw:replace{5000, 'after', 5}")
    seen: list[pa.Table] = []
    drain(stream, offset, ReadBudget(), seen.append)
    assert any(r.levelno == logging.WARNING and "data loss" in r.getMessage() for r in caplog.records)
    ids = [r["id"] for t in seen for r in t.to_pylist()]
    assert 5000 in ids  # the stream went on with what the directory still has


def test_live_xlogs_collected_is_data_loss_naming_the_vclock_gap(cdc_server: LiveTarantool) -> None:
    rng = random.Random(43)
    create_space(cdc_server, "gcl")
    stream = _live(cdc_server, view="space", space="gcl", startingPosition="latest")
    offset = _checked(drain(stream, stream.initial_offset(), ReadBudget(), lambda batch: None))
    transactions(cdc_server, "gcl", rng, 5, 0)
    _collect(cdc_server, "gcl", rng, {p.name for p in cdc_server.xlog_files()})
    with pytest.raises(DataLossError) as caught:
        drain(stream, offset, ReadBudget(), lambda batch: None)
    message = _clean(caught.value)
    assert f"127.0.0.1:{cdc_server.port}" in message and "vclock" in message
    assert "failOnDataLoss=false" in message


def test_live_xlogs_collected_without_fail_on_data_loss_warns_and_goes_on(cdc_server: LiveTarantool,
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    rng = random.Random(47)
    create_space(cdc_server, "gcq")
    stream = _live(cdc_server, view="space", space="gcq", startingPosition="latest", failOnDataLoss="false")
    offset = _checked(drain(stream, stream.initial_offset(), ReadBudget(), lambda batch: None))
    transactions(cdc_server, "gcq", rng, 5, 0)
    _collect(cdc_server, "gcq", rng, {p.name for p in cdc_server.xlog_files()})
    cdc_server.eval("box.space.gcq:replace{6000, 'after', 6}")
    seen: list[pa.Table] = []
    end = _checked(drain(stream, offset, ReadBudget(), seen.append))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "data loss" in
                r.getMessage()]
    assert warnings and "the rows between vclock" in warnings[0]
    rows = [r for t in seen for r in t.to_pylist()]
    assert [r["id"] for r in rows][-1] == 6000  # what the server still has, up to its end
    assert end["vclock"] == {str(r): lsn for r, lsn in cdc_server.vclock().items()}
