"""Tarantool's data-change semantics in Python: UPDATE operations, UPSERT, REPLACE, DELETE on tuples by key.

The one implementation of these rules, used to rebuild the ``_space`` / ``_index`` catalog (``catalog.py``), a user
space's content (``state.py``) and the target rows a micro-batch of ``view=space`` changes touches (``apply.py``).
The rules follow tarantool ``src/box/xrow_update*.c`` and ``memtx_space.c`` of 2.x, written down
in ``docs/formats/tarantool-typed.md``:

- An UPDATE's operations are ``[op, field, args...]``.  ``field`` is a number counted from the request's
  ``index_base`` (0 when absent; Lua's box API sends 1), negative from the end (-1 = the last field), or a string:
  a field name of the space's format, or a JSON path (``[6].a.b``, ``name[2]``, ``["x"]``) whose first step is
  a name or a 1-based ``[N]``.  Operations apply one after another, each to the result of the previous one.
- ``=`` sets (on an array, the position just past the end appends), ``!`` inserts before the position (negative:
  -1 appends), ``#`` deletes ``count`` fields, ``+ -`` add / subtract numbers (an integer with a double is a
  double, anything with a decimal is a decimal: 38 digits rounded half up, a double taken as its ``%.15g`` text,
  :data:`TARANTOOL_DECIMAL`), ``& | ^`` are bitwise on unsigned integers, ``:`` splices a
  string (offset counted from ``index_base``, negative from the end; length negative = up to that many bytes
  before the end).
- UPSERT inserts its tuple when the key is absent; otherwise it applies its operations one by one, skipping any
  that fails (Tarantool logs and skips them), and keeps the old tuple when the result would change the key.
- UPDATE and DELETE name the tuple by the key of the index ``index_id`` (0 = primary); a request on a key that is
  not there changes nothing (Tarantool does not log such a request, but a partial log may hold one).

A failing operation raises :class:`ReplayError`; callers decide what it means for their row.
"""

from __future__ import annotations

import copy
import math
import re
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import ROUND_HALF_UP, Context, Decimal, DecimalException
from typing import Any

__all__ = ["ReplayError", "TupleStore", "apply_update", "key_hash", "normalize_key", "rebase_ops"]

_U64 = 1 << 64
_I64_MIN = -(1 << 63)
#: Tarantool 2.x's decimal arithmetic: 38 digits rounded half up, adjusted exponents from -1 to 37 (below -1 the
#: precision shrinks, so nothing smaller than 1E-38 is kept); overflow and invalid operations fail the request.
TARANTOOL_DECIMAL = Context(prec=38, rounding=ROUND_HALF_UP, Emin=-1, Emax=37, clamp=0)
#: Significant digits of a double taken into a decimal (``decimal_from_double``: ``printf("%.*g", DBL_DIG)``).
_DOUBLE_DIGITS = 15
_PATH_TOKEN = re.compile(r'\.?([A-Za-z_][A-Za-z0-9_]*)|\[(-?\d+)\]|\["((?:[^"\\]|\\.)*)"\]|\[\'((?:[^\'\\]|\\.)*)\'\]')


class ReplayError(ValueError):
    """An operation that Tarantool would not apply to this tuple (message = the reason)."""


# ---- keys ----------------------------------------------------------------------------------------------------


