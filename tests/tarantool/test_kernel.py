"""The C row kernel (``spark_logsource.tarantool._kernel``) against the pure-Python reference (``rows.py``).

Every payload comes from a file written by a real Tarantool: every block of every file under
``tests/fixtures/tarantool/`` and of files made here by running the Debian tarantool 2.6 on a workload
that covers every DML type, all update operations, upserts, multi-statement and 10 000-row transactions,
local spaces, DDL, decimals, uuids, varbinary, nested maps with integer keys, long strings, every integer
width, floats, NULLs, a NOP and a synchronous-replication CONFIRM.  Both implementations must return equal
column lists for each tuple format; fuzzed versions of those payloads (truncations, byte flips, random bytes)
must give the same result or the same ``CorruptDataError`` (class and ``row N at payload byte P:`` prefix)
from both, and never anything else.  Those comparisons name both implementations; the tests that check one
implementation against Tarantool's own reader run over the ``twin`` fixture (``tests/support/twins.py``).

The implementations are seen at the boundary the reader uses, the column builders of
:mod:`spark_logsource.tarantool.decode.columns` (payloads in, Arrow arrays out; ``python`` = the reference builder,
``c`` = the kernel writing Arrow buffers), and at the list function ``decode_payload`` (``c-lists`` = the kernel's,
``python-lists`` = ``decode_payload_py``; used by the live replica and the tailer); arrays are turned back into the
reference's lists to be compared.
"""

from __future__ import annotations

import json
import math
import random
import re
import shutil
import subprocess
import textwrap
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from spark_logsource.arrow.jsontext import to_json
from spark_logsource.arrow.variant import decode_variant
from spark_logsource.errors import CorruptDataError
from spark_logsource.tarantool.decode import columns, names, rows
from spark_logsource.tarantool.xlog.blocks import Block, BlockScanner
from spark_logsource.tarantool.xlog.meta import read_meta
from tests.support.tarantool_columns import arrays_to_lists, builder_decoder, new_builder
from tests.support.twins import Twin, compiled

pytestmark = pytest.mark.differential  # C against Python in each test: not again in the pure-Python pass

FORMATS = ("variant", "json", "msgpack")
Decoder = Callable[[bytes, str, str, int], dict[str, list]]


def _c_decode(payload: bytes, tuple_format: str, path: str, block_offset: int) -> dict[str, list]:
    return compiled("spark_logsource.tarantool._kernel").decode_payload(payload, tuple_format, path, block_offset)


IMPLEMENTATIONS: dict[str, Decoder] = {
    "python": builder_decoder("python"),
    "c": builder_decoder("c"),
    "c-lists": _c_decode,
}
#: the compiled implementations, each compared with the reference's lists
COMPILED = ("c", "c-lists")

