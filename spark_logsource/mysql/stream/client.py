"""A MySQL / MariaDB replication client: the same event frames as the file walker, from a server's dump thread.

Protocol (``docs/formats/mysql-replication.md``): an ordinary client handshake and login (pymysql: auth plugins,
AuthSwitch, TLS), session variables ``@master_binlog_checksum`` (marks the client checksum-aware),
``@mariadb_slave_capability = 4`` (GTID events as they are), ``@master_heartbeat_period``; then
``COM_REGISTER_SLAVE`` and ``COM_BINLOG_DUMP`` (``[0x12][u32 pos][u16 flags][u32 server_id][file name]``) with
the non-blocking flag, so the server ends the stream with an EOF packet instead of waiting for new events.
Each event packet is ``0x00`` + the event as in the file; ``0xff`` an error; ``0xfe`` (short) the end. Packets of
16 MiB - 1 bytes continue in the next packet and are re-joined (:mod:`.packets`, which reads the socket in big
blocks and frames packets without a copy each).

At the start of each file the server sends a *fake* ROTATE (timestamp 0, ``log_pos`` 0, the file name) and
the file's FDE (``log_pos`` 0 when the dump starts past position 4: not an event of the range); MariaDB adds a
fake GTID_LIST (flag ARTIFICIAL) and, while idle, HEARTBEAT events. These are consumed here. Every other event
gets its position from its own ``log_pos`` (``pos = log_pos - event_size``), never from adding sizes, because
the server omits events a client did not ask for.

A background thread drains the socket into a bounded queue (a socket read of packets at a time), so a consumer
that pauses (building Arrow batches, a slow Spark task) does not stall the server's writes into
``net_write_timeout``. Errors become :class:`~spark_logsource.errors.SourceError` (or
:class:`AuthenticationError`, :class:`DataLossError`) naming the server, the position and the server's own message
and code. The password is never logged, never in a repr, never in an error.
"""

from __future__ import annotations

import enum
import logging
import queue
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from spark_logsource.errors import AuthenticationError, DataLossError, OptionError, SourceError, UnavailableError
from spark_logsource.mysql.binlog import event_types as et
from spark_logsource.mysql.binlog.checksum import CHECKSUM_ALG_CRC32, CRC_LEN, event_crc_ok
from spark_logsource.mysql.binlog.events import MAX_EVENT_SIZE, BinlogEvent, Resume
from spark_logsource.mysql.binlog.fde import FormatDescription, decode_fde
from spark_logsource.mysql.binlog.header import HEADER_LEN, unpack_header
from spark_logsource.mysql.stream.connection import ConnectionSettings, connect, greeting_problem, parse_uri
from spark_logsource.mysql.stream.packets import PacketBatch, PacketFramer, PacketTooLarge
from spark_logsource.net import Secret

__all__ = ["COM_BINLOG_DUMP", "COM_REGISTER_SLAVE", "ConnectionSettings", "DumpEvent", "ReplicationClient",
           "Secret", "parse_uri"]

log = logging.getLogger(__name__)



class _NoGtid(enum.Enum):
    """``_gtid_binlog_pos`` on a server that has no MariaDB GTID variable: an enum member rather than a bare
    ``object()``, so that the type checker narrows ``before is _NO_GTID``."""

    NO_GTID = "no MariaDB GTID"


_NO_GTID = _NoGtid.NO_GTID

