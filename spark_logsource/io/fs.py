"""Finding and opening log files on local disk and in cloud storage, through ``pyarrow.fs``.

A path is either a local path (``/var/lib/tarantool``, ``/dbfs/...`` and ``/Volumes/...`` on Databricks are local
FUSE paths) or a URI that :func:`pyarrow.fs.FileSystem.from_uri` understands (``s3://``, ``gs://``, ``abfss://``,
``hdfs://``, ``file://``; S3 settings such as ``?endpoint_override=host:port&scheme=http`` ride in the query string).
A path may be a file, a directory, or a glob (``*``, ``?``, ``[...]`` in any component after the first).

What Databricks and Hadoop users write is mapped first (:func:`normalize_path`): ``dbfs:/x`` is the FUSE path
``/dbfs/x``, ``s3a://`` and ``s3n://`` are ``s3://``. A cloud file system that cannot be built or reached raises
:class:`StorageError`, naming the path (without its query string) and what to set.

Listing happens on the driver; workers re-open files by URI (file systems are not pickled: only strings travel).
"""

from __future__ import annotations

import fnmatch
import logging
import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from spark_logsource.errors import LogSourceError, StorageError

log = logging.getLogger(__name__)

_URI_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_GLOB_CHARS = re.compile(r"[*?\[]")


class PathNotFoundError(LogSourceError, FileNotFoundError):
    """A path given by the user matches no file."""


#: Hadoop's spellings of S3, read by pyarrow's S3 file system.
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3"}
#: What each cloud file system of pyarrow needs (the hint of a :class:`StorageError`).
_SETUP_HINTS = {
    "s3": "pyarrow's S3 file system takes AWS credentials from the environment (AWS_ACCESS_KEY_ID and "
          "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or an instance role) and settings from the URI's query string "
          "(?region=...; another endpoint: ?endpoint_override=host:port&scheme=http)",
    "gs": "pyarrow's GCS file system uses Google's default credentials (GOOGLE_APPLICATION_CREDENTIALS naming a "
          "service-account key file, or the metadata server of a Google Cloud machine)",
    "abfs": "name the account in the URI (abfss://container@account.dfs.core.windows.net/path); pyarrow's Azure "
            "file system authenticates with Azure's default credentials (AZURE_TENANT_ID, AZURE_CLIENT_ID and "
            "AZURE_CLIENT_SECRET, a workload or managed identity, or an az login; ?credential_kind= picks one); "
            "on Databricks a mounted or Unity Catalog path (/dbfs/mnt/..., /Volumes/...) needs none",
    "hdfs": "pyarrow's HDFS file system needs a JVM and libhdfs: set JAVA_HOME, HADOOP_HOME and "
            "CLASSPATH=$(hadoop classpath --glob)",
}
_SETUP_HINTS.update(gcs=_SETUP_HINTS["gs"], abfss=_SETUP_HINTS["abfs"], viewfs=_SETUP_HINTS["hdfs"])
_UNKNOWN_SCHEME_HINT = ("pyarrow reads s3:// (also written s3a://), gs://, abfs:// and abfss:// (for Azure "
                        "Blob Storage and ADLS Gen2), hdfs:// and file:// URIs; on Databricks a mounted or Unity "
                        "Catalog path (/dbfs/..., dbfs:/..., /Volumes/...) is read as a local file")


def normalize_path(path: str) -> str:
    """The path pyarrow opens for what a Databricks or Hadoop user writes: ``dbfs:/x`` → ``/dbfs/x`` (the DBFS
    FUSE mount of a Databricks cluster), ``s3a://b/k`` and ``s3n://b/k`` → ``s3://b/k``; others unchanged."""
    if path[:5].lower() == "dbfs:":
        return "/dbfs/" + path[5:].lstrip("/")
    scheme, sep, rest = path.partition("://")
    alias = _SCHEME_ALIASES.get(scheme.lower()) if sep else None
    return f"{alias}://{rest}" if alias else path


def _storage_error(path: str, scheme: str, exc: BaseException) -> StorageError:
    """Our error for pyarrow's ``exc`` about ``path``: its message without the query string, and a hint."""
    detail = str(exc).split("\n", 1)[0]
    full, shown = normalize_path(path), display_name(path)
    for spelling in (path, full):  # pyarrow may quote the whole URI, query string included
        detail = detail.replace(spelling, shown)
    query = split_query(full)[1][1:]
    if query:
        detail = detail.replace(query, "...")
    hint = _SETUP_HINTS.get(scheme, _UNKNOWN_SCHEME_HINT)
    return StorageError(shown, f"cannot open {scheme}:// storage: {detail}; {hint}")


