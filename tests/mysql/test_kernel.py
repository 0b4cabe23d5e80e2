"""The compiled MySQL row kernel (spark_logsource/mysql/_kernel.c) against its pure-Python reference.

One test body runs over both implementations of :func:`spark_logsource.mysql.encode.images.encode_rows_event`
(``encode_rows_event_c`` and ``encode_rows_event_py``) and asserts they agree, event by event, for
``row_format`` variant and json: the same rows (byte-identical Variant values and metadata, identical JSON text),
or the same error (class, path, offset, message). Inputs are real: every rows event of every binlog in
``tests/fixtures/mysql-binlog/`` and of binlogs written by the session's MariaDB 10.11 under the six settings
of tests/test_mysql_values_oracle.py (its 48-column all-types workload, imported, not copied). Bad input is made
from those real events: every truncation, byte flips, random bytes; the kernel must raise our errors or return.
"""

from __future__ import annotations

import json
import random
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

from spark_logsource.arrow.columns import variant_array
from spark_logsource.arrow.variant import decode_variant
from spark_logsource.errors import CorruptDataError
from spark_logsource.mysql.binlog.events import BinlogEvent, BinlogFile
from spark_logsource.mysql.binlog.payload import decode_payload_header, iter_payload_events, uncompress_payload
from spark_logsource.mysql.decode.rows import rows_head
from spark_logsource.mysql.decode.tablemap import TableMap, parse_table_map
from spark_logsource.mysql.encode import images as rows_encode
from spark_logsource.mysql.encode.images import encode_rows_event_c, encode_rows_event_py
from spark_logsource.mysql.read.batches import Chunk, join_cells
from tests.support.mysql_types import DEFAULTS, SETTINGS, types_workload
from tests.support.twins import Twin, compiled

pytestmark = pytest.mark.differential  # C against Python in each test: not again in the pure-Python pass

FIXTURE_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "mysql-binlog"
MANIFEST = json.loads((FIXTURE_DIR / "MANIFEST.json").read_text()) if (FIXTURE_DIR / "MANIFEST.json").exists() else []
ROWS_TYPES = frozenset({20, 21, 22, 23, 24, 25, 30, 31, 32, 39, 166, 167, 168, 169, 170, 171})
FORMATS = ("variant", "json")



@dataclass
class RowsCase:
    """One real rows event with what decoding it needs."""

    path: str
    pos: int
    type_code: int
    body: bytes
    post_header_len: int
    table_id_size: int
    table_maps: dict[int, TableMap]
    inner: bool = False  # read from inside a TRANSACTION_PAYLOAD

    def run(self, impl, body: bytes | None = None, row_format: str = "variant"):
        return impl(self.type_code, self.body if body is None else body, post_header_len=self.post_header_len,
                    table_id_size=self.table_id_size, table_maps=self.table_maps, path=self.path, offset=self.pos,
                    row_format=row_format)


def rows_cases(path: Path) -> Iterator[RowsCase]:
    """Every rows event of a binlog (TRANSACTION_PAYLOAD contents included), with the TABLE_MAPs before it."""
    with path.open("rb") as stream, BinlogFile(stream, str(path)) as binlog:
        fde = binlog.fde
        table_id_size = 4 if fde.post_header_len(19, 8) == 6 else 6
        maps: dict[int, TableMap] = {}

        def handle(pos: int, type_code: int, body: bytes, inner: bool = False) -> Iterator[RowsCase]:
            if type_code == 19:
                table_map = parse_table_map(body, table_id_size=table_id_size)
                maps[table_map.table_id] = table_map
            elif type_code in ROWS_TYPES:
                yield RowsCase(str(path), pos, type_code, body, fde.post_header_len(type_code, 10), table_id_size,
                               dict(maps), inner)

        for ev in binlog.events():
            assert isinstance(ev, BinlogEvent), ev  # real files frame cleanly
            if ev.type_code == 40:
                header = decode_payload_header(ev.body, path=str(path), offset=ev.pos + 19)
                payload = uncompress_payload(ev.body, header, path=str(path), offset=ev.pos + 19, max_size=1 << 30)
                for inner, body in iter_payload_events(payload, path=str(path), offset=ev.pos):
                    yield from handle(ev.pos, inner[1], body, True)
            else:
                yield from handle(ev.pos, ev.type_code, ev.body)


