"""Entry point: `spatial-memory-mcp`, `spatial-memory`, `python -m spatial_memory`."""

from __future__ import annotations

import logging
import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-V", "--version"):
        from . import __version__

        print(f"spatial-memory-mcp {__version__}")
        return
    if args and args[0] in ("-h", "--help"):
        print(
            "spatial-memory-mcp: an MCP stdio server giving LLM clients persistent spatial memory.\n"
            "Configure it with SPATIAL_MEMORY_* environment variables (see .env.example)."
        )
        return

    from .config import Settings, describe_settings_error

    try:
        settings = Settings()
    except Exception as exc:  # noqa: BLE001 - one clear line, no traceback
        sys.stderr.write(f"spatial-memory-mcp: {describe_settings_error(exc)}\n")
        raise SystemExit(2) from None

    # stdout carries the protocol: every log line goes to stderr.
    logging.basicConfig(
        stream=sys.stderr,
        level=settings.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from .heap import limit_arenas

    limit_arenas()  # before any thread starts
    from . import stdio_pipes

    if settings.fast_handshake and stdio_pipes.pipes_on_stdio():
        _serve_with_fast_handshake(settings)
    else:
        from .server import create_server

        create_server(settings).run("stdio")


def _serve_with_fast_handshake(settings) -> None:
    """Import the SDK in a background thread while cached answers to the client's opening
    requests go out (handshake.py); then hand the wire to the SDK."""
    import threading

    from .handshake import HandshakeCache, fingerprint, serve_until_ready
    from .stdio_pipes import claim_wire

    wire_in, wire_out = claim_wire()
    cache = HandshakeCache(settings.handshake_cache_dir, fingerprint())
    loaded: dict = {}
    ready = threading.Event()

    def load() -> None:
        try:
            from .server import create_server

            loaded["server"] = create_server(settings)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the main thread
            loaded["error"] = exc
        finally:
            ready.set()

    threading.Thread(target=load, name="spatial-memory-sdk-import", daemon=True).start()
    try:
        handover = serve_until_ready(wire_in, wire_out, cache, ready)
    except OSError as exc:  # the client went away mid-handshake
        logging.getLogger(__name__).info("client closed the connection: %s", exc)
        return
    if "error" in loaded:
        raise loaded["error"]
    server = loaded["server"]
    server.handover, server.handshake_cache = handover, cache
    server.run("stdio")


if __name__ == "__main__":
    main()
