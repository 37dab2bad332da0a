"""The results database's URL: which driver it means, how it is shown, and how a failure to open it reads.

A URL can carry a password (`postgresql+psycopg://user:password@host/db`); nothing here ever returns
it. `shown` is the one form of a URL that may reach a log, a page or an error. `postgresql://` and
`postgres://` (what PostgreSQL's own tools and most hosts hand out) mean the psycopg 3 driver pinned in
requirements.txt, not SQLAlchemy's default psycopg2, which is not installed.
sqlalchemy is imported inside the functions: the CLI imports this module for its error handling.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from core.settings import redact, url_passwords

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

PSYCOPG_DRIVER = "postgresql+psycopg"
PLAIN_POSTGRES = ("postgresql", "postgres")
URL_FORM = "dialect+driver://user:password@host:port/database"


class DatabaseUnavailable(RuntimeError):
    """The results database cannot be opened; the one-line message names it without its password and says why."""


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


def open_error(url: str, exc: BaseException) -> DatabaseUnavailable:
    """A driver's or SQLAlchemy's failure to reach the database as one line, naming it without its password."""
    detail = " ".join(str(getattr(exc, "orig", None) or exc).split())
    detail = re.sub(r"\(Background on this error at: [^)]*\)", "", detail).strip()
    detail = redact(detail, url_passwords(url))
    return DatabaseUnavailable(f"cannot open the results database {shown(url)}: {type(exc).__name__}: {detail}"[:500])
