"""stdin/stdout served from the event loop, without a worker thread per line.

The SDK's stdio transport reads and writes through `anyio.wrap_file`, which hands every
readline, write and flush to a worker thread: three thread hops per request, a noticeable
part of a recall (docs/BENCHMARKS.md). When both standard streams are pipes (as they are
under every MCP client), asyncio's pipe transports do the same work on the loop itself.

Like the SDK, the wire is taken over while serving: fd 0 reads /dev/null and fd 1 goes
to stderr, so a stray print() or a child process cannot corrupt the protocol; both are
restored on exit.

A terminal, a regular file or /dev/null on either stream is served too, through a worker thread
that the session can abandon: the SDK's own transport reads stdin in a thread that a cancelled
session waits for, so a signal would not end a server whose stdin stays open until the next line
(issue 43). Only where asyncio is not the loop or the system is Windows is the SDK's transport used.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .handshake import Handover, Recorder

READ_CHUNK = 1 << 16


def usable() -> bool:
    """A POSIX system under asyncio: the standard streams, whatever they are, are served here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # another async backend (trio)
        return False
    return sys.platform != "win32"


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def pipes_on_stdio() -> bool:
    """Both standard streams are pipes or sockets on a POSIX system."""
    if sys.platform == "win32":
        return False
    try:
        return all(stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) for mode in (os.fstat(0).st_mode, os.fstat(1).st_mode))
    except OSError:
        return False


class PipeLines:
    """`async for line in PipeLines(reader)`: the UTF-8 lines of a pipe, newline included."""

    def __init__(
        self,
        reader: asyncio.StreamReader | ThreadReader,
        prefix: bytes = b"",
        watchers: Sequence[Callable[[str], None]] = (),
    ) -> None:
        self._reader = reader
        self._buffer = bytearray(prefix)  # read from the wire before this reader existed
        self._scanned = 0  # bytes of the buffer already known to hold no newline
        self._watchers = tuple(watchers)  # each sees every line, in order, before it is returned

    async def __anext__(self) -> str:
        line = await self._next()
        for watch in self._watchers:
            watch(line)
        return line

    def __aiter__(self) -> PipeLines:
        return self

    async def _next(self) -> str:
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                self._scanned = 0
                return line.decode("utf-8", "replace")
            self._scanned = len(self._buffer)
            chunk = await self._reader.read(READ_CHUNK)
            if not chunk:
                if self._buffer:
                    line = bytes(self._buffer)
                    self._buffer.clear()
                    self._scanned = 0
                    return line.decode("utf-8", "replace")
                raise StopAsyncIteration
            self._buffer += chunk


class ThreadReader:
    """The `read` of an asyncio.StreamReader over a descriptor the event loop cannot watch (a
    terminal, a regular file, /dev/null): each read in a worker thread that a cancelled session
    abandons instead of waiting for a line that may never come."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def read(self, size: int) -> bytes:
        import anyio  # the SDK's async library, loaded with it already

        return await anyio.to_thread.run_sync(os.read, self._fd, size, abandon_on_cancel=True)


class ThreadWriter:
    """The write/flush pair over a terminal or a regular file: blocking writes in a worker thread
    (a paused terminal must not stop the event loop), abandoned if the session is cancelled."""

    def __init__(self, fd: int, allow: Callable[[str], bool] | None = None) -> None:
        self._fd = fd
        self._pending = bytearray()
        self._allow = allow

    async def write(self, text: str) -> None:
        if self._allow is None or self._allow(text):
            self._pending += text.encode("utf-8")

    async def flush(self) -> None:
        import anyio  # the SDK's async library, loaded with it already

        data, self._pending = bytes(self._pending), bytearray()
        if data:
            await anyio.to_thread.run_sync(_write_all, self._fd, data, abandon_on_cancel=True)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class PipeWriter:
    """The write/flush pair the SDK's transport calls, over an asyncio pipe transport."""

    def __init__(self, writer: asyncio.StreamWriter, allow: Callable[[str], bool] | None = None) -> None:
        self._writer = writer
        self._allow = allow  # False drops a line (an answer the client already has)

    async def write(self, text: str) -> None:
        if self._allow is None or self._allow(text):
            self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


def _claim(fd: int, diversion: int) -> int:
    """A private duplicate of fd (the wire); fd itself now points at `diversion`."""
    import fcntl  # POSIX only: the pipes are claimed so only where fcntl exists

    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.dup2(diversion, fd)
    return private


def claim_wire() -> tuple[int, int]:
    """Private duplicates of stdin and stdout (the wire); fd 0 now reads /dev/null and fd 1
    writes to stderr, so stray output cannot corrupt the protocol."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        wire_in = _claim(0, devnull)
    finally:
        os.close(devnull)
    try:
        wire_out = _claim(1, 2)
    except OSError:
        os.dup2(wire_in, 0)
        os.close(wire_in)
        raise
    return wire_in, wire_out


@asynccontextmanager
async def pipe_streams(
    handover: Handover | None = None,
    recorder: Recorder | None = None,
    on_line: Callable[[str], None] | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """(lines of stdin, writer to stdout) served by the running asyncio loop: pipes and sockets on
    the loop itself, anything else through abandonable worker threads. With `handover`, the wire
    was claimed (and partly read) by the handshake fast path. `on_line` sees each line read, before
    the SDK does (after the recorder)."""
    loop = asyncio.get_running_loop()
    wire_in, wire_out = (handover.wire_in, handover.wire_out) if handover is not None else claim_wire()
    transports: list[asyncio.BaseTransport] = []
    allow = recorder.outgoing if recorder is not None else None
    try:
        reader: Any
        if _is_pipe(wire_in):
            reader = asyncio.StreamReader(loop=loop)
            reader_file = os.fdopen(wire_in, "rb", buffering=0, closefd=False)
            read_transport, _ = await loop.connect_read_pipe(partial(asyncio.StreamReaderProtocol, reader), reader_file)
            transports.append(read_transport)
        else:
            reader = ThreadReader(wire_in)
        writer: Any
        if _is_pipe(wire_out):
            writer_file = os.fdopen(wire_out, "wb", buffering=0, closefd=False)
            write_transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, writer_file)
            transports.append(write_transport)
            # A flush means every byte is in the pipe, not just "below the high-water mark".
            write_transport.set_write_buffer_limits(high=0)
            writer = PipeWriter(asyncio.StreamWriter(write_transport, protocol, None, loop), allow=allow)
        else:
            writer = ThreadWriter(wire_out, allow=allow)
        watchers = [w for w in (recorder.incoming if recorder is not None else None, on_line) if w is not None]
        lines = PipeLines(reader, prefix=handover.replay if handover is not None else b"", watchers=watchers)
        yield lines, writer
    finally:
        for transport in transports:
            transport.close()
        # The pipe transports made the descriptors non-blocking; give the wire back as found.
        for private, fd in ((wire_in, 0), (wire_out, 1)):
            try:
                os.set_blocking(private, True)
                os.dup2(private, fd)
                os.close(private)
            except OSError:
                pass
