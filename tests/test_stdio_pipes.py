"""The event-loop stdio transport: line framing, the wire takeover, and the fallback."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

from spatial_memory.transport.stdio_pipes import READ_CHUNK, PipeLines


def _lines(*chunks: bytes) -> list[str]:
    async def collect() -> list[str]:
        reader = asyncio.StreamReader()
        for chunk in chunks:
            reader.feed_data(chunk)
        reader.feed_eof()
        return [line async for line in PipeLines(reader)]

    return asyncio.run(collect())


def test_lines_split_on_newlines_across_chunks():
    assert _lines(b'{"a":1}\n{"b"', b":2}\n", b"\n", b"tail") == ['{"a":1}\n', '{"b":2}\n', "\n", "tail"]


def test_a_line_longer_than_a_read_chunk_arrives_whole():
    big = b"x" * (3 * READ_CHUNK + 17)
    assert _lines(big[:1000], big[1000:] + b"\nnext\n") == [big.decode() + "\n", "next\n"]


def test_invalid_utf8_is_replaced_not_fatal():
    assert _lines(b"caf\xc3\xa9 \xff\n") == ["café \ufffd\n"]


def test_empty_input_ends_at_once():
    assert _lines() == []


PIPE_SCRIPT = textwrap.dedent(
    """
    import asyncio, os, sys
    from spatial_memory.transport.stdio_pipes import pipe_streams, usable

    async def main():
        assert usable()
        async with pipe_streams() as (lines, writer):
            print("stray print", flush=True)          # must land on stderr, not the wire
            os.write(1, b"stray write\\n")
            async for line in lines:
                await writer.write(line.upper())
                await writer.write("y" * 1_000_000 + "\\n")  # far past a pipe's buffer
                await writer.flush()
        os.write(1, b"after\\n")                     # the wire is stdout again

    asyncio.run(main())
    """
)


def test_pipe_streams_own_the_wire_and_give_it_back(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", PIPE_SCRIPT], input=b"hello\n", capture_output=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr.decode()
    out = done.stdout.decode().split("\n")
    assert out[0] == "HELLO"
    assert out[1] == "y" * 1_000_000
    assert out[2:] == ["after", ""]
    assert "stray print" in done.stderr.decode() and "stray write" in done.stderr.decode()


def test_only_pipes_take_the_event_loop_path(tmp_path):
    """Only pipes take the handshake fast path (cli.py); a regular file or a terminal is served by
    pipe_streams' thread reader (test_signal_stop.py)."""
    probe = [
        sys.executable,
        "-c",
        "from spatial_memory.transport.stdio_pipes import pipes_on_stdio; print(pipes_on_stdio())",
    ]
    piped = subprocess.run(probe, input=b"", capture_output=True, timeout=60)
    assert piped.stdout.strip() == b"True"
    regular = tmp_path / "requests.jsonl"
    regular.write_text("{}\n")
    with regular.open("rb") as stdin:
        from_file = subprocess.run(probe, stdin=stdin, capture_output=True, timeout=60)
    assert from_file.stdout.strip() == b"False"
