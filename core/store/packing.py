"""The committed results database's gzip form: packed beside the SQLite file, unpacked once on first open.

The precomputed database is committed gzipped (its JSON columns shrink about 6x); a fresh clone's pages and
benches unpack it on first use, so they read, and append to, the committed runs instead of an empty file.
"""
from __future__ import annotations

import gzip
import os
import shutil
import sqlite3
import threading
import zlib
from contextlib import closing
from pathlib import Path

from core.store.dburl import DatabaseUnavailable, shown, sqlite_path

LAB_TABLES = {"runs", "query_results", "schema_info"}
_UNPACKING = threading.Lock()


def packed_path(path: Path) -> Path:
    return path.with_name(path.name + ".gz")


def unpack_if_packed(url: str) -> bool:
    """Unpack `<db>.gz` when the SQLite file itself is missing, once and atomically. True if unpacked."""
    path = sqlite_path(url)
    if path is None or path.exists() or not packed_path(path).exists():
        return False
    with _UNPACKING:  # the app unpacks from a page and from the index thread at once: one of them does it
        if path.exists():
            return False
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            with gzip.open(packed_path(path), "rb") as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        except (EOFError, OSError, zlib.error) as exc:  # cut short, not gzip, or random bytes
            tmp.unlink(missing_ok=True)
            reason = ("cut short" if isinstance(exc, EOFError) else "not gzip data" if isinstance(exc, gzip.BadGzipFile)
                      else "corrupt compressed data" if isinstance(exc, zlib.error) else exc.strerror or type(exc).__name__)
            raise DatabaseUnavailable(f"the packed results {packed_path(path).name} are damaged ({reason}); restore "
                                      f"them (git checkout {packed_path(path).name}) or remove them to start empty"
                                      ) from None
        os.replace(tmp, path)
        return True


def readable(url: str) -> bool:
    """False when the SQLite file does not exist and no packed copy does either: reading never creates a database
    (the committed `.gz` is unpacked first)."""
    path = sqlite_path(url)
    return path is None or path.exists() or unpack_if_packed(url)


def pack(url: str) -> Path:
    """Checkpoint and VACUUM the SQLite results, then gzip them beside the file (no timestamp in the gzip).

    Only the lab's own database is touched: a malformed or foreign file (no runs and results tables) is refused in
    one line before anything writes to it, and the gzip is written to a temporary file first, so a failure leaves
    neither a changed database nor a partial archive."""
    path = sqlite_path(url)
    if path is None or not path.exists():
        raise ValueError(f"pack needs an existing SQLite database, not {shown(url)}")
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)) as conn:  # no -wal, no -shm
            tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            ok = conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"{path.name} is not a readable SQLite database ({exc}); nothing was packed") from None
    if not ok:
        raise ValueError(f"{path.name} is damaged (SQLite's quick_check failed); nothing was packed")
    if not LAB_TABLES <= tables:
        raise ValueError(f"{path.name} is not the lab's results database (no {', '.join(sorted(LAB_TABLES - tables))} "
                         "table); nothing was packed or changed")
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("VACUUM")
    target = packed_path(path)
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with open(path, "rb") as src, open(partial, "wb") as raw, gzip.GzipFile(
                filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target
