"""Tarantool's own reading of an xlog/snap/vylog file (``xlog.pairs()``) and the columns we must produce from it.

:func:`dump_file` runs the real ``tarantool`` on ``tests/support/oracle/xlog_dump.lua``, which iterates
``require('xlog').pairs(path)`` (tarantool ``src/box/lua/xlog.c``) and writes every row's HEADER and BODY in a
typed JSON form (see the Lua file). Body values that xlog.pairs() returns as box tuples (``key``, ``tuple``,
``operations``) come with their raw MessagePack bytes, copied out of the tuple by Tarantool, and with their Lua
view; :class:`LuaTuple` holds both and :meth:`LuaTuple.value` decodes the raw bytes in Python (MP_EXT decimal
and uuid by their layouts in ``docs/formats/tarantool-xlog.md``), after checking the result against Tarantool's
Lua view.

:func:`expected_row` turns one oracle row into the expected value of every column of our schema
(issue #2): ``lsn, replica_id, tsn, is_commit, timestamp, type, group_id, space_id, index_id, key, tuple, ops,
extra``. Rules, from the issue and ``docs/formats/tarantool-xlog.md``: absent lsn / replica_id / group_id are 0;
``tsn`` is the transaction id xlog.pairs() shows, else the lsn; ``is_commit`` is xlog.pairs()' ``commit`` for
rows of multi-statement transactions, else true; ``timestamp`` is microseconds ``round(ts * 1e6)``; UPDATE
operations (stored under the tuple key) go to ``ops``, UPSERT ``operations`` too; every other body key goes to
``extra`` under its IPROTO name.

:func:`variant_expected` and :func:`json_expected` give the value a ``variant`` / ``json`` column must decode to.
"""

from __future__ import annotations

import base64
import datetime
import functools
import json
import math
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgpack

ORACLE_LUA = Path(__file__).resolve().parent / "xlog_dump.lua"
DUMP_TIMEOUT_S = 300.0

#: Request type codes → names of issue #2 (tarantool ``src/box/iproto_constants.h``); 2.6's xlog.pairs() gives
#: the newer codes (RAFT ...) as plain numbers.
TYPE_NAMES = {
    2: "INSERT", 3: "REPLACE", 4: "UPDATE", 5: "DELETE", 9: "UPSERT", 12: "NOP", 30: "RAFT", 31: "RAFT_PROMOTE",
    32: "RAFT_DEMOTE", 40: "RAFT_CONFIRM", 41: "RAFT_ROLLBACK",
}
#: IPROTO key codes → names (``iproto_constants.h``) for body keys xlog.pairs() leaves as numbers.
IPROTO_KEY_NAMES = {
    0x00: "type", 0x01: "sync", 0x02: "replica_id", 0x03: "lsn", 0x04: "timestamp", 0x05: "schema_version",
    0x06: "server_version", 0x07: "group_id", 0x08: "tsn", 0x09: "flags", 0x0A: "stream_id", 0x15: "index_base",
    0x26: "vclock", 0x53: "term", 0x5C: "replicaset_name", 0x5D: "instance_name",
}
#: Body keys of RAFT (30) rows (``IPROTO_RAFT_KEYS``): small codes that 2.6's xlog.pairs() names as header keys.
RAFT_KEY_NAMES = {0: "term", 1: "vote", 2: "state", 3: "vclock", 4: "leader_id", 5: "is_leader_seen"}
_CODE_OF_NAME = {name: code for code, name in IPROTO_KEY_NAMES.items()}
#: xlog.pairs() header names that are columns (the rest go to ``extra``).
HEADER_COLUMNS = frozenset({"type", "lsn", "replica_id", "group_id", "timestamp", "tsn", "commit"})
#: xlog.pairs() body names that are columns.
BODY_COLUMNS = frozenset({"space_id", "index_id", "key", "tuple", "operations"})
#: Our columns compared with the oracle, in schema order.
COLUMNS = ("lsn", "replica_id", "tsn", "is_commit", "timestamp", "type", "group_id", "space_id", "index_id",
           "key", "tuple", "ops", "extra")
VALUE_COLUMNS = ("key", "tuple", "ops", "extra")

