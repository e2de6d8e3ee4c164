"""Path security for export_memories and import_memories.

Policy (both tools):
- a path is checked as given first: no NUL byte, at most 4096 bytes in all and 255 bytes per
  component, no `..` component (rejected outright, even when it would land inside);
- `~` is expanded; a relative path is taken relative to the FIRST allowed directory;
- the path must lie under an allowed directory both as written and once every symlink is
  resolved (a link inside pointing outside is a "symlink_escape");
- the target must be a regular file (or, for export, not exist yet): directories, FIFOs,
  sockets and devices are refused;
- errors are PathSecurityError("Path security violation (<kind>): <the path as given>", and for
  the kinds a client can fix, what to do next), never naming resolved targets or the allowed
  directories.

Export creates the allowed directory (and subdirectories inside it) when missing and may
overwrite an existing regular file there; import reads the file through a descriptor opened
without following a final symlink and checks it again (regular file, size) on that descriptor.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from ..errors import FileSizeLimitError, MemoryImportError, PathSecurityError

MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255
_SHOWN_CHARS = 200


def shown(raw: str) -> str:
    """The path as given, safe to echo: control characters escaped, long paths cut."""
    text = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in raw)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."


# What to do next, for the violations a client can fix by choosing another path. They name no
# directory, so the message still tells nothing about the file system.
_NEXT_STEP = {
    "outside_allowed_directories": "give a file name alone (it is taken inside the first allowed directory) or a "
    "path under one listed in SPATIAL_MEMORY_EXPORT_DIRS / SPATIAL_MEMORY_IMPORT_DIRS",
    "traversal": "give the path without '..' components",
    "symlink_escape": "give a path that is not a symbolic link leading outside the allowed directories",
    "not_a_regular_file": "give the path of a regular file, not a directory or a device",
}


def violation(kind: str, raw: str) -> PathSecurityError:
    step = _NEXT_STEP.get(kind)
    return PathSecurityError(f"Path security violation ({kind}): {shown(raw)}" + (f". Next: {step}." if step else ""))


def _check_syntax(raw: str) -> None:
    if not isinstance(raw, str) or not raw.strip():
        raise violation("empty_path", str(raw))
    if "\x00" in raw:
        raise violation("null_byte", raw)
    try:
        encoded = raw.encode("utf-8")
    except UnicodeEncodeError:
        raise violation("invalid_characters", raw) from None
    if len(encoded) > MAX_PATH_BYTES:
        raise violation("path_too_long", raw)
    parts = raw.replace("\\", "/").split("/")
    if any(len(part.encode("utf-8")) > MAX_NAME_BYTES for part in parts):
        raise violation("name_too_long", raw)
    if any(part == ".." for part in parts):
        raise violation("traversal", raw)


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def _lexical(raw: str, allowed: Sequence[Path]) -> Path:
    try:
        given = Path(raw).expanduser()
    except RuntimeError:  # "~name" of a user with no home directory here
        raise violation("unknown_home", raw) from None
    if not given.is_absolute():
        given = allowed[0] / given
    return Path(os.path.normpath(given))


def _roots(allowed: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """Allowed directories as written (absolute) and fully resolved."""
    written = [Path(os.path.normpath(Path(d).expanduser().absolute())) for d in allowed]
    resolved = [Path(d).expanduser().resolve() for d in allowed]
    return written, resolved


def _resolve(path: Path, raw: str, *, strict: bool) -> Path:
    try:
        return path.resolve(strict=strict)
    except FileNotFoundError:
        raise
    except (OSError, RuntimeError):  # symlink loops, unreadable components
        raise violation("unresolvable", raw) from None


def _locate(raw: str, allowed: Sequence[Path]) -> tuple[Path, list[Path]]:
    if not allowed:
        raise violation("no_allowed_directories", str(raw))
    _check_syntax(raw)
    written, resolved = _roots(allowed)
    lexical = _lexical(raw, written)
    if not _inside(lexical, written + resolved):
        raise violation("outside_allowed_directories", raw)
    return lexical, resolved


def resolve_export_path(raw: str, allowed: Sequence[Path]) -> Path:
    """The real path to write, inside an allowed directory; creates missing directories there."""
    lexical, _ = _locate(raw, allowed)
    for attempt in range(2):
        _, resolved_roots = _roots(allowed)
        target = _resolve(lexical, raw, strict=False)
        if target in resolved_roots:
            raise violation("not_a_regular_file", raw)
        if not _inside(target, resolved_roots):
            raise violation("symlink_escape", raw)
        try:
            info = os.stat(target)
        except FileNotFoundError:
            info = None
        except OSError:
            raise violation("unresolvable", raw) from None
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise violation("not_a_regular_file", raw)
        if target.parent.is_dir():
            return target
        if attempt:
            break
        # Create the missing directories (the allowed one included), then check again:
        # nothing created may have redirected the path elsewhere.
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            raise violation("unresolvable", raw) from None
    raise violation("unresolvable", raw)


def resolve_import_path(raw: str, allowed: Sequence[Path]) -> Path:
    """The real path of an existing regular file inside an allowed directory."""
    lexical, resolved_roots = _locate(raw, allowed)
    try:
        target = _resolve(lexical, raw, strict=True)
    except FileNotFoundError:
        raise MemoryImportError(f"File not found: {shown(raw)}") from None
    if not _inside(target, resolved_roots):
        raise violation("symlink_escape", raw)
    try:
        info = os.stat(target)
    except OSError:
        raise MemoryImportError(f"Cannot read file: {shown(raw)}") from None
    if not stat.S_ISREG(info.st_mode):
        raise violation("not_a_regular_file", raw)
    return target


def read_regular_file(path: Path, raw: str, max_bytes: int) -> bytes:
    """Read a resolved import path, at most `max_bytes`, re-checking it on the open descriptor."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        # A symlink swapped in after resolution (ELOOP with O_NOFOLLOW) or the file vanished.
        raise MemoryImportError(f"Cannot open file: {shown(raw)}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise violation("not_a_regular_file", raw)
        if info.st_size > max_bytes:
            raise FileSizeLimitError(too_big(info.st_size, max_bytes))
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileSizeLimitError(too_big(len(data), max_bytes))
    return data


def too_big(size: int, max_bytes: int) -> str:
    return (
        f"File is {size / 1_048_576:,.2f} MB; the import limit is {max_bytes / 1_048_576:,.2f} MB "
        "(SPATIAL_MEMORY_MAX_IMPORT_FILE_MB). Split the file or raise the limit."
    )
