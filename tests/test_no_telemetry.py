"""No telemetry, no network (issue 43): a server session with the real model (remember, recall)
under a fresh HOME leaves no ~/.cache/Microsoft (onnxruntime's device id and queued telemetry
events), and no process of it connects or sends to anything but loopback and Unix sockets
(strace follows the server and every process it starts)."""

from __future__ import annotations

import os
import re
import shutil
import sys

import pytest

from .conftest import call
from .reliability import new_store, server_env

pytestmark = pytest.mark.anyio

# connect/sendto/sendmsg to an IPv4 or IPv6 address (AF_UNIX and AF_NETLINK lines do not match)
_INET = re.compile(r"\b(connect|sendto|sendmsg)\(.*sa_family=AF_INET6?\b.*")
_LOOPBACK = re.compile(r'inet_addr\("127\.|inet_pton\(AF_INET6, "::1"|inet_pton\(AF_INET6, "::ffff:127\.')


def _strace() -> str:
    found = shutil.which("strace")
    if found is None:
        message = "strace is not installed (apt-get install strace): the network check needs it"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


async def test_a_session_writes_no_telemetry_and_opens_no_outside_socket(tmp_path, bundled_models):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    strace = _strace()
    home = tmp_path / "home"
    home.mkdir()
    store = new_store(tmp_path, "store", bundled_models)
    trace = tmp_path / "trace.log"
    env = server_env(store, HOME=str(home))
    env.pop("XDG_CACHE_HOME", None)  # the default cache, ~/.cache, is where onnxruntime writes
    params = StdioServerParameters(
        command=strace,
        args=[
            "-f",
            "-qq",
            "-e",
            "trace=connect,sendto,sendmsg",
            "-o",
            str(trace),
            sys.executable,
            "-m",
            "spatial_memory",
        ],
        env=env,
        cwd=str(tmp_path),
    )
    with (tmp_path / "stderr.log").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            stored = await call(client, "remember", content="We deploy on Tuesdays only.", namespace="t")
            assert stored["id"]
            hits = await call(client, "recall", query="when do we deploy?", namespace="t")
            assert hits["memories"][0]["content"] == "We deploy on Tuesdays only."
    assert not (home / ".cache" / "Microsoft").exists(), sorted(str(p) for p in home.rglob("*"))
    lines = trace.read_text().splitlines()
    assert lines or trace.exists()
    outside = [line for line in lines if _INET.search(line) and not _LOOPBACK.search(line)]
    assert outside == [], "\n".join(outside[:10])
