"""The committed results database's gzip form: packed beside the SQLite file, unpacked once on first open.

The precomputed database is committed gzipped (its JSON columns shrink about 6x); a fresh clone's pages and
benches unpack it on first use, so they read, and append to, the committed runs instead of an empty file.
An archive is what it claims before it replaces anything: it is unpacked into a temporary file beside the target
(core.files), checked there to be the lab's database, and only then renamed; otherwise the archive is named and
nothing is left behind. A full or read-only folder is said in words, never as a damaged archive.
"""
from __future__ import annotations

import gzip
import shutil
import sqlite3
import threading
import zlib
from contextlib import closing
from pathlib import Path
from typing import IO

from core.files import FULL, CannotWrite, writing
from core.store.dburl import DatabaseUnavailable, shown, sqlite_path

LAB_TABLES = {"runs", "query_results", "schema_info"}
SQLITE_HEADER = b"SQLite format 3\x00"
CHUNK = 1 << 20
_UNPACKING = threading.Lock()


def packed_path(path: Path) -> Path:
    return path.with_name(path.name + ".gz")


def lab_database_problem(path: Path) -> str | None:
    """What the file at `path` holds when it is not the lab's results database ("an empty file", "a damaged SQLite
    database: …", ...), or None. Read in SQLite's immutable mode: nothing is written to it, nor beside it."""
    with open(path, "rb") as fh:
        header = fh.read(len(SQLITE_HEADER))
    if not header:
        return "an empty file"
    if header != SQLITE_HEADER:
        return "data that is not a SQLite database"
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)) as conn:
            tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            verdict = conn.execute("PRAGMA quick_check(1)").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        return f"a damaged SQLite database: {exc}"
    if verdict != "ok":
        return "a damaged SQLite database: SQLite's quick_check failed"
    missing = LAB_TABLES - tables
    return f"a SQLite database without the lab's tables: no {', '.join(sorted(missing))}" if missing else None


def unpack_if_packed(url: str) -> bool:
    """Unpack `<db>.gz` when the SQLite file itself is missing, once and atomically. True if unpacked.

    Raises DatabaseUnavailable in one line naming the archive when it is damaged or holds anything but the lab's
    database, and naming the folder when that is full or read-only; no file is left behind either way."""
    path = sqlite_path(url)
    if path is None or path.exists() or not packed_path(path).exists():
        return False
    with _UNPACKING:  # the app unpacks from a page and from the index thread at once: one of them does it
        if path.exists():
            return False
        archive = packed_path(path)
        try:
            with writing(path) as out:
                _gunzip(archive, out)
                out.flush()
                problem = lab_database_problem(Path(out.name))
                if problem:
                    raise DatabaseUnavailable(f"the packed results {archive} are not the lab's results database (they "
                                              f"hold {problem}); nothing was unpacked: restore them (git checkout "
                                              f"{archive}) or remove them to start empty")
        except CannotWrite as exc:
            raise DatabaseUnavailable(f"cannot unpack the packed results {archive}: {exc}; {_where_else(archive, exc)}"
                                      ) from None
        return True


def _gunzip(archive: Path, out: IO[bytes]) -> None:
    """`archive` decompressed into `out`. A damaged archive raises DatabaseUnavailable naming it; an error writing
    `out` passes up as the OSError it is (core.files says it in words)."""
    try:
        src = gzip.open(archive, "rb")
    except OSError as exc:
        raise _damaged(archive, exc) from None
    with src:
        while True:
            try:
                chunk = src.read(CHUNK)
            except (EOFError, OSError, zlib.error) as exc:  # cut short, not gzip, or random bytes
                raise _damaged(archive, exc) from None
            if not chunk:
                return
            out.write(chunk)


def _damaged(archive: Path, exc: BaseException) -> DatabaseUnavailable:
    if isinstance(exc, OSError) and not isinstance(exc, gzip.BadGzipFile) and exc.errno is not None:
        return DatabaseUnavailable(f"cannot read the packed results {archive} ({exc.strerror})")
    reason = ("cut short" if isinstance(exc, EOFError) else "not gzip data" if isinstance(exc, gzip.BadGzipFile)
              else "corrupt compressed data" if isinstance(exc, zlib.error) else type(exc).__name__)
    return DatabaseUnavailable(f"the packed results {archive} are damaged ({reason}); restore them (git checkout "
                               f"{archive}) or remove them to start empty")


def _where_else(archive: Path, exc: CannotWrite) -> str:
    """What to do when the folder cannot take the unpacked results: room there, or the archive unpacked elsewhere."""
    elsewhere = (f"copy {archive.name} to a writable folder and set DATABASE_URL=sqlite:///<that folder>/"
                 f"{archive.name.removesuffix('.gz')}")
    return f"free some space there, or {elsewhere}" if exc.errno in FULL else elsewhere


def still_packed(url: str) -> bool:
    """True while a SQLite store exists only as its committed `.gz` (a fresh clone before, or during, its unpack):
    the pages that can answer without it do not wait for it."""
    path = sqlite_path(url)
    return path is not None and not path.exists() and packed_path(path).exists()


def readable(url: str) -> bool:
    """False when the SQLite file does not exist and no packed copy does either: reading never creates a database
    (the committed `.gz` is unpacked first)."""
    path = sqlite_path(url)
    return path is None or path.exists() or unpack_if_packed(url)


def pack(url: str) -> Path:
    """Checkpoint and VACUUM the SQLite results, then gzip them beside the file (no timestamp in the gzip).

    Only the lab's own database is touched: a malformed or foreign file (no runs and results tables) is refused in
    one line before anything writes to it, and the gzip is written through core.files, so a failure leaves
    neither a changed database nor a partial archive."""
    path = sqlite_path(url)
    if path is None or not path.exists():
        raise ValueError(f"pack needs an existing SQLite database, not {shown(url)}")
    problem = lab_database_problem(path)
    if problem:
        raise ValueError(f"{path.name} is not the lab's results database ({problem}); nothing was packed or changed")
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("VACUUM")
    target = packed_path(path)
    with open(path, "rb") as src, writing(target) as raw, gzip.GzipFile(
            filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as dst:
        shutil.copyfileobj(src, dst, CHUNK)
    return target
