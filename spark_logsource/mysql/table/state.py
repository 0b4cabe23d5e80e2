"""``view=state``: one table's content as of a point of the binlogs, rebuilt from its changes.

``docs/formats/mysql-typed.md`` "view=state" is the contract. The driver builds the ``view=table`` reader (the DDL
replay, :mod:`.rows`), finds the point ``asOf`` names and the layout in force there. Split ``i`` of
``statePartitions`` replays the table's typed changes up to that point, in log order, and keeps the rows whose
key (the primary key, or the whole row of a table without one) hashes to ``i``: no row crosses the driver.
:class:`LiveStateView` does the same over a live server's binlogs (``mysql-replication``), dumped by the tasks.
"""

from __future__ import annotations

import bisect
import dataclasses
import datetime as dt
import logging
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from spark_logsource.arrow.columns import variant_field
from spark_logsource.errors import CorruptDataError, OptionError, SourceError
from spark_logsource.framing import BadRange
from spark_logsource.io.fs import base_name, display_name, open_input
from spark_logsource.logformat import Split
from spark_logsource.mysql.binlog import event_types as et
from spark_logsource.mysql.binlog.events import BinlogFile
from spark_logsource.mysql.binlog.header import HEADER_LEN
from spark_logsource.mysql.decode.event_bodies import decode_event_body
from spark_logsource.mysql.decode.packed import BinlogDecodeError
from spark_logsource.mysql.position import FILE_START
from spark_logsource.mysql.read.options import BinlogReadOptions
from spark_logsource.mysql.stream.client import ConnectionSettings, ReplicationClient
from spark_logsource.mysql.table.ddl import Catalog, Position
from spark_logsource.mysql.table.layout import Layout
from spark_logsource.mysql.table.options import TableOptions
from spark_logsource.mysql.table.rows import TableView
from spark_logsource.options import ParseMode

if TYPE_CHECKING:
    from spark_logsource.mysql.format import MysqlBinlogFormat
    from spark_logsource.mysql.replication_format import MysqlReplicationFormat

__all__ = ["DEFAULT_PARTITIONS", "AsOf", "LiveStateView", "StateView", "parse_as_of"]

log = logging.getLogger(__name__)

DEFAULT_PARTITIONS = 4
_STATE_URI = "mysql-state:"
_MARIA_GTID = re.compile(r"^(\d+)-(\d+)-(\d+)$")
_MYSQL_GTID = re.compile(r"^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
                         r"((?::\d+(?:-\d+)?)+)$")
#: (position of its GTID event, its GTID, its time): one transaction of the walk that places asOf
Transaction = tuple[Position, str | None, dt.datetime]
_AS_OF_FORMS = "a file:pos (mysql-bin.000042:1234), a GTID state (0-1-100,1-2-7 or uuid:1-100) or a time " \
               "(2024-05-01 13:00:00, UTC without an offset)"


@dataclass(frozen=True, slots=True)
class AsOf:
    """A point of the log: ``kind`` end | position | gtid | time."""

    kind: str
    text: str = ""
    file: str | None = None
    pos: int = 0
    maria: tuple[tuple[int, int], ...] = ()  # (domain, last seq_no included)
    mysql: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = ()  # (uuid, intervals of gno included)
    time: dt.datetime | None = None

    def includes_gtid(self, gtid: str) -> bool | None:
        """Whether the transaction ``gtid`` is in this GTID state (None: ``gtid`` is not a GTID of its kind)."""
        m = _MARIA_GTID.match(gtid)
        if m is not None and self.maria:
            domain, seq = int(m.group(1)), int(m.group(3))
            return any(d == domain and seq <= last for d, last in self.maria)
        uuid, _, gno = gtid.rpartition(":")
        if uuid and gno.isdigit() and self.mysql:
            return any(u == uuid.lower() and lo <= int(gno) <= hi for u, spans in self.mysql for lo, hi in spans)
        return None