COM_BINLOG_DUMP = 0x12
COM_REGISTER_SLAVE = 0x15
BINLOG_DUMP_NON_BLOCK = 0x01
#: MariaDB: send ANNOTATE_ROWS events (the statement of each rows event), which the file holds too.
BINLOG_SEND_ANNOTATE_ROWS = 0x02
MARIA_SLAVE_CAPABILITY_GTID = 4
FLAG_ARTIFICIAL = 0x20
#: Server error codes we explain (``include/mysqld_error.h``).
ER_ACCESS_DENIED = 1045
ER_SPECIFIC_ACCESS_DENIED = 1227
ER_DBACCESS_DENIED = 1044
ER_MASTER_FATAL_READING_BINLOG = 1236
#: MariaDB: another replica registered with the same server id; the server dropped this dump.
ER_SLAVE_SAME_ID = 4052
CR_CONN_HOST_ERROR = 2003
CR_SERVER_GONE = 2006
CR_SERVER_LOST = 2013
ER_SERVER_SHUTDOWN = 1053
ER_CONNECTION_KILLED = 1927
#: The server is gone, going or not there yet: a restart or a failover; worth reconnecting (streaming/retry.py).
UNAVAILABLE_CODES = frozenset({CR_CONN_HOST_ERROR, CR_SERVER_GONE, CR_SERVER_LOST, ER_SERVER_SHUTDOWN,
                               ER_CONNECTION_KILLED})
#: Socket reads waiting in the drain queue at most (each a list of packets, about a socket block of
#: :data:`.packets.BLOCK` bytes, or one packet capped by max_allowed_packet).
QUEUE_BATCHES = 64
#: The consumer takes what is queued up to about this many bytes at a time: the window a run of rows events is
#: read from (:meth:`ReplicationClient.dump`).
WINDOW_BYTES = 4 << 20
#: Events the dump consumes itself (when the server made them up) or steps over (heartbeats): the slow path.
_CONSUMED = frozenset({et.ROTATE, et.FORMAT_DESCRIPTION, et.HEARTBEAT, et.HEARTBEAT_V2, et.MARIA_GTID_LIST})


@dataclass(slots=True)
class DumpEvent:
    """One event of the dump: the file it belongs to, the event frame, and its FDE."""

    file: str
    event: BinlogEvent
    fde: FormatDescription
    #: the buffer of the events received with this one that follow each other in the file, and the file offset of
    #: its first byte (None: the event has no position of its own)
    window: tuple[bytes, int] | None = None
    crc_len: int = 0


