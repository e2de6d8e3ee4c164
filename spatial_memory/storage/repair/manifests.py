"""The table's versions as files on disk: which manifests exist, which of them can be read, and
the fragments and data files one of them lists.

LanceDB opens a table at its newest manifest and fails outright when that one is unreadable, and
it offers no way to list a version's fragments. Both are needed when a store is damaged (see
recovery.py and doctor.py), so this module reads the manifest files itself. A manifest is a
protobuf `lance.table.Manifest` (Lance's protos/table.proto) found through the file's 16-byte
footer: the i64 position of the message (after a u32 length), two u16 format numbers and "LANC".
Only the few fields used here are decoded; any other content is skipped.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

VERSIONS_DIR = "_versions"
DATA_DIR = "data"
MAGIC = b"LANC"
_U64_MAX = 2**64 - 1
# Manifest, DataFragment, DataFile and DeletionFile field numbers used below.
_FRAGMENTS, _VERSION, _SCHEMA_METADATA, _TRANSACTION_FILE = 2, 3, 5, 12
_FRAGMENT_ID, _FRAGMENT_FILES, _FRAGMENT_DELETIONS, _PHYSICAL_ROWS = 1, 2, 3, 4
_FILE_PATH = 1
_DELETED_ROWS = 4


class ManifestError(ValueError):
    """A manifest file that cannot be decoded (truncated, empty, overwritten)."""


@dataclass(frozen=True)
class ManifestFile:
    version: int
    path: Path


@dataclass(frozen=True)
class Fragment:
    id: int
    files: tuple[str, ...]  # paths relative to the table's data/ directory
    physical_rows: int
    deleted_rows: int

    @property
    def rows(self) -> int:
        return self.physical_rows - self.deleted_rows


@dataclass(frozen=True)
class Manifest:
    version: int
    fragments: tuple[Fragment, ...]
    schema_metadata: dict[str, bytes] = field(default_factory=dict)
    transaction_file: str = ""  # relative to the table's _transactions/


def manifest_files(table_dir: Path) -> list[ManifestFile]:
    """Every version's manifest file, newest first. Lance names them `<version>.manifest`, or in
    its newer scheme `<2**64 - 1 - version>.manifest` (20 digits) so that they list newest first."""
    found = []
    try:
        entries = list((table_dir / VERSIONS_DIR).iterdir())
    except OSError:
        return []
    for path in entries:
        stem, dot, suffix = path.name.partition(".")
        if suffix != "manifest" or not dot or not stem.isdigit():
            continue
        number = int(stem)
        version = _U64_MAX - number if len(stem) == 20 else number
        found.append(ManifestFile(version, path))
    return sorted(found, key=lambda m: m.version, reverse=True)


def read_manifest(path: Path) -> Manifest:
    """The decoded manifest, or ManifestError when the file cannot be read as one."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ManifestError(f"cannot read {path.name}: {exc.strerror or exc}") from exc
    if len(data) < 16 or data[-4:] != MAGIC:
        raise ManifestError(f"{path.name} is not a complete manifest ({len(data)} bytes, no footer)")
    (position,) = struct.unpack("<q", data[-16:-8])
    try:
        (length,) = struct.unpack("<I", data[position : position + 4])
        body = data[position + 4 : position + 4 + length]
        if position < 0 or len(body) != length:
            raise ManifestError(f"{path.name} is truncated")
        return _manifest(body)
    except (struct.error, IndexError, ValueError) as exc:
        raise ManifestError(f"{path.name} cannot be decoded: {exc}") from exc


def _manifest(body: bytes) -> Manifest:
    version = 0
    fragments = []
    metadata: dict[str, bytes] = {}
    transaction = ""
    for number, value in _fields(body):
        if number == _VERSION:
            version = int(value)
        elif number == _FRAGMENTS:
            fragments.append(_fragment(_nested(value)))
        elif number == _SCHEMA_METADATA:
            entry = dict(_fields(_nested(value)))
            metadata[bytes(entry.get(1, b"")).decode("utf-8", "replace")] = bytes(entry.get(2, b""))
        elif number == _TRANSACTION_FILE:
            transaction = bytes(value).decode("utf-8", "replace")
    return Manifest(version, tuple(fragments), metadata, transaction)


def _nested(value: int | bytes) -> bytes:
    """A field that holds a message: bytes, or a ValueError (read_manifest's ManifestError) when a
    damaged file holds a number there."""
    if isinstance(value, int):
        raise ValueError(f"a number ({value}) where a message belongs")
    return value


def _fragment(body: bytes) -> Fragment:
    fragment_id = physical = deleted = 0
    files = []
    for number, value in _fields(body):
        if number == _FRAGMENT_ID:
            fragment_id = int(value)
        elif number == _PHYSICAL_ROWS:
            physical = int(value)
        elif number == _FRAGMENT_FILES:
            paths = [v for n, v in _fields(_nested(value)) if n == _FILE_PATH]
            if paths:
                files.append(bytes(paths[0]).decode("utf-8", "replace"))
        elif number == _FRAGMENT_DELETIONS:
            deleted = int(dict(_fields(_nested(value))).get(_DELETED_ROWS, 0))
    return Fragment(fragment_id, tuple(files), physical, deleted)


def _varint(data: bytes, i: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[i]
        i += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, i
        if shift > 63:
            raise ValueError("varint too long")


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """A protobuf message's (field number, value) pairs: ints for varints, bytes for the rest."""
    out: list[tuple[int, int | bytes]] = []
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 1:
            value, i = data[i : i + 8], i + 8
        elif wire == 2:
            size, i = _varint(data, i)
            value, i = data[i : i + size], i + size
        elif wire == 5:
            value, i = data[i : i + 4], i + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        if i > len(data):
            raise ValueError("field runs past the end")
        out.append((number, value))
    return out