WORKLOAD = textwrap.dedent(
    """
    local decimal = require('decimal')
    local uuid = require('uuid')
    local ffi = require('ffi')
    box.cfg{work_dir = os.getenv('WORK_DIR'), log = 'tarantool.log', wal_mode = 'write'}
    local s = box.schema.space.create('s', {format = {{'id', 'unsigned'}}})
    s:create_index('pk')
    local loc = box.schema.space.create('loc', {is_local = true})
    loc:create_index('pk')
    local intmap = setmetatable({[1] = 'one', [2] = 'two', [10] = 'ten'}, {__serialize = 'map'})
    s:insert{1, 'name', -1, -100, -1000, -100000, -10000000000LL, 127, 255, 65535, 4294967295ULL,
             18446744073709551615ULL, 9223372036854775807LL, -9223372036854775807LL - 1}
    s:insert{2, 1.5, -0.25, 1e300, ffi.cast('float', 1.5), ffi.cast('float', 0.1), true, false, box.NULL,
             1/0, -1/0, 0/0}
    s:insert{3, string.rep('x', 63), string.rep('y', 64), string.rep('z', 300), string.rep('w', 70000),
             'üñí©ødé', 'tab\\t"q"\\\\\\n\\1'}
    s:insert{4, decimal.new('123.456'), decimal.new('-0.001'), decimal.new('1e10'),
             decimal.new('12345678901234567890.123456789'), decimal.new(0), decimal.new('-7')}
    s:insert{5, uuid.fromstr('0e1f3b1a-6f5d-4a0c-9f3b-2a1c0d4e5f60'), uuid.new()}
    s:insert{6, intmap, {a = 1, b = {c = {1, 2, {d = 'e'}}}}, {[1] = 'x'}, setmetatable({}, {__serialize = 'map'}),
             {}, {{}, {{}}}}
    s:insert{7, {zz = 1, aa = 2, mm = {yy = 1, bb = 2}},
             setmetatable({[-5] = 'neg', [100000] = 'big'}, {__serialize = 'map'}),
             {[uuid.fromstr('0e1f3b1a-6f5d-4a0c-9f3b-2a1c0d4e5f60')] = 'uuid key'}}
    local big = {}
    for i = 1, 300 do big[i] = i * 1000 end
    s:insert{8, big}
    local bigmap = {}
    for i = 1, 300 do bigmap['k' .. i] = string.rep('v', i) end
    s:insert{9, bigmap}
    s:replace{1, 'replaced'}
    s:insert{10, 5, 'abc', 1.5, {1, 2, 3}, 0xff, 0xff00, 0xff0000}
    s:update({10}, {{'+', 2, 1}, {'-', 4, 0.5}, {'&', 6, 0x0f}, {'|', 7, 0x0f}, {'^', 8, 0xff},
                    {':', 3, 2, 1, 'XY'}, {'!', 2, 'ins'}, {'#', 9, 1}, {'=', 5, 'set'}})
    s:upsert({11, 'new', 1}, {{'+', 3, 1}})
    s:upsert({11, 'new', 1}, {{'+', 3, 1}, {'=', 2, 'upd'}})
    s:delete{2}
    box.begin()
    for i = 100, 110 do s:insert{i, 'txn'} end
    loc:insert{1, 'local in txn'}
    s:delete{100}
    box.commit()
    loc:insert{2, 'local alone'}
    box.execute([[CREATE TABLE t (id INTEGER PRIMARY KEY, b VARBINARY, d DOUBLE, n NUMBER)]])
    box.execute([[INSERT INTO t VALUES (1, X'DEADBEEF00', 2.5, 3)]])
    box.execute([[INSERT INTO t VALUES (2, X'', 1e-7, NULL)]])
    s:format({{'id', 'unsigned'}, {'x', 'any', is_nullable = true}})
    s:truncate()
    box.begin()
    for i = 1, 10000 do s:insert{1000 + i, i} end
    box.commit()
    box.snapshot()
    s:insert{20000, 'after snapshot'}
    local nop = box.schema.space.create('nop')
    nop:create_index('pk')
    nop:before_replace(function(old, new) return old end)
    nop:insert{1, 'becomes nop'}
    box.cfg{replication_synchro_quorum = 1}
    local sync = box.schema.space.create('sync', {is_sync = true})
    sync:create_index('pk')
    sync:insert{1, 'synchronous'}
    os.exit(0)
    """
)

# xlog.pairs() of each file, one JSON line per row (timestamp as %.17g text so no digit is lost).
PAIRS = textwrap.dedent(
    """
    local xlog = require('xlog')
    local json = require('json')
    for _, path in ipairs(arg) do
      for _, row in xlog.pairs(path) do
        local h, b = row.HEADER or {}, row.BODY or {}
        local ts = h.timestamp and string.format('%.17g', h.timestamp) or box.NULL
        print(json.encode({path, h.lsn or box.NULL, h.type or box.NULL, h.replica_id or box.NULL, ts,
                           b.space_id or box.NULL, b.index_id or box.NULL, h.tsn or box.NULL,
                           h.commit or box.NULL}))
      end
    end
    os.exit(0)
    """
)


def _tarantool() -> str:
    exe = shutil.which("tarantool")
    if exe is None:
        pytest.fail("tarantool is not installed (apt-get install tarantool): the kernel tests need real files")
    return exe


