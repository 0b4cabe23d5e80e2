"""A loopback TAP server that replays recorded conversations with real servers (test support, not a test module).

A recording (``tests/fixtures/memcached-tap/conversations/*.jsonl``) is a header line (the scenario, the
TAP_CONNECTs sent, the workload and the items the server held afterwards) then one line per packet or event:
``{"dir": "c2s"|"s2c", "t": seconds, "hex": ...}``, ``{"event": "server_closed"|"client_closed"|"reconnect"}``.

For each accepted connection the server plays the next conversation: it reads the client's TAP_CONNECT and
checks it against the recorded one (all bytes but the opaque), sends the recorded server packets in order (gaps
scaled by ``time_scale``), and at every recorded client packet (an ACK) *waits* for the client to send exactly
those bytes — as the real server waited — before going on. ``server_closed`` closes the socket; after
``client_closed`` or the end of the script it holds the connection open until the client leaves. Everything the
client sent is kept in :attr:`ReplayServer.logs` for the tests to compare with the recording.

Faults for error-path tests: ``cut_after`` (close after that many server bytes, mid-packet), ``silent`` (never
answer the TAP_CONNECT), ``inject`` (bytes sent after the first ``inject_after`` server packets).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.waiting import STATE_TIMEOUT

CONVERSATIONS = Path(__file__).resolve().parent.parent / "fixtures" / "memcached-tap" / "conversations"


@dataclass
class Recording:
    name: str
    header: dict[str, Any]
    conversations: list[list[dict[str, Any]]]

    def connect(self, i: int = 0) -> bytes:
        first = self.conversations[i][0]
        assert first.get("dir") == "c2s", first
        return bytes.fromhex(first["hex"])

    def packets(self, i: int, direction: str) -> list[bytes]:
        return [bytes.fromhex(e["hex"]) for e in self.conversations[i] if e.get("dir") == direction]

    def client_packets(self, i: int) -> list[bytes]:
        """What the recorded client sent after its TAP_CONNECT (its ACKs)."""
        return self.packets(i, "c2s")[1:]

    def end_event(self, i: int) -> str | None:
        events = [e["event"] for e in self.conversations[i] if "event" in e]
        return events[-1] if events else None


def load_recording(name: str) -> Recording:
    path = CONVERSATIONS / (name if name.endswith(".jsonl") else name + ".jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    conversations: list[list[dict[str, Any]]] = [[]]
    for event in lines[1:]:
        if event.get("event") == "reconnect":
            conversations.append([])
            continue
        conversations[-1].append(event)
    return Recording(path.stem, lines[0], conversations)


def recording_names() -> list[str]:
    return sorted(p.stem for p in CONVERSATIONS.glob("*.jsonl"))


@dataclass
class ConnLog:
    """What happened on one accepted connection."""

    conversation: int
    connect: bytes = b""
    connect_matched: bool | None = None
    client_packets: list[bytes] = field(default_factory=list)  # received where the recording has a client packet
    mismatches: list[tuple[bytes, bytes]] = field(default_factory=list)  # (recorded, received)
    waiting_for: bytes | None = None  # set when the client never sent a packet the server waited for
    extra: bytes = b""  # bytes the client sent where the recording has none
    server_bytes: int = 0
    finished: bool = False


class ReplayServer:
    def __init__(self, recording: Recording, *, time_scale: float = 0.01, ack_timeout: float = STATE_TIMEOUT,
                 hold_timeout: float = STATE_TIMEOUT, cut_after: int | None = None, silent: bool = False,
                 inject: bytes | None = None, inject_after: int = 0) -> None:
        self.recording = recording
        self.time_scale = time_scale
        self.ack_timeout = ack_timeout
        self.hold_timeout = hold_timeout
        self.cut_after = cut_after
        self.silent = silent
        self.inject = inject
        self.inject_after = inject_after
        self.logs: list[ConnLog] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=f"replay-{recording.name}", daemon=True)
        self._errors: list[BaseException] = []

    @property
    def uri(self) -> str:
        return f"tap://127.0.0.1:{self.port}"

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self._listener.close()
        if self._errors:
            raise self._errors[0]

    def wait_finished(self, n: int, timeout: float = STATE_TIMEOUT) -> None:
        """Wait until ``n`` connections have ended on the server side."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.logs) >= n and all(log.finished for log in self.logs[:n]):
                return
            time.sleep(0.01)
        raise AssertionError(f"replay server: {n} conversations did not finish in {timeout}s: {self.logs}")

    # --- serving ---------------------------------------------------------------------------------------------------
    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            index = len(self.logs)
            log = ConnLog(index)
            self.logs.append(log)
            try:
                with conn:
                    if index < len(self.recording.conversations):
                        self._play(conn, self.recording.conversations[index], log)
            except (BrokenPipeError, ConnectionResetError):
                pass
            except BaseException as exc:  # surfaced in __exit__
                self._errors.append(exc)
            finally:
                log.finished = True

    def _recv_exact(self, conn: socket.socket, n: int, timeout: float) -> bytes:
        out = b""
        deadline = time.monotonic() + timeout
        while len(out) < n and not self._stop.is_set():
            conn.settimeout(max(0.01, min(0.2, deadline - time.monotonic())))
            try:
                data = conn.recv(n - len(out))
            except TimeoutError:
                if time.monotonic() >= deadline:
                    break
                continue
            if not data:
                break
            out += data
        return out

    def _hold(self, conn: socket.socket, log: ConnLog) -> None:
        """Keep the connection open until the client closes it, keeping anything it sends."""
        deadline = time.monotonic() + self.hold_timeout
        while not self._stop.is_set() and time.monotonic() < deadline:
            conn.settimeout(0.1)
            try:
                data = conn.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not data:
                return
            log.extra += data

    def _play(self, conn: socket.socket, events: list[dict[str, Any]], log: ConnLog) -> None:
        recorded_connect = bytes.fromhex(events[0]["hex"])
        head = self._recv_exact(conn, 24, self.ack_timeout)
        body_len = int.from_bytes(head[8:12], "big") if len(head) == 24 else 0
        log.connect = head + (self._recv_exact(conn, body_len, self.ack_timeout) if body_len <= 1 << 16 else b"")
        log.connect_matched = (len(log.connect) == len(recorded_connect)
                               and log.connect[:12] + log.connect[16:] == recorded_connect[:12] + recorded_connect[16:])
        if not log.connect_matched:
            return
        if self.silent:
            self._hold(conn, log)
            return
        last_t = events[0].get("t", 0.0)
        sent_packets = 0
        for event in events[1:]:
            if self._stop.is_set():
                return
            kind = event.get("event")
            if kind == "server_closed":
                conn.shutdown(socket.SHUT_RDWR)
                return
            if kind == "client_closed":
                break
            data = bytes.fromhex(event["hex"])
            if event["dir"] == "c2s":
                got = self._recv_exact(conn, len(data), self.ack_timeout)
                log.client_packets.append(got)
                if got != data:
                    log.mismatches.append((data, got))
                if len(got) < len(data):
                    log.waiting_for = data
                    self._hold(conn, log)
                    return
                continue
            gap = (event.get("t", last_t) - last_t) * self.time_scale
            if gap > 0:
                time.sleep(gap)
            last_t = max(last_t, event.get("t", last_t))
            if self.inject is not None and sent_packets == self.inject_after:
                conn.sendall(self.inject)
                log.server_bytes += len(self.inject)
            if self.cut_after is not None and log.server_bytes + len(data) > self.cut_after:
                conn.sendall(data[: self.cut_after - log.server_bytes])
                conn.shutdown(socket.SHUT_RDWR)
                return
            conn.sendall(data)
            log.server_bytes += len(data)
            sent_packets += 1
        self._hold(conn, log)