class ReplicationClient:
    """One connection to a server: status queries and one binlog dump."""

    def __init__(self, settings: ConnectionSettings, *, verify_checksums: bool = True) -> None:
        self.settings = settings
        self.verify_checksums = verify_checksums
        self._conn: Any = None
        self._drain: threading.Thread | None = None
        self._stop = threading.Event()

    def __repr__(self) -> str:
        return f"ReplicationClient({self.settings.source!r}, user={self.settings.user!r})"

    # -- connection -------------------------------------------------------------------------------------------
    def connect(self) -> ReplicationClient:
        try:
            import pymysql  # noqa: F401
        except ImportError:  # pragma: no cover - an optional extra
            raise OptionError("uri", "the live source needs pymysql: pip install 'spark-logsource[live]'") from None
        s = self.settings
        try:
            self._conn = connect(host=s.host, port=s.port, user=s.user, password=s.password.reveal(),
                                 connect_timeout=s.connect_timeout, read_timeout=s.read_timeout,
                                 write_timeout=s.read_timeout, autocommit=True, charset="utf8mb4")
        except Exception as exc:
            args = getattr(exc, "args", ())
            code = args[0] if args and isinstance(args[0], int) else None
            if code is None or code == CR_SERVER_LOST:  # the handshake went wrong: is this a MySQL server?
                not_mysql = greeting_problem(self.settings)
                if not_mysql is not None:
                    raise not_mysql from None
            raise self.error(exc, None, "cannot connect") from None
        return self

    def close(self) -> None:
        self._stop.set()
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:
                log.debug("closing %s", self.settings.source, exc_info=True)
            self._conn = None
        if self._drain is not None:
            self._drain.join(timeout=5)
            self._drain = None

    def __enter__(self) -> ReplicationClient:
        return self.connect() if self._conn is None else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def error(self, exc: BaseException, position: str | None, doing: str) -> SourceError | DataLossError:
        """Our error for a pymysql/socket failure: the server's message and code, a hint, never the password."""
        args: tuple[Any, ...] = getattr(exc, "args", ())
        code = args[0] if args and isinstance(args[0], int) else None
        message = self.settings.password.redact(str(args[1]) if len(args) > 1 else str(exc))
        text = f"{doing}: {message}" + (f" (error {code})" if code is not None else "")
        source = self.settings.source
        if code in (ER_ACCESS_DENIED, ER_DBACCESS_DENIED) and doing.startswith("COM_"):
            # logged in, then refused the replication command: MariaDB says 1045 for a missing grant
            return AuthenticationError(source, position, text + f"; the user {self.settings.user!r} needs the "
                                                                "REPLICATION SLAVE privilege")
        if code in (ER_ACCESS_DENIED, ER_DBACCESS_DENIED):
            return AuthenticationError(source, position, text + f"; check the user {self.settings.user!r} and "
                                                                "the password option")
        if code == ER_SPECIFIC_ACCESS_DENIED:
            return AuthenticationError(source, position, text + "; the user needs REPLICATION SLAVE (the dump) and "
                                                                "BINLOG MONITOR / REPLICATION CLIENT (status)")
        if code == ER_MASTER_FATAL_READING_BINLOG:
            lowered = message.lower()
            if "could not find first log file" in lowered or "purged" in lowered:
                return DataLossError(source, position or "the requested binlog",
                                     hint=f"the server says: {message} (error {code}); set failOnDataLoss=false "
                                          "to continue from the oldest binlog still there")
            if "not in the master's binlog" in lowered or "gtid" in lowered:
                return DataLossError(source, position or "the requested GTID",
                                     hint=f"the server says: {message} (error {code})")
            if "max_allowed_packet" in lowered:
                text += " (a start position inside an event reads as a huge event: use a transaction boundary)"
        elif code == ER_SLAVE_SAME_ID:
            text += " (another reader uses the same serverId: give each query its own serverId range)"
        elif code in (CR_SERVER_LOST, CR_SERVER_GONE) and doing != "cannot connect":
            text += (" (the dump thread was killed, the server restarted, another reader took over the same "
                     "serverId, or net_write_timeout expired)")
        if code in UNAVAILABLE_CODES:
            return UnavailableError(source, position, text)
        return SourceError(source, position, text)

    # -- queries ----------------------------------------------------------------------------------------------
    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        try:
            with self._conn.cursor() as cur:
                cur.execute(sql, params or None)
                return list(cur.fetchall())
        except Exception as exc:
            raise self.error(exc, None, sql.split()[0] + " " + sql.split()[1] if " " in sql else sql) from None

    def master_status(self) -> tuple[str, int, str | None]:
        """``(file, position, gtid_binlog_pos)``: the end of the last transaction written."""
        # The position and the GTID state come from two statements, and a transaction committed between them
        # would pair a position with a later state. The state read before and after the position is the same
        # only when nothing committed in between; under a busy writer, BINLOG_GTID_POS (a scan of the file up to
        # the position, exact but slower) settles it.
        for _attempt in range(8):
            before = self._gtid_binlog_pos()
            file, pos = self._show_master_status()
            if before is _NO_GTID:
                return file, pos, None  # MySQL: no MariaDB GTID
            if self._gtid_binlog_pos() == before:
                return file, pos, before
        return file, pos, self.gtid_at(file, pos)

    def _show_master_status(self) -> tuple[str, int]:
        rows = self.query("SHOW MASTER STATUS")
        if not rows:
            raise SourceError(self.settings.source, None, "SHOW MASTER STATUS is empty: binary logging is off")
        return str(rows[0][0]), int(rows[0][1])

    def _gtid_binlog_pos(self) -> str | Literal[_NoGtid.NO_GTID] | None:
        """``@@GLOBAL.gtid_binlog_pos`` (None when empty), or ``_NO_GTID`` on a server without it (MySQL)."""
        try:
            return self.query("SELECT @@GLOBAL.gtid_binlog_pos")[0][0] or None
        except SourceError:
            return _NO_GTID

    def binary_logs(self) -> list[tuple[str, int]]:
        """``SHOW BINARY LOGS``: every binlog the server still has, oldest first, with its size."""
        return [(str(r[0]), int(r[1])) for r in self.query("SHOW BINARY LOGS")]

    def identity(self) -> tuple[str, int, str | None]:
        """``(kind, server_id, server_uuid)``; MariaDB has no server_uuid (None)."""
        version, server_id = self.query("SELECT VERSION(), @@GLOBAL.server_id")[0]
        kind = "mariadb" if "mariadb" in str(version).lower() else "mysql"
        uuid = None
        if kind == "mysql":
            uuid = self.query("SELECT @@GLOBAL.server_uuid")[0][0]
        return kind, int(server_id), uuid

    def gtid_at(self, file: str, pos: int) -> str | None:
        """MariaDB's GTID state at ``file:pos`` (``BINLOG_GTID_POS``), or None when the server cannot tell."""
        try:
            value = self.query("SELECT BINLOG_GTID_POS(%s, %s)", file, pos)[0][0]
        except SourceError:
            return None
        return str(value) if value else None

    # -- the dump ---------------------------------------------------------------------------------------------
    def _command(self, command: int, payload: bytes) -> None:
        self._conn._next_seq_id = 0
        self._conn._execute_command(command, payload)

    def _dump_flags(self) -> int:
        flags = BINLOG_DUMP_NON_BLOCK
        if "mariadb" in str(getattr(self._conn, "server_version", "")).lower():
            flags |= BINLOG_SEND_ANNOTATE_ROWS
        return flags

    def _prepare_dump(self, server_id: int, gtid_start: str | None = None, where: str | None = None) -> None:
        s = self.settings
        statements = [
            "SET @master_binlog_checksum = @@global.binlog_checksum",
            "SET @source_binlog_checksum = @@global.binlog_checksum",
            f"SET @mariadb_slave_capability = {MARIA_SLAVE_CAPABILITY_GTID}",
            f"SET @master_heartbeat_period = {int(s.heartbeat_period * 1e9)}",
        ]
        if gtid_start is not None:
            statements += ["SET @slave_connect_state = %s", "SET @slave_gtid_strict_mode = 1"]
        for sql in statements:
            try:
                with self._conn.cursor() as cur:
                    cur.execute(sql, (gtid_start,) if "%s" in sql else None)
            except Exception as exc:
                if "source_binlog_checksum" in sql:
                    continue  # only MySQL 8.0.26+ knows the new name; MariaDB takes the old one
                raise self.error(exc, where, "preparing the dump") from None
        host = b"spark-logsource"[:60]
        user = s.user.encode()[:60]
        register = (struct.pack("<I", server_id) + bytes([len(host)]) + host + bytes([len(user)]) + user + b"\0"
                    + struct.pack("<HII", 0, 0, 0))
        try:
            self._command(COM_REGISTER_SLAVE, register)
            self._conn._read_packet()
        except Exception as exc:
            raise self.error(exc, where, "COM_REGISTER_SLAVE") from None

    def dump(self, file: str, pos: int, server_id: int, *, gtid_start: str | None = None,
             resume: Resume | None = None, only: frozenset[int] | None = None) -> Iterator[DumpEvent]:
        """The events of the binlogs from ``file:pos`` to the server's current end (non-blocking dump).

        Fake ROTATE / FDE (log_pos 0) / fake GTID_LIST and heartbeats are consumed; with ``gtid_start`` the server
        chooses the file (MariaDB ``@slave_connect_state``) and the events before the GTID are not sent.

        Each event comes with its ``window``: the events received with it that follow one another in the file,
        as one buffer (the file offset of its first byte beside it), so that a consumer can hand a run of rows
        events to the kernel as the file reader does; it then sets ``resume.at`` to the offset after them, and the
        dump goes on there (:class:`~spark_logsource.mysql.binlog.events.Resume`). ``only``: the events of these
        types alone; the others are stepped over by their headers (no copy, no CRC check).
        """
        where = f"{file}:{pos}" if gtid_start is None else f"GTID {gtid_start}"
        self._prepare_dump(server_id, gtid_start, where)
        name = file.encode() if gtid_start is None else b""
        payload = struct.pack("<IHI", pos if gtid_start is None else 4, self._dump_flags(), server_id) + name
        try:
            self._command(COM_BINLOG_DUMP, payload)
        except Exception as exc:
            raise self.error(exc, where, "COM_BINLOG_DUMP") from None
        packets: queue.Queue[Any] = queue.Queue(maxsize=QUEUE_BATCHES)
        self._stop.clear()
        self._drain = threading.Thread(target=self._drain_socket, args=(packets,), name="binlog-dump-drain",
                                       daemon=True)
        self._drain.start()
        yield from self._frames(packets, file, pos, resume, only)

    def _drain_socket(self, packets: queue.Queue[Any]) -> None:
        """Read the socket as fast as the server sends (see the module docstring) until the EOF or an error; queue
        the packets' payloads a socket read at a time (a list of them), or the error."""
        import pymysql.err

        rfile = self._conn._rfile  # pymysql's buffered reader: it may hold bytes already read from the socket
        framer = PacketFramer()
        while not self._stop.is_set():
            try:
                n = rfile.readinto1(framer.room())
            except BaseException as exc:  # the same error pymysql's own packet reader raises
                lost = pymysql.err.OperationalError(CR_SERVER_LOST, f"Lost connection to MySQL server during query "
                                                                    f"({exc})")
                self._hand_over(packets, lost if isinstance(exc, OSError | ValueError) else exc)
                return
            if not n:
                self._hand_over(packets, pymysql.err.OperationalError(
                    CR_SERVER_LOST, "Lost connection to MySQL server during query"))
                return
            try:
                batch = framer.feed(n)
            except PacketTooLarge as exc:
                self._hand_over(packets, exc)
                return
            if batch:
                self._hand_over(packets, batch)
            if framer.done:
                return

    def _hand_over(self, packets: queue.Queue[Any], item: Any) -> None:
        """Queue ``item`` for the consumer, waiting while the queue is full, unless the client is closing."""
        while not self._stop.is_set():
            try:
                packets.put(item, timeout=0.2)
                return
            except queue.Full:
                continue

    def _next_payloads(self, packets: queue.Queue[Any], where: str) -> tuple[list[Any], BaseException | None]:
        """The payloads queued now (waiting for the first), up to about :data:`WINDOW_BYTES`, and the error that
        came after them (None: none yet)."""
        timeout = self.settings.read_timeout + 5
        try:
            item = packets.get(timeout=timeout)
        except queue.Empty:
            raise SourceError(self.settings.source, where, f"the dump stalled: no event, heartbeat or end for "
                                                           f"{timeout:.0f} s") from None
        payloads: list[Any] = []
        size = 0
        while True:
            if isinstance(item, BaseException):
                return payloads, item
            if isinstance(item, PacketBatch):
                payloads.extend(item)
                size += item.nbytes
            elif isinstance(item, list):
                payloads.extend(item)
                size += sum(len(p) for p in item)
            else:  # one payload (bytes)
                payloads.append(item)
                size += len(item)
            if size >= WINDOW_BYTES:
                return payloads, None
            try:
                item = packets.get_nowait()
            except queue.Empty:
                return payloads, None

    def _frames(self, packets: queue.Queue[Any], file: str, pos: int, resume: Resume | None,
                only: frozenset[int] | None) -> Iterator[DumpEvent]:
        current = file
        fde: FormatDescription | None = None
        crc_len = 0
        last_pos = pos
        source = self.settings.source
        verify = self.verify_checksums
        # ``only``: the types not stepped over (those asked for, and those the dump consumes itself)
        kept = None if only is None else only | _CONSUMED
        # the current window: events that follow one another in the file, (offset, header) of each, their bytes
        run: list[tuple[int, tuple[int, ...]]] = []
        parts: list[Any] = []
        run_start = run_end = -1

        def flush() -> Iterator[DumpEvent]:
            nonlocal run_start, run_end
            if not run:
                return
            window = parts[0].tobytes() if len(parts) == 1 and isinstance(parts[0], memoryview) else b"".join(parts)
            assert fde is not None
            events, base = list(run), run_start
            run.clear()
            parts.clear()
            run_start = run_end = -1
            for start, h in events:
                if resume is not None and resume.at is not None:
                    if start < resume.at:
                        continue  # read by the consumer within an earlier event's window
                    resume.at = None
                ts, type_code, sid, size, log_pos, flags = h
                at = start - base
                if verify and crc_len and not event_crc_ok(memoryview(window)[at:at + size]):
                    raise SourceError(source, f"{current}:{start}",
                                      f"CRC32 mismatch in a {size}-byte event of type {type_code}")
                yield DumpEvent(current, BinlogEvent(start, log_pos, ts, type_code, sid, size, log_pos, flags,
                                                     window[at + HEADER_LEN:at + size - crc_len]), fde,
                                (window, base), crc_len)

        while True:
            payloads, error = self._next_payloads(packets, f"{current}:{last_pos}")
            for data in payloads:
                if kept is not None and len(data) > HEADER_LEN and data[0] == 0 and data[5] not in kept:
                    # not asked for (``only``): stepped over by its type byte alone; its end (the header's log_pos
                    # at bytes 13..17 after the packet's 0 byte) still moves the position errors name
                    last_pos = int.from_bytes(data[14:18], "little") or last_pos
                    continue
                if len(data) > HEADER_LEN and data[0] == 0 and fde is not None:
                    # the bulk of a dump: an event of the range that follows the one before it in the file
                    h = unpack_header(data, 1)
                    type_code, size, log_pos = h[1], h[3], h[4]
                    if (log_pos and size == len(data) - 1 and type_code not in _CONSUMED and size <= MAX_EVENT_SIZE
                            and (only is None or type_code in only)):
                        start = log_pos - size
                        if start != run_end:
                            yield from flush()
                            run_start = start
                        run.append((start, h))
                        parts.append(data[1:])
                        run_end = last_pos = log_pos
                        continue
                if len(data) < 9 and data[:1] == b"\xfe":
                    yield from flush()
                    return  # the non-blocking dump reached the server's end
                if data[:1] != b"\x00":
                    yield from flush()
                    raise self._packet_error(bytes(data), f"{current}:{last_pos}")
                raw = memoryview(data)[1:]
                if len(raw) < HEADER_LEN:
                    raise SourceError(source, f"{current}:{last_pos}", f"an event packet of {len(raw)} bytes")
                h = unpack_header(raw, 0)
                ts, type_code, sid, size, log_pos, flags = h
                if size != len(raw) or size > MAX_EVENT_SIZE:
                    raise SourceError(source, f"{current}:{last_pos}",
                                      f"event size {size} in a packet of {len(raw)} bytes")
                if type_code == et.ROTATE and (log_pos == 0 or flags & FLAG_ARTIFICIAL):
                    # the fake ROTATE opening each file: before the first FDE its CRC follows @master_binlog_checksum
                    yield from flush()
                    current = _rotate_name(raw.tobytes(), None if fde is None else crc_len)
                    last_pos = int.from_bytes(raw[HEADER_LEN:HEADER_LEN + 8], "little")
                    continue
                if type_code == et.FORMAT_DESCRIPTION:
                    yield from flush()
                    try:
                        fde = decode_fde(raw.tobytes(), path=f"{source}/{current}", offset=4)
                    except Exception as exc:
                        raise SourceError(source, f"{current}:4", f"bad FORMAT_DESCRIPTION_EVENT: {exc}") from None
                    crc_len = CRC_LEN if fde.checksum_alg == CHECKSUM_ALG_CRC32 else 0
                    if log_pos == 0:
                        continue  # the dump started past this file's FDE: not an event of the range
                if fde is None:
                    raise SourceError(source, f"{current}:{last_pos}",
                                      f"event type {type_code} before any FORMAT_DESCRIPTION_EVENT")
                if type_code in (et.HEARTBEAT, et.HEARTBEAT_V2):
                    continue
                if type_code == et.MARIA_GTID_LIST and (flags & FLAG_ARTIFICIAL or ts == 0):
                    last_pos = log_pos or last_pos
                    continue  # MariaDB's marker of the point a GTID start reached
                if only is not None and type_code not in only:
                    last_pos = log_pos or last_pos
                    continue
                if not log_pos:
                    # MariaDB 11.4+ in-transaction events carry no position: keep the last one; no window
                    yield from flush()
                    if verify and crc_len and not event_crc_ok(raw):
                        raise SourceError(source, f"{current}:{last_pos}",
                                          f"CRC32 mismatch in a {size}-byte event of type {type_code}")
                    if resume is not None:
                        resume.at = None
                    yield DumpEvent(current, BinlogEvent(last_pos, last_pos, ts, type_code, sid, size, log_pos,
                                                         flags, raw[HEADER_LEN:size - crc_len].tobytes()), fde,
                                    None, crc_len)
                    continue
                start = log_pos - size
                if start != run_end:
                    yield from flush()
                    run_start = start
                run.append((start, h))
                parts.append(raw)
                run_end = last_pos = log_pos
            yield from flush()
            if error is not None:
                raise self.error(error, f"{current}:{last_pos}", "reading the binlog dump") from None

    def _packet_error(self, data: bytes, where: str) -> SourceError | DataLossError:
        """Our error for an error packet (``0xff``: the server's code and message), or any other unexpected one."""
        if data[:1] != b"\xff":
            return SourceError(self.settings.source, where, f"unexpected packet 0x{data[:1].hex()} in the dump")
        import pymysql.err

        try:
            pymysql.err.raise_mysql_exception(data)
        except Exception as exc:
            return self.error(exc, where, "reading the binlog dump")

    def find_gtid_position(self, gtid_state: str, server_id: int) -> tuple[str, int]:
        """Where MariaDB would start replicating after ``gtid_state``: ``(file, pos)`` of that boundary.

        The server scans from the file that holds the GTID and marks the point with a fake GTID_LIST.
        """
        where = f"GTID {gtid_state}"
        self._prepare_dump(server_id, gtid_state)
        payload = struct.pack("<IHI", 4, self._dump_flags(), server_id)
        try:
            self._command(COM_BINLOG_DUMP, payload)
        except Exception as exc:
            raise self.error(exc, where, "COM_BINLOG_DUMP") from None
        current = ""
        crc_len: int | None = None
        while True:
            try:
                data = self._conn._read_packet().get_all_data()
            except Exception as exc:
                raise self.error(exc, where, "looking up the GTID position") from None
            if data[:1] == b"\xfe" and len(data) < 9:
                raise SourceError(self.settings.source, where, "the server ended the dump before reaching the GTID")
            raw = data[1:]
            ts, type_code, _sid, size, log_pos, flags = unpack_header(raw, 0)
            if type_code == et.ROTATE and (log_pos == 0 or flags & FLAG_ARTIFICIAL):
                current = _rotate_name(raw, crc_len)
                continue
            if type_code == et.FORMAT_DESCRIPTION:
                crc_len = CRC_LEN if decode_fde(raw, path=None).checksum_alg == CHECKSUM_ALG_CRC32 else 0
                continue
            if type_code == et.MARIA_GTID_LIST and (flags & FLAG_ARTIFICIAL or ts == 0) and log_pos:
                return current, log_pos
            if type_code in (et.MARIA_GTID, et.XID, et.QUERY) and log_pos:
                # no marker: the GTID is the server's very first (start of the oldest file)
                return current, log_pos - size


def _rotate_name(raw: bytes, crc_len: int | None) -> str:
    """The file name in a ROTATE event; ``crc_len`` None: unknown yet (the first fake ROTATE, whose CRC is there
    when ``@master_binlog_checksum`` is CRC32 — told by the CRC matching)."""
    if crc_len is None:
        crc_len = CRC_LEN if len(raw) >= HEADER_LEN + 8 + CRC_LEN and event_crc_ok(raw) else 0
    return raw[HEADER_LEN + 8:len(raw) - crc_len].decode("utf-8", "replace")