@dataclass(frozen=True, slots=True, order=True)
class FileEntry:
    """One file to read: ``uri`` is what the user would recognise (and what the ``file`` column shows)."""

    uri: str
    size: int


def is_uri(path: str) -> bool:
    return bool(_URI_RE.match(path))


@dataclass(frozen=True, slots=True)
class Location:
    """A file system, a path inside it, and the way back from inner paths to user-facing URIs."""

    fs: pafs.FileSystem
    inner: str
    scheme: str  # "" for plain local paths
    authority: str
    query: str

    def uri_of(self, inner: str) -> str:
        """The user-facing spelling of ``inner`` (a path inside :attr:`fs`)."""
        if not self.scheme:
            return inner
        if self.scheme == "file":
            return "file://" + inner
        if self.scheme in ("s3", "gs", "gcs"):
            return f"{self.scheme}://{inner}{self.query}"
        if self.scheme in ("abfs", "abfss"):  # inner is container/path; authority is container@account...
            tail = inner.split("/", 1)[1] if "/" in inner else ""
            return f"{self.scheme}://{self.authority}/{tail}{self.query}"
        return f"{self.scheme}://{self.authority}{inner}{self.query}"  # hdfs, viewfs, ...


@lru_cache(maxsize=32)
def _filesystem_for(scheme: str, authority: str, query: str) -> pafs.FileSystem:
    # One file system per bucket/authority and settings: S3 region look-ups are slow, do them once.
    fs, _ = pafs.FileSystem.from_uri(f"{scheme}://{authority}/{query}")
    return fs


def locate(path: str) -> Location:
    """Where ``path`` (a local path or a URI; :func:`normalize_path` applies) lives."""
    user_path, path = path, normalize_path(path)
    if not is_uri(path):
        return Location(pafs.LocalFileSystem(), path, "", "", "")
    scheme, rest = path.split("://", 1)
    scheme = scheme.lower()
    rest, query = split_query(rest)
    if scheme == "file":
        return Location(pafs.LocalFileSystem(), "/" + rest.lstrip("/"), scheme, "", "")
    authority, _, tail = rest.partition("/")
    try:
        fs = _filesystem_for(scheme, authority, query)
    except (pa.ArrowException, OSError) as exc:  # ArrowInvalid is also a ValueError
        raise _storage_error(user_path, scheme, exc) from None
    if scheme in ("s3", "gs", "gcs"):
        inner = rest.rstrip("/") if tail else authority
    elif scheme in ("abfs", "abfss"):
        container = authority.split("@", 1)[0]
        inner = f"{container}/{tail}".rstrip("/")
    else:
        inner = "/" + tail
    return Location(fs, inner, scheme, authority, query)


def resolve(path: str) -> tuple[pafs.FileSystem, str]:
    """The file system holding ``path`` and the path inside it."""
    loc = locate(path)
    return loc.fs, loc.inner


def split_query(uri: str) -> tuple[str, str]:
    """``uri`` cut before its query string (file system settings, possibly credentials): ``("s3://b/k.xlog",
    "?region=x")``, or ``(uri, "")`` when it has none. The one place a URI's query is taken off or kept apart."""
    base, sep, query = uri.partition("?")
    return base, sep + query


def base_name(uri: str) -> str:
    """The file name of ``uri``, without its query string (``s3://b/wal/00000000000000000005.xlog?region=x`` →
    ``00000000000000000005.xlog``): what formats recognise their files by."""
    return posixpath.basename(split_query(uri)[0])


def display_name(uri: str) -> str:
    """``uri`` without its query string (S3 settings, possibly credentials) and with any secret of its authority
    (``abfs://container:KEY@account...``) masked: what the ``file`` column, logs and errors show."""
    if not is_uri(uri):
        return uri
    scheme, sep, rest = split_query(uri)[0].partition("://")
    authority, slash, path = rest.partition("/")
    userinfo, at, host = authority.rpartition("@")
    if at and ":" in userinfo:
        authority = f"{userinfo.split(':', 1)[0]}:***@{host}"
    return f"{scheme}{sep}{authority}{slash}{path}"


def _remote_call(loc: Location, path: str, call: Callable[[], Any]) -> Any:
    """``call()``, with a cloud file system's failures (not a missing file) raised as :class:`StorageError`."""
    try:
        return call()
    except FileNotFoundError:
        raise
    except (pa.ArrowException, OSError) as exc:
        if loc.scheme in ("", "file"):
            raise
        raise _storage_error(path, loc.scheme, exc) from None


def open_input(uri: str) -> pa.NativeFile:
    """A random-access, seekable file (``pyarrow.NativeFile``) for ``uri``."""
    loc = locate(uri)
    return _remote_call(loc, uri, lambda: loc.fs.open_input_file(loc.inner))


