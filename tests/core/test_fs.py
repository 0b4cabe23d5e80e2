"""File listing and opening through pyarrow.fs: local paths, file:// URIs, globs, and S3 on a loopback server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spark_logsource.io.fs import PathNotFoundError, display_name, list_files, open_input
from tests.support.waiting import STATE_TIMEOUT


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    for rel in ["a.xlog", "b.snap", "notes.txt", ".hidden.xlog", "_tmp.xlog", "sub/c.xlog", "sub/deeper/d.xlog",
                "_skipdir/e.xlog"]:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(rel.encode())
    return tmp_path


def _names(entries) -> list[str]:
    return [e.uri.split("/", 3)[-1] if e.uri.startswith("s3://") else os.path.basename(e.uri) for e in entries]


def test_directory_lists_one_level_without_hidden_files(tree: Path) -> None:
    got = list_files([str(tree)], accept_name=lambda n: n.endswith((".xlog", ".snap")))
    assert [Path(e.uri).name for e in got] == ["a.xlog", "b.snap"]
    assert got[0].size == len(b"a.xlog")


def test_recursive_lookup_skips_hidden_directories(tree: Path) -> None:
    got = list_files([str(tree)], accept_name=lambda n: n.endswith(".xlog"), recursive=True)
    assert sorted(Path(e.uri).relative_to(tree).as_posix() for e in got) == [
        "a.xlog", "sub/c.xlog", "sub/deeper/d.xlog"]


def test_glob_in_several_components(tree: Path) -> None:
    got = list_files([str(tree / "s*" / "*.xlog")])
    assert [Path(e.uri).relative_to(tree).as_posix() for e in got] == ["sub/c.xlog"]


def test_explicit_file_is_read_whatever_its_name_and_glob_filter_applies(tree: Path) -> None:
    assert [e.uri for e in list_files([str(tree / "notes.txt")], accept_name=lambda n: False)] == [
        str(tree / "notes.txt")]
    assert list_files([str(tree / "notes.txt"), str(tree / "a.xlog")], glob_filter="*.xlog")[0].uri.endswith(
        "a.xlog")


def test_duplicates_collapse_and_order_is_by_uri(tree: Path) -> None:
    got = list_files([str(tree / "b.snap"), str(tree / "a.xlog"), str(tree / "a.xlog")])
    assert [Path(e.uri).name for e in got] == ["a.xlog", "b.snap"]


def test_file_uri(tree: Path) -> None:
    got = list_files([f"file://{tree}"], accept_name=lambda n: n.endswith(".xlog"))
    assert [e.uri for e in got] == [f"file://{tree}/a.xlog"]
    with open_input(got[0].uri) as f:
        assert f.read() == b"a.xlog"


def test_missing_path_and_empty_glob_raise(tree: Path) -> None:
    with pytest.raises(PathNotFoundError, match="does not exist"):
        list_files([str(tree / "nope")])
    with pytest.raises(PathNotFoundError, match="no file matches"):
        list_files([str(tree / "*.nothing")])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def s3_endpoint():
    """A moto S3 server on loopback (real HTTP S3 protocol, local only)."""
    port = _free_port()
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + STATE_TIMEOUT  # a loaded machine imports moto slowly
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("moto S3 server did not start")
    old = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_EC2_METADATA_DISABLED")}
    os.environ.update(AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_EC2_METADATA_DISABLED="true")
    try:
        yield f"127.0.0.1:{port}"
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        proc.kill()
        proc.wait()


def put_s3(endpoint: str, bucket: str, objects: dict[str, bytes]) -> None:
    import boto3

    client = boto3.client("s3", endpoint_url=f"http://{endpoint}", region_name="us-east-1",
                          aws_access_key_id="test", aws_secret_access_key="test")
    client.create_bucket(Bucket=bucket)
    for key, body in objects.items():
        client.put_object(Bucket=bucket, Key=key, Body=body)


def test_s3_directory_glob_and_read(s3_endpoint: str) -> None:
    put_s3(s3_endpoint, "logs", {"wal/1.xlog": b"one", "wal/2.xlog": b"two", "wal/x/3.xlog": b"three",
                                 "wal/readme": b"r"})
    q = f"?endpoint_override={s3_endpoint}&scheme=http&region=us-east-1"
    got = list_files([f"s3://logs/wal{q}"], accept_name=lambda n: n.endswith(".xlog"))
    assert [e.uri for e in got] == [f"s3://logs/wal/1.xlog{q}", f"s3://logs/wal/2.xlog{q}"]
    assert [display_name(e.uri) for e in got] == ["s3://logs/wal/1.xlog", "s3://logs/wal/2.xlog"]
    assert [e.uri for e in list_files([f"s3://logs/wal/*/*.xlog{q}"])] == [f"s3://logs/wal/x/3.xlog{q}"]
    with open_input(got[1].uri) as f:
        assert f.read() == b"two"


# --- what Databricks and Hadoop users write, and errors that say what to set (issue #21) ------------------------
def test_dbfs_and_s3a_spellings_name_what_pyarrow_opens() -> None:
    from spark_logsource.io.fs import normalize_path

    assert normalize_path("dbfs:/mnt/logs/wal") == "/dbfs/mnt/logs/wal"
    assert normalize_path("dbfs:///Volumes/main/logs") == "/dbfs/Volumes/main/logs"
    assert normalize_path("s3a://logs/wal?region=us-east-1") == "s3://logs/wal?region=us-east-1"
    assert normalize_path("S3N://logs/wal") == "s3://logs/wal"
    assert normalize_path("/var/lib/tarantool") == "/var/lib/tarantool"
    assert normalize_path("gs://bucket/x") == "gs://bucket/x"


def test_dbfs_path_outside_databricks_names_the_mount_it_looked_in() -> None:
    with pytest.raises(PathNotFoundError) as info:
        list_files(["dbfs:/no/such/dir-for-spark-logsource"])
    assert "dbfs:/no/such/dir-for-spark-logsource" in str(info.value)
    assert "/dbfs/no/such/dir-for-spark-logsource" in str(info.value)


def test_s3a_uri_lists_and_reads_like_s3(s3_endpoint: str) -> None:
    put_s3(s3_endpoint, "hadoop", {"wal/1.xlog": b"one"})
    q = f"?endpoint_override={s3_endpoint}&scheme=http&region=us-east-1"
    got = list_files([f"s3a://hadoop/wal{q}"], accept_name=lambda n: n.endswith(".xlog"))
    assert [display_name(e.uri) for e in got] == ["s3://hadoop/wal/1.xlog"]
    with open_input(f"s3a://hadoop/wal/1.xlog{q}") as f:
        assert f.read() == b"one"


@pytest.mark.parametrize(("uri", "hint"), [
    ("abfss://logs/wal", "container@account"),  # no account: pyarrow cannot even build the file system
    ("wasbs://logs@acct.blob.core.windows.net/wal", "abfss://"),  # a scheme pyarrow does not read
    ("s3://logs/wal?no_such_setting=secretvalue", "endpoint_override"),
])
def test_storage_errors_name_the_path_and_what_to_set(uri: str, hint: str) -> None:
    from spark_logsource import StorageError
    from spark_logsource.errors import LogSourceError

    with pytest.raises(StorageError) as info:
        list_files([uri])
    assert isinstance(info.value, LogSourceError)
    message = str(info.value)
    assert display_name(uri) in message and hint in message
    assert "secretvalue" not in message, "a query string may hold credentials: never in a message"


def test_unreachable_s3_endpoint_is_our_error_and_does_not_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    from spark_logsource import StorageError

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    uri = f"s3://logs/wal?endpoint_override=127.0.0.1:{_free_port()}&scheme=http&region=us-east-1"
    started = time.monotonic()
    with pytest.raises(StorageError) as info:
        list_files([uri])
    assert time.monotonic() - started < 60, "a refused connection must fail, not hang"
    assert "s3://logs/wal" in str(info.value) and "AWS_ACCESS_KEY_ID" in str(info.value)
    assert "endpoint_override" in str(info.value)


def test_azure_without_credentials_is_our_error_naming_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    from spark_logsource import StorageError

    for name in ("AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    uri = "abfss://logs@nosuchaccount.dfs.core.windows.net/wal"
    with pytest.raises(StorageError) as info:
        list_files([uri])
    message = str(info.value)
    assert uri in message and "AZURE_CLIENT_SECRET" in message and "/Volumes/" in message


# --- directories with nothing to read (issue #21) ----------------------------------------------------------------
def test_directory_of_sub_directories_warns_they_were_not_searched(tree: Path, caplog) -> None:
    (tree / "a.xlog").unlink()
    (tree / "b.snap").unlink()
    with caplog.at_level("WARNING", logger="spark_logsource.io.fs"):
        assert list_files([str(tree)], accept_name=lambda n: n.endswith(".xlog")) == []
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1
    assert str(tree) in warnings[0] and "recursiveFileLookup" in warnings[0] and "sub" in warnings[0]
    caplog.clear()
    with caplog.at_level("WARNING", logger="spark_logsource.io.fs"):
        assert len(list_files([str(tree)], accept_name=lambda n: n.endswith(".xlog"), recursive=True)) == 2
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


def test_empty_directory_warns_it_holds_nothing(tmp_path: Path, caplog) -> None:
    with caplog.at_level("WARNING", logger="spark_logsource.io.fs"):
        assert list_files([str(tmp_path)]) == []
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and str(tmp_path) in warnings[0] and "no file" in warnings[0]


def test_a_secret_in_a_uri_is_never_shown() -> None:
    """An account key in a URI's authority (``abfs://container:KEY@account``) or a query string is masked in what
    the file column, logs and errors show; a path that merely holds ``:`` and ``@`` is left as it is."""
    from spark_logsource.io.fs import display_name

    assert display_name("abfs://c:KEY@acct.dfs.core.windows.net/x/y?sas=TOKEN") == \
        "abfs://c:***@acct.dfs.core.windows.net/x/y"
    assert display_name("s3://bucket/a:b@c/d?secret_key=S") == "s3://bucket/a:b@c/d"
    assert display_name("abfss://c@acct/x") == "abfss://c@acct/x"
    assert display_name("/local/a:b@c") == "/local/a:b@c"