@pytest.fixture(scope="session")
def workload_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tarantool 2.6 work_dir after WORKLOAD: xlogs and snapshots written by the real server."""
    work = tmp_path_factory.mktemp("tarantool_kernel")
    script = work / "workload.lua"
    script.write_text(WORKLOAD)
    proc = subprocess.run(
        [_tarantool(), str(script)],
        cwd=work,
        env={"WORK_DIR": str(work), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    log = (work / "tarantool.log").read_text() if (work / "tarantool.log").exists() else ""
    assert proc.returncode == 0, f"workload failed: {proc.stderr}\n{log[-3000:]}"
    assert sorted(work.glob("*.xlog")) and sorted(work.glob("*.snap"))
    return work


def _payloads(path: Path) -> Iterator[tuple[int, bytes]]:
    with open(path, "rb") as source:
        meta = read_meta(source, str(path))
        for item in BlockScanner(source, str(path), data_offset=meta.data_offset):
            if isinstance(item, Block):
                yield item.offset, item.payload


def _fixture_files(shared: Path) -> list[Path]:
    files = []
    for path in sorted((shared / "tarantool").rglob("*")):
        if not path.is_file():
            continue
        with open(path, "rb") as source:
            try:
                read_meta(source, str(path))
            except CorruptDataError:
                continue  # the fixtures include files with a deliberately bad meta header
        files.append(path)
    return files


@pytest.fixture(scope="session")
def real_payloads(workload_dir: Path, fixtures_dir: Path) -> list[tuple[str, int, bytes]]:
    """(path, block offset, payload) of every good block of every real file."""
    files = _fixture_files(fixtures_dir) + sorted(workload_dir.glob("*.xlog")) + sorted(workload_dir.glob("*.snap"))
    out = [(str(path), offset, payload) for path in files for offset, payload in _payloads(path)]
    assert len(files) > 40 and len(out) > 100
    return out


def _outcome(decode: Decoder, payload: bytes, tuple_format: str, path: str, offset: int) -> object:
    """The result dict, or ("error", class, contract prefix) for a CorruptDataError."""
    try:
        return decode(payload, tuple_format, path, offset)
    except CorruptDataError as exc:
        match = re.match(r"row \d+ at payload byte \d+:", exc.reason)
        assert match, f"error reason without the row/position prefix: {exc.reason!r}"
        assert (exc.path, exc.offset) == (path, offset)
        return ("error", type(exc), match.group(0))


def _diff(expected: dict[str, list], got: dict[str, list]) -> str:
    if list(expected) != list(got):
        return f"keys {list(expected)} != {list(got)}"
    for name in expected:
        if len(expected[name]) != len(got[name]):
            return f"{name}: {len(expected[name])} rows != {len(got[name])}"
        for i, (a, b) in enumerate(zip(expected[name], got[name], strict=True)):
            if a != b or type(a) is not type(b):
                return f"{name}[{i}]: {a!r:.300} != {b!r:.300}"
    return "equal"


# ---- real payloads: C == Python, list for list ----


@pytest.mark.server
@pytest.mark.parametrize("impl", sorted(IMPLEMENTATIONS))
@pytest.mark.parametrize("tuple_format", FORMATS)
def test_implementations_equal_reference_on_real_files(real_payloads: list, tuple_format: str, impl: str) -> None:
    decode = IMPLEMENTATIONS[impl]
    rows_seen = 0
    for path, offset, payload in real_payloads:
        expected = rows.decode_payload_py(payload, tuple_format, path, offset)
        got = decode(payload, tuple_format, path, offset)
        assert got == expected, f"{path} block at {offset}: {_diff(expected, got)}"
        assert _diff(expected, got) == "equal", f"{path} block at {offset}: {_diff(expected, got)}"
        rows_seen += len(expected["lsn"])
    assert rows_seen > 20000


def _assert_batches_equal(a: dict[str, pa.Array], b: dict[str, pa.Array], where: str) -> None:
    assert list(a) == list(b), where
    for name in a:
        a[name].validate(full=True)
        b[name].validate(full=True)
        assert a[name].type == b[name].type, f"{where}: {name}"
        assert a[name].equals(b[name]), f"{where}: {name}: {a[name].to_pylist()[:3]} != {b[name].to_pylist()[:3]}"


def _variable_bytes(array: pa.Array) -> int:
    """The bytes of an array's values as the byte cap counts them (a Variant: value + metadata)."""
    if pa.types.is_struct(array.type):
        return _variable_bytes(array.field("value")) + _variable_bytes(array.field("metadata"))
    offsets = array.buffers()[1]
    ends = (array.offset, array.offset + len(array))
    first, last = (int.from_bytes(offsets[4 * i : 4 * i + 4], "little") for i in ends)
    return last - first


