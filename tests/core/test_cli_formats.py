"""The command line names no format: each format brings its flags, file sniffing and live URI schemes.

End to end (``python -m spark_logsource.cli cat``, no ``--source``) on files real servers wrote (memcached TAP
captures) and on the YugabyteDB segment fixtures, compared with what ``spark_logsource.read`` returns.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

import pytest

import spark_logsource
from spark_logsource.arrow.columns import variant_type
from spark_logsource.cli import build_parser, main
from spark_logsource.cli.formats import add_format_flags, live_format, registered_formats, sniff_format
from spark_logsource.logformat import CliFlag, LogFormat
from spark_logsource.registry import FORMATS
from tests.support.cli_follow import FollowProcess

REPO = Path(__file__).resolve().parents[2]
CLI_DIR = REPO / "spark_logsource" / "cli"
FIXTURES = REPO / "tests" / "fixtures"
TAP = FIXTURES / "memcached-tap"
YB = FIXTURES / "yugabyte-wal" / "wals"
YB_TABLET = YB / "table-00004000000030008000000000004006" / "tablet-0ef519ec7d021ffe4b8acc079f7fce21"

#: A real file of each format that sniffs files (written by the databases, or for YugabyteDB the synthesized set).
SAMPLES = {
    "tarantool-xlog": FIXTURES / "tarantool" / "src" / "box" / "bootstrap.snap",
    "mysql-binlog": FIXTURES / "mysql-binlog" / "easypost" / "bin-log.000001",
    "memcached-tap": TAP / "couchbase-1.8.1-backfill_ack_ckpt_live.tap",
    "yugabyte-wal": YB_TABLET / "wal-000000001",
}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spark_logsource.cli", *args], capture_output=True, text=True,
                          timeout=300, cwd=REPO)


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# --- the CLI source names no format -----------------------------------------------------------------------------
def test_cli_source_names_no_format() -> None:
    words = set(FORMATS)
    for cls in registered_formats():
        words.add(cls.name.split("-")[0])  # the database: tarantool, mysql, ...
        words.update(cls.uri_schemes)
    sources = sorted(CLI_DIR.glob("*.py"))
    assert {p.name for p in sources} >= {"__init__.py", "__main__.py", "formats.py", "output.py", "cat.py",
                                         "sql.py", "follow.py"}
    found = []
    for path in sources:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            found += [f"{path.name}:{n}: {w}" for w in words if re.search(rf"\b{re.escape(w)}\b", line, re.I)]
    assert found == []
    assert not (REPO / "spark_logsource" / "cli.py").exists()


# --- sniffing -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_real_file_is_recognised_by_its_format_only(name: str) -> None:
    path = SAMPLES[name]
    head = path.read_bytes()[:16]
    by_content = [cls.name for cls in registered_formats() if cls.sniff("unnamed", head)]
    by_both = [cls.name for cls in registered_formats() if cls.sniff(path.name, head)]
    assert by_content == [name]
    assert by_both == [name]
    assert sniff_format([str(path)]).name == name


def test_every_tap_capture_is_recognised_by_its_bytes() -> None:
    """Every capture starts as a TAP server's stream does, a refused TAP_CONNECT included (engine-pu-takeover)."""
    captures = sorted(TAP.glob("*.tap"))
    assert len(captures) >= 10
    for path in captures:
        head = path.read_bytes()[:16]
        assert [cls.name for cls in registered_formats() if cls.sniff("unnamed", head)] == ["memcached-tap"], path


def test_a_directory_is_recognised_past_files_no_format_claims() -> None:
    """The fixture folders hold README.md and *.expected.jsonl beside the data: sniffing goes past them."""
    assert sniff_format([str(TAP)]).name == "memcached-tap"
    assert sniff_format([str(YB)]).name == "yugabyte-wal"


def test_unknown_files_ask_for_source(capsys) -> None:
    assert main(["cat", str(FIXTURES / "README.md")]) == 2
    err = capsys.readouterr().err
    assert "use --source" in err and all(name in err for name in FORMATS)