MP_DECIMAL, MP_UUID = 1, 2


class OracleError(RuntimeError):
    """tarantool could not run the dumper, or xlog.pairs() stopped on the file (message says where)."""


# --------------------------------------------------------------------------------------------- decoding
@dataclass(frozen=True)
class LuaNumber:
    """A Lua number (a double) as xlog.pairs() gave it: an int or a float in the file, we cannot tell which."""

    value: float


@dataclass(frozen=True)
class LuaTuple:
    """A body value xlog.pairs() returned as a box tuple: its stored MessagePack bytes and its Lua view."""

    raw: bytes
    lua: Any

    def value(self) -> Any:
        """The raw bytes decoded in Python (str stays str, bin becomes bytes, MP_EXT decoded), checked to be the
        value Tarantool decodes to Lua."""
        decoded = unpack(self.raw)
        mismatch = lua_mismatch(decoded, self.lua)
        if mismatch:
            raise OracleError(f"python decoding of {self.raw.hex()} disagrees with tarantool's: {mismatch}")
        return decoded


@dataclass(frozen=True)
class LuaOnly:
    """An expected value known only as Tarantool's Lua view (xlog.pairs() gave a Lua table, not a tuple): ours is
    compared with :func:`lua_mismatch`, which cannot tell str from bin nor int from an integral double."""

    lua: Any


@dataclass(frozen=True)
class LuaOther:
    """A Lua value the dumper had no typed form for (its type and tostring())."""

    text: str


def decode_tarantool_decimal(data: bytes) -> Decimal:
    """MP_DECIMAL payload: a msgpack int scale, then packed BCD digits ending in a sign nibble (0xb/0xd minus).

    Layout: tarantool ``src/lib/core/decimal.c`` ``decimal_pack`` and ``docs/formats/tarantool-xlog.md``.
    """
    scale, offset = _msgpack_int_prefix(data)
    nibbles = [n for byte in data[offset:] for n in (byte >> 4, byte & 0x0F)]
    sign = 1 if nibbles.pop() in (0x0B, 0x0D) else 0
    digits = tuple(nibbles) or (0,)
    return Decimal((sign, digits, -scale))


def _msgpack_int_prefix(data: bytes) -> tuple[int, int]:
    unpacker = msgpack.Unpacker()
    unpacker.feed(data)
    value = unpacker.unpack()
    if type(value) is not int:
        raise OracleError(f"decimal scale is not an int: {value!r}")
    return value, unpacker.tell()


def _ext_hook(code: int, data: bytes) -> Any:
    if code == MP_DECIMAL:
        return decode_tarantool_decimal(data)
    if code == MP_UUID:
        return uuid.UUID(bytes=data)
    return msgpack.ExtType(code, data)


def unpack(raw: bytes) -> Any:
    """One msgpack value: str → str (invalid UTF-8 kept by surrogateescape), bin → bytes, MP_EXT decoded."""
    return msgpack.unpackb(raw, raw=False, strict_map_key=False, ext_hook=_ext_hook,
                           unicode_errors="surrogateescape", timestamp=3)


def _from_typed(node: Any) -> Any:
    """A value of the dumper's typed JSON → Python (see xlog_dump.lua ``encode``)."""
    if node is None or isinstance(node, bool):
        return node
    if not isinstance(node, dict) or len(node) == 0:
        raise OracleError(f"unexpected node in the dump: {node!r}")
    if "raw" in node:
        return LuaTuple(base64.b64decode(node["raw"]), _from_typed(node["lua"]))
    (tag, payload), = node.items()
    if tag == "n":
        return LuaNumber(float(payload))
    if tag == "i":
        return int(payload)
    if tag == "s":
        return base64.b64decode(payload)
    if tag == "a":
        return [_from_typed(item) for item in payload]
    if tag == "m":
        return {_hashable(_from_typed(k)): _from_typed(v) for k, v in payload}
    if tag == "nil":
        return None
    if tag == "dec":
        return Decimal(payload)
    if tag == "uuid":
        return uuid.UUID(payload)
    if tag == "other":
        return LuaOther(base64.b64decode(payload).decode(errors="replace"))
    raise OracleError(f"unknown tag {tag!r} in the dump")