@pytest.mark.server
@pytest.mark.parametrize("tuple_format", FORMATS)
@pytest.mark.parametrize(("max_rows", "max_bytes"), [(1 << 40, 1 << 40), (1000, 1 << 40), (7, 1 << 40),
                                                     (1 << 40, 20000), (333, 3000), (1, 1)])
def test_builders_cut_the_same_batches(real_payloads: list, tuple_format: str, max_rows: int, max_bytes: int) -> None:
    """Both builders fed the same blocks (and corrupt rows) give equal batches, each within both caps."""
    builders = {kind: new_builder(kind, tuple_format) for kind in ("python", "c")}
    total = taken = 0
    rng = random.Random(max_rows ^ max_bytes)
    blocks = real_payloads[:400] if max_rows > 1 else real_payloads[:40]
    for i, (path, offset, payload) in enumerate(blocks):
        corrupt = i % 17 == 3
        for builder in builders.values():
            added = builder.add_payload(payload, path, offset)
            if corrupt:
                builder.add_corrupt(offset, f"bad block at {offset} ü")
        total += added + corrupt
        assert builders["python"].rows == builders["c"].rows
        assert builders["python"].bytes == builders["c"].bytes
        while builders["c"].rows and (builders["c"].rows >= max_rows or builders["c"].bytes >= max_bytes
                                      or rng.random() < 0.05):
            batches = {kind: b.take(max_rows, max_bytes) for kind, b in builders.items()}
            _assert_batches_equal(batches["python"], batches["c"], f"block {i}")
            n = len(batches["c"]["lsn"])
            value_bytes = sum(_variable_bytes(batches["c"][name]) for name in (*rows.VALUE_COLUMNS, "corrupt"))
            assert 1 <= n <= max_rows and (value_bytes <= max_bytes or n == 1)
            taken += n
    while builders["c"].rows:
        batches = {kind: b.take(max_rows, max_bytes) for kind, b in builders.items()}
        _assert_batches_equal(batches["python"], batches["c"], "end")
        taken += len(batches["c"]["lsn"])
    assert builders["python"].rows == 0 and taken == total > 0


@pytest.mark.server
@pytest.mark.parametrize("tuple_format", FORMATS)
def test_a_bad_block_adds_no_rows(real_payloads: list, tuple_format: str) -> None:
    """A payload that fails leaves both builders as they were: the rows before it and after it are intact."""
    good = [p for _path, _offset, p in real_payloads[:60] if p]
    rng = random.Random(5)
    builders = {kind: new_builder(kind, tuple_format) for kind in ("python", "c")}
    errors = 0
    for payload in good:
        bad = payload[: rng.randrange(1, len(payload))]
        for kind, builder in builders.items():
            before = builder.rows
            builder.add_payload(payload, "f", 1)
            try:
                builder.add_payload(bad, "f", 2)
            except CorruptDataError as exc:
                assert (exc.path, exc.offset) == ("f", 2)
                assert builder.rows == before + len(rows.decode_payload_py(payload, "msgpack", "f", 1)["lsn"])
                errors += kind == "c"
        assert builders["python"].rows == builders["c"].rows
        assert builders["python"].bytes == builders["c"].bytes
    batches = {kind: b.take(1 << 40, 1 << 40) for kind, b in builders.items()}
    _assert_batches_equal(batches["python"], batches["c"], "after bad blocks")
    assert errors > 10


def test_column_builder_prefers_the_kernel(twin: Twin) -> None:
    kernel = twin.kernel("spark_logsource.tarantool._kernel")
    assert rows.decode_payload is (rows.decode_payload_py if kernel is None else kernel.decode_payload)
    builder = columns.column_builder("variant")
    assert isinstance(builder, columns.KernelColumnBuilder if twin.is_c else columns.PyColumnBuilder)


