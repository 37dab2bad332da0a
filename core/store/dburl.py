"""The results database's URL: which driver it means, how it is shown, and how a failure to open it reads.

A URL can carry a password (`postgresql+psycopg://user:password@host/db`); nothing here ever returns
it. `shown` is the one form of a URL that may reach a log, a page or an error. `postgresql://` and
`postgres://` (what PostgreSQL's own tools and most hosts hand out) mean the psycopg 3 driver pinned in
requirements.txt, not SQLAlchemy's default psycopg2, which is not installed.
A failure reads as what happened and what to do, in one line: a full or read-only disk (StoreNotWritable, which
stops a study with its runs interrupted, not failed), a damaged file, a server that does not answer.
sqlalchemy is imported inside the functions: the CLI imports this module for its error handling.
"""
from __future__ import annotations

import errno
import re
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from core.files import disk_errno, os_error_words
from core.settings import redact, url_passwords

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

PSYCOPG_DRIVER = "postgresql+psycopg"
PLAIN_POSTGRES = ("postgresql", "postgres")
URL_FORM = "dialect+driver://user:password@host:port/database"


class DatabaseUnavailable(RuntimeError):
    """The results database cannot be opened; the one-line message names it without its password and says why."""


class StoreNotWritable(DatabaseUnavailable):
    """The disk holding the results database is full or read-only: nothing is wrong with the database, and a study
    stopped by it is resumable (core.study.runner marks its runs interrupted)."""


DAMAGED = ("SQLITE_CORRUPT", "SQLITE_NOTADB")  # SQLite's names for a file that is damaged or not a database
DISK_BOUND = ("SQLITE_READONLY", "SQLITE_IOERR", "SQLITE_CANTOPEN")  # what a full or read-only disk may also cause
PG_DISK_FULL = "53100"  # PostgreSQL's SQLSTATE disk_full
RESTORE = ("Restore the committed results (move {file} aside: data/results.sqlite.gz unpacks anew) or set "
           "DATABASE_URL to another store")
REACH = "start the server, or correct DATABASE_URL's host, port, user or password (or point it at another store)"


def normalise(url: str) -> URL:
    """`url`, parsed, with a plain PostgreSQL scheme mapped to psycopg 3; raises DatabaseUnavailable when
    it does not parse or psycopg is missing (the message says what to install)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        raise DatabaseUnavailable(f"the results database URL does not parse; write it as {URL_FORM}") from None
    if parsed.get_backend_name() == "sqlite" and (parsed.query or (parsed.database or "").startswith("file:")):
        options = ", ".join(sorted(parsed.query)) or "file: URIs"
        raise DatabaseUnavailable(f"SQLite URL options are not supported ({options}): give the file itself, "
                                  "sqlite:////absolute/path/results.sqlite (the pages and `report` never write to it)")
    if parsed.drivername in PLAIN_POSTGRES:
        parsed = parsed.set(drivername=PSYCOPG_DRIVER)
    if parsed.drivername == PSYCOPG_DRIVER:
        try:
            import psycopg  # noqa: F401 - the driver the engine loads; imported here to say what is missing
        except ImportError:
            raise DatabaseUnavailable("the results database is PostgreSQL, but its driver psycopg is not installed: "
                                      "run `make setup` (requirements.txt pins psycopg[binary])") from None
    return parsed


def sqlite_path(url: str) -> Path | None:
    """The file behind a SQLite URL; None for other databases, in-memory SQLite, a URL that does not parse and one with
    SQLite URI options (normalise refuses them by name)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return None
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    if parsed.query or parsed.database.startswith("file:"):
        return None
    return Path(parsed.database)


def shown(url: str | URL) -> str:
    """The URL as it may be shown anywhere: a SQLite database as its file, any other with its password as ***."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return "(a results database URL that does not parse)"
    if parsed.get_backend_name() == "sqlite":
        return parsed.database or ":memory:"
    return parsed.render_as_string(hide_password=True)


def disk_trouble(folder: Path) -> str | None:
    """What to say when the disk holding `folder` is mounted read-only or has no space left, with what to do; None
    when it is neither (or cannot be asked)."""
    code = disk_errno(folder)
    if code == errno.ENOSPC:
        return full_disk(folder)
    return None if code is None else (f"{os_error_words(OSError(code, ''), folder)}: "
                                      "set DATABASE_URL to a writable place")


def full_disk(folder: Path) -> str:
    """A full disk in words, with what to do."""
    return (f"{os_error_words(OSError(errno.ENOSPC, ''), folder)}: free some space there, or set DATABASE_URL to "
            "another disk")


def sqlite_disk_trouble(path: Path, exc: sqlite3.Error) -> str | None:
    """disk_trouble's words when SQLite's error on the file at `path` is its disk's doing: "database or disk is full",
    and the read-only, I/O and cannot-open errors a full or read-only folder gives (SQLite writes its -wal and -shm
    files beside the database, even to read it in WAL mode); None for any other error."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name.startswith("SQLITE_FULL"):
        return full_disk(path.parent)
    return disk_trouble(path.parent) if name.startswith(DISK_BOUND) else None


def not_writable(url: str, exc: BaseException) -> StoreNotWritable | None:
    """A driver's or SQLAlchemy's failure as StoreNotWritable when a full or read-only disk caused it; else None."""
    orig = getattr(exc, "orig", None) or exc
    path = sqlite_path(url)
    if path is not None and isinstance(orig, sqlite3.Error):
        words = sqlite_disk_trouble(path, orig)
    elif getattr(orig, "sqlstate", None) == PG_DISK_FULL:
        words = "no space left on the PostgreSQL server's disk: free some space there, or set DATABASE_URL elsewhere"
    else:
        words = None
    return StoreNotWritable(f"cannot write the results database {shown(url)}: {words}") if words else None


def open_error(url: str, exc: BaseException) -> DatabaseUnavailable:
    """A driver's or SQLAlchemy's failure to reach the database as one line, naming it without its password, and
    what to do: for a full or read-only disk (StoreNotWritable), a damaged SQLite file and a server that does not
    answer."""
    from sqlalchemy.exc import OperationalError

    disk = not_writable(url, exc)
    if disk is not None:
        return disk
    orig = getattr(exc, "orig", None) or exc
    detail = " ".join(str(orig).split())
    detail = re.sub(r"\(Background on this error at: [^)]*\)", "", detail).strip()
    detail = redact(detail, url_passwords(url))
    said = f"cannot open the results database {shown(url)}: {type(exc).__name__}: {detail}"[:400]
    path = sqlite_path(url)
    if path is not None and (getattr(orig, "sqlite_errorname", "") or "").startswith(DAMAGED):
        return DatabaseUnavailable(f"{said}. {RESTORE.format(file=path)}.")
    if isinstance(exc, OperationalError) and url.startswith(PLAIN_POSTGRES):  # the server does not answer, or says no
        return DatabaseUnavailable(f"{said}; {REACH}.")
    return DatabaseUnavailable(said)
