"""Finding and opening log files on local disk and in cloud storage, through ``pyarrow.fs``.

A path is either a local path (``/var/lib/tarantool``, ``/dbfs/...`` and ``/Volumes/...`` on Databricks are local
FUSE paths) or a URI that :func:`pyarrow.fs.FileSystem.from_uri` understands (``s3://``, ``gs://``, ``abfss://``,
``hdfs://``, ``file://``; S3 settings such as ``?endpoint_override=host:port&scheme=http`` ride in the query string).
A path may be a file, a directory, or a glob (``*``, ``?``, ``[...]`` in any component after the first).

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

import pyarrow.fs as pafs

from spark_logsource.errors import LogSourceError

log = logging.getLogger(__name__)

_URI_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_GLOB_CHARS = re.compile(r"[*?\[]")


class PathNotFoundError(LogSourceError, FileNotFoundError):
    """A path given by the user matches no file."""


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
    """Where ``path`` (a local path or a URI) lives."""
    if not is_uri(path):
        return Location(pafs.LocalFileSystem(), path, "", "", "")
    scheme, rest = path.split("://", 1)
    scheme = scheme.lower()
    query = ""
    if "?" in rest:
        rest, query = rest.split("?", 1)
        query = "?" + query
    if scheme == "file":
        return Location(pafs.LocalFileSystem(), "/" + rest.lstrip("/"), scheme, "", "")
    authority, _, tail = rest.partition("/")
    fs = _filesystem_for(scheme, authority, query)
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


def display_name(uri: str) -> str:
    """``uri`` without its query string (S3 settings, possibly credentials): what the ``file`` column shows."""
    return uri.split("?", 1)[0] if is_uri(uri) else uri


def open_input(uri: str):
    """A random-access, seekable file (``pyarrow.NativeFile``) for ``uri``."""
    fs, inner = resolve(uri)
    return fs.open_input_file(inner)


def list_files(
    paths: Iterable[str],
    *,
    accept_name: Callable[[str], bool] = lambda name: True,
    glob_filter: str | None = None,
    recursive: bool = False,
) -> list[FileEntry]:
    """Expand ``paths`` into the files to read, sorted by URI and without duplicates.

    A file named explicitly is always read (``glob_filter`` still applies, as in Spark); files found by listing a
    directory or matching a glob are kept when ``accept_name(basename)`` says so, and hidden files (``.x``,
    ``_x``) found in directories are left out.
    Directories are listed one level deep unless ``recursive``. A path that matches nothing raises
    :class:`PathNotFoundError`.
    """
    found: dict[str, FileEntry] = {}
    for path in paths:
        entries = _expand_one(path, accept_name=accept_name, recursive=recursive)
        if glob_filter:
            entries = [e for e in entries if fnmatch.fnmatchcase(posixpath.basename(e.uri.split("?")[0]), glob_filter)]
        for entry in entries:
            found[entry.uri] = entry
    return sorted(found.values())


def _expand_one(path: str, *, accept_name: Callable[[str], bool], recursive: bool) -> list[FileEntry]:
    loc = locate(path)
    if _GLOB_CHARS.search(loc.inner):
        return _expand_glob(path, loc, accept_name=accept_name)
    info = loc.fs.get_file_info(loc.inner)
    if info.type == pafs.FileType.NotFound:
        raise PathNotFoundError(f"path does not exist: {path}")
    if info.type == pafs.FileType.File:
        return [FileEntry(path, info.size)]
    base = loc.inner.rstrip("/")
    out = []
    for child in loc.fs.get_file_info(pafs.FileSelector(loc.inner, recursive=recursive)):
        if child.type != pafs.FileType.File:
            continue
        rel = child.path[len(base) + 1:] if child.path.startswith(base + "/") else child.base_name
        if any(part.startswith((".", "_")) for part in rel.split("/")):
            continue
        if accept_name(child.base_name):
            out.append(FileEntry(loc.uri_of(child.path), child.size))
    return out


def _expand_glob(path: str, loc: Location, *, accept_name: Callable[[str], bool]) -> list[FileEntry]:
    parts = loc.inner.split("/")
    first_glob = next(i for i, p in enumerate(parts) if _GLOB_CHARS.search(p))
    base = "/".join(parts[:first_glob]) or "/"
    try:
        children = loc.fs.get_file_info(pafs.FileSelector(base, recursive=len(parts) - first_glob > 1))
    except FileNotFoundError:
        raise PathNotFoundError(f"path does not exist: {path}") from None
    pattern = loc.inner
    out = [
        FileEntry(loc.uri_of(child.path), child.size)
        for child in children
        if child.type == pafs.FileType.File and fnmatch.fnmatchcase(child.path, pattern)
        and child.path.count("/") == pattern.count("/") and accept_name(child.base_name)
    ]
    if not out:
        raise PathNotFoundError(f"no file matches {path}")
    return out
