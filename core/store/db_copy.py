"""Copy stored runs from one results store to another (`python -m core db copy SRC DST`): SQLite to a
team's PostgreSQL and back, or between any two of them.

What is copied: every finished run (complete or skipped) with all its rows. A running or failed run is
left out, since it can still change (a resume completes it) and its copy would then stand beside the
finished one; so is a run whose source run (`source_run_id`, e.g. a k sweep's main run) is left out.

Never a duplicate: a run is already in DST when DST holds a run with the same spec (its source run taken
as DST's copy of it) and the same start time. Such a run is not copied again, so a copy can be repeated
after more benches and adds only the new runs, in either direction.

Counts checked: each run goes into DST in one transaction with its rows; before it commits, DST's row
count for it is read back and must equal SRC's count for the original. At the end every finished run of
SRC must be in DST exactly once (by the key above). A mismatch raises CopyMismatch (a run whose rows do
not add up is rolled back).
Strings are cleaned as every write cleans them (core.store.cleaning.clean).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from core.store.cleaning import clean
from core.store.dburl import DatabaseUnavailable, open_error, shown, sqlite_path
from core.store.engine import make_engine
from core.store.packing import unpack_if_packed
from core.store.schema import RESULT_COLUMNS, QueryResult, Run
from core.store.schema_check import check_schema
from core.store.store import SPEC_FIELDS, Store

FINISHED = ("complete", "skipped")
RUN_FIELDS = tuple(c.name for c in Run.__table__.columns if c.name != "id")
CHUNK = 1000


class CopyMismatch(RuntimeError):
    """DST does not hold what was copied into it; the message says which run and which counts."""


@dataclass(frozen=True)
class CopiedRun:
    source_id: int
    target_id: int
    rows: int


@dataclass(frozen=True)
class CopyReport:
    """What a copy did: runs copied (with their row counts), runs already in DST, unfinished runs left out."""

    source: str
    target: str
    copied: tuple[CopiedRun, ...]
    already_there: tuple[int, ...]
    left_out: tuple[int, ...]

    @property
    def rows(self) -> int:
        return sum(run.rows for run in self.copied)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rows": self.rows}


def _key(fields: dict[str, Any]) -> tuple:
    """What makes two stored runs the same run: the spec (source run as the DST id) and the start time."""
    return (*(fields[name] for name in SPEC_FIELDS), fields["started_at"])


def _open_source(url: str) -> Engine:
    path = sqlite_path(url)
    if path is not None and not path.exists() and not unpack_if_packed(url):
        raise DatabaseUnavailable(f"no results database at {shown(url)} to copy from")
    engine = make_engine(url, writer=False)
    try:
        holds_schema = check_schema(engine, create=False)
    except SQLAlchemyError as exc:
        engine.dispose()
        raise open_error(url, exc) from None
    if not holds_schema:
        engine.dispose()
        raise DatabaseUnavailable(f"the results database {shown(url)} is empty: nothing to copy")
    return engine


def _count(conn: Connection, run_id: int) -> int:
    return int(conn.scalar(select(func.count()).select_from(QueryResult).where(QueryResult.run_id == run_id)))


def copy_runs(source_url: str, target_url: str) -> CopyReport:
    """Copy SRC's finished runs that DST does not hold into DST (the rules are in the module docstring)."""
    if shown(source_url) == shown(target_url):
        raise ValueError(f"SRC and DST are the same database ({shown(source_url)})")
    source = _open_source(source_url)
    target_file = sqlite_path(target_url)
    created = target_file is not None and not target_file.exists()  # a failed copy removes a file it made
    try:
        target = Store(target_url)
    except BaseException:
        source.dispose()
        raise
    try:
        return _copy(source, target, source_url, target_url)
    except SQLAlchemyError as exc:  # a malformed SRC (or DST) read in the middle: one line, no half-made DST file
        failed = open_error(source_url, exc)
        target.close()
        if created:
            for leftover in (target_file, *(target_file.with_name(target_file.name + s) for s in ("-wal", "-shm"))):
                leftover.unlink(missing_ok=True)
        raise DatabaseUnavailable(f"the copy stopped, every run copied so far is whole: {failed}") from None
    finally:
        source.dispose()
        target.close()


def _copy(source: Engine, target: Store, source_url: str, target_url: str) -> CopyReport:
    """copy_runs' work, run by run, each in one transaction of DST."""
    runs = list(Run.__table__.columns)
    results = [QueryResult.__table__.c[name] for name in RESULT_COLUMNS]
    with target.engine.connect() as conn:
        held = {_key(dict(r._mapping)): r.id for r in conn.execute(select(*runs))}
    with source.connect() as src:
        stored = list(src.execute(select(*runs).order_by(Run.id)))
    id_map: dict[int, int] = {}
    wanted: dict[int, tuple] = {}  # SRC run id -> its key in DST
    copied: list[CopiedRun] = []
    already: list[int] = []
    left_out: list[int] = []
    for run in stored:
        fields = clean("runs", {name: run._mapping[name] for name in RUN_FIELDS})
        if run.status not in FINISHED or (run.source_run_id is not None and run.source_run_id not in id_map):
            left_out.append(run.id)
            continue
        fields["source_run_id"] = id_map.get(run.source_run_id) if run.source_run_id is not None else None
        wanted[run.id] = _key(fields)
        if _key(fields) in held:
            id_map[run.id] = held[_key(fields)]
            already.append(run.id)
            continue
        with source.connect() as src:
            expected = _count(src, run.id)
            rows = [dict(r._mapping) for r in src.execute(select(*results).where(QueryResult.run_id == run.id)
                                                          .order_by(QueryResult.id))]
        with target.engine.begin() as dst:
            new_id = dst.execute(insert(Run).values(**fields)).inserted_primary_key[0]
            for start in range(0, len(rows), CHUNK):
                dst.execute(insert(QueryResult), [clean("query_results", {**row, "run_id": new_id})
                                                  for row in rows[start:start + CHUNK]])
            found = _count(dst, new_id)
            if not expected == len(rows) == found:
                raise CopyMismatch(f"run {run.id}: SRC holds {expected} rows, {len(rows)} were read and DST "
                                   f"holds {found}; nothing of it was kept")
        id_map[run.id] = new_id
        copied.append(CopiedRun(run.id, new_id, found))
    with target.engine.connect() as conn:
        in_target = Counter(_key(dict(r._mapping)) for r in conn.execute(select(*runs)))
    wrong = [run_id for run_id, key in wanted.items() if in_target[key] != 1]
    if wrong:
        raise CopyMismatch(f"after the copy DST does not hold SRC's runs {wrong[:10]} exactly once")
    return CopyReport(shown(source_url), shown(target_url), tuple(copied), tuple(already), tuple(left_out))
