"""The text meta header at the start of every Tarantool xlog/snap/vylog/run/index file.

Layout (tarantool ``src/box/xlog.c`` ``xlog_meta_parse``, ``docs/formats/tarantool-xlog.md`` "Meta header")::

    XLOG\\n                       file type: XLOG, SNAP, VYLOG, RUN or INDEX
    0.13\\n                       format version: 0.12 (1.6) or 0.13 (1.7+)
    Version: 2.6.0-...\\n         optional (1.7.4+)
    Instance: <uuid>\\n           or "Server: <uuid>" before 1.7.4
    VClock: {1: 3016, 2: 7}\\n
    PrevVClock: {1: 3000}\\n      optional (1.10.2+, xlogs only)
    \\n                           an empty line ends the header; blocks follow

Unknown keys are ignored, as Tarantool does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from spark_logsource.errors import CorruptDataError, TruncatedDataError, UnsupportedDataError

__all__ = ["FILE_TYPES", "MAX_META_BYTES", "XlogMeta", "parse_meta", "parse_vclock", "read_meta"]

FILE_TYPES = ("XLOG", "SNAP", "VYLOG", "RUN", "INDEX")
FORMAT_VERSIONS = ("0.12", "0.13")
#: The header is ~200 bytes plus the vclock text (≤ 32 components); anything longer is not a meta header.
MAX_META_BYTES = 8192
_VCLOCK_ITEM = re.compile(r"\s*(\d+)\s*:\s*(\d+)\s*")


@dataclass(frozen=True)
class XlogMeta:
    """What the meta header says; ``data_offset`` is the file offset of the first block."""

    file_type: str
    version: str
    server_version: str | None
    instance_uuid: str | None
    vclock: dict[int, int]
    prev_vclock: dict[int, int] | None
    data_offset: int


def parse_vclock(text: str, path: str, offset: int) -> dict[int, int]:
    """``{1: 3016, 2: 7}`` → ``{1: 3016, 2: 7}``; ``{}`` → ``{}``."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise CorruptDataError(path, offset, f"bad vclock {text!r} in the meta header")
    inner = body[1:-1].strip()
    vclock: dict[int, int] = {}
    if not inner:
        return vclock
    for item in inner.split(","):
        match = _VCLOCK_ITEM.fullmatch(item)
        if match is None:
            raise CorruptDataError(path, offset, f"bad vclock {text!r} in the meta header")
        vclock[int(match.group(1))] = int(match.group(2))
    return vclock


def parse_meta(data: bytes, path: str) -> XlogMeta:
    """Parse a meta header from the first bytes of a file (at least up to and including its empty line)."""
    end = data.find(b"\n\n")
    if end < 0:
        if len(data) >= MAX_META_BYTES:
            raise CorruptDataError(path, 0, f"no end of the meta header in the first {MAX_META_BYTES} bytes")
        raise TruncatedDataError(path, 0, "the file ends inside its meta header")
    try:
        text = data[: end + 1].decode("utf-8")
    except UnicodeDecodeError:
        raise CorruptDataError(path, 0, "the meta header is not text") from None
    lines = text.split("\n")[:-1]
    if len(lines) < 2:
        raise CorruptDataError(path, 0, "the meta header lacks its file type or version line")
    file_type, version = lines[0], lines[1]
    if file_type not in FILE_TYPES:
        raise UnsupportedDataError(path, 0, f"unknown file type {file_type[:40]!r}")
    if version not in FORMAT_VERSIONS:
        raise UnsupportedDataError(path, len(file_type) + 1, f"unsupported file format version {version[:40]!r}")
    fields: dict[str, Any] = {}
    line_offset = len(file_type) + len(version) + 2
    for line in lines[2:]:
        key, sep, value = line.partition(":")
        if not sep:
            raise CorruptDataError(path, line_offset, f"bad meta header line {line[:80]!r}")
        key = key.strip()
        value = value.strip()
        if key in ("VClock", "PrevVClock"):
            fields[key] = parse_vclock(value, path, line_offset)
        else:
            fields[key] = value
        line_offset += len(line.encode("utf-8")) + 1
    if "VClock" not in fields and version == "0.13":
        raise CorruptDataError(path, 0, "the meta header has no VClock")
    return XlogMeta(
        file_type=file_type,
        version=version,
        server_version=fields.get("Version"),
        instance_uuid=fields.get("Instance", fields.get("Server")),
        vclock=fields.get("VClock", {}),
        prev_vclock=fields.get("PrevVClock"),
        data_offset=end + 2,
    )


def read_meta(source: Any, path: str) -> XlogMeta:
    """Read and parse the meta header of ``source`` (an object with ``seek``/``read``); reads ≤ 8 KiB."""
    source.seek(0)
    data = b""
    while len(data) < MAX_META_BYTES:
        chunk = source.read(min(1024, MAX_META_BYTES - len(data)))
        if not chunk:
            break
        data += bytes(chunk)
        if b"\n\n" in data:
            break
    return parse_meta(data, path)