def _hashable(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key


def plain(value: Any) -> Any:
    """A Lua value (not a tuple) → plain Python: integral Lua numbers become int, strings str (UTF-8)."""
    if isinstance(value, LuaNumber):
        x = value.value
        if math.isfinite(x) and x == int(x) and not (x == 0 and math.copysign(1, x) < 0):
            return int(x)
        return x
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="surrogateescape")
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, LuaTuple):
        return value.value()
    return value


def lua_mismatch(py: Any, lua: Any, where: str = "$") -> str | None:
    """Why the Python-decoded ``py`` is not what Tarantool's Lua view ``lua`` shows, or None if they agree.

    Lua cannot tell str from bin (both are Lua strings), nor int from float (both may be Lua numbers), so those
    compare by content and by numeric value."""
    if isinstance(lua, LuaNumber):
        if isinstance(py, bool) or not isinstance(py, int | float):
            return f"{where}: {py!r} vs Lua number {lua.value!r}"
        same = (math.isnan(py) and math.isnan(lua.value)) or (
            py == lua.value and math.copysign(1, py) == math.copysign(1, lua.value))
        return None if same else f"{where}: {py!r} vs Lua number {lua.value!r}"
    if isinstance(lua, bytes):
        data = py.encode("utf-8", errors="surrogateescape") if isinstance(py, str) else py
        return None if data == lua else f"{where}: {py!r} vs Lua string {lua!r}"
    if isinstance(lua, list) and isinstance(py, list):
        if len(lua) != len(py):
            return f"{where}: {len(py)} items vs {len(lua)} in Lua"
        for i, (p, q) in enumerate(zip(py, lua, strict=True)):
            found = lua_mismatch(p, q, f"{where}[{i}]")
            if found:
                return found
        return None
    if isinstance(lua, dict) and isinstance(py, dict):
        # A map decoded by Lua as a table: keys are Lua values too.
        lua_items = {_key_norm(k): v for k, v in lua.items()}
        py_items = {_key_norm(k): v for k, v in py.items()}
        if set(lua_items) != set(py_items):
            return f"{where}: keys {sorted(map(repr, py_items))} vs {sorted(map(repr, lua_items))} in Lua"
        for k, v in py_items.items():
            found = lua_mismatch(v, lua_items[k], f"{where}.{k}")
            if found:
                return found
        return None
    if isinstance(lua, list) and isinstance(py, dict) and not py:
        return None  # an empty map: Lua shows an empty table
    if isinstance(lua, Decimal) and isinstance(py, Decimal):
        return None if lua == py else f"{where}: {py!r} vs Lua decimal {lua}"
    if isinstance(lua, uuid.UUID) and isinstance(py, str):
        return None if str(lua) == py else f"{where}: {py!r} vs Lua uuid {lua}"
    if type(py) is not type(lua) or py != lua:
        return f"{where}: {py!r} vs Lua {lua!r}"
    return None


def _key_norm(key: Any) -> Any:
    """Map keys compared as text: Lua and msgpack keys alike, and the string keys of variant/JSON objects."""
    if isinstance(key, LuaNumber):
        return key_text(int(key.value) if key.value == int(key.value) else key.value)
    if isinstance(key, bytes):
        return key.decode("utf-8", errors="surrogateescape")
    return key_text(key)


# --------------------------------------------------------------------------------------------- running
@dataclass(frozen=True)
class OracleRow:
    """One row as xlog.pairs() gives it: HEADER and BODY (None for a NOP without a body)."""

    header: dict[str, Any]
    body: dict[str, Any] | None


@dataclass(frozen=True)
class OracleDump:
    """Every row xlog.pairs() yielded, and the error that stopped it (None when it read to the end)."""

    path: Path
    rows: list[OracleRow]
    error: str | None


def _section(node: dict[str, Any] | None) -> dict[str, Any] | None:
    if node is None:
        return None
    return {name: _from_typed(value) for name, value in node.items()}


