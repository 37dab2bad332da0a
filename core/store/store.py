"""The results store: SQLAlchemy 2.0 models for experiment runs and per-query results.

One row per run holds its full provenance; one row per (run, query) holds identifiers, scores,
hits, stubs, plans, metrics for both gold definitions, token usage and latency. Query texts and
API descriptions are not stored: pages join them from the ToolBench data directory.

SQLite (the default, `data/results.sqlite`) runs in WAL mode so a dashboard can read while a
benchmark writes; PostgreSQL (`postgresql://...`, through psycopg 3: core.store.dburl) is tested
against a real server, as nothing here uses SQLite-only SQL outside the connect hook. The unique
(run_id, query_uid) constraint is what makes a resumed run unable to duplicate a row, and the store's claims
(core.store.claims) what keeps two processes from writing one run at once: a run is claimed when it is started or
reopened and let go when it is finished or the store is closed.

Both stores hold and give back the same values: every string is cleaned in one place (`clean`: NUL
characters dropped, a value longer than its column cut with a marker), since PostgreSQL refuses both
where SQLite keeps them; timestamps are stored as UTC and read back as naive UTC (`UTCDateTime`),
since PostgreSQL hands them back in its session's time zone.

The schema grows by the append-only migrations of core.store.migrations. Opening a database applies
the ones it lacks, in order, for a reader too: they are additive, and the results database is a
local file (the committed one is unpacked before use), so a reader after a `git pull` reads with the
columns its code expects instead of failing. A database from before the migration list
(schema_info.version 1, no schema_migrations table) is read as it is; the first writer, or the first
new migration, records m001 in it. A foreign database, or one holding migrations this code does not
know, is refused with SchemaMismatch before anything is written to it.
"""
from __future__ import annotations

import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import threading
import time
import zlib
from collections.abc import Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (JSON, Boolean, DateTime, Float, ForeignKey, Integer, String, Text, TypeDecorator,
                        UniqueConstraint, case, create_engine, delete, event, func, insert, inspect, select, update)
from sqlalchemy.engine import Connection, Dialect, Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker

from core.settings import PROJECT_ROOT
from core.store import migrations
from core.store.claims import claims_for
from core.store.dburl import DatabaseUnavailable, normalise, open_error, shown

SCHEMA_VERSION = len(migrations.MIGRATIONS)  # the migrations this code knows (a database's schema_info.version)
BUSY_TIMEOUT_MS = 30_000
RUN_STATUSES = ("running", "complete", "failed", "skipped")
TRUNCATED = "…"  # ends a stored string that was cut to its column's length