def parse_as_of(text: str | None) -> AsOf:
    """The ``asOf`` option; an :class:`OptionError` saying the accepted forms when it is none of them."""
    if text is None or not text.strip():
        return AsOf("end")
    text = text.strip()
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if parts and all(_MARIA_GTID.match(p) for p in parts):
        if "," not in text and _iso_time(text) is not None:
            raise OptionError("asOf", f"{text!r} is both a date and a GTID: write a time of day for a date "
                                      f"(2024-05-01 00:00:00) or end the GTID state with a comma ({text},)")
        last: dict[int, int] = {}
        for p in parts:
            domain, _server, seq = (int(x) for x in p.split("-"))
            last[domain] = max(seq, last.get(domain, 0))
        return AsOf("gtid", text, maria=tuple(sorted(last.items())))
    if parts and all(_MYSQL_GTID.match(p) for p in parts):
        sets = [(p.split(":")[0].lower(), [span.partition("-") for span in p.split(":")[1:]]) for p in parts]
        return AsOf("gtid", text, mysql=tuple((uuid, tuple((int(lo), int(hi or lo)) for lo, _, hi in spans))
                                              for uuid, spans in sets))
    time = _iso_time(text)
    if time is not None:
        return AsOf("time", text, time=time)
    file, colon, pos = text.rpartition(":")
    if colon and file and pos.isdigit():
        return AsOf("position", text, file=file, pos=int(pos))
    raise OptionError("asOf", f"expected {_AS_OF_FORMS}, got {text!r}")


def _iso_time(text: str) -> dt.datetime | None:
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def _bad_region(mode: ParseMode, error: CorruptDataError) -> None:
    if mode is ParseMode.FAILFAST:
        raise error
    log.warning("a bad region while placing asOf (a transaction boundary may be missing): %s", error)