def outcome(case: RowsCase, impl, body: bytes | None = None, row_format: str = "variant"):
    """The result of an implementation, or the error it raised as (class, path, offset, message)."""
    try:
        return "ok", case.run(impl, body, row_format)
    except CorruptDataError as exc:
        return "error", (type(exc), exc.path, exc.offset, str(exc))


def assert_same(case: RowsCase, body: bytes | None = None) -> str:
    """Both implementations agree on ``body`` (default: the real event) in both row formats; returns the kind."""
    kinds = set()
    for row_format in FORMATS:
        c = outcome(case, encode_rows_event_c, body, row_format)
        py = outcome(case, encode_rows_event_py, body, row_format)
        assert c == py, (case.path, case.pos, case.type_code, row_format)
        kinds.add(c[0])
    assert len(kinds) == 1
    return kinds.pop()


def uses_kernel(case: RowsCase) -> bool:
    """True when the kernel encodes this event itself (no whole-event fallback to the Python path)."""
    head = rows_head(case.type_code, case.body, post_header_len=case.post_header_len,
        table_id_size=case.table_id_size, table_maps=case.table_maps)
    plans = [rows_encode._plan(head.table_map, head.present, case.path, case.pos)]
    if head.op == "update":
        plans.append(rows_encode._plan(head.table_map, head.present_after, case.path, case.pos))
    return case.type_code != 39 and None not in plans


def test_kernel_is_built():
    assert rows_encode.KERNEL_AVAILABLE, "build it: python3 setup.py build_ext --inplace"


@pytest.mark.parametrize("folding", [True, False], ids=["folded", "byte-table"])
def test_crc32_is_zlibs(folding: bool) -> None:
    """The CRC the run walk checks events with, against zlib.crc32: every length up to past several 64-byte
    blocks at every alignment of a 16-byte lane, with initial values, and large buffers."""
    _kernel = compiled("spark_logsource.mysql._kernel")
    folds = _kernel.crc32_folds()
    if folding and not folds:
        pytest.skip("this processor has no PCLMULQDQ")
    _kernel.set_crc32_folding(folding)
    try:
        rng = random.Random(7)
        data = rng.randbytes(4096)
        for n in range(0, 700):
            for align in range(16):
                chunk = data[align:align + n]
                for value in (0, 0xFFFFFFFF, rng.getrandbits(32)):
                    assert _kernel.crc32(chunk, value) == zlib.crc32(chunk, value), (n, align, value)
        for n in (4095, 1 << 16, (1 << 20) + 13):
            big = rng.randbytes(n)
            assert _kernel.crc32(memoryview(big)[1:]) == zlib.crc32(big[1:]), n
        assert _kernel.crc32(b"") == 0
    finally:
        _kernel.set_crc32_folding(folds)


# ---- real files ------------------------------------------------------------------------------------------------


def test_manifest_lists_the_fixtures(fixtures_dir):
    assert len(MANIFEST) >= 9


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["path"] for e in MANIFEST])
def test_fixture_events_encode_identically(fixtures_dir, entry):
    """Every rows event of every shared fixture: kernel == reference, in both formats."""
    cases = list(rows_cases(fixtures_dir / "mysql-binlog" / entry["path"]))
    top_level = sum(count for name, count in entry["events"].items() if "ROWS" in name and "QUERY" not in name)
    assert sum(1 for c in cases if not c.inner) == top_level
    rows = json_columns = 0
    for case in cases:
        assert assert_same(case) == "ok"
        rows += case.run(encode_rows_event_c).n
        # only images with a MySQL JSON column (type 245) take the Python path
        head = rows_head(case.type_code, case.body, post_header_len=case.post_header_len,
        table_id_size=case.table_id_size, table_maps=case.table_maps)
        json_columns += any(c.real_type == 245 for c in head.table_map.columns)
        assert uses_kernel(case) != any(c.real_type == 245 for c in head.table_map.columns)
    assert (rows > 0) == (top_level > 0 or "TRANSACTION_PAYLOAD" in entry["events"])
    assert (json_columns > 0) == entry["path"].endswith("apecloud/mysql-bin.000057")  # the MySQL 8 JSON table




# ---- binlogs written by the session's MariaDB 10.11 -------------------------------------------------------------

WIDE_COLUMNS = 300  # > 255 keys: a "large" Variant object with 2-byte field ids