@functools.lru_cache(maxsize=256)
def _dump_cached(path: str, mtime_ns: int, size: int) -> OracleDump:
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as out:
        proc = subprocess.run(["tarantool", str(ORACLE_LUA), path, out.name], capture_output=True, text=True,
                              timeout=DUMP_TIMEOUT_S)
        if proc.returncode != 0:
            raise OracleError(f"tarantool {ORACLE_LUA.name} {path} exited with {proc.returncode}: "
                              f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
        lines = Path(out.name).read_text().splitlines()
    if not lines:
        raise OracleError(f"{path}: the dumper wrote nothing")
    rows = []
    for line in lines[:-1]:
        item = json.loads(line)
        rows.append(OracleRow(_section(item["h"]) or {}, _section(item["b"])))
    last = json.loads(lines[-1])
    if "end" in last:
        if last["end"] != len(rows):
            raise OracleError(f"{path}: dumper counted {last['end']} rows, wrote {len(rows)}")
        return OracleDump(Path(path), rows, None)
    return OracleDump(Path(path), rows, base64.b64decode(last["error"]).decode(errors="replace"))


def dump_file(path: Path | str) -> OracleDump:
    """xlog.pairs() of ``path`` by the real tarantool (cached per file version for the session)."""
    stat = Path(path).stat()
    return _dump_cached(str(path), stat.st_mtime_ns, stat.st_size)


# --------------------------------------------------------------------------------------------- expectations
@dataclass(frozen=True)
class ExpectedRow:
    """Expected column values of one row. Value columns hold decoded Python values (see :meth:`LuaTuple.value`)
    and, for ``key``/``tuple``/``ops``, the raw bytes a ``msgpack`` column must hold (``raw``)."""

    columns: dict[str, Any]
    raw: dict[str, bytes | None]
    #: True when xlog.pairs() showed a commit flag / tsn (so ``extra.flags`` must agree with ``is_commit``).
    in_transaction: bool


def type_name(value: Any) -> str:
    """xlog.pairs()' type → our ``type`` column (names for codes it shows as numbers)."""
    if isinstance(value, bytes):
        return value.decode()
    code = plain(value)
    return TYPE_NAMES.get(code, str(code))


def timestamp_micros(seconds: float) -> int:
    """Header timestamp (a double, seconds) → microseconds, rounded half-even on the double product."""
    return round(seconds * 1e6)


def _int_or(header: dict[str, Any], name: str, default: int | None) -> int | None:
    value = header.get(name)
    return default if value is None else plain(value)


def expected_row(row: OracleRow) -> ExpectedRow:
    """The value of each of our columns for one xlog.pairs() row (rules in the module docstring)."""
    h, b = row.header, row.body
    lsn = _int_or(h, "lsn", 0)
    tsn = _int_or(h, "tsn", None)
    in_tx = tsn is not None or "commit" in h
    ts = h.get("timestamp")
    rtype = type_name(h.get("type", LuaNumber(0.0)))
    cols: dict[str, Any] = {
        "lsn": lsn,
        "replica_id": _int_or(h, "replica_id", 0),
        "tsn": tsn if tsn is not None else lsn,
        "is_commit": bool(plain(h["commit"])) if "commit" in h else not in_tx,
        "timestamp": None if ts is None else timestamp_micros(ts.value),
        "type": rtype,
        "group_id": _int_or(h, "group_id", 0),
        "space_id": None,
        "index_id": None,
    }
    raw: dict[str, bytes | None] = {"key": None, "tuple": None, "ops": None}
    values: dict[str, Any] = {"key": None, "tuple": None, "ops": None}
    extra: dict[str, Any] = {}
    for name, value in h.items():
        if name not in HEADER_COLUMNS:
            extra[name] = plain(value)
    if b is not None:
        cols["space_id"] = _int_or(b, "space_id", None)
        # Tarantool decodes an absent index id of a request as 0 (the primary index)
        cols["index_id"] = _int_or(b, "index_id", None if cols["space_id"] is None else 0)
        for name, value in b.items():
            column = {"key": "key", "operations": "ops", "tuple": "ops" if rtype == "UPDATE" else "tuple"}.get(name)
            if column is not None:
                if isinstance(value, LuaTuple):
                    raw[column] = value.raw
                    values[column] = value.value()
                else:
                    values[column] = LuaOnly(value)
            elif name not in BODY_COLUMNS:
                extra[_body_key_name(rtype, name)] = plain(value)
    cols.update(values)
    cols["extra"] = extra or None
    return ExpectedRow(cols, raw, in_tx)


def _body_key_name(rtype: str, name: str) -> str:
    """Our name of a body key xlog.pairs() called ``name`` (its IPROTO name in 2.6, or the code as digits)."""
    code = int(name) if name.isdigit() else _CODE_OF_NAME.get(name)
    if rtype == "RAFT" and code is not None and code < 0x10:
        return RAFT_KEY_NAMES.get(code, str(code))
    if code is not None and name.isdigit():
        return IPROTO_KEY_NAMES.get(code, name)
    return name


def key_text(key: Any) -> str:
    """A map key as a variant/JSON object key (issue #2: maps with non-string keys get string keys)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return repr(key)
    raise OracleError(f"no key text rule for {key!r}")


INT64_MAX = (1 << 63) - 1


def variant_expected(value: Any) -> Any:
    """What decode_variant() of a ``variant`` column must give for a decoded msgpack value.

    Natural Variant values (issue #2): maps → objects with string keys, str → string, bin → binary, ints and
    doubles as they are, decimal → decimal, uuid → its canonical string."""
    if isinstance(value, dict):
        return {key_text(k): variant_expected(v) for k, v in value.items()}
    if isinstance(value, list):
        return [variant_expected(v) for v in value]
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool) and value > INT64_MAX:
        # Variant has no unsigned 64-bit type: MP_UINT above int64 is a decimal(20, 0) (arrow/variant.py's rule 2)
        return Decimal(value)
    if isinstance(value, str) and _has_surrogates(value):
        # Tarantool does not validate UTF-8 in MP_STR; a variant string must be UTF-8, so the stored bytes are
        # kept as a variant binary (lossless) rather than failing the block.
        return value.encode("utf-8", errors="surrogateescape")
    return value


def _has_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def json_expected(value: Any) -> Any:
    """What ``json.loads(text, parse_float=Decimal)`` of a ``json`` column must give for a decoded msgpack value.

    bin → base64 text, uuid → its string, decimal → a JSON number with its digits as written, doubles →
    their shortest repr (NaN / ±Infinity as strings), map keys → strings."""
    if isinstance(value, dict):
        return {key_text(k): json_expected(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_expected(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return Decimal(repr(value))
    if isinstance(value, Decimal):
        # Written as a JSON number with its digits as stored: "1" reads back as an int, "1.50" as Decimal.
        return json.loads(str(value), parse_float=Decimal)
    if isinstance(value, datetime.datetime):
        return value.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return value


def same_value(ours: Any, expected: Any) -> bool:
    """Strict structural equality: same types (int vs float vs Decimal, str vs bytes), -0.0 vs 0.0, NaN == NaN,
    decimals by digits and exponent, dict key order ignored."""
    if type(ours) is not type(expected):
        return False
    if isinstance(expected, float):
        if math.isnan(expected):
            return math.isnan(ours)
        return ours == expected and math.copysign(1, ours) == math.copysign(1, expected)
    if isinstance(expected, Decimal):
        return ours.as_tuple() == expected.as_tuple() or (ours == expected and _decimal_scale_agrees(ours, expected))
    if isinstance(expected, list):
        return len(ours) == len(expected) and all(same_value(a, b) for a, b in zip(ours, expected, strict=True))
    if isinstance(expected, dict):
        return ours.keys() == expected.keys() and all(same_value(ours[k], expected[k]) for k in expected)
    return ours == expected


def _decimal_scale_agrees(ours: Decimal, expected: Decimal) -> bool:
    """A positive exponent may be expanded into the digits (variant decimals have a scale ≥ 0); a fractional
    scale must be kept."""
    exp_ours, exp_expected = ours.as_tuple().exponent, expected.as_tuple().exponent
    assert isinstance(exp_ours, int) and isinstance(exp_expected, int)
    return exp_expected > 0 and exp_ours == 0