def _norm(value: Any) -> Any:
    """A key part that compares and hashes the same whatever column type a layout gave the value (an INT widened
    to a DECIMAL is still the same key)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else value.normalize()
    if isinstance(value, dict):  # a variant cell
        return tuple(sorted(value.items()))
    return value


def _key_hash(key: tuple[Any, ...]) -> int:
    """The same in every process (Python's ``hash`` of str and bytes is salted per process)."""
    return zlib.crc32(repr(key).encode("utf-8", "surrogateescape"))


class StateView(TableView):
    """The ``view=state`` part of a :class:`MysqlBinlogFormat`: a :class:`TableView` (the DDL replay) that plans
    ``statePartitions`` splits and replays the table's changes in each."""

    def __init__(self, fmt: MysqlBinlogFormat, options: TableOptions, as_of: str | None,
                 partitions: int | None) -> None:
        self._refuse(fmt, options, as_of, partitions)
        super().__init__(fmt, options)
        #: (name, number in the history's positions) of each binlog read, in log order
        self.files = sorted(self.file_numbers.items(), key=lambda item: item[1])
        self._plan(fmt, self._cutoff((len(self.files), 0), self._transactions))

    def _refuse(self, fmt: MysqlBinlogFormat, options: TableOptions, as_of: str | None,
                partitions: int | None) -> None:
        """The options a state cannot take; ``asOf`` and ``statePartitions`` parsed."""
        if options.schema_from == "metadata":
            raise OptionError("schemaFrom", "view=state needs the table's primary key, which schemaFrom=metadata "
                                            "does not give: use binlog, ddl:<path> or mysql://user@host:port")
        ro = fmt.read_options
        for name, value in (("startPosition", fmt.start_position), ("stopPosition", fmt.stop_position),
                            ("startDatetime", ro.start_datetime), ("stopDatetime", ro.stop_datetime),
                            ("serverId", ro.server_ids), ("databases", ro.databases), ("tables", ro.tables),
                            ("ops", ro.ops), ("eventTypes", ro.event_types)):
            if value is not None:
                raise OptionError(name, "does not apply to view=state (the state is of every change up to asOf)")
        self.as_of = parse_as_of(as_of)
        self.partitions = partitions or DEFAULT_PARTITIONS

    def _plan(self, fmt: MysqlBinlogFormat, cutoff: Position) -> None:
        """The point ``cutoff``, the layout in force there and the state's columns (the history is read)."""
        options = self.options
        layouts = [v.layout for v in self.history.versions if v.layout is not None]
        #: the reader of the table's changes: a plain view=table reader over the same history
        self.reader = TableView.from_history(fmt, options, self.history, layouts)
        self.cutoff = cutoff
        name = f"{options.database}.{options.table}"
        version = self.history.at(self.cutoff)
        if version is None or version.layout is None:
            why = "it does not exist" if version is None else version.reason
            raise OptionError("asOf", f"{name} has no known layout as of {self._point()}: {why}")
        layout = version.layout
        self.version_positions = [v.position for v in self.history.versions]
        passed = [v.layout for v in self.history.versions if v.layout is not None and v.position < self.cutoff]
        # a key that changes moves rows between tasks: one task replays it (a whole-row key changes with the columns)
        self.key_changes = len({tuple(k.lower() for k in lo.primary_key) for lo in passed}) > 1 or (
            not layout.primary_key and len({tuple(c.key for c in lo.columns) for lo in passed}) > 1)
        for v in self.history.versions:
            if v.layout is not None and v.layout.filled and v.position < self.cutoff:
                log.warning("%s: the ALTER at %s added %s with a value the server fills in; the binlog does not "
                            "hold that value, so rows not changed since show null there", name,
                            self._where(v.position), ", ".join(v.layout.filled))
        if not layout.primary_key:
            log.info("%s has no primary key as of %s: its state is a multiset of whole rows (a row whose values "
                     "are all equal to another's is counted twice)", name, self._point())
        #: (output name, union column name, type) of each column of the layout in force at the point
        self.out_columns = [(spec.name, *self.column_types[spec.key]) for spec in layout.columns]
        fields = [variant_field(n) if isinstance(t, str) else pa.field(n, t) for n, _u, t in self.out_columns]
        corrupt = self.common.corrupt_column_or_none
        if corrupt is not None:
            if corrupt.lower() in {n.lower() for n, _u, _t in self.out_columns}:
                raise OptionError("columnNameOfCorruptRecord", f"{corrupt!r} is a column of {name}")
            fields.append(pa.field(corrupt, pa.string()))
        self._state_schema = pa.schema(fields)

    def _where(self, position: Position) -> str:
        names = {number: name for name, number in self.files}
        name = names.get(position[0])
        return f"{base_name(name)}:{position[1]}" if name is not None else "the DDL file"

    def _point(self) -> str:
        return "the end of the binlogs" if self.as_of.kind == "end" else f"asOf={self.as_of.text}"

    # -- the point (driver) --------------------------------------------------------------------------------------
    def _cutoff(self, end: Position, transactions: Callable[[], Iterable[Transaction]]) -> Position:
        """The first position the state leaves out: rows before it count (GTID states also check each row's).
        ``end``: the end of the binlogs read; ``transactions``: the walk over their GTID events."""
        if self.as_of.kind == "end":
            return end
        if self.as_of.kind == "position":
            names = [base_name(name) for name, _number in self.files]
            if self.as_of.file not in names:
                raise OptionError("asOf", f"no binlog {self.as_of.file!r} among the files read ({', '.join(names)})")
            if self.as_of.pos < 4:
                raise OptionError("asOf", f"position {self.as_of.pos} is inside the binlog magic (the first event "
                                          "is at 4)")
            point = (self.files[names.index(self.as_of.file)][1], self.as_of.pos)
            if point > end:
                raise OptionError("asOf", f"{self.as_of.text} is past the end of the binlogs read "
                                          f"({self._where(end)})")
            return point
        # a GTID state or a time: the point right after the last transaction it includes
        txns = list(transactions())
        if not txns:
            raise OptionError("asOf", f"the binlogs read hold no transaction boundaries (GTID events) to place "
                                      f"asOf={self.as_of.text}")
        if self.as_of.kind == "time":
            limit = self.as_of.time
            inside = [limit is not None and when <= limit for _p, _g, when in txns]
        else:
            known = [None if g is None else self.as_of.includes_gtid(g) for _p, g, _w in txns]
            if all(k is None for k in known):
                raise OptionError("asOf", f"no transaction of the binlogs read has a GTID of the kind of "
                                          f"{self.as_of.text!r}")
            inside = [bool(k) for k in known]
        last = max((i for i, x in enumerate(inside) if x), default=-1)
        return txns[last + 1][0] if last + 1 < len(txns) else end

    def _transactions(self) -> Iterator[Transaction]:
        """(position, GTID, time) of each transaction's GTID event, in log order (event headers are read; only
        GTID events are decoded)."""
        mode = self.common.mode
        for uri, n in self.files:
            path = display_name(uri)
            with open_input(uri) as source:
                try:
                    bf = BinlogFile(source, path, verify_checksums=self.common.verify_checksums)
                except CorruptDataError as exc:
                    _bad_region(mode, exc)
                    continue
                try:
                    for item in bf.events(only=et.GTID_TYPES):
                        if isinstance(item, BadRange):
                            _bad_region(mode, item.error)
                            continue
                        try:
                            data = decode_event_body(item.type_code, bytes(item.body), fde=bf.fde,
                                                     server_id=item.server_id, log_pos=item.log_pos,
                                                     max_uncompressed=self.read_options.max_uncompressed)
                        except BinlogDecodeError as exc:
                            raise exc.at(path, item.pos + HEADER_LEN) from None
                        when = dt.datetime.fromtimestamp(item.timestamp, dt.UTC)
                        yield (n, item.pos), data.get("gtid"), when
                finally:
                    bf.close()

    # -- LogFormat's parts ---------------------------------------------------------------------------------------
    def schema(self) -> pa.Schema:
        return self._state_schema

    def number_splits(self, splits: list[Split]) -> list[Split]:
        """The state's own splits (not the plan's file splits: every task reads every file up to the point)."""
        parts = 1 if self.key_changes else self.partitions
        if self.key_changes and self.partitions > 1:
            log.info("the key of %s.%s changed in the binlogs: replaying in one partition",
                     self.options.database, self.options.table)
        name = f"{_STATE_URI}{self.options.database}.{self.options.table}"
        return [Split(f"{name}/{i}", 0, None, 0, (("part", i), ("parts", parts))) for i in range(parts)]

    def read_split(self, split: Split, options: BinlogReadOptions) -> Iterator[pa.RecordBatch]:
        def read_file(uri: str, n: int, stop: int | None) -> Iterator[pa.RecordBatch]:
            opts = dataclasses.replace(self.reader.read_options, start_position=None, stop_position=stop)
            return self.reader.read_split(Split(uri, 0, None, 0, (("file_number", n),)), opts)

        return self.replay(split, read_file)

    def replay(self, split: Split, read_file: Callable[[str, int, int | None], Iterator[pa.RecordBatch]]
               ) -> Iterator[pa.RecordBatch]:
        """The rows of split ``split``: the table's changes of each binlog up to the point, read by
        ``read_file(name, number, stop)`` (``stop``: the point's offset in its binlog, None for a whole one), replayed
        in log order."""
        replay = _Replay(self, split.hint("part", 0), split.hint("parts", 1))
        last_file, stop = self.cutoff
        for name, n in self.files:
            if n > last_file or (n == last_file and stop == 0):
                break
            for batch in read_file(name, n, stop if n == last_file else None):
                replay.apply(batch, n)
        yield from replay.output()


class _Replay:
    """The state one task keeps: the rows whose key hashes to its part."""

    def __init__(self, view: StateView, part: int, parts: int) -> None:
        self.view = view
        self.part = part
        self.parts = parts
        self.rows: dict[tuple[Any, ...], list[Any]] = {}  # key → [image, count]
        self.key: tuple[str, ...] = ()  # union names of the key columns; () = the whole image
        self.at = -1  # the index of the version the held rows are in
        self.errors: list[str] = []
        self.missing = 0
        self.union = {k: name for k, (name, _t) in view.column_types.items()}

    def _mine(self, image: dict[str, Any]) -> tuple[Any, ...] | None:
        """The row's key when this task holds it (its primary key, or the whole row), else None."""
        key = tuple(_norm(image.get(c)) for c in self.key) if self.key else tuple(_norm(v) for v in image.values())
        return key if self.parts == 1 or _key_hash(key) % self.parts == self.part else None

    def _advance(self, position: Position) -> None:
        """Bring the held rows to the layout in force at ``position``: each DDL statement passed on the way renames,
        drops (to null) and re-keys as the server did to its rows."""
        target = bisect.bisect_left(self.view.version_positions, position) - 1
        while self.at < target:
            self.at += 1
            layout = self.view.history.versions[self.at].layout
            if layout is not None:
                self._migrate(layout)

    def _migrate(self, layout: Layout) -> None:
        held = list(self.rows.values())
        images = [image for image, _count in held]  # equal rows of a multiset share one image: changed once
        for old, new in layout.renames:
            was, now = self.union[old.lower()], self.union[new.lower()]
            for image in images:
                image[now], image[was] = image.get(was), None
        kept = {self.union[c.key] for c in layout.columns}
        for image in images:
            for name in image:
                if name not in kept:
                    image[name] = None  # a dropped column: a column added later under its name starts empty
        self.key = tuple(self.union[k.lower()] for k in layout.primary_key)
        self.rows = {}
        for image, count in held:  # re-keyed: a key column renamed, a whole-row key whose columns changed
            for _ in range(count):
                self._add(image)

    def _add(self, image: dict[str, Any]) -> None:
        key = self._mine(image)
        if key is None:
            return
        held = self.rows.get(key)
        if held is not None and not self.key:
            held[1] += 1
        else:
            self.rows[key] = [image, 1]

    def _remove(self, image: dict[str, Any]) -> None:
        key = self._mine(image)
        if key is None:
            return
        held = self.rows.get(key)
        if held is None:
            self.missing += 1  # the row predates the binlogs read (or their images are not whole rows)
        elif held[1] > 1:
            held[1] -= 1
        else:
            del self.rows[key]

    def apply(self, batch: pa.RecordBatch, file_number: int) -> None:
        view = self.view
        cutoff = view.cutoff
        source = batch.column("source")
        positions = source.field("pos").to_pylist()
        gtids = source.field("gtid").to_pylist() if view.as_of.kind == "gtid" else None
        ops = batch.column("op").to_pylist()
        befores = batch.column("before").to_pylist()
        afters = batch.column("after").to_pylist()
        corrupt = view.common.corrupt_column_or_none
        errors = batch.column(corrupt).to_pylist() if corrupt is not None else None
        for i, op in enumerate(ops):
            pos = positions[i]
            if pos is not None and (file_number, pos) >= cutoff:
                continue
            if gtids is not None and gtids[i] is not None and not view.as_of.includes_gtid(gtids[i]):
                continue
            if op is None:
                if self.part == 0 and errors is not None and errors[i] is not None:
                    self.errors.append(errors[i])
                continue
            if op == "t":
                self.rows.clear()
                continue
            self._advance((file_number, pos if pos is not None else 0))
            if op in ("u", "d") and befores[i] is not None:
                self._remove(befores[i])
            if op in ("c", "u") and afters[i] is not None:
                self._add(afters[i])

    def output(self) -> Iterator[pa.RecordBatch]:
        view = self.view
        self._advance(view.cutoff)  # DDL after the last change
        if self.missing:
            log.warning("%s.%s: %d update(s) or delete(s) of rows the binlogs read did not insert (rows older than "
                        "the first binlog read?)", view.options.database, view.options.table, self.missing)
        schema = view.schema()
        corrupt = view.common.corrupt_column_or_none
        size = view.common.batch_size
        for start in range(0, len(self.errors), size):
            chunk = self.errors[start:start + size]
            arrays = [*(pa.nulls(len(chunk), f.type) for f in list(schema)[:-1]), pa.array(chunk, pa.string())]
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)
        images = [image for image, count in self.rows.values() for _ in range(count)]
        for start in range(0, len(images), size):
            rows = images[start:start + size]
            arrays = [pa.array([row.get(union) for row in rows], type=field.type)
                      for (_n, union, _t), field in zip(view.out_columns, schema, strict=False)]
            if corrupt is not None:
                arrays.append(pa.nulls(len(rows), pa.string()))
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)