EXTRA_WORKLOAD = [
    "SET SESSION sql_mode = ''",
    "SET SESSION time_zone = '+00:00'",
    "CREATE TABLE t_charsets (id INT PRIMARY KEY, l1 VARCHAR(20) CHARACTER SET latin1,"
    " cy VARCHAR(20) CHARACTER SET cp1251, asc1 VARCHAR(20) CHARACTER SET ascii, gb VARCHAR(20) CHARACTER SET gbk,"
    " u16 VARCHAR(20) CHARACTER SET utf16, `ключ` INT, `é` INT, `Zz` INT, e ENUM('α','β'),"
    " s SET('a','b','c','d','e','f','g','h','i'), d1 DECIMAL(30,25), d2 DECIMAL(65,0), d3 DECIMAL(10,10),"
    " d4 DECIMAL(38,10), tb TINYBLOB, mb MEDIUMBLOB, mt MEDIUMTEXT, bt BIT(17), yr YEAR, t0 TIME, ts0 TIMESTAMP NULL)",
    "INSERT INTO t_charsets VALUES (1, 'café € ‰ Š', 'привет', 'plain', '中文', 'ñ𝄞', 1, 2, 3, 'β', 'a,c,i',"
    " 0.0000001, -12345678901234567890123456789012345678901234567890123456789012345, -0.0000000001,"
    " 1234567890123456789012345678.0123456789, X'00FF80', REPEAT('m', 70000), REPEAT('ü', 40), b'10101010101010101',"
    " 69, '-838:59:59', '2001-02-03 04:05:06')",
    "INSERT INTO t_charsets (id, l1, cy, asc1, gb, d1, d3) VALUES (2, X'8081', X'98', X'7F', X'FF', 0, 0),"
    " (3, '', '', '', '', -0.0000000000000000000000001, 0.9999999999)",
    "UPDATE t_charsets SET l1 = 'x\"y\\\\z\\n', e = 'α', s = '' WHERE id = 1",
    "DELETE FROM t_charsets WHERE id = 3",
    "CREATE TABLE t_wide (" + ", ".join(f"c{i} INT" for i in range(WIDE_COLUMNS)) + ")",
    "INSERT INTO t_wide VALUES (" + ", ".join(str(i * 1000 - 7) for i in range(WIDE_COLUMNS)) + "), ("
    + ", ".join("NULL" if i % 3 else str(-i) for i in range(WIDE_COLUMNS)) + ")",
    "UPDATE t_wide SET c7 = 70000 WHERE c0 = -7",
]


@pytest.fixture(scope="module")
def server_binlogs(mariadb, tmp_path_factory) -> dict[str, list[Path]]:
    """The all-types workload of test_mysql_values_oracle under its six settings, plus EXTRA_WORKLOAD under
    FULL and NO_LOG metadata (databases named k_* so both modules can share the session's server)."""
    files: dict[str, list[Path]] = {}
    runs = [(name, settings, "types") for name, settings in SETTINGS.items()]
    runs += [("extra_full", {"binlog_row_metadata": "FULL"}, "extra"),
             ("extra_no_log", {"binlog_row_metadata": "NO_LOG"}, "extra"),
             ("extra_minimal_compressed", {"binlog_row_metadata": "FULL", "binlog_row_image": "MINIMAL",
                                           "log_bin_compress": "ON", "log_bin_compress_min_len": 10}, "extra")]
    for name, settings, kind in runs:
        db = f"k_{name}"
        mariadb.execute(f"DROP DATABASE IF EXISTS {db}")
        mariadb.execute(f"CREATE DATABASE {db} CHARACTER SET utf8mb4")

        def workload(srv, db=db, kind=kind):
            if kind == "types":
                types_workload(srv, db)
            else:
                srv.execute(f"USE {db}")
                for statement in EXTRA_WORKLOAD:
                    srv.execute(statement)

        files[name] = mariadb.run_workload(workload, settings, dest=tmp_path_factory.mktemp(name))
        for key, value in DEFAULTS.items():
            mariadb.set_global(key, value)
    return files


SERVER_RUNS = [*SETTINGS, "extra_full", "extra_no_log", "extra_minimal_compressed"]


@pytest.mark.server
@pytest.mark.parametrize("name", SERVER_RUNS)
def test_server_events_encode_identically(server_binlogs, name):
    cases = [c for path in server_binlogs[name] for c in rows_cases(path)]
    rows = 0
    for case in cases:
        assert uses_kernel(case)  # MariaDB's JSON is LONGTEXT: every image is the kernel's own work
        assert assert_same(case) == "ok"
        rows += case.run(encode_rows_event_c).n
    assert rows == (13 if name in SETTINGS else 8)
    if "compressed" in name:
        assert {c.type_code for c in cases} & {166, 167, 168}