def test_corrupt_rows_are_null_but_offset_and_message() -> None:
    message = "row 0 at payload byte 0: bad \u2713"
    for tuple_format in FORMATS:
        batches = []
        for kind in ("python", "c"):
            builder = new_builder(kind, tuple_format)
            builder.add_corrupt(12345, message)
            assert builder.rows == 1 and builder.bytes == len(message.encode())
            batches.append(builder.take(10, 10))
        _assert_batches_equal(*batches, tuple_format)
        lists = arrays_to_lists(batches[1], tuple_format)
        assert all(v == [None] for k, v in lists.items() if not k.endswith(".metadata"))
        assert batches[1]["offset"].to_pylist() == [12345]
        assert batches[1]["corrupt"].to_pylist() == [message]


# ---- one implementation against Tarantool's own reader: over both twins, at both boundaries ----


@pytest.fixture(params=["columns", "lists"])
def decode(request: pytest.FixtureRequest, twin: Twin) -> Decoder:
    """The twin's decoder seen through its column builder (``columns``) or its list function (``lists``)."""
    if request.param == "columns":
        return builder_decoder(twin.name)
    return _c_decode if twin.is_c else rows.decode_payload_py


def _workload_rows(workload_dir: Path, decode: Decoder, tuple_format: str) -> list[dict[str, object]]:
    out = []
    for path in sorted(workload_dir.glob("*.xlog")):
        for offset, payload in _payloads(path):
            cols = decode(payload, tuple_format, str(path), offset)
            assert list(cols) == list(rows.output_keys(tuple_format))
            lengths = {len(v) for v in cols.values()}
            assert len(lengths) == 1
            for i in range(lengths.pop()):
                row = {name: values[i] for name, values in cols.items()}
                row["path"] = str(path)
                out.append(row)
    return out


@pytest.mark.server
def test_scalar_columns_match_xlog_pairs(workload_dir: Path, decode: Decoder) -> None:
    """lsn, type, replica_id, timestamp, space/index id, tsn and commit as Tarantool's own reader shows them."""
    files = sorted(str(p) for p in workload_dir.glob("*.xlog"))
    script = workload_dir / "pairs.lua"
    script.write_text(PAIRS)
    proc = subprocess.run(
        [_tarantool(), str(script), *files], capture_output=True, text=True, timeout=120, cwd=workload_dir
    )
    assert proc.returncode == 0, proc.stderr
    oracle = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("[")]
    ours = _workload_rows(workload_dir, decode, "msgpack")
    assert len(ours) == len(oracle) > 10000
    for row, (path, lsn, rtype, replica_id, ts, space_id, index_id, tsn, commit) in zip(ours, oracle, strict=True):
        assert row["path"] == path
        assert row["lsn"] == lsn
        assert row["type"] == (rtype if isinstance(rtype, str) else names.type_name(rtype))  # 2.6 prints numbers
        assert row["replica_id"] == (replica_id or 0)
        assert row["timestamp"] == round(float(ts) * 1e6)
        assert row["space_id"] == space_id
        # xlog.pairs shows the body as stored; Tarantool reads an absent index id of a request as 0
        assert row["index_id"] == (0 if index_id is None and space_id is not None else index_id)
        assert row["tsn"] == (lsn if tsn is None else tsn)
        assert row["is_commit"] is (tsn is None or commit is True)


def _tuple_of(rows_: list[dict[str, object]], space_id: int, first: int, parse_float: type = float) -> list[object]:
    for row in rows_:
        if row["space_id"] == space_id and row["type"] == "INSERT":
            text = row["tuple"]
            value = json.loads(text, parse_float=parse_float) if isinstance(text, str) else None
            if isinstance(value, list) and value and value[0] == first:
                return value
    raise AssertionError(f"no INSERT of {first} into space {space_id}")