class UTCDateTime(TypeDecorator):
    """A timestamp stored as UTC and read back as naive UTC on every store: SQLite keeps the digits it is
    given and returns them naive, PostgreSQL returns them aware in its session's time zone. A naive value
    written is taken as UTC (what SQLite hands back, e.g. when runs are copied to PostgreSQL)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None or value.tzinfo is None:
            return value
        return value.astimezone(UTC).replace(tzinfo=None)


class SchemaMismatch(DatabaseUnavailable):
    """The database is not ours, or newer or older code wrote it; the one-line message says what to do."""


class Base(DeclarativeBase):
    pass


class SchemaInfo(Base):
    __tablename__ = "schema_info"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class Run(Base):
    """One architecture on one subset at one configuration, with everything needed to reproduce it."""

    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(16), index=True)
    arch: Mapped[str] = mapped_column(String(8))
    subset: Mapped[str] = mapped_column(String(32))
    k: Mapped[int] = mapped_column(Integer)
    run_index: Mapped[int] = mapped_column(Integer)
    registry_name: Mapped[str] = mapped_column(String(32))
    registry_size: Mapped[int] = mapped_column(Integer)
    registry_hash: Mapped[str] = mapped_column(String(64))
    sub_size: Mapped[int | None] = mapped_column(Integer)
    sub_seed: Mapped[int | None] = mapped_column(Integer)
    embedding_model: Mapped[str] = mapped_column(String(200))
    llm_backend: Mapped[str] = mapped_column(String(32))
    llm_model: Mapped[str] = mapped_column(String(200))
    backend_label: Mapped[str] = mapped_column(String(200))
    discovery_prompt_version: Mapped[str] = mapped_column(String(64))
    planner_prompt_version: Mapped[str] = mapped_column(String(64))
    source_run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id"))
    git_commit: Mapped[str] = mapped_column(String(64))
    n_queries: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), index=True)
    note: Mapped[str | None] = mapped_column(Text)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class QueryResult(Base):
    """One query's outputs in one run. Metrics are stored for both gold definitions."""

    __tablename__ = "query_results"
    __table_args__ = (UniqueConstraint("run_id", "query_uid", name="uq_run_query"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"), index=True)
    query_uid: Mapped[str] = mapped_column(String(64))
    subset: Mapped[str] = mapped_column(String(32))
    query_id: Mapped[int] = mapped_column(Integer)
    k: Mapped[int] = mapped_column(Integer)
    recall_api_list: Mapped[float | None] = mapped_column(Float)
    precision_api_list: Mapped[float | None] = mapped_column(Float)
    hit_api_list: Mapped[float | None] = mapped_column(Float)
    recall_relevant: Mapped[float | None] = mapped_column(Float)
    precision_relevant: Mapped[float | None] = mapped_column(Float)
    hit_relevant: Mapped[float | None] = mapped_column(Float)
    top1_score: Mapped[float | None] = mapped_column(Float)
    search_width: Mapped[int | None] = mapped_column(Integer)
    # [{rank, tool_name, api_name, category, score, gold, gold_relevant, stub?}]
    hits: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON(none_as_null=True))
    # [{name, reasoning, top1: {tool_name, api_name, score, gold, gold_relevant}}]
    stubs: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON(none_as_null=True))
    stub_fallback: Mapped[bool | None] = mapped_column(Boolean)
    stub_error: Mapped[str | None] = mapped_column(Text)
    # PtR rows: size of the top-k intersection with RtP's top-k on the same (sub-)registry.
    rtp_overlap: Mapped[int | None] = mapped_column(Integer)
    same_as_rtp: Mapped[bool | None] = mapped_column(Boolean)
    # The plan: texts as JSON {selected_apis, steps, refusal, parse_error, cached}, measures as columns.
    plan: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    plan_refusal: Mapped[bool | None] = mapped_column(Boolean)
    plan_parse_error: Mapped[bool | None] = mapped_column(Boolean)
    plan_steps: Mapped[int | None] = mapped_column(Integer)
    plan_apis_named: Mapped[int | None] = mapped_column(Integer)
    plan_fidelity: Mapped[float | None] = mapped_column(Float)
    plan_selection_rate: Mapped[float | None] = mapped_column(Float)
    plan_matched: Mapped[list[list[str]] | None] = mapped_column(JSON(none_as_null=True))
    plan_pass_api_list: Mapped[bool | None] = mapped_column(Boolean)
    plan_pass_relevant: Mapped[bool | None] = mapped_column(Boolean)
    stub_prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    stub_output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    stub_thoughts_tokens: Mapped[int] = mapped_column(Integer, default=0)
    plan_prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    plan_output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    plan_thoughts_tokens: Mapped[int] = mapped_column(Integer, default=0)
    stub_latency_s: Mapped[float | None] = mapped_column(Float)
    retrieval_latency_s: Mapped[float | None] = mapped_column(Float)
    plan_latency_s: Mapped[float | None] = mapped_column(Float)
    error: Mapped[str | None] = mapped_column(Text)


RESULT_COLUMNS = tuple(c.name for c in QueryResult.__table__.columns if c.name != "id")
# table -> {column: n} for every VARCHAR(n) column
STRING_LENGTHS = {table.name: {c.name: c.type.length for c in table.columns
                               if isinstance(c.type, String) and c.type.length}
                  for table in (Run.__table__, QueryResult.__table__)}


