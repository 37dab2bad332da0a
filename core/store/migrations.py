"""Schema migrations of the results store: an append-only list of named functions, applied in order, recorded.

Modelled on simonw/llm's migrations.py, so that the committed results database can gain a column
without being regenerated. Each `@migration` function takes a SQLAlchemy Connection inside its own
transaction and is applied once; its name and time go into the `schema_migrations` table, and
`schema_info.version` becomes the number of migrations applied, so code from before this list (which
checks only that number) refuses a newer database with "update the code". Never edit, rename or
reorder a migration that has been committed: append a new one, in DDL or `text` that both SQLite and
PostgreSQL accept, and give the models in core.store.schema the same change (a test checks they agree), as
m002_query_results_failure_kind below does.

m001 is the schema as the code of `SCHEMA_VERSION = 1` created it, frozen here as Core tables rather
than taken from the models, so that a later model change cannot alter what it creates. A database
that code made (schema_info.version 1, no schema_migrations table) has m001 applied already: it is
read as it is, and `upgrade` adopts it (records m001 with the database's creation time), never
recreating anything.

Transactions: pysqlite begins a transaction only at an INSERT, UPDATE or DELETE and runs DDL before
one in autocommit, so every transaction here starts with a write to schema_info. That makes the
DDL after it roll back with the record if it fails, and serialises concurrent upgraders (SQLite's
write lock, PostgreSQL's row lock): the second one then finds the migration recorded and skips it.
Only m001 on an empty database has no table to write first, so its transaction first takes a lock and
looks again: on PostgreSQL an advisory lock, on SQLite the write lock itself (BEGIN IMMEDIATE, which
waits out the busy timeout; the file exists by then, as SQLite makes it on connecting). Of two writers
opening an empty database at once (two bench processes on a new team database, or on a SQLite file
that did not exist) one creates the schema, in one transaction, and the other finds it made. On SQLite
pysqlite would otherwise have run each CREATE in autocommit, before m001's INSERT began a transaction:
the second writer then failed on "table schema_info already exists".
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import (JSON, Boolean, Column, DateTime, Float, ForeignKey, Integer, MetaData, String, Table, Text,
                        UniqueConstraint, func, insert, inspect, select, text, update)
from sqlalchemy.engine import Connection, Engine

MIGRATIONS_TABLE = "schema_migrations"
CREATE_LOCK = 0x70_6C_61_62  # PostgreSQL advisory lock key held while the schema is created


@dataclass(frozen=True)
class Migration:
    name: str
    apply: Callable[[Connection], None]


@dataclass(frozen=True)
class AppliedMigration:
    name: str
    applied_at: datetime


MIGRATIONS: list[Migration] = []

_meta = MetaData()
RECORDS = Table(MIGRATIONS_TABLE, _meta, Column("name", String(200), primary_key=True),
                Column("applied_at", DateTime(timezone=True), nullable=False))
# As m001 creates it: a later migration changes the table, never this definition.
SCHEMA_INFO = Table("schema_info", _meta, Column("id", Integer, primary_key=True),
                    Column("version", Integer, nullable=False),
                    Column("created_at", DateTime(timezone=True), nullable=False))


def migration(fn: Callable[[Connection], None]) -> Callable[[Connection], None]:
    """Append `fn` to MIGRATIONS under its function name."""
    MIGRATIONS.append(Migration(fn.__name__, fn))
    return fn


@migration
def m001_initial_schema(conn: Connection) -> None:
    """The runs and query_results tables and the schema_info row, exactly as SCHEMA_VERSION 1 made them."""
    meta = MetaData()
    Table("runs", meta,
          Column("id", Integer, primary_key=True, autoincrement=True),
          Column("kind", String(16), nullable=False, index=True),
          Column("arch", String(8), nullable=False),
          Column("subset", String(32), nullable=False),
          Column("k", Integer, nullable=False),
          Column("run_index", Integer, nullable=False),
          Column("registry_name", String(32), nullable=False),
          Column("registry_size", Integer, nullable=False),
          Column("registry_hash", String(64), nullable=False),
          Column("sub_size", Integer),
          Column("sub_seed", Integer),
          Column("embedding_model", String(200), nullable=False),
          Column("llm_backend", String(32), nullable=False),
          Column("llm_model", String(200), nullable=False),
          Column("backend_label", String(200), nullable=False),
          Column("discovery_prompt_version", String(64), nullable=False),
          Column("planner_prompt_version", String(64), nullable=False),
          Column("source_run_id", ForeignKey("runs.id")),
          Column("git_commit", String(64), nullable=False),
          Column("n_queries", Integer, nullable=False),
          Column("status", String(16), nullable=False, index=True),
          Column("note", Text),
          Column("config", JSON, nullable=False),
          Column("started_at", DateTime(timezone=True), nullable=False),
          Column("finished_at", DateTime(timezone=True)))
    Table("query_results", meta,
          Column("id", Integer, primary_key=True, autoincrement=True),
          Column("run_id", ForeignKey("runs.id"), nullable=False, index=True),
          Column("query_uid", String(64), nullable=False),
          Column("subset", String(32), nullable=False),
          Column("query_id", Integer, nullable=False),
          Column("k", Integer, nullable=False),
          *(Column(name, Float) for name in ("recall_api_list", "precision_api_list", "hit_api_list",
                                             "recall_relevant", "precision_relevant", "hit_relevant", "top1_score")),
          Column("search_width", Integer),
          Column("hits", JSON),
          Column("stubs", JSON),
          Column("stub_fallback", Boolean),
          Column("stub_error", Text),
          Column("rtp_overlap", Integer),
          Column("same_as_rtp", Boolean),
          Column("plan", JSON),
          Column("plan_refusal", Boolean),
          Column("plan_parse_error", Boolean),
          Column("plan_steps", Integer),
          Column("plan_apis_named", Integer),
          Column("plan_fidelity", Float),
          Column("plan_selection_rate", Float),
          Column("plan_matched", JSON),
          Column("plan_pass_api_list", Boolean),
          Column("plan_pass_relevant", Boolean),
          *(Column(f"{step}_{kind}_tokens", Integer, nullable=False)
            for step in ("stub", "plan") for kind in ("prompt", "output", "thoughts")),
          Column("stub_latency_s", Float),
          Column("retrieval_latency_s", Float),
          Column("plan_latency_s", Float),
          Column("error", Text),
          UniqueConstraint("run_id", "query_uid", name="uq_run_query"))
    SCHEMA_INFO.create(conn)
    meta.create_all(conn)
    conn.execute(insert(SCHEMA_INFO).values(id=1, version=1, created_at=datetime.now(UTC)))


@migration
def m002_query_results_failure_kind(conn: Connection) -> None:
    """A row's FailureKind as a column, so that readers need not parse it out of the row's texts; NULL in the rows
    written before it (core.store.failure_kind reads those through the texts)."""
    conn.execute(text("ALTER TABLE query_results ADD COLUMN failure_kind VARCHAR(32)"))


def applied(conn: Connection) -> list[AppliedMigration]:
    """The recorded migrations in the order they were applied; empty where nothing is recorded."""
    if not inspect(conn).has_table(MIGRATIONS_TABLE):
        return []
    rows = conn.execute(select(RECORDS.c.name, RECORDS.c.applied_at).order_by(RECORDS.c.applied_at, RECORDS.c.name))
    return [AppliedMigration(name, applied_at) for name, applied_at in rows]


def create(engine: Engine) -> None:
    """Build the schema in an empty database by applying every migration (m001 only when no other writer
    made it meanwhile: see the module docstring)."""
    first = MIGRATIONS[0]
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(select(func.pg_advisory_xact_lock(CREATE_LOCK)))
        elif conn.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        if not inspect(conn).has_table(SCHEMA_INFO.name):
            first.apply(conn)
            RECORDS.create(conn)
            _record(conn, first, 1)
    upgrade(engine)


def upgrade(engine: Engine) -> list[str]:
    """Adopt a database made before this list, then apply each pending migration in its own transaction.

    Returns the names applied here (not those another process applied meanwhile).
    """
    with engine.begin() as conn:
        _lock(conn)
        if not inspect(conn).has_table(MIGRATIONS_TABLE):
            created = conn.execute(select(SCHEMA_INFO.c.created_at).where(SCHEMA_INFO.c.id == 1)).scalar_one()
            RECORDS.create(conn)
            conn.execute(insert(RECORDS).values(name=MIGRATIONS[0].name, applied_at=created))
    with engine.connect() as conn:
        recorded = {m.name for m in applied(conn)}
    done: list[str] = []
    for position, step in enumerate(MIGRATIONS, start=1):
        if step.name in recorded:
            continue
        with engine.begin() as conn:
            _lock(conn)
            if step.name in {m.name for m in applied(conn)}:  # another process was first
                continue
            step.apply(conn)
            _record(conn, step, position)
        done.append(step.name)
    return done


def _lock(conn: Connection) -> None:
    """A write that changes nothing: it opens the transaction (see the module docstring) and takes the write lock."""
    conn.execute(update(SCHEMA_INFO).where(SCHEMA_INFO.c.id == 1).values(version=SCHEMA_INFO.c.version))


def _record(conn: Connection, step: Migration, position: int) -> None:
    conn.execute(insert(RECORDS).values(name=step.name, applied_at=datetime.now(UTC)))
    conn.execute(update(SCHEMA_INFO).where(SCHEMA_INFO.c.id == 1).values(version=position))