@pytest.mark.server
def test_json_values_are_what_the_workload_wrote(workload_dir: Path, decode: Decoder) -> None:
    out = _workload_rows(workload_dir, decode, "json")
    assert _tuple_of(out, 512, 1) == [
        1,
        "name",
        -1,
        -100,
        -1000,
        -100000,
        -10000000000,
        127,
        255,
        65535,
        4294967295,
        18446744073709551615,
        9223372036854775807,
        -(2**63),
    ]
    floats = _tuple_of(out, 512, 2)
    assert floats[:9] == [2, 1.5, -0.25, 1e300, 1.5, 0.10000000149011612, True, False, None]
    assert floats[9:11] == ["Infinity", "-Infinity"] and floats[11] == "NaN"
    strings = _tuple_of(out, 512, 3)
    assert [len(s) for s in strings[1:5]] == [63, 64, 300, 70000]
    assert strings[5:] == ["üñí©ødé", 'tab\t"q"\\\n\x01']
    decimals = _tuple_of(out, 512, 4, parse_float=Decimal)
    assert [str(d) for d in decimals[1:]] == ["123.456", "-0.001", "1E+10", "12345678901234567890.123456789", "0", "-7"]
    assert _tuple_of(out, 512, 5)[1] == "0e1f3b1a-6f5d-4a0c-9f3b-2a1c0d4e5f60"
    assert _tuple_of(out, 512, 6)[1:] == [
        {"1": "one", "2": "two", "10": "ten"},
        {"a": 1, "b": {"c": [1, 2, {"d": "e"}]}},
        ["x"],
        {},
        [],
        [[], [[]]],
    ]
    assert _tuple_of(out, 512, 7)[3] == {"0e1f3b1a-6f5d-4a0c-9f3b-2a1c0d4e5f60": "uuid key"}
    assert _tuple_of(out, 514, 1) == [1, "3q2+7wA=", 2.5, 3]
    update = next(r for r in out if r["type"] == "UPDATE" and r["space_id"] == 512)
    assert update["tuple"] is None and json.loads(update["extra"]) == {"index_base": 1}
    assert [op[0] for op in json.loads(update["ops"])] == ["+", "-", "&", "|", "^", ":", "!", "#", "="]
    upserts = [r for r in out if r["type"] == "UPSERT" and r["space_id"] == 512]
    assert [json.loads(r["ops"]) for r in upserts] == [[["+", 3, 1]], [["+", 3, 1], ["=", 2, "upd"]]]
    assert {r["type"] for r in out} >= {"INSERT", "REPLACE", "UPDATE", "DELETE", "UPSERT", "NOP", "RAFT_CONFIRM"}
    confirm = next(r for r in out if r["type"] == "RAFT_CONFIRM")
    assert json.loads(confirm["extra"])["lsn"] == confirm["lsn"] - 1


@pytest.mark.server
def test_variant_values_decode_to_the_json_values(workload_dir: Path, decode: Decoder) -> None:
    """Both encodings of every value agree (variant decoded back vs JSON text), row by row."""
    as_json = _workload_rows(workload_dir, decode, "json")
    as_variant = _workload_rows(workload_dir, decode, "variant")
    assert len(as_json) == len(as_variant)
    checked = 0
    for j, v in zip(as_json, as_variant, strict=True):
        for column in rows.VALUE_COLUMNS:
            text, value, metadata = j[column], v[column + ".value"], v[column + ".metadata"]
            if text is None:
                assert value is None and metadata == b""
                continue
            decoded = decode_variant(value, metadata)
            assert _jsonable(decoded) == _jsonable(json.loads(text, parse_float=Decimal, parse_int=Decimal)), column
            checked += 1
    assert checked > 10000


