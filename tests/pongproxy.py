"""A TCP relay between a NATS client and a real nats-server that, once armed, pauses the server (SIGSTOP, as
tests.paused.pause) right after relaying it the next PONG: a server that answers the close's PING and hangs before
the drain is done, a window no signal from outside the client can hit. It relays bytes unchanged both ways and
decides nothing for the server; only the moment of the pause is its own. The client connects to `url`."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from tests.paused import pause

PONG = b"PONG\r\n"


class PongThenHang:
    def __init__(self, server_port: int, server_pid: int) -> None:
        self.server_port, self.server_pid = server_port, server_pid
        self.armed = threading.Event()
        self.paused = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"nats://127.0.0.1:{self.listener.getsockname()[1]}"
        self.sockets: list[socket.socket] = [self.listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self) -> None:
        """Pause the server right after the next PONG it sends through this relay."""
        self.armed.set()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed
                return
            server = socket.create_connection(("127.0.0.1", self.server_port))
            self.sockets += [client, server]
            threading.Thread(target=self._relay, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._relay, args=(server, client, True), daemon=True).start()

    def _relay(self, src: socket.socket, dst: socket.socket, from_server: bool) -> None:
        tail = b""
        while True:
            try:
                data = src.recv(65536)
                if not data:
                    dst.shutdown(socket.SHUT_WR)
                    return
                dst.sendall(data)
            except OSError:
                return
            if from_server and self.armed.is_set() and not self.paused.is_set() and PONG in tail + data:
                pause(self.server_pid)
                self.paused.set()
            tail = (tail + data)[1 - len(PONG):]  # too short to hold a whole PONG seen already

    def close(self) -> None:
        for sock in self.sockets:
            try:
                sock.close()
            except OSError:
                continue


@contextmanager
def pong_then_hang(server_port: int, server_pid: int) -> Iterator[PongThenHang]:
    relay = PongThenHang(server_port, server_pid)
    try:
        yield relay
    finally:
        relay.close()
