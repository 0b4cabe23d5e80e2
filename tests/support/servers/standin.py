"""Stand-ins for servers, on loopback.

:class:`PortStandIn` takes a stopped server's port: it accepts each connection and closes it at once, counting
them. What a client meets while a database restarts behind a proxy or a load balancer, and a state a test can
wait for: "the client has tried to reconnect at least N times" (instead of sleeping and hoping it did).

:class:`FakeServer` is a server of another kind, or a silent one: it sends the same bytes (or nothing) to every
client and keeps the connection open.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable


def serve(sock: socket.socket, on_client: Callable[[socket.socket], None], name: str) -> threading.Thread:
    """A daemon thread handing each connection ``sock`` accepts to ``on_client``, until ``sock`` is closed."""
    def loop() -> None:
        while True:
            try:
                client, _ = sock.accept()
            except OSError:
                return
            on_client(client)

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    return thread

class PortStandIn:
    """Listens on ``127.0.0.1:port`` until :meth:`close`; :attr:`accepted` counts the connections it closed."""

    def __init__(self, port: int, timeout: float = 30.0) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        deadline = time.monotonic() + timeout
        while True:  # the server's own socket may take a moment to go
            try:
                self.sock.bind(("127.0.0.1", port))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.sock.listen(16)
        self.accepted = 0
        self._thread = serve(self.sock, self._closed, "port-stand-in")

    def _closed(self, client: socket.socket) -> None:
        self.accepted += 1
        client.close()

    def wait_for(self, count: int, timeout: float = 120.0) -> bool:
        """Whether ``count`` connections came within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while self.accepted < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.accepted >= count

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() (close alone does not on Linux)
        self.sock.close()
        self._thread.join(timeout=5)

    def __enter__(self) -> PortStandIn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class FakeServer:
    """A TCP server on ``127.0.0.1`` (a free port) that sends ``reply`` to every client (nothing when empty) and
    keeps the connection open until :meth:`close`."""

    def __init__(self, reply: bytes) -> None:
        self.reply = reply
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.clients: list[socket.socket] = []
        self.thread = serve(self.sock, self._greet, "fake-server")

    def _greet(self, client: socket.socket) -> None:
        self.clients.append(client)
        if self.reply:
            client.sendall(self.reply)

    def close(self) -> None:
        self.sock.close()
        for c in self.clients:
            c.close()
