"""Reader options: Spark's conventions (case-insensitive names, string values), parsed once, checked early.

Spark hands a data source its options as a case-insensitive map of strings; the Arrow API (``read`` /
``iter_batches``) takes keyword arguments of any type. Both go through :class:`OptionMap`, so a bad value gives
the same :class:`~spark_logsource.errors.OptionError` naming the option in both places.
"""

from __future__ import annotations

import difflib
import enum
import json
import logging
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, overload

from spark_logsource.errors import CorruptDataError, OptionError

log = logging.getLogger(__name__)

_SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$")


class ParseMode(enum.Enum):
    """What to do with a block or event that cannot be decoded (Spark's CSV/JSON ``mode``)."""

    PERMISSIVE = "PERMISSIVE"  # keep it as one corrupt-record row, keep reading
    DROPMALFORMED = "DROPMALFORMED"  # skip it (logged), keep reading
    FAILFAST = "FAILFAST"  # raise CorruptDataError naming file and offset

    def handle(self, error: CorruptDataError, keep_corrupt_row: Callable[[CorruptDataError], None]) -> None:
        """Apply this mode to one bad block, event or file head: raise, log and skip, or keep a corrupt row."""
        if self is ParseMode.FAILFAST:
            raise error
        if self is ParseMode.DROPMALFORMED:
            log.warning("dropping malformed data: %s", error)
            return
        keep_corrupt_row(error)


@dataclass(frozen=True, slots=True)
class CommonOptions:
    """Options every format understands."""

    mode: ParseMode = ParseMode.PERMISSIVE
    corrupt_column: str = "_corrupt_record"
    batch_size: int = 8192
    verify_checksums: bool = True
    max_partition_bytes: int = 128 << 20
    path_glob_filter: str | None = None
    recursive_file_lookup: bool = False

    @property
    def corrupt_column_or_none(self) -> str | None:
        """The corrupt-record column name when the schema has one (PERMISSIVE only), else None."""
        return self.corrupt_column if self.mode is ParseMode.PERMISSIVE else None