def list_files(
    paths: Iterable[str],
    *,
    accept_name: Callable[[str], bool] = lambda name: True,
    glob_filter: str | None = None,
    recursive: bool = False,
    warn_empty: bool = True,
) -> list[FileEntry]:
    """Expand ``paths`` into the files to read, sorted by URI and without duplicates.

    A file named explicitly is always read (``glob_filter`` still applies, as in Spark); files found by listing a
    directory or matching a glob are kept when ``accept_name(basename)`` says so, and hidden files (``.x``,
    ``_x``) found in directories are left out.
    Directories are listed one level deep unless ``recursive``; a directory giving no file to read is logged as
    a warning (naming its sub-directories when they were not searched) unless not ``warn_empty`` (a stream polling
    a directory says what it awaits itself). A path that matches nothing raises :class:`PathNotFoundError`.
    """
    found: dict[str, FileEntry] = {}
    for path in paths:
        entries = _expand_one(path, accept_name=accept_name, recursive=recursive, warn_empty=warn_empty)
        if glob_filter:
            entries = [e for e in entries if fnmatch.fnmatchcase(base_name(e.uri), glob_filter)]
        for entry in entries:
            found[entry.uri] = entry
    return sorted(found.values())


def _not_found(user_path: str, path: str, what: str = "path does not exist") -> PathNotFoundError:
    mapped = f" (looked for {path}, the DBFS mount of a Databricks cluster)" if user_path != path and \
        path.startswith("/dbfs/") else ""
    return PathNotFoundError(f"{what}: {display_name(user_path)}{mapped}")


def _expand_one(user_path: str, *, accept_name: Callable[[str], bool], recursive: bool,
                warn_empty: bool = True) -> list[FileEntry]:
    path = normalize_path(user_path)
    loc = locate(path)
    if _GLOB_CHARS.search(loc.inner):
        return _expand_glob(path, loc, accept_name=accept_name)
    info = _remote_call(loc, path, lambda: loc.fs.get_file_info(loc.inner))
    if info.type == pafs.FileType.NotFound:
        raise _not_found(user_path, path)
    if info.type == pafs.FileType.File:
        return [FileEntry(path, info.size)]
    base = loc.inner.rstrip("/")
    out = []
    sub_dirs = []
    children = _remote_call(loc, path, lambda: loc.fs.get_file_info(pafs.FileSelector(loc.inner, recursive=recursive)))
    for child in children:
        if child.type == pafs.FileType.Directory and not child.base_name.startswith((".", "_")):
            sub_dirs.append(child.base_name)
        if child.type != pafs.FileType.File:
            continue
        rel = child.path[len(base) + 1:] if child.path.startswith(base + "/") else child.base_name
        if any(part.startswith((".", "_")) for part in rel.split("/")):
            continue
        if accept_name(child.base_name):
            out.append(FileEntry(loc.uri_of(child.path), child.size))
    if not out and warn_empty:
        _warn_nothing_in(user_path, sorted(sub_dirs), recursive)
    return out


def _warn_nothing_in(path: str, sub_dirs: list[str], recursive: bool) -> None:
    """A directory gave no file: say so (the read is empty), and name what was not searched."""
    if sub_dirs and not recursive:
        shown = ", ".join(sub_dirs[:5]) + (f" and {len(sub_dirs) - 5} more" if len(sub_dirs) > 5 else "")
        one = len(sub_dirs) == 1
        log.warning("%s: no log file at its top level, and its %d sub-director%s (%s) %s not searched: set the "
                    "option recursiveFileLookup=true to read %s", display_name(path), len(sub_dirs),
                    "y" if one else "ies", shown, "was" if one else "were", "it" if one else "them")
    else:
        log.warning("%s: no file to read in this directory%s", display_name(path),
                    " or below it" if recursive else "")


def _expand_glob(path: str, loc: Location, *, accept_name: Callable[[str], bool]) -> list[FileEntry]:
    parts = loc.inner.split("/")
    first_glob = next(i for i, p in enumerate(parts) if _GLOB_CHARS.search(p))
    base = "/".join(parts[:first_glob]) or "/"
    try:
        children = _remote_call(loc, path, lambda: loc.fs.get_file_info(
            pafs.FileSelector(base, recursive=len(parts) - first_glob > 1)))
    except FileNotFoundError:
        raise PathNotFoundError(f"path does not exist: {display_name(path)}") from None
    pattern = loc.inner
    out = [
        FileEntry(loc.uri_of(child.path), child.size)
        for child in children
        if child.type == pafs.FileType.File and fnmatch.fnmatchcase(child.path, pattern)
        and child.path.count("/") == pattern.count("/") and accept_name(child.base_name)
    ]
    if not out:
        raise PathNotFoundError(f"no file matches {display_name(path)}")
    return out
