"""The spool: captured memories on disk beside the store, until a server or ingester stores them.

Layout under `<store>/spool/`:
  <time_ns>-<pid>-<random>.part     being written by a hook
  <time_ns>-<pid>-<random>.jsonl    complete: one JSON record per line, ready to ingest
  claimed/<name>.<claim>.jsonl      taken by one ingester (atomic rename), deleted once stored

A hook writes its records to a new `.part` file (O_CREAT|O_EXCL|O_APPEND, one write), fsyncs
it, renames it to `.jsonl` and fsyncs the directory before it exits 0: what a hook acknowledged
survives a crash or kill -9 of anyone. One file per hook means no two processes ever write one
file, and an ingester renaming a file can never race a writer still appending to it.

Claims are renames, so two ingesters never take one file. A claim left by an ingester that died
(older than STALE_SECONDS) is taken again; ingest is idempotent (records carry deterministic
ids), so retrying a claim whose memories were already stored stores nothing twice. A `.part`
file left by a killed hook is ingested once stale, its complete lines only.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

SPOOL_DIR = "spool"
STALE_SECONDS = 60.0


class Claim:
    """A spool file this process took; its records are stored, then `Spool.done` deletes it."""

    def __init__(self, path: Path, name: str) -> None:
        self.path = path
        self.name = name  # the original file name: the records' order


def _token() -> str:
    return os.urandom(4).hex()  # `secrets` would import more than a hook wants to pay for


class Spool:
    def __init__(self, store_path: str | os.PathLike[str]) -> None:
        self.dir = Path(store_path) / SPOOL_DIR
        self.claimed_dir = self.dir / "claimed"

    # ---- writing (hooks) ------------------------------------------------------------------

    def append(self, records: list[dict[str, Any]]) -> Path | None:
        """Write `records` durably as one new spool file; returns its path (None for no records)."""
        if not records:
            return None
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        name = f"{time.time_ns():020d}-{os.getpid()}-{_token()}"
        part = self.dir / f"{name}.part"
        data = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_BINARY", 0)
        fd = os.open(part, flags, 0o600)
        try:
            view = memoryview(data.encode("utf-8"))
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        ready = self.dir / f"{name}.jsonl"
        os.replace(part, ready)
        _fsync_dir(self.dir)
        return ready

    # ---- reading (ingesters) --------------------------------------------------------------

    def has_work(self) -> bool:
        """Cheap check (one directory listing) for anything to ingest."""
        try:
            with os.scandir(self.dir) as entries:
                for entry in entries:
                    if entry.name.endswith(".jsonl") or (entry.name.endswith(".part") and _stale(entry.path)):
                        return True
        except FileNotFoundError:
            return False
        return self._stale_claims() != []

    def claim(self, limit: int = 1000) -> list[Claim]:
        """Take up to `limit` files, oldest first (ready files, stale partial files, stale claims)."""
        try:
            names = sorted(os.listdir(self.dir))
        except FileNotFoundError:
            return []
        candidates = [
            self.dir / n for n in names if n.endswith(".jsonl") or (n.endswith(".part") and _stale(self.dir / n))
        ]
        candidates += self._stale_claims()
        claims: list[Claim] = []
        if candidates:
            self.claimed_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        for path in candidates[:limit]:
            name = path.name.split(".", 1)[0]
            target = self.claimed_dir / f"{name}.{os.getpid()}-{_token()}.jsonl"
            try:
                os.replace(path, target)  # whoever renames first owns it
            except FileNotFoundError:
                continue  # another ingester took it
            try:
                os.utime(target)  # the claim's age starts now
            except OSError:
                pass
            claims.append(Claim(target, name))
        claims.sort(key=lambda c: c.name)
        return claims

    @staticmethod
    def read(claim: Claim) -> list[dict[str, Any]]:
        """The claim's records; an incomplete last line (a killed writer) is skipped."""
        records = []
        with open(claim.path, "rb") as handle:
            for line in handle:
                if not line.endswith(b"\n"):
                    break
                try:
                    record = json.loads(line)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    continue
                if isinstance(record, dict):
                    records.append(record)
        return records

    @staticmethod
    def done(claim: Claim) -> None:
        try:
            os.unlink(claim.path)
        except FileNotFoundError:
            pass

    def pending_count(self) -> int:
        try:
            return sum(1 for n in os.listdir(self.dir) if n.endswith((".jsonl", ".part")))
        except FileNotFoundError:
            return 0

    def _stale_claims(self) -> list[Path]:
        try:
            with os.scandir(self.claimed_dir) as entries:
                return [Path(e.path) for e in entries if e.name.endswith(".jsonl") and _stale(e.path)]
        except FileNotFoundError:
            return []


def _stale(path: str | os.PathLike[str]) -> bool:
    try:
        return time.time() - os.stat(path).st_mtime > STALE_SECONDS
    except FileNotFoundError:
        return False


def _fsync_dir(directory: Path) -> None:
    """Make a rename in `directory` durable (POSIX; Windows has no directory handles to sync)."""
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