def _jsonable(value: object) -> object:
    """Normalise a decoded value for comparison with JSON: numbers as Decimal, bytes as base64 text."""
    import base64
    import datetime

    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return Decimal(repr(value))
    if isinstance(value, int | Decimal):
        return Decimal(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


@pytest.mark.server
def test_msgpack_values_are_the_stored_bytes(workload_dir: Path, decode: Decoder) -> None:
    """Each msgpack value is exactly one stored msgpack value, the one the JSON column renders."""
    out = _workload_rows(workload_dir, decode, "msgpack")
    as_json = _workload_rows(workload_dir, decode, "json")
    checked = 0
    for m, j in zip(out, as_json, strict=True):
        for column in rows.VALUE_COLUMNS:
            assert (m[column] is None) == (j[column] is None)
            if m[column] is None:
                continue
            unpacker = rows._unpacker(m[column])
            assert to_json(unpacker.unpack()) == j[column]
            assert unpacker.tell() == len(m[column])
            checked += 1
    assert checked > 10000


# ---- fuzz: both implementations agree on damaged payloads; the kernel never crashes or hangs ----


def _same_outcome(payload: bytes, tuple_format: str) -> None:
    expected = _outcome(rows.decode_payload_py, payload, tuple_format, "fuzz", 7)
    for impl in COMPILED:
        got = _outcome(IMPLEMENTATIONS[impl], payload, tuple_format, "fuzz", 7)
        if isinstance(expected, dict) and isinstance(got, dict):
            assert _diff(expected, got) == "equal", f"{impl}: payload {payload.hex()[:200]}"
        else:
            assert got == expected, f"{impl}: payload {payload.hex()[:400]}"


def _small_payloads(real_payloads: list, limit: int, max_size: int = 3000) -> list[bytes]:
    """Up to ``limit`` distinct real payloads of at most ``max_size`` bytes, spread evenly over their sizes."""
    seen = set()
    distinct = []
    for _path, _offset, payload in sorted(real_payloads, key=lambda item: len(item[2])):
        if 0 < len(payload) <= max_size and payload[:24] + payload[-24:] not in seen:
            seen.add(payload[:24] + payload[-24:])
            distinct.append(payload)
    step = max(1, len(distinct) // limit)
    return distinct[::step][:limit]


@pytest.mark.server
@pytest.mark.parametrize("tuple_format", FORMATS)
def test_fuzz_truncated_payloads(real_payloads: list, tuple_format: str) -> None:
    payloads = _small_payloads(real_payloads, 150, max_size=60000)
    cases = 0
    rng = random.Random(1)
    for payload in payloads:
        cuts = range(len(payload)) if len(payload) <= 150 else sorted(rng.sample(range(len(payload)), 150))
        for cut in cuts:
            _same_outcome(payload[:cut], tuple_format)
            cases += 1
    assert cases > 3000


@pytest.mark.server
@pytest.mark.parametrize("tuple_format", FORMATS)
def test_fuzz_byte_flips(real_payloads: list, tuple_format: str) -> None:
    payloads = _small_payloads(real_payloads, 200)
    rng = random.Random(2)
    for case in range(3000):
        data = bytearray(payloads[case % len(payloads)])
        for _ in range(rng.choice((1, 1, 2, 4))):
            pos = rng.randrange(len(data))
            data[pos] = rng.choice((rng.randrange(256), data[pos] ^ (1 << rng.randrange(8)), 0xC1, 0xD9, 0xDF, 0xC7))
        _same_outcome(bytes(data), tuple_format)


@pytest.mark.parametrize("tuple_format", FORMATS)
def test_fuzz_random_bytes(tuple_format: str) -> None:
    rng = random.Random(3)
    for _ in range(2000):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
        _same_outcome(data, tuple_format)


@pytest.mark.server
def test_fuzz_spliced_rows(real_payloads: list) -> None:
    """Rows of different real payloads glued together or cut anywhere: same outcome from both."""
    payloads = _small_payloads(real_payloads, 200)
    rng = random.Random(4)
    for _ in range(1500):
        a, b = rng.choice(payloads), rng.choice(payloads)
        data = a[: rng.randrange(len(a) + 1)] + b[rng.randrange(len(b)) :]
        _same_outcome(data, rng.choice(FORMATS))


def test_kernel_rejects_unknown_format() -> None:
    with pytest.raises(ValueError, match="tuple_format"):
        _c_decode(b"", "yaml", "x", 0)
    with pytest.raises(ValueError, match="tuple_format"):
        new_builder("c", "yaml")
    with pytest.raises(ValueError, match="tuple_format"):
        new_builder("python", "yaml")
    assert _c_decode(b"", "msgpack", "x", 0) == rows.decode_payload_py(b"", "msgpack", "x", 0)
