"""Whether a database holds this code's schema, so that opening one applies the migrations it lacks or refuses it.

Opening a database applies the migrations of core.store.migrations it lacks, in order, for a reader too: they are
additive, and the results database is a local file (the committed one is unpacked before use), so a reader after a
`git pull` reads with the columns its code expects instead of failing. A database from before the migration list
(schema_info.version 1, no schema_migrations table) is adopted: the first writer, or the first pending migration,
records m001 in it. A foreign database, or one holding migrations this code does not know, is refused with
SchemaMismatch before anything is written to it.
"""
from __future__ import annotations

from sqlalchemy import inspect, select
from sqlalchemy.engine import Engine

from core.store import migrations
from core.store.dburl import DatabaseUnavailable, shown
from core.store.schema import SchemaInfo

SCHEMA_VERSION = len(migrations.MIGRATIONS)  # the migrations this code knows (a database's schema_info.version)


class SchemaMismatch(DatabaseUnavailable):
    """The database is not ours, or newer or older code wrote it; the one-line message says what to do."""


def applied_migrations(engine: Engine) -> set[str] | None:
    """The names of the migrations the database holds; None when it is empty. Reads only.

    Raises SchemaMismatch for a foreign database, one with migrations this code does not know (newer
    code wrote it) and one of an older schema version than any migration.
    """
    tables = set(inspect(engine).get_table_names())
    if not tables:
        return None
    if SchemaInfo.__tablename__ not in tables:
        raise SchemaMismatch(f"{shown(engine.url)} is not a Tool Discovery Lab "
                             "results database (no schema_info table); point DATABASE_URL elsewhere.")
    with engine.connect() as conn:
        version = conn.execute(select(SchemaInfo.version).where(SchemaInfo.id == 1)).scalar_one_or_none()
        names = [m.name for m in migrations.applied(conn)]
    known = [m.name for m in migrations.MIGRATIONS]
    unknown = [name for name in names if name not in known]
    if unknown or (version or 0) > len(known):
        detail = f" (migrations {', '.join(unknown)} are unknown here)" if unknown else ""
        raise SchemaMismatch(f"results database has schema version {version}{detail}, this code knows "
                             f"{len(known)}: update the code (git pull).")
    if version is None or version < 1 or (not names and version != 1):
        raise SchemaMismatch(f"results database has schema version {version}, this code expects {len(known)}: "
                             "rerun `python -m core bench all` into a new DATABASE_URL.")
    return set(names or known[:1])  # no record and version 1: made before the migration list, whose m001 it is


def check_schema(engine: Engine, *, create: bool) -> bool:
    """True when the database holds this code's schema, once the migrations it lacks are applied.

    An empty database gets every migration when `create`; otherwise False, and nothing is made. A
    writer (`create`) also records m001 in a database from before the migration list; a reader
    writes only when a migration is pending. Raises SchemaMismatch as `applied_migrations` does.
    """
    names = applied_migrations(engine)
    if names is None:
        if create:
            migrations.create(engine)
        return create
    pending = [m.name for m in migrations.MIGRATIONS if m.name not in names]
    if pending or (create and not inspect(engine).has_table(migrations.MIGRATIONS_TABLE)):
        migrations.upgrade(engine)
    return True