@pytest.mark.server
def test_server_values_decode_as_expected(server_binlogs):
    """A few kernel values read back (so the agreement above is about the right things)."""
    cases = [c for path in server_binlogs["extra_full"] for c in rows_cases(path)]
    first = cases[0].run(encode_rows_event_c)
    row = decode_variant(first.after.images()[0], first.after.metadatas()[0])
    assert row["l1"] == "café € ‰ Š" and row["cy"] == "привет" and row["gb"] == "中文" and row["u16"] == "ñ𝄞"
    assert row["ключ"] == 1 and row["e"] == "β" and row["s"] == "a,c,i" and row["bt"] == 0b10101010101010101
    assert str(row["d1"]) == "1.000000000000000000E-7" and row["tb"] == b"\x00\xff\x80"
    as_json = cases[0].run(encode_rows_event_c, row_format="json").after.images()[0].decode("utf-8")
    assert json.loads(as_json)["d2"] == -12345678901234567890123456789012345678901234567890123456789012345
    assert '"d1":1.000000000000000000E-7' in as_json
    second = cases[1].run(encode_rows_event_c)
    row2 = decode_variant(second.after.images()[0], second.after.metadatas()[0])
    assert row2["l1"] == b"\x80\x81"  # 0x81 is not in Python's cp1252: bytes, as values.py does
    wide = next(c for c in cases if len(c.table_maps[int.from_bytes(c.body[:6], "little")].columns) == WIDE_COLUMNS)
    wide_rows = wide.run(encode_rows_event_c)
    header = wide_rows.after.images()[0][0]
    assert header & 3 == 2 and (header >> 2) & 0x10 and ((header >> 4) & 3) + 1 == 2  # large object, 2-byte ids
    wide_row = decode_variant(wide_rows.after.images()[0], wide_rows.after.metadatas()[0])
    assert len(wide_row) == WIDE_COLUMNS and wide_row["c299"] == 299 * 1000 - 7


@pytest.mark.parametrize("row_format", FORMATS)
def test_image_columns_join_into_the_arrow_column_of_their_cells(fixtures_dir, row_format, twin: Twin):
    """The Arrow parts each implementation hands over (ImageColumn) become, joined by the batch builder, the same
    array as the cells one by one through pyarrow: absent images null, offsets rebased, a slice of a chunk too."""
    cases = [c for entry in MANIFEST for c in rows_cases(fixtures_dir / "mysql-binlog" / entry["path"])]
    assert cases
    impl = rows_encode.rows_encoder()
    assert impl is (encode_rows_event_c if twin.is_c else encode_rows_event_py)
    parts = []
    cells: list = []
    for case in cases:
        rows = case.run(impl, row_format=row_format)
        for side in (rows.before, rows.after):
            parts.append((rows.n, side))
            if side is None:
                cells += [None] * rows.n
            else:
                images = side.images()
                assert len(images) == rows.n and sum(map(len, images)) == len(side.data)
                cells += ([i.decode("utf-8") for i in images] if row_format == "json"
                          else list(zip(images, side.metadatas(), strict=True)))
    joined = join_cells(parts, row_format == "json")
    if row_format == "json":
        assert joined.equals(pa.array(cells, pa.string()))
    else:
        expected = variant_array([None if c is None else c[0] for c in cells],
                                 [b"" if c is None else c[1] for c in cells])
        assert joined.equals(expected)
    n, side = max(((n, side) for n, side in parts if side is not None), key=lambda p: p[0])
    assert n >= 2
    sliced = Chunk([], n, {0: side}, row_format == "json").rows(1, n).encoded[0]
    assert sliced.images() == side.images()[1:] and sliced.metadatas() == side.metadatas()[1:]


# ---- bad input made from real events ------------------------------------------------------------------------------

FULL_TRUNCATION_MAX = 3000  # events up to this size are cut at every length; larger ones at sampled lengths
SAMPLED_CUTS = 300
FLIPS_PER_EVENT = 120
RANDOM_TAILS_PER_EVENT = 60


@pytest.fixture(scope="module")
def fuzz_corpus(fixtures_dir, server_binlogs) -> list[RowsCase]:
    """Real rows events of many shapes: MySQL 5.7 v2 events, MySQL 8 events from a transaction payload, and
    MariaDB v1 events of the all-types / charset / wide tables (FULL and NO_LOG metadata, MINIMAL images,
    compressed rows events)."""
    corpus: list[RowsCase] = []
    for name in ("osheroff/mysql-bin.checksum-crc32", "apecloud/mysql-bin.000080", "osheroff/mysql-bin.compressed",
                 "easypost/bin-log.000001"):
        corpus += list(rows_cases(fixtures_dir / "mysql-binlog" / name))[:8]
    for name in ("full_metadata", "no_log_metadata", "minimal_image", "compressed", "extra_full",
                 "extra_minimal_compressed"):
        corpus += [c for path in server_binlogs[name] for c in rows_cases(path)]
    return corpus


