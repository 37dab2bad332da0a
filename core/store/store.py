"""The writer side of the results store: opening a database for writing, and the runs and rows it writes.

The schema (core.store.schema) is created or migrated on first use (core.store.schema_check); every value is
cleaned before it is written or looked up (core.store.cleaning), and timestamps are UTC. A run is claimed
(core.store.claims) when it is started or reopened, so two processes never write one run at once, and let go
when it is finished or the store is closed. A fresh clone's committed results are unpacked first
(core.store.packing), so a bench appends to them instead of starting an empty file beside them. A write that a full
or read-only disk refuses raises StoreNotWritable, one line naming the disk (core.study.runner then marks the
study's unfinished runs interrupted: `--resume` continues them).
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any, TypeVar

from sqlalchemy import case, delete, func, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import sessionmaker

from core.store.claims import claims_for
from core.store.cleaning import clean
from core.store.dburl import not_writable, open_error, sqlite_path
from core.store.engine import make_engine
from core.store.failure_kind import named_failure
from core.store.packing import unpack_if_packed
from core.store.schema import RESULT_COLUMNS, QueryResult, Run
from core.store.schema_check import applied_migrations, check_schema

RUN_STATUSES = ("running", "complete", "failed", "skipped", "interrupted")  # interrupted: stopped, `--resume` goes on
T = TypeVar("T")


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


def store_fingerprint(conn: Connection) -> tuple:
    """What changes whenever a run starts, finishes or writes a row: run count, last run, last finish, complete
    runs and last result row (a resumed run that rewrites its failed rows finishes again). Cheap (the id columns are
    keys), so a reader may ask on every request."""
    runs = conn.execute(select(func.count(Run.id), func.max(Run.id), func.max(Run.finished_at),
                               func.count(case((Run.status == "complete", 1))))).one()
    return (*runs, conn.execute(select(func.max(QueryResult.id))).scalar())


def _stored(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row's values as add_results writes them: its columns, with its failure kind named by its texts unless the
    writer gave one (core.store.failure_kind), cleaned."""
    values = {c: row.get(c) for c in RESULT_COLUMNS if c in row}
    values.setdefault("failure_kind", named_failure(values))
    return clean("query_results", values)


def _writes(method: Callable[..., T]) -> Callable[..., T]:
    """A Store method that writes: a full or read-only disk is raised as StoreNotWritable, one line naming the disk,
    instead of the driver's error (which a study stores as its runs' failure, help link and all)."""
    @functools.wraps(method)
    def write(self: Store, *args: Any, **kwargs: Any) -> T:
        try:
            return method(self, *args, **kwargs)
        except SQLAlchemyError as exc:
            problem = not_writable(self.url, exc)
            if problem is None:
                raise
            raise problem from None

    return write


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
                # First check through an engine that sets no pragma: the writer's WAL switch would change a foreign
                # file.
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

    @_writes
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

    @_writes
    def reopen(self, run_id: int, n_queries: int) -> set[str]:
        """Prepare an unfinished run, claimed by this store, for resuming: drop its errored rows, return the query uids
        it holds."""
        with self.session.begin() as s:
            s.execute(delete(QueryResult).where(QueryResult.run_id == run_id, QueryResult.error.is_not(None)))
            s.execute(update(Run).where(Run.id == run_id).values(status="running", finished_at=None, note=None,
                                                                  n_queries=n_queries))
            return set(s.scalars(select(QueryResult.query_uid).where(QueryResult.run_id == run_id)))

    @_writes
    def add_results(self, rows: Sequence[dict[str, Any]]) -> None:
        """Insert rows in one transaction: either all of them are stored or none is."""
        if not rows:
            return
        with self.session.begin() as s:
            s.execute(insert(QueryResult), [_stored(row) for row in rows])

    @_writes
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
