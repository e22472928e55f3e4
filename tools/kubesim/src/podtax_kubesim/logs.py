"""Container output buffers behind the pods/{name}/log subresource (follow, tailLines, limitBytes)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

MAX_LOG_BYTES = 16 * 1024 * 1024


class LogBuffer:
    def __init__(self) -> None:
        self.data = bytearray()
        self.closed = False
        self.truncated = 0
        self._changed = asyncio.Event()

    def write(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > MAX_LOG_BYTES:  # keep the tail, like a rotated container log
            cut = len(self.data) - MAX_LOG_BYTES
            del self.data[:cut]
            self.truncated += cut
        self._changed.set()

    def close(self) -> None:
        self.closed = True
        self._changed.set()

    def text(self, tail_lines: int | None = None, limit_bytes: int | None = None) -> bytes:
        data = bytes(self.data)
        if tail_lines is not None:
            lines = data.splitlines(keepends=True)
            data = b"".join(lines[-tail_lines:]) if tail_lines > 0 else b""
        if limit_bytes is not None:
            data = data[:limit_bytes]
        return data

    async def follow(self, start: int) -> AsyncIterator[bytes]:
        """Yield new output after absolute offset `start` until the container exits."""
        pos = start
        while True:
            base = self.truncated
            end = base + len(self.data)
            if pos < end:
                yield bytes(self.data[max(pos - base, 0):])
                pos = end
            elif self.closed:
                return
            else:
                self._changed.clear()
                await self._changed.wait()


class Logs:
    def __init__(self) -> None:
        self.buffers: dict[tuple[str, str], LogBuffer] = {}

    def open(self, pod_uid: str, container: str) -> LogBuffer:
        buf = self.buffers.get((pod_uid, container))
        if buf is None or buf.closed:
            buf = self.buffers[(pod_uid, container)] = LogBuffer()
        return buf

    def get(self, pod_uid: str, container: str) -> LogBuffer | None:
        return self.buffers.get((pod_uid, container))

    def forget(self, pod_uid: str) -> None:
        for key in [k for k in self.buffers if k[0] == pod_uid]:
            self.buffers.pop(key).close()