def _cuts(case: RowsCase, rng: random.Random) -> list[int]:
    if len(case.body) <= FULL_TRUNCATION_MAX:
        return list(range(len(case.body)))
    return sorted(rng.sample(range(len(case.body)), SAMPLED_CUTS))


@pytest.mark.server
def test_every_truncation_agrees(fuzz_corpus):
    """Cut real events at every length: both implementations raise the same error or return the same rows."""
    rng = random.Random(3)
    kinds = {"ok": 0, "error": 0}
    for case in fuzz_corpus:
        for cut in _cuts(case, rng):
            kinds[assert_same(case, case.body[:cut])] += 1
    assert kinds["error"] > 1000 and kinds["ok"] > 0  # cuts between rows are valid, shorter events


@pytest.mark.server
def test_byte_flips_agree(fuzz_corpus):
    """Overwrite one to three bytes of real events with random values."""
    rng = random.Random(7)
    kinds = {"ok": 0, "error": 0}
    for case in fuzz_corpus:
        for _ in range(FLIPS_PER_EVENT):
            body = bytearray(case.body)
            for _ in range(rng.choice((1, 1, 2, 3))):
                body[rng.randrange(len(body))] = rng.randrange(256)
            kinds[assert_same(case, bytes(body))] += 1
    assert kinds["error"] > 100 and kinds["ok"] > 100


@pytest.mark.server
def test_random_row_data_agrees(fuzz_corpus):
    """Keep a real event's post-header and bitmaps, replace its row data with random bytes (the column bitmaps
    cleared now and then, the no-column image that must be an error rather than an endless loop)."""
    rng = random.Random(11)
    kinds = {"ok": 0, "error": 0}
    for case in fuzz_corpus:
        head = rows_head(case.type_code, case.body, post_header_len=case.post_header_len,
        table_id_size=case.table_id_size, table_maps=case.table_maps)
        for i in range(RANDOM_TAILS_PER_EVENT):
            prefix = bytearray(case.body[:head.pos])
            if i % 20 == 0:
                ncols = len(head.table_map.columns)
                start = head.pos - (ncols + 7) // 8 * (2 if head.op == "update" else 1)
                prefix[start:head.pos] = bytes(head.pos - start)
            tail = rng.randbytes(rng.randrange(0, 300))
            kinds[assert_same(case, bytes(prefix) + tail)] += 1
    assert kinds["error"] > 100 and kinds["ok"] > 10


def test_no_column_image_is_an_error_not_a_loop(fixtures_dir, twin: Twin):
    """A rows event whose columns-present bitmap is empty but that carries row data."""
    case = next(c for c in rows_cases(fixtures_dir / "mysql-binlog" / "osheroff/mysql-bin.checksum-crc32")
                if c.type_code == 30)
    head = rows_head(case.type_code, case.body, post_header_len=case.post_header_len,
        table_id_size=case.table_id_size, table_maps=case.table_maps)
    body = bytearray(case.body)
    width = (len(head.table_map.columns) + 7) // 8
    body[head.pos - width:head.pos] = bytes(width)
    with pytest.raises(CorruptDataError, match="row image without columns") as info:
        case.run(rows_encode.rows_encoder(), bytes(body))
    assert info.value.path == case.path and info.value.offset == case.pos + 19 + head.pos


def test_pure_python_switch(fixtures_dir, monkeypatch, twin: Twin):
    """encode_rows_event is the kernel unless SPARK_LOGSOURCE_PURE_PYTHON=1; both give the reference's rows."""
    case = next(rows_cases(fixtures_dir / "mysql-binlog" / "osheroff/mysql-bin.checksum-crc32"))
    calls = []
    real_c = rows_encode.encode_rows_event_c
    monkeypatch.setattr(rows_encode, "encode_rows_event_c", lambda *a, **k: calls.append("c") or real_c(*a, **k))
    got = case.run(rows_encode.encode_rows_event)
    assert calls == (["c"] if twin.is_c else []) and got == case.run(encode_rows_event_py) and got.n > 0