class OptionMap:
    """Case-insensitive view of user options with typed getters that raise :class:`OptionError`.

    Every getter records the option as used; :meth:`check_all_used` rejects misspelled option names.
    """

    #: Options that Spark itself adds or that are always tolerated.
    ALWAYS_ALLOWED = frozenset({"path", "paths"})

    def __init__(self, options: Mapping[str, Any] | None) -> None:
        self._values: dict[str, Any] = {}
        self._names: dict[str, str] = {}
        for key, value in (options or {}).items():
            if value is None:
                continue
            self._values[key.lower()] = value
            self._names[key.lower()] = key
        self._used: set[str] = set()
        self._known: dict[str, str] = {}  # lower-case → documented spelling of every option asked for

    def __contains__(self, name: str) -> bool:
        return name.lower() in self._values

    def raw(self, name: str) -> Any:
        self._used.add(name.lower())
        self._known[name.lower()] = name
        return self._values.get(name.lower())

    def string(self, name: str, default: str | None = None) -> str | None:
        value = self.raw(name)
        if value is None:
            return default
        return str(value)

    def boolean(self, name: str, default: bool) -> bool:
        value = self.raw(name)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "1", "yes", "on"):
            return True
        if text in ("false", "0", "no", "off"):
            return False
        raise OptionError(name, f"expected true or false, got {value!r}")

    # with an int default the result is an int: callers need no None check
    @overload
    def integer(self, name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int: ...

    @overload
    def integer(self, name: str, default: None = None, *, minimum: int | None = None,
                maximum: int | None = None) -> int | None: ...

    def integer(self, name: str, default: int | None = None, *, minimum: int | None = None,
                maximum: int | None = None) -> int | None:
        value = self.raw(name)
        if value is None:
            return default
        try:
            number = int(str(value).strip()) if not isinstance(value, int) else value
        except ValueError:
            raise OptionError(name, f"expected an integer, got {value!r}") from None
        if isinstance(value, bool):
            raise OptionError(name, f"expected an integer, got {value!r}")
        if minimum is not None and number < minimum:
            raise OptionError(name, f"must be at least {minimum}, got {number}")
        if maximum is not None and number > maximum:
            raise OptionError(name, f"must be at most {maximum}, got {number}")
        return number

    def seconds(self, name: str, default: float, *, minimum: float, maximum: float = math.inf,
                exclusive_minimum: bool = False) -> float:
        """A duration in seconds (``2.5``), finite, at least ``minimum`` (above it if ``exclusive_minimum``) and
        at most ``maximum``."""
        value = self.raw(name)
        if value is None:
            return default
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise OptionError(name, f"expected a number of seconds, got {value!r}") from None
        low_ok = number > minimum if exclusive_minimum else number >= minimum
        if not (math.isfinite(number) and low_ok and number <= maximum):
            if maximum == math.inf:
                raise OptionError(name, f"must be a number of seconds ≥ {minimum:g}, got {value!r}")
            raise OptionError(name, f"must be between {minimum:g} and {maximum:g} seconds, got {value!r}")
        return number

    def size(self, name: str, default: int) -> int:
        """A byte size such as ``134217728``, ``128m`` or ``1g``."""
        value = self.raw(name)
        if value is None:
            return default
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            match = _SIZE_RE.match(str(value).lower())
            if not match or match.group(2) not in _SIZE_UNITS:
                raise OptionError(name, f"expected a byte size like 134217728, 128m or 1g, got {value!r}")
            number = int(match.group(1)) * _SIZE_UNITS[match.group(2)]
        if number <= 0:
            raise OptionError(name, f"must be positive, got {value!r}")
        return number

    def int_list(self, name: str, *, minimum: int | None = None, maximum: int | None = None) -> list[int] | None:
        """A comma list of integers (``"512,513"``), or a Python list of ints, each in [minimum, maximum]."""
        value = self.raw(name)
        if value is None:
            return None
        items = value if isinstance(value, list | tuple | set) else str(value).split(",")
        out = []
        for item in items:
            text = str(item).strip()
            if not text:
                continue
            try:
                out.append(int(text))
            except ValueError:
                raise OptionError(name, f"expected a comma list of integers, got {value!r}") from None
        if not out:
            raise OptionError(name, "the list is empty")
        for number in out:
            if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
                raise OptionError(name, f"{number} is outside [{minimum}, {maximum}]")
        return out

    def str_list(self, name: str) -> list[str] | None:
        """A comma list of names, or a Python list of strings."""
        value = self.raw(name)
        if value is None:
            return None
        items = value if isinstance(value, list | tuple | set) else str(value).split(",")
        out = [str(item).strip() for item in items if str(item).strip()]
        if not out:
            raise OptionError(name, "the list is empty")
        return out

    def choice(self, name: str, choices: Iterable[str], default: str) -> str:
        """One of ``choices``, matched case-insensitively; returns the canonical spelling from ``choices``."""
        value = self.raw(name)
        if value is None:
            return default
        by_lower = {c.lower(): c for c in choices}
        picked = by_lower.get(str(value).strip().lower())
        if picked is None:
            raise OptionError(name, f"expected one of {', '.join(by_lower.values())}, got {value!r}")
        return picked

    def paths(self) -> list[str]:
        """``path`` and ``paths`` (Spark sends several load() paths as a JSON array in ``paths``)."""
        out: list[str] = []
        path = self.raw("path")
        if path:
            out.append(str(path))
        many = self.raw("paths")
        if many:
            if isinstance(many, str):
                try:
                    decoded = json.loads(many)
                except ValueError:
                    decoded = [many]
                many = decoded if isinstance(decoded, list) else [decoded]
            out.extend(str(p) for p in many)
        return out

    def server_path_as_uri(self, paths: list[str], schemes: Iterable[str]) -> list[str]:
        """Live formats: a path naming a server is the option ``uri``; returns the paths left (none then).

        The one place where ``load("mysql://user@host:3306")``, the Arrow API's source argument
        (``follow("mysql-replication", "mysql://...")``) and ``spark-logsource sql --view t=FORMAT:URI`` become
        the ``uri`` option. A server is read alone (no other path), and a ``uri`` option naming another server
        is an error.
        """
        wanted = {s.lower() for s in schemes}
        live = [p for p in paths if "://" in p and p.partition("://")[0].strip().lower() in wanted]
        if not live:
            return paths
        if len(paths) > 1:
            raise OptionError("path", f"a live server is read alone, got {len(paths)} paths")
        given = self._values.get("uri")
        if given is not None and str(given).strip() != live[0].strip():
            raise OptionError("uri", "the server is named twice, as the path and as the option uri, differently: "
                                     "give one")
        self._values["uri"] = live[0]
        self._names.setdefault("uri", "uri")
        return []

    def misspelling_of(self, name: str) -> str | None:
        """An option given but never read whose name is close to ``name`` (``tabel`` for ``table``), or None.

        Used when a required option is missing: the likelier cause is a typo, which is then named.
        """
        if name.lower() in self._values:
            return None
        unread = {k: self._names[k] for k in self._values if k not in self._used and k not in self.ALWAYS_ALLOWED}
        close = difflib.get_close_matches(name.lower(), list(unread), n=1, cutoff=0.75)
        return unread[close[0]] if close else None

    def check_all_used(self, extra_allowed: Iterable[str] = ()) -> None:
        allowed = self.ALWAYS_ALLOWED | {e.lower() for e in extra_allowed}
        unknown = sorted(self._names[k] for k in self._values if k not in self._used and k not in allowed)
        if unknown:
            known = {**self._known, **{e.lower(): e for e in extra_allowed}}
            close = difflib.get_close_matches(unknown[0].lower(), list(known), n=1, cutoff=0.75)
            hint = f" (did you mean {known[close[0]]!r}?)" if close else ""
            raise OptionError(unknown[0], f"unknown option for this format{hint}")

    def common(self) -> CommonOptions:
        mode = ParseMode(self.choice("mode", [m.value for m in ParseMode], ParseMode.PERMISSIVE.value))
        corrupt = self.string("columnNameOfCorruptRecord", "_corrupt_record") or "_corrupt_record"
        return CommonOptions(
            mode=mode,
            corrupt_column=corrupt,
            batch_size=self.integer("batchSize", 8192, minimum=1) or 8192,
            verify_checksums=self.boolean("verifyChecksums", True),
            max_partition_bytes=self.size("maxPartitionBytes", 128 << 20),
            path_glob_filter=self.string("pathGlobFilter"),
            recursive_file_lookup=self.boolean("recursiveFileLookup", False),
        )