def _norm(value: Any) -> Any:
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        return int(value)
    if isinstance(value, list):
        return tuple(_norm(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((repr(k), _norm(v)) for k, v in value.items()))
    return value


def normalize_key(values: Sequence[Any]) -> tuple[Any, ...]:
    """A hashable key equal for values Tarantool's indexes find equal (1 and 1.0; true is not 1)."""
    return tuple(_norm(v) for v in values)


def key_hash(key: tuple[Any, ...]) -> int:
    """A hash of a normalized key that is the same in every process (Python's ``hash`` of str is not)."""
    return zlib.crc32(repr(key).encode("utf-8", "surrogateescape"))


# ---- update operations --------------------------------------------------------------------------------------


def _parse_path(path: str, names: Mapping[str, int]) -> list[Any]:
    """A string field of an operation → steps: the first an int (0-based top-level field), then ints / str keys."""
    if path in names:
        return [names[path]]
    steps: list[Any] = []
    pos = 0
    while pos < len(path):
        m = _PATH_TOKEN.match(path, pos)
        if m is None or (m.group(1) is not None and path[pos] != "." and steps):
            raise ReplayError(f"bad field path {path!r} at character {pos + 1}")
        name, index, dq, sq = m.groups()
        if index is not None:
            steps.append(int(index) - 1)  # JSON paths count from 1 (TUPLE_INDEX_BASE)
        elif name is not None:
            steps.append(name)
        else:
            steps.append(re.sub(r"\\(.)", r"\1", dq if dq is not None else sq))
        pos = m.end()
    if not steps:
        raise ReplayError(f"empty field path {path!r}")
    if isinstance(steps[0], str):
        if steps[0] not in names:
            raise ReplayError(f"field {steps[0]!r} is not in the space format")
        steps[0] = names[steps[0]]
    return steps


def _array_index(container: list[Any], index: int, op: str) -> int:
    """A 0-based position for ``op`` on ``container`` from a 0-based index that may be negative (-1 = last)."""
    n = len(container)
    if index < 0:
        index += n + (1 if op == "!" else 0)
        if index < 0:
            raise ReplayError(f"field {index - n} is out of range for {n} fields")
    limit = n if op in ("!", "=") else n - 1
    if index > limit:
        raise ReplayError(f"field {index + 1} does not exist ({n} fields)")
    return index


def _arith(op: str, old: Any, arg: Any) -> Any:
    for v in (old, arg):
        if isinstance(v, bool) or not isinstance(v, int | float | Decimal):
            raise ReplayError(f"arithmetic on a non-number {v!r}")
    if isinstance(old, Decimal) or isinstance(arg, Decimal):
        ctx = TARANTOOL_DECIMAL.copy()  # a Context's flags are state: one per operation, shared by no thread
        try:
            a, b = _as_decimal(old, ctx), _as_decimal(arg, ctx)
            result = ctx.add(a, b) if op == "+" else ctx.subtract(a, b)
        except DecimalException as exc:
            raise ReplayError(f"decimal overflow or invalid operation in {op!r}: {type(exc).__name__}") from None
        if not result.is_finite():
            raise ReplayError(f"decimal operation {op!r} gave {result}")
        return result
    result = old + arg if op == "+" else old - arg
    if isinstance(result, int) and not _I64_MIN <= result < _U64:
        raise ReplayError("integer overflow")
    return result


def _as_decimal(value: int | float | Decimal, ctx: Context) -> Decimal:
    """An operand as Tarantool takes it into decimal arithmetic: a double through its 15 significant digits, an
    integer exactly, a decimal as stored (Decimal's own arithmetic would round in the thread's 28-digit context)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ReplayError(f"{value!r} is not a number convertible to decimal")
        return ctx.create_decimal(format(value, f".{_DOUBLE_DIGITS}g"))
    if isinstance(value, int):
        return Decimal(value)  # exact for any size: no context involved
    return value


def _bitwise(op: str, old: Any, arg: Any) -> int:
    for v in (old, arg):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ReplayError(f"bitwise operation on a value that is not an unsigned integer: {v!r}")
    result: int = old & arg if op == "&" else old | arg if op == "|" else old ^ arg
    return result


def _splice(old: Any, args: Sequence[Any], index_base: int) -> str | bytes:
    if len(args) != 3:
        raise ReplayError("splice takes offset, length and a string")
    offset, length, paste = args
    if not isinstance(old, str | bytes):
        raise ReplayError(f"splice of a non-string {old!r}")
    data = old.encode("utf-8", "surrogateescape") if isinstance(old, str) else old
    piece = paste.encode("utf-8", "surrogateescape") if isinstance(paste, str) else paste
    if not isinstance(offset, int) or not isinstance(length, int) or not isinstance(piece, bytes):
        raise ReplayError("splice offset and length must be integers, the paste a string")
    n = len(data)
    if offset < 0:
        if -offset > n + 1:
            raise ReplayError("splice offset is out of bound")
        offset += n + 1
    elif offset - index_base >= 0:
        offset = min(offset - index_base, n)
    else:
        raise ReplayError("splice offset is out of bound")
    if length < 0:  # up to -length bytes before the end
        length = max(length + n - offset, 0)
    length = min(length, n - offset)
    out = data[:offset] + piece + data[offset + length:]
    return out.decode("utf-8", "surrogateescape") if isinstance(old, str) else out


def _apply_leaf(container: Any, step: Any, op: str, args: Sequence[Any], index_base: int) -> None:
    """Apply ``op`` to ``container[step]`` (an array position or a map key) in place."""
    if isinstance(container, list):
        if not isinstance(step, int):
            raise ReplayError(f"key {step!r} on an array")
        i = _array_index(container, step, op)
        if op == "!":
            container.insert(i, args[0])
            return
        if op == "=":
            if i == len(container):
                container.append(args[0])
            else:
                container[i] = args[0]
            return
        if op == "#":
            count = args[0]
            if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
                raise ReplayError("delete count must be a positive integer")
            del container[i:i + count]
            return
    elif isinstance(container, dict):
        if op == "!":
            if step in container:
                raise ReplayError(f"key {step!r} already exists")
            container[step] = args[0]
            return
        if op == "=":
            container[step] = args[0]
            return
        if step not in container:
            raise ReplayError(f"key {step!r} does not exist")
        if op == "#":
            if args[0] != 1:
                raise ReplayError("a map key can only be deleted one at a time")
            del container[step]
            return
        i = step
    else:
        raise ReplayError(f"field path goes through a scalar {container!r}")
    old = container[i]
    if op in ("+", "-"):
        container[i] = _arith(op, old, args[0])
    elif op in ("&", "|", "^"):
        container[i] = _bitwise(op, old, args[0])
    elif op == ":":
        container[i] = _splice(old, args, index_base)
    else:
        raise ReplayError(f"unknown update operation {op!r}")


_ARG_COUNTS = {"=": 1, "!": 1, "#": 1, "+": 1, "-": 1, "&": 1, "|": 1, "^": 1, ":": 3}


def apply_op(tup: list[Any], operation: Any, index_base: int, names: Mapping[str, int]) -> None:
    """Apply one ``[op, field, args...]`` to ``tup`` in place."""
    if not isinstance(operation, list) or len(operation) < 2:
        raise ReplayError(f"an update operation is not [op, field, ...]: {operation!r}")
    op, field, *args = operation
    if isinstance(op, bytes):
        op = op.decode("ascii", "replace")
    if op not in _ARG_COUNTS or len(args) != _ARG_COUNTS[op]:
        raise ReplayError(f"bad update operation {operation!r}")
    if isinstance(field, bool) or not isinstance(field, int | str):
        raise ReplayError(f"bad field {field!r}")
    if isinstance(field, int):
        steps: list[Any] = [field - index_base if field >= 0 else field]
        if field >= 0 and field < index_base:
            raise ReplayError(f"field {field} is below index base {index_base}")
    else:
        steps = _parse_path(field, names)
    container: Any = tup
    for step in steps[:-1]:
        if isinstance(container, list) and isinstance(step, int):
            container = container[_array_index(container, step, "=")] if step != len(container) else None
        elif isinstance(container, dict) and step in container:
            container = container[step]
        else:
            raise ReplayError(f"field path {field!r} does not exist")
        if container is None:
            raise ReplayError(f"field path {field!r} does not exist")
    _apply_leaf(container, steps[-1], op, args, index_base)


def rebase_ops(ops: Any, index_base: int, to: int = 1) -> Any:
    """``ops`` with their numeric field numbers (and splice offsets) counted from ``to`` instead of ``index_base``.

    Negative numbers count from the end and JSON paths (``[N]`` is always 1-based) do not depend on the base, so
    only numbers at or above ``index_base`` change; anything that is not a well-formed operation is left as is
    (replaying it reports it).
    """
    if index_base == to or not isinstance(ops, list):
        return ops
    out: list[Any] = []
    for operation in ops:
        if isinstance(operation, list) and len(operation) >= 2:
            operation = list(operation)
            op = operation[0].decode("ascii", "replace") if isinstance(operation[0], bytes) else operation[0]
            field = operation[1]
            if isinstance(field, int) and not isinstance(field, bool) and field >= index_base:
                operation[1] = field - index_base + to
            offset = operation[2] if op == ":" and len(operation) == 5 else None
            if isinstance(offset, int) and not isinstance(offset, bool) and offset >= index_base:
                operation[2] = offset - index_base + to
        out.append(operation)
    return out


def apply_update(tup: Sequence[Any], ops: Any, index_base: int, names: Mapping[str, int]) -> list[Any]:
    """A new tuple: ``tup`` with every operation applied in order (raises :class:`ReplayError`)."""
    if not isinstance(ops, list):
        raise ReplayError("update operations are not an array")
    out = copy.deepcopy(list(tup))
    for operation in ops:
        apply_op(out, operation, index_base, names)
    return out


def apply_upsert_ops(tup: Sequence[Any], ops: Any, index_base: int, names: Mapping[str, int]) -> list[Any]:
    """UPSERT on an existing tuple: the operations that apply, the failing ones skipped (as Tarantool does)."""
    out = copy.deepcopy(list(tup))
    for operation in ops if isinstance(ops, list) else ():
        trial = copy.deepcopy(out)
        try:
            apply_op(trial, operation, index_base, names)
        except (ReplayError, IndexError, TypeError):
            continue
        out = trial
    return out


# ---- a space's tuples by primary key ---------------------------------------------------------------------------


class TupleStore:
    """The tuples of one space by primary key, changed by log rows with Tarantool's semantics.

    ``pk_parts`` are the 0-based field numbers of the primary key; ``keep`` (optional) says whether a normalized
    primary key belongs to this store (a key-hash partition keeps only its keys; a DELETE or UPDATE by a secondary
    key finds its tuple, if it is here, by a scan).
    """

    def __init__(self, pk_parts: Sequence[int], keep: Callable[[tuple[Any, ...]], bool] | None = None) -> None:
        self.pk_parts = tuple(pk_parts)
        self.keep = keep
        self.rows: dict[tuple[Any, ...], list[Any]] = {}

    def key_of(self, tup: Sequence[Any], parts: Sequence[int] | None = None) -> tuple[Any, ...]:
        parts = self.pk_parts if parts is None else parts
        if any(p >= len(tup) for p in parts):
            raise ReplayError(f"tuple of {len(tup)} fields has no key field {max(parts) + 1}")
        return normalize_key([tup[p] for p in parts])

    def _mine(self, key: tuple[Any, ...]) -> bool:
        return self.keep is None or self.keep(key)

    def find(self, key: Any, index_parts: Sequence[int] | None) -> tuple[Any, ...] | None:
        """The primary key of the tuple that ``key`` (of the index with ``index_parts``; None = primary) names."""
        if not isinstance(key, list):
            raise ReplayError("request key is not an array")
        wanted = normalize_key(key)
        if index_parts is None or tuple(index_parts) == self.pk_parts:
            return wanted if wanted in self.rows else None
        for pk, tup in self.rows.items():
            if len(tup) > max(index_parts, default=-1) and normalize_key([tup[p] for p in index_parts]) == wanted:
                return pk
        return None

    def replace(self, tup: Any) -> None:
        if not isinstance(tup, list):
            raise ReplayError("tuple is not an array")
        key = self.key_of(tup)
        if self._mine(key):
            self.rows[key] = tup

    def delete(self, key: Any, index_parts: Sequence[int] | None) -> None:
        pk = self.find(key, index_parts)
        if pk is not None:
            del self.rows[pk]

    def update(self, key: Any, ops: Any, index_base: int, names: Mapping[str, int],
               index_parts: Sequence[int] | None) -> None:
        pk = self.find(key, index_parts)
        if pk is None:
            return
        new = apply_update(self.rows[pk], ops, index_base, names)
        if self.key_of(new) != pk:
            raise ReplayError("an update may not change the primary key")
        self.rows[pk] = new

    def upsert(self, tup: Any, ops: Any, index_base: int, names: Mapping[str, int]) -> None:
        if not isinstance(tup, list):
            raise ReplayError("upsert tuple is not an array")
        key = self.key_of(tup)
        if not self._mine(key):
            return
        old = self.rows.get(key)
        if old is None:
            self.rows[key] = tup
            return
        new = apply_upsert_ops(old, ops, index_base, names)
        self.rows[key] = new if self.key_of(new) == key else old

    def apply(self, rtype: str, *, key: Any, tup: Any, ops: Any, index_base: int, names: Mapping[str, int],
              index_parts: Sequence[int] | None) -> None:
        """Apply one logged request (``rtype`` as in the ``type`` column; ``TRUNCATE`` empties the space)."""
        if rtype == "TRUNCATE":
            self.clear()
        elif rtype in ("INSERT", "REPLACE"):
            self.replace(tup)
        elif rtype == "DELETE":
            self.delete(key, index_parts)
        elif rtype == "UPDATE":
            self.update(key, ops, index_base, names, index_parts)
        elif rtype == "UPSERT":
            self.upsert(tup, ops, index_base, names)
        else:
            raise ReplayError(f"request type {rtype} does not change a space")

    def clear(self) -> None:
        self.rows.clear()

    def __iter__(self) -> Iterator[list[Any]]:
        for key in sorted(self.rows, key=repr):
            yield self.rows[key]