# --- live URIs ----------------------------------------------------------------------------------------------------
def test_live_uris_pick_the_format_declaring_the_scheme() -> None:
    for cls in registered_formats():
        for scheme in cls.uri_schemes:
            claimed = [c for c in registered_formats() if scheme in c.uri_schemes]
            assert live_format(f"{scheme.upper()}://user@host:1", "cat") is claimed[0]
            followers = [c for c in claimed if c.can_follow]
            assert live_format(f"{scheme}://host:1", "follow") is (followers[0] if followers else None)
    assert live_format("/var/lib/db", "cat") is None
    assert live_format("s3://bucket/wal", "cat") is None  # a file system, not a server: files are sniffed
    assert any(cls.can_follow and cls.uri_schemes for cls in registered_formats())


# --- flags and --help ---------------------------------------------------------------------------------------------
def help_text(*args: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[args[0]].format_help()


@pytest.mark.parametrize("command", ["cat", "follow"])
def test_help_lists_each_formats_group(command: str) -> None:
    text = help_text(command)
    for cls in registered_formats():
        flags = [f for f in cls.cli_flags if command in f.commands]
        if not flags:
            continue
        assert f"\n{cls.cli_title}:\n" in text, cls.name
        for flag in flags:
            assert flag.flag in text


def test_help_through_the_console_entry_point() -> None:
    done = cli("cat", "--help")
    assert done.returncode == 0, done.stderr
    assert all(f"{cls.cli_title}:" in done.stdout for cls in registered_formats() if cls.cli_flags)


def test_formats_sharing_a_flag_must_give_it_one_meaning() -> None:
    class A(LogFormat):
        name = "a"
        cli_title = "a"
        cli_flags = (CliFlag("--thing", "thingId", type=int),)

    class B(A):
        name = "b"
        cli_title = "b"

    class C(A):
        name = "c"
        cli_flags: ClassVar = (CliFlag("--thing", "otherThing", type=int),)

    shared = add_format_flags(argparse.ArgumentParser(), "cat", [A, B])
    assert [(f.flag.flag, f.formats) for f in shared] == [("--thing", ("a", "b"))]
    with pytest.raises(TypeError, match="one meaning"):
        add_format_flags(argparse.ArgumentParser(), "cat", [A, C])


def test_every_registered_format_builds_into_the_parser() -> None:
    """No two formats give one flag different meanings, and no flag hides a subcommand's own option."""
    parser = build_parser()
    args = parser.parse_args(["cat", "x"])
    declared = {f.flag for cls in registered_formats() for f in cls.cli_flags if "cat" in f.commands}
    assert {s.flag.flag for s in args.format_flags} == declared


def test_a_flag_of_another_format_is_an_error(capsys) -> None:
    assert main(["cat", str(YB), "--space", "512"]) == 2
    err = capsys.readouterr().err
    assert "--space does not apply to yugabyte-wal" in err and "--tablet-id" in err


# --- cat end to end -------------------------------------------------------------------------------------------------
def test_cat_memcached_capture_by_sniffing_equals_the_arrow_api() -> None:
    path = SAMPLES["memcached-tap"]
    done = cli("cat", str(path))
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json_lines(done.stdout)
    table = spark_logsource.read("memcached-tap", str(path))
    assert len(rows) == table.num_rows > 10
    want = table.select(["offset", "seq", "opcode", "vbucket", "key", "flags", "cas", "checkpoint_id"]).to_pylist()
    assert [{k: r[k] for k in w} for r, w in zip(rows, want, strict=True)] == want
    values = table.column("value").to_pylist()
    assert [r["value"] for r in rows] == [None if v is None else base64.b64encode(v).decode() for v in values]
    assert {"MUTATION", "DELETE", "CHECKPOINT_START"} <= {r["opcode"] for r in rows}


def test_cat_memcached_capture_recognised_by_content(tmp_path: Path) -> None:
    """The same capture under a name without ``.tap``: recognised by its first packet header alone."""
    copy = tmp_path / "capture.bin"
    copy.write_bytes(SAMPLES["memcached-tap"].read_bytes())
    done = cli("cat", str(copy), "--format", "yaml")
    assert done.returncode == 0, done.stderr[-3000:]
    import yaml

    docs = list(yaml.safe_load_all(done.stdout))
    table = spark_logsource.read("memcached-tap", str(copy))
    assert [(d["offset"], d["key"], d["cas"]) for d in docs] == list(zip(
        table.column("offset").to_pylist(), table.column("key").to_pylist(), table.column("cas").to_pylist(),
        strict=True))


def test_cat_yugabyte_segment_by_sniffing_prints_json_values() -> None:
    path = SAMPLES["yugabyte-wal"]
    done = cli("cat", str(path))
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json_lines(done.stdout)
    table = spark_logsource.read("yugabyte-wal", str(path), valueFormat="json")
    assert len(rows) == table.num_rows > 3
    want = table.select(["offset", "term", "index", "op_type", "hybrid_time", "tablet_id"]).to_pylist()
    assert [{k: r[k] for k in w} for r, w in zip(rows, want, strict=True)] == want
    # details are nested JSON in the output, equal to the reader's JSON text
    assert [r["details"] for r in rows] == [json.loads(t) for t in table.column("details").to_pylist()]
    assert all(isinstance(r["details"], dict) for r in rows)


def test_cat_yugabyte_directory_with_its_flags_equals_the_arrow_api() -> None:
    table_id = "00004000000030008000000000004006"
    done = cli("cat", str(YB), "--table-id", table_id, "--from-index", "2", "--option", "view=writes")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json_lines(done.stdout)
    table = spark_logsource.read("yugabyte-wal", str(YB), view="writes", valueFormat="json", tableId=table_id,
                                 fromIndex=2)
    assert len(rows) == table.num_rows > 0
    assert {r["table_id"] for r in rows} == {table_id}
    assert [(r["tablet_id"], r["index"], r["pair_index"]) for r in rows] == list(zip(
        table.column("tablet_id").to_pylist(), table.column("index").to_pylist(),
        table.column("pair_index").to_pylist(), strict=True))
    texts = table.column("value").to_pylist()
    assert [r["value"] for r in rows] == [None if t is None else json.loads(t) for t in texts]
    assert any(isinstance(r["value"], dict) and r["value"] for r in rows)

    done = cli("cat", str(YB), "--op-type", "write", "--tablet-id", YB_TABLET.name.split("-", 1)[1],
               "--to-index", "5")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json_lines(done.stdout)
    table = spark_logsource.read("yugabyte-wal", str(YB), valueFormat="json", opTypes="WRITE_OP",
                                 tabletId=YB_TABLET.name.split("-", 1)[1], toIndex=5)
    assert [(r["index"], r["op_type"]) for r in rows] == list(zip(
        table.column("index").to_pylist(), table.column("op_type").to_pylist(), strict=True))
    assert len(rows) > 0 and {r["op_type"] for r in rows} == {"WRITE_OP"} and max(r["index"] for r in rows) < 5


def test_text_options_yield_to_the_users_options() -> None:
    """``--option valueFormat=variant`` wins over the format's text option: the variants are decoded for printing
    and hold the same top-level fields as the JSON text the CLI asks for by default."""
    path = SAMPLES["yugabyte-wal"]
    done = cli("cat", str(path), "--option", "valueFormat=variant")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json_lines(done.stdout)
    assert spark_logsource.read("yugabyte-wal", str(path)).schema.field("details").type == variant_type()
    texts = spark_logsource.read("yugabyte-wal", str(path), valueFormat="json").column("details").to_pylist()
    assert len(rows) == len(texts) > 3
    assert [sorted(r["details"]) for r in rows] == [sorted(json.loads(t)) for t in texts]


# --- follow -------------------------------------------------------------------------------------------------------
def test_follow_a_wal_directory_found_by_sniffing_then_ctrl_c() -> None:
    """``follow`` of the segment folders prints what the batch reader reads, then ends cleanly on Ctrl-C."""
    want = spark_logsource.read("yugabyte-wal", str(YB), valueFormat="json")
    with FollowProcess([sys.executable, "-m", "spark_logsource.cli", "follow", str(YB), "--interval", "0.1"]) as follow:
        follow.wait_for(want.num_rows)
        code, err = follow.interrupt()
    assert code == 0, err[-3000:]
    assert "Traceback" not in err and "resume with --from '" in err
    rows = [json.loads(line) for line in follow.lines]
    def ident(r: dict[str, Any], details: Any) -> tuple[Any, ...]:
        return r["tablet_id"], r["index"], r["op_type"], r["_corrupt_record"], json.dumps(details, sort_keys=True)

    got = Counter(ident(r, r["details"]) for r in rows)
    expected = Counter(ident(r, r["details"] and json.loads(r["details"])) for r in want.to_pylist())
    assert len(rows) == want.num_rows > 3
    assert got == expected