class LiveStateView(StateView):
    """``view=state`` on ``mysql-replication``: the same state, replayed from the binlogs the server still has, read
    over the replication protocol. The driver plans (``SHOW MASTER STATUS`` for the end, a dump of the QUERY events
    for the DDL and, for a GTID or a time, of the GTID events for the point); each task dumps the binlogs up to the
    point as its own replica. The view rides in the splits: a task replays with the driver's point and history."""

    def __init__(self, fmt: MysqlReplicationFormat, client: ReplicationClient, server_id: int) -> None:
        from spark_logsource.mysql.table.follow import file_number
        from spark_logsource.mysql.table.stream import live_statements

        options = fmt.table_options
        assert options is not None
        self._refuse(fmt, options, *fmt.state_options)
        self.source = fmt.settings.source
        end_file, end_pos, _gtid = client.master_status()  # first: every binlog below it is complete
        logs = client.binary_logs()
        names = [name for name, _size in logs]
        if end_file not in names:
            raise SourceError(self.source, f"{end_file}:{end_pos}", "the server does not list the binlog it writes")
        logs = logs[:names.index(end_file) + 1]
        #: where each binlog's dump stops: its size, the end position for the last one
        self.sizes = {**dict(logs), end_file: end_pos}
        self.files = [(name, file_number(name)) for name, _size in logs]
        end = (file_number(end_file), end_pos)
        catalog = Catalog()
        for st in live_statements(client, (logs[0][0], FILE_START), (end_file, end_pos), logs, server_id):
            catalog.apply(st.query, st.schema, (file_number(st.file), st.pos))
        history = catalog.resolve(options.database, options.table)
        layouts = history.layouts() if history is not None else []
        if history is None or not layouts:
            # the rows written before the oldest binlog are not there to replay: never a partial table
            raise OptionError("table", f"no CREATE TABLE {options.database}.{options.table} was found in the "
                                       f"binlogs read: the server's binlogs ({logs[0][0]} … {end_file}) do not "
                                       "start at the table's creation (purged, or the table was made with the "
                                       "binlog off), so its state cannot be rebuilt from them")
        self.options = options
        self.read_options = dataclasses.replace(fmt.read_options, view="changes", include_query=False)
        self.common = fmt.common
        self.file_numbers = {}
        self._build(history, layouts)
        self._plan(fmt, self._cutoff(end, lambda: self._live_transactions(client, end, server_id)))

    def _live_transactions(self, client: ReplicationClient, end: Position, server_id: int) -> Iterator[Transaction]:
        """(position, GTID, time) of each transaction up to ``end``, from a dump of the GTID events alone (its own
        connection: one that dumped takes no more commands)."""
        from spark_logsource.mysql.table.follow import file_number

        with ReplicationClient(client.settings, verify_checksums=client.verify_checksums) as dumper:
            for item in dumper.dump(self.files[0][0], FILE_START, server_id, only=et.GTID_TYPES):
                ev = item.event
                if (file_number(item.file), ev.pos) >= end:
                    break
                try:
                    data = decode_event_body(ev.type_code, bytes(ev.body), fde=item.fde, server_id=ev.server_id,
                                             log_pos=ev.log_pos, max_uncompressed=self.read_options.max_uncompressed)
                except BinlogDecodeError as exc:
                    raise exc.at(f"{self.source}/{item.file}", ev.pos + HEADER_LEN) from None
                yield (file_number(item.file), ev.pos), data.get("gtid"), dt.datetime.fromtimestamp(ev.timestamp,
                                                                                                   dt.UTC)

    def number_splits(self, splits: list[Split]) -> list[Split]:
        return [dataclasses.replace(s, hints=(*s.hints, ("state", self))) for s in super().number_splits(splits)]

    def read_live(self, split: Split, settings: ConnectionSettings, server_id: int) -> Iterator[pa.RecordBatch]:
        """The rows of ``split``, its binlogs dumped as replica ``server_id`` + its part (tasks run side by side: a
        server ends the older of two dumps with one id)."""
        from spark_logsource.mysql.replication_format import LiveSlice, read_live_slice
        from spark_logsource.mysql.table.rows import TableMachine
        from spark_logsource.mysql.table.stream import table_writer

        replica = server_id + split.hint("part", 0) % 1024  # below serverId + 1024, the driver's own dumps

        def read_file(name: str, _n: int, stop: int | None) -> Iterator[pa.RecordBatch]:
            writer = table_writer(self.reader, self.history.versions, f"{self.source}/{name}", name)
            size = self.sizes[name]
            slice_ = LiveSlice(name, FILE_START, size if stop is None else min(stop, size), replica)
            return read_live_slice(settings, slice_, self.reader.read_options, writer=writer, machine_type=TableMachine)

        return self.replay(split, read_file)
