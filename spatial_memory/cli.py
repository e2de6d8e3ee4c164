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
    from .server import create_server

    create_server(settings).run("stdio")


if __name__ == "__main__":
    main()
