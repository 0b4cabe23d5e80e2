"""What every log format provides, whatever runs it (Spark, the Arrow API, the command line).

A :class:`LogFormat` is built from user options once (on the driver), then asked for its schema, which predicates
it can apply, and a plan of :class:`Split`s (byte ranges of files); each split is read independently (in a Spark
worker, or in this process) into Arrow batches. Instances are pickled into Spark tasks, so they hold only parsed
options: files are opened inside :meth:`LogFormat.read_split`.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa

from spark_logsource.errors import OptionError
from spark_logsource.filters import Predicate
from spark_logsource.io.fs import FileEntry, list_files
from spark_logsource.options import CommonOptions, OptionMap

if TYPE_CHECKING:
    from spark_logsource.streaming.stream import LogStream

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Split:
    """Read the records of ``uri`` that start in ``[start, end)``; ``end`` None means to the end of the file.

    ``hints`` carries small per-split facts a format computed while planning (e.g. a binlog start position that
    applies to the first file only). Keep it small: splits are pickled into every Spark task.
    """

    uri: str
    start: int
    end: int | None
    file_size: int
    hints: tuple[tuple[str, Any], ...] = field(default=())

    def hint(self, name: str, default: Any = None) -> Any:
        return dict(self.hints).get(name, default)


@dataclass(frozen=True, slots=True)
class CliFlag:
    """A command-line flag a format brings to ``spark-logsource`` (``--space 512`` → option ``spaceId=512``).

    ``repeatable`` flags may be given several times and become a comma list; ``commands`` are the subcommands
    that accept the flag; ``metavar`` names the value in ``--help`` (default: the flag's name in capitals).
    Formats sharing a flag must map it to the same option.
    """

    flag: str
    option: str
    help: str = ""
    type: Callable[[str], Any] = str
    repeatable: bool = False
    choices: tuple[str, ...] | None = None
    commands: frozenset[str] = frozenset({"cat"})
    metavar: str | None = None


class LogFormat(abc.ABC):
    """One file format: options, schema, planning and reading."""

    #: The name users pass to ``spark.read.format(...)`` and ``spark_logsource.read(...)``.
    name: ClassVar[str]
    #: Columns whose predicates this format applies exactly (and may use to skip data).
    pushable_columns: ClassVar[frozenset[str]] = frozenset()
    #: Predicate operators accepted on those columns.
    pushable_ops: ClassVar[frozenset[str]] = frozenset({"=", "<=>", "<", "<=", ">", ">=", "in", "is_null",
                                                        "is_not_null"})

    # --- command line (``spark-logsource``): what the format brings, so the CLI names no format ---------------
    #: Title of the format's group of flags in ``--help``.
    cli_title: ClassVar[str] = ""
    #: The format's own flags.
    cli_flags: ClassVar[tuple[CliFlag, ...]] = ()
    #: Options the CLI sets for text output (e.g. JSON text instead of Variant columns); the user's win.
    text_options: ClassVar[Mapping[str, str]] = {}
    #: Columns that hold JSON text under :attr:`text_options` (printed as nested JSON, not as strings).
    json_text_columns: ClassVar[frozenset[str]] = frozenset()
    #: URI schemes of live servers this format reads (``tarantool://``): a target with one is passed as ``uri``.
    uri_schemes: ClassVar[tuple[str, ...]] = ()
    #: Whether ``spark-logsource follow`` may pick this format for a live URI.
    can_follow: ClassVar[bool] = False

    @classmethod
    def sniff(cls, name: str, head: bytes) -> bool:
        """Whether a file named ``name`` starting with ``head`` (up to 16 bytes) is one of this format's."""
        return False

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        opts = OptionMap(options)
        self.paths: list[str] = opts.paths()
        if self.uri_schemes:  # a live server named where a path goes (load(uri), the Arrow API, --view)
            self.paths = opts.server_path_as_uri(self.paths, self.uri_schemes)
        self.common: CommonOptions = opts.common()
        try:
            self._parse_options(opts)
        except OptionError as exc:
            typo = opts.misspelling_of(exc.option)
            if typo is not None:  # a required option reported missing because it was misspelt
                raise OptionError(typo, f"unknown option for this format (did you mean {exc.option!r}?)") from exc
            raise
        opts.check_all_used(self.extra_allowed_options())
        corrupt = self.common.corrupt_column_or_none
        if corrupt is not None and self.schema().get_field_index(corrupt) != len(self.schema()) - 1:
            raise OptionError("columnNameOfCorruptRecord", f"{corrupt!r} is already a column of {self.name}")

    # --- to implement -------------------------------------------------------------------------------------------
    @abc.abstractmethod
    def _parse_options(self, opts: OptionMap) -> None:
        """Read this format's own options from ``opts`` (raise OptionError for bad values)."""

    @abc.abstractmethod
    def schema(self) -> pa.Schema:
        """The Arrow schema of every batch (Spark's schema is derived from it)."""

    @abc.abstractmethod
    def accept_file_name(self, name: str) -> bool:
        """Whether a file found by listing a directory is one of ours (explicitly named files are always read)."""

    @abc.abstractmethod
    def read_split(self, split: Split, predicates: Sequence[Predicate] = ()) -> Iterator[pa.RecordBatch]:
        """The batches of one split: exactly the rows satisfying the option filters and ``predicates``."""

    # --- overridable defaults -----------------------------------------------------------------------------------
    def extra_allowed_options(self) -> Iterable[str]:
        return ()

    def can_push(self, predicate: Predicate) -> bool:
        return predicate.column in self.pushable_columns and predicate.op in self.pushable_ops

    def list_files(self, paths: Sequence[str] | None = None) -> list[FileEntry]:
        paths = list(paths) if paths is not None else self.paths
        if not paths:
            raise OptionError("path", "no path given: use .load(path) or the paths argument")
        return list_files(
            paths,
            accept_name=self.accept_file_name,
            glob_filter=self.common.path_glob_filter,
            recursive=self.common.recursive_file_lookup,
        )

    def plan(self, files: Sequence[FileEntry], predicates: Sequence[Predicate] = ()) -> list[Split]:
        """Byte-range splits of at most ``maxPartitionBytes``; formats refine this (file pruning, positions)."""
        step = self.common.max_partition_bytes
        splits = []
        for entry in files:
            if entry.size <= step:
                splits.append(Split(entry.uri, 0, None, entry.size))
                continue
            for start in range(0, entry.size, step):
                end = start + step
                splits.append(Split(entry.uri, start, end if end < entry.size else None, entry.size))
        return splits

    def stream(self) -> LogStream:
        """The growing-log view of the same options, for ``readStream`` and :func:`~spark_logsource.api.follow`.

        Formats that can be followed override this; the default says the format is batch only.
        """
        raise OptionError("readStream", f"format {self.name!r} cannot be streamed (batch only)")

    def iter_batches(self, predicates: Sequence[Predicate] = ()) -> Iterator[pa.RecordBatch]:
        """Plan and read everything in this process, split after split, in file order."""
        for split in self.plan(self.list_files(), predicates):
            yield from self.read_split(split, predicates)