def without_nul(value: Any) -> Any:
    """Every string in a value, JSON included (keys too), without NUL characters: the store's rule, also
    applied to what `query --json` prints, so the CLI shows the text a stored row holds."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {without_nul(k): without_nul(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_nul(v) for v in value]
    return value


def clean(table: str, values: dict[str, Any]) -> dict[str, Any]:
    """`values` for `table` ("runs" or "query_results") as every store keeps them, the one place strings are
    made storable: NUL characters dropped from every string (PostgreSQL's text refuses them), and a string
    longer than its VARCHAR(n) column cut to n characters ending in TRUNCATED (PostgreSQL refuses it, SQLite
    would keep it whole). Lookups clean their values the same way, so a cut spec still finds its run."""
    lengths = STRING_LENGTHS[table]
    out: dict[str, Any] = {}
    for name, value in values.items():
        value = without_nul(value)
        limit = lengths.get(name)
        if limit is not None and isinstance(value, str) and len(value) > limit:
            value = value[:limit - len(TRUNCATED)] + TRUNCATED
        out[name] = value
    return out


@dataclass(frozen=True)
class RunSpec:
    """Everything that identifies what a run computes; two runs with equal specs are the same experiment."""

    kind: str
    arch: str
    subset: str
    k: int
    run_index: int
    registry_name: str
    registry_size: int
    registry_hash: str
    embedding_model: str
    llm_backend: str
    llm_model: str
    backend_label: str
    discovery_prompt_version: str
    planner_prompt_version: str
    sub_size: int | None = None
    sub_seed: int | None = None
    source_run_id: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


SPEC_FIELDS = tuple(f.name for f in fields(RunSpec))


@dataclass(frozen=True)
class RunRecord:
    id: int
    spec: RunSpec
    status: str
    n_queries: int
    git_commit: str
    started_at: datetime
    finished_at: datetime | None
    note: str | None


def utcnow() -> datetime:
    return datetime.now(UTC)


def git_commit(root: Path = PROJECT_ROOT) -> str:
    """HEAD of the project checkout, or "unknown" outside git (a deployed copy, no git binary)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def _compact_json(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def sqlite_path(url: str) -> Path | None:
    """The file behind a SQLite URL; None for other databases, in-memory SQLite, a URL that does not parse and one with
    SQLite URI options (make_engine says so)."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return None
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    if parsed.query or parsed.database.startswith("file:"):
        return None  # URI options: make_engine refuses them by name (dburl.normalise)
    return Path(parsed.database)


_UNPACKING = threading.Lock()


def packed_path(path: Path) -> Path:
    return path.with_name(path.name + ".gz")


def unpack_if_packed(url: str) -> bool:
    """Unpack `<db>.gz` (the committed, gzipped results) when the SQLite file itself is missing.

    The precomputed database is committed gzipped (its JSON columns shrink about 6x); it is unpacked
    once, atomically, on first open, so a fresh clone's pages read it at once. True if unpacked.
    """
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


LAB_TABLES = {"runs", "query_results", "schema_info"}


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
    Raises DatabaseUnavailable (one line, no password) when the URL or its driver is unusable."""
    target = normalise(url)
    path = sqlite_path(url)
    if path is not None and writer:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        engine = create_engine(target, json_serializer=_compact_json)
    except (ImportError, NoSuchModuleError) as exc:
        raise open_error(url, exc) from None
    if make_url(url).get_backend_name() == "sqlite":
        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record) -> None:  # noqa: ANN001 - DB-API objects
            cursor = dbapi_connection.cursor()
            cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            if writer:
                _wal(cursor)
                # In WAL mode NORMAL survives a killed process (only an OS crash can lose the last commits).
                cursor.execute("PRAGMA synchronous=NORMAL")
                cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()
    return engine


def readable(url: str) -> bool:
    """False when the SQLite file does not exist and no packed copy does either: reading never creates a database
    (the committed `.gz` is unpacked first)."""
    path = sqlite_path(url)
    return path is None or path.exists() or unpack_if_packed(url)


def store_fingerprint(conn: Connection) -> tuple:
    """What changes whenever a run starts, finishes or writes a row: run count, last run, last finish, complete
    runs and last result row (a resumed run that rewrites its failed rows finishes again). Cheap (the id columns are
    keys), so a reader may ask on every request."""
    runs = conn.execute(select(func.count(Run.id), func.max(Run.id), func.max(Run.finished_at),
                               func.count(case((Run.status == "complete", 1))))).one()
    return (*runs, conn.execute(select(func.max(QueryResult.id))).scalar())


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


def _record(run: Run) -> RunRecord:
    spec = RunSpec(**{name: getattr(run, name) for name in SPEC_FIELDS})
    return RunRecord(run.id, spec, run.status, run.n_queries, run.git_commit, run.started_at, run.finished_at,
                     run.note)


class Store:
    """Writer side: creates or migrates the schema on first use, opens and closes runs (claiming each while it writes
    it), appends results atomically."""

    def __init__(self, url: str) -> None:
        self.url = url
        unpack_if_packed(url)  # append to the committed results, never start an empty file beside them
        path = sqlite_path(url)
        try:
            if path is None or path.exists():
                # First check through an engine that sets no pragma: the writer's WAL switch would change a foreign file.
                probe = make_engine(url, writer=False)
                try:
                    applied_migrations(probe)
                finally:
                    probe.dispose()
            self.engine = make_engine(url)
            check_schema(self.engine, create=True)
        except SQLAlchemyError as exc:
            raise open_error(url, exc) from None
        self.session = sessionmaker(self.engine, expire_on_commit=False)
        self.claims = claims_for(self.engine, path)

    def close(self) -> None:
        self.claims.close()
        self.engine.dispose()

    def start_run(self, spec: RunSpec, n_queries: int, commit: str, config: dict[str, Any] | None = None,
                  status: str = "running", note: str | None = None) -> int:
        """A new run's id; a running one is claimed before any other process can see it."""
        now = utcnow()
        with self.session.begin() as s:
            run = Run(**clean("runs", {**spec.as_dict(), "git_commit": commit, "n_queries": n_queries, "status": status,
                                       "note": note, "config": config or {}}),
                      started_at=now, finished_at=None if status == "running" else now)
            s.add(run)
            s.flush()
            if status == "running":
                self.claims.take(run.id)
            return run.id

    def claim(self, run_id: int) -> RunRecord:
        """Claim a stored run for this store, or raise RunBusy while another live process holds it; the run as it is
        once claimed (its holder may have finished it meanwhile)."""
        self.claims.take(run_id)
        with self.session() as s:
            return _record(s.get_one(Run, run_id))

    def release(self, run_id: int) -> None:
        """Let a claimed run go unfinished (finish_run lets it go too)."""
        self.claims.release(run_id)

    def find_run(self, spec: RunSpec) -> RunRecord | None:
        """The latest run with exactly this spec (any status)."""
        conditions = [getattr(Run, name).is_(None) if value is None else getattr(Run, name) == value
                      for name, value in clean("runs", spec.as_dict()).items()]
        with self.session() as s:
            run = s.scalars(select(Run).where(*conditions).order_by(Run.id.desc()).limit(1)).first()
            return None if run is None else _record(run)

    def reopen(self, run_id: int, n_queries: int) -> set[str]:
        """Prepare an unfinished run, claimed by this store, for resuming: drop its errored rows, return the query uids
        it holds."""
        with self.session.begin() as s:
            s.execute(delete(QueryResult).where(QueryResult.run_id == run_id, QueryResult.error.is_not(None)))
            s.execute(update(Run).where(Run.id == run_id).values(status="running", finished_at=None, note=None,
                                                                  n_queries=n_queries))
            return set(s.scalars(select(QueryResult.query_uid).where(QueryResult.run_id == run_id)))

    def add_results(self, rows: Sequence[dict[str, Any]]) -> None:
        """Insert rows in one transaction: either all of them are stored or none is."""
        if not rows:
            return
        with self.session.begin() as s:
            s.execute(insert(QueryResult), [clean("query_results", {c: row.get(c) for c in RESULT_COLUMNS if c in row})
                                            for row in rows])

    def finish_run(self, run_id: int, status: str = "complete", note: str | None = None) -> None:
        if status not in RUN_STATUSES:
            raise ValueError(f"status must be one of {RUN_STATUSES}")
        with self.session.begin() as s:
            s.execute(update(Run).where(Run.id == run_id).values(**clean("runs", {"status": status, "note": note}),
                                                                  finished_at=utcnow()))
        self.claims.release(run_id)

    def count_results(self, run_id: int) -> int:
        with self.session() as s:
            return int(s.scalar(select(func.count()).select_from(QueryResult).where(QueryResult.run_id == run_id)))

    def runs(self, kind: str | None = None, status: str | None = None) -> list[RunRecord]:
        query = select(Run).order_by(Run.id)
        if kind is not None:
            query = query.where(Run.kind == kind)
        if status is not None:
            query = query.where(Run.status == status)
        with self.session() as s:
            return [_record(r) for r in s.scalars(query)]

    def latest_complete(self, kind: str, arch: str, subset: str, **match: Any) -> dict[int, RunRecord]:
        """run_index -> the latest complete run of this kind, arch and subset (optionally matching spec fields)."""
        query = select(Run).where(Run.kind == kind, Run.arch == arch, Run.subset == subset, Run.status == "complete")
        for name, value in clean("runs", match).items():
            query = query.where(getattr(Run, name) == value)
        out: dict[int, RunRecord] = {}
        with self.session() as s:
            for run in s.scalars(query.order_by(Run.id)):
                out[run.run_index] = _record(run)
        return dict(sorted(out.items()))

    def results(self, run_id: int, columns: Iterable[str] = ("query_uid", "stubs", "stub_fallback")) -> list[dict]:
        cols = [getattr(QueryResult, c) for c in columns]
        with self.session() as s:
            return [dict(r._mapping) for r in s.execute(select(*cols).where(QueryResult.run_id == run_id))]
