"""The engine every store and reader opens a results database with, so both see one set of connection settings.

SQLite (the default, `data/results.sqlite`) runs in WAL mode so a dashboard can read while a benchmark writes;
PostgreSQL (`postgresql://...`, through psycopg 3: core.store.dburl) is tested against a real server, as nothing
in the store uses SQLite-only SQL outside the connect hook here.
"""
from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import NoSuchModuleError

from core.files import CannotWrite, ensure_folder
from core.store.dburl import StoreNotWritable, normalise, open_error, shown, sqlite_path

BUSY_TIMEOUT_MS = 30_000


def _compact_json(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _wal(cursor: sqlite3.Cursor) -> None:
    """WAL mode. Switching a new file to it takes an exclusive lock, and SQLite answers "database is locked" at once,
    without its busy handler, while another writer holds one (two benches on a new file failed so about 1 time in
    10): ask again for up to the busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def make_engine(url: str, *, writer: bool = True) -> Engine:
    """An engine with compact JSON; for SQLite a busy timeout on every connection, and for a writer also
    WAL mode, foreign keys and a created parent folder. Readers set nothing that needs a write lock.
    Raises DatabaseUnavailable (one line, no password) when the URL or its driver is unusable, StoreNotWritable when
    the parent folder cannot be made."""
    target = normalise(url)
    path = sqlite_path(url)
    if path is not None and writer:
        try:
            ensure_folder(path.parent)
        except CannotWrite as exc:  # a read-only or full disk: one line, not a traceback
            raise StoreNotWritable(f"cannot write the results database {shown(url)}: {exc}") from None
    try:
        engine = create_engine(target, json_serializer=_compact_json)
    except (ImportError, NoSuchModuleError) as exc:
        raise open_error(url, exc) from None
    if make_url(url).get_backend_name() == "sqlite":
        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record) -> None:  # DB-API objects
            cursor = dbapi_connection.cursor()
            cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            if writer:
                _wal(cursor)
                # In WAL mode NORMAL survives a killed process (only an OS crash can lose the last commits).
                cursor.execute("PRAGMA synchronous=NORMAL")
                cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()
    return engine
