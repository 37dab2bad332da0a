"""Store migrations: a version-1 database is adopted, not recreated; appended migrations reach databases with rows;
m002's failure_kind column is filled for new rows, and old rows are read through their texts.

Tests that take `db_url` or a `kind` run on SQLite and on a real PostgreSQL server (tests/stores.py); those about
SQLite files (the version-1 databases, which only SQLite ever held, a file's bytes, its journal) on SQLite only."""
from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, select, text
from sqlalchemy.engine import Connection

from core.analysis.reader import ResultsReader
from core.agents.llm import FailureKind
from core.agents.llm.jsonparse import failure_reason
from core.settings import PROJECT_ROOT
from core.store import migrations
from core.store.migrations import Migration
from core.store.dburl import normalise
from core.store.engine import make_engine
from core.store.failure_kind import SOURCE_COLUMNS, failure_kind
from core.store.packing import unpack_if_packed
from core.store.schema import Base, QueryResult
from core.store.schema_check import SCHEMA_VERSION, SchemaMismatch, check_schema
from core.store.store import Store
from tests.stores import STORES, query

COMMITTED = PROJECT_ROOT / "data" / "results.sqlite.gz"

# The schema as `SCHEMA_VERSION = 1` (before the migration list) created it, copied from the committed database.
VERSION_1_DDL = """
CREATE TABLE schema_info (
	id INTEGER NOT NULL,
	version INTEGER NOT NULL,
	created_at DATETIME NOT NULL,
	PRIMARY KEY (id)
);
CREATE TABLE runs (
	id INTEGER NOT NULL,
	kind VARCHAR(16) NOT NULL,
	arch VARCHAR(8) NOT NULL,
	subset VARCHAR(32) NOT NULL,
	k INTEGER NOT NULL,
	run_index INTEGER NOT NULL,
	registry_name VARCHAR(32) NOT NULL,
	registry_size INTEGER NOT NULL,
	registry_hash VARCHAR(64) NOT NULL,
	sub_size INTEGER,
	sub_seed INTEGER,
	embedding_model VARCHAR(200) NOT NULL,
	llm_backend VARCHAR(32) NOT NULL,
	llm_model VARCHAR(200) NOT NULL,
	backend_label VARCHAR(200) NOT NULL,
	discovery_prompt_version VARCHAR(64) NOT NULL,
	planner_prompt_version VARCHAR(64) NOT NULL,
	source_run_id INTEGER,
	git_commit VARCHAR(64) NOT NULL,
	n_queries INTEGER NOT NULL,
	status VARCHAR(16) NOT NULL,
	note TEXT,
	config JSON NOT NULL,
	started_at DATETIME NOT NULL,
	finished_at DATETIME,
	PRIMARY KEY (id),
	FOREIGN KEY(source_run_id) REFERENCES runs (id)
);
CREATE TABLE query_results (
	id INTEGER NOT NULL,
	run_id INTEGER NOT NULL,
	query_uid VARCHAR(64) NOT NULL,
	subset VARCHAR(32) NOT NULL,
	query_id INTEGER NOT NULL,
	k INTEGER NOT NULL,
	recall_api_list FLOAT,
	precision_api_list FLOAT,
	hit_api_list FLOAT,
	recall_relevant FLOAT,
	precision_relevant FLOAT,
	hit_relevant FLOAT,
	top1_score FLOAT,
	search_width INTEGER,
	hits JSON,
	stubs JSON,
	stub_fallback BOOLEAN,
	stub_error TEXT,
	rtp_overlap INTEGER,
	same_as_rtp BOOLEAN,
	"plan" JSON,
	plan_refusal BOOLEAN,
	plan_parse_error BOOLEAN,
	plan_steps INTEGER,
	plan_apis_named INTEGER,
	plan_fidelity FLOAT,
	plan_selection_rate FLOAT,
	plan_matched JSON,
	plan_pass_api_list BOOLEAN,
	plan_pass_relevant BOOLEAN,
	stub_prompt_tokens INTEGER NOT NULL,
	stub_output_tokens INTEGER NOT NULL,
	stub_thoughts_tokens INTEGER NOT NULL,
	plan_prompt_tokens INTEGER NOT NULL,
	plan_output_tokens INTEGER NOT NULL,
	plan_thoughts_tokens INTEGER NOT NULL,
	stub_latency_s FLOAT,
	retrieval_latency_s FLOAT,
	plan_latency_s FLOAT,
	error TEXT,
	PRIMARY KEY (id),
	CONSTRAINT uq_run_query UNIQUE (run_id, query_uid),
	FOREIGN KEY(run_id) REFERENCES runs (id)
);
CREATE INDEX ix_runs_status ON runs (status);
CREATE INDEX ix_runs_kind ON runs (kind);
CREATE INDEX ix_query_results_run_id ON query_results (run_id);
"""
CREATED_AT = "2026-01-02 03:04:05.000006"
RUN_SQL = ("INSERT INTO runs (id, kind, arch, subset, k, run_index, registry_name, registry_size, registry_hash, "
           "embedding_model, llm_backend, llm_model, backend_label, discovery_prompt_version, planner_prompt_version, "
           "git_commit, n_queries, status, config, started_at, finished_at) "
           "VALUES (:id, 'main', :arch, 'G1_instruction', "
           "5, 0, 'small', 10, 'abc', 'fake', 'offline', 'offline-heuristic', 'offline heuristic, not an LLM', 'd1', "
           "'p1', 'abc123', 2, 'complete', :config, '2026-01-02 03:05:00', '2026-01-02 03:06:00')")
RESULT_SQL = ("INSERT INTO query_results (run_id, query_uid, subset, query_id, k, recall_api_list, hits, stubs, "
              "stub_prompt_tokens, stub_output_tokens, stub_thoughts_tokens, plan_prompt_tokens, plan_output_tokens, "
              "plan_thoughts_tokens) VALUES (:run_id, :uid, 'G1_instruction', :query_id, 5, :recall, :hits, :stubs, "
              "3, 4, 0, 5, 6, 0)")
CONFIG = '{"concurrency":4}'
KNOWN = [m.name for m in migrations.MIGRATIONS]  # this code's list, before a test appends to it


def version_1_database(path: Path) -> str:
    """A database as the code before the migration list left it: its DDL, its schema_info row, two runs, four rows."""
    with sqlite3.connect(path) as conn:
        conn.executescript(VERSION_1_DDL)
        conn.execute("INSERT INTO schema_info (id, version, created_at) VALUES (1, 1, ?)", (CREATED_AT,))
        for run_id, arch in ((1, "rtp"), (2, "ptr")):
            conn.execute(RUN_SQL, {"id": run_id, "arch": arch, "config": CONFIG})
            for i in (1, 2):
                stubs = '[{"name":"s","reasoning":""}]' if arch == "ptr" else None
                conn.execute(RESULT_SQL, {"run_id": run_id, "uid": f"G1_instruction:{i}", "query_id": i,
                                          "recall": i / 4, "hits": '[{"rank":1,"tool_name":"T","api_name":"a"}]',
                                          "stubs": stubs})
    conn.close()
    return f"sqlite:///{path}"


def current_database(url: str) -> str:
    """The same rows, written through a Store of this code (on any store)."""
    Store(url).close()
    for run_id, arch in ((1, "rtp"), (2, "ptr")):
        query(url, RUN_SQL, id=run_id, arch=arch, config=CONFIG)
        for i in (1, 2):
            query(url, RESULT_SQL, run_id=run_id, uid=f"G1_instruction:{i}", query_id=i, recall=i / 4, hits="[]",
                  stubs=None)
    return url


def rows(url: str, table: str) -> list[tuple]:
    return query(url, f"SELECT * FROM {table} ORDER BY id")


def records(url: str) -> list[str]:
    return [name for (name,) in query(url, "SELECT name FROM schema_migrations ORDER BY applied_at, name")]


def schema_version(url: str) -> int:
    return query(url, "SELECT version FROM schema_info")[0][0]


def shape(url: str) -> dict[str, tuple]:
    """Every table's columns (name, type, nullable), indexes, unique constraints and foreign keys, as the
    database reports them (schema_migrations left out)."""
    engine = create_engine(normalise(url))
    try:
        insp = inspect(engine)
        return {t: (sorted((c["name"], str(c["type"]), c["nullable"]) for c in insp.get_columns(t)),
                    sorted((i["name"], tuple(i["column_names"]), bool(i["unique"])) for i in insp.get_indexes(t)),
                    sorted((u["name"], tuple(u["column_names"])) for u in insp.get_unique_constraints(t)),
                    sorted((tuple(f["constrained_columns"]), f["referred_table"]) for f in insp.get_foreign_keys(t)))
                for t in insp.get_table_names() if t != migrations.MIGRATIONS_TABLE}
    finally:
        engine.dispose()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def add_judge_score(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE query_results ADD COLUMN judge_score FLOAT"))


def add_reviewer(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE runs ADD COLUMN reviewer VARCHAR(64)"))


def extended(monkeypatch: pytest.MonkeyPatch, *steps: Migration) -> list[str]:
    """Append migrations to the list, as a later commit would; returns every name in order."""
    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, *steps])
    return [m.name for m in migrations.MIGRATIONS]


def test_the_list_starts_with_the_version_1_schema() -> None:
    assert SCHEMA_VERSION == len(migrations.MIGRATIONS) == 2
    assert KNOWN == ["m001_initial_schema", "m002_query_results_failure_kind"]


def test_m001_creates_exactly_the_version_1_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    version_1_database(tmp_path / "old.sqlite")
    monkeypatch.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:1])
    Store(f"sqlite:///{tmp_path / 'new.sqlite'}").close()

    def schema(path: Path) -> set[tuple]:
        with sqlite3.connect(path) as conn:
            out = {(kind, name, table, " ".join((sql or "").split())) for kind, name, table, sql in conn.execute(
                "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE tbl_name != 'schema_migrations'")}
        conn.close()
        return out

    assert schema(tmp_path / "new.sqlite") == schema(tmp_path / "old.sqlite")


@pytest.mark.parametrize("kind", STORES)
def test_the_models_match_the_migrations(kind: str, new_store: Callable[[str], str]) -> None:
    """A model column without its migration (or the reverse) fails here, not in a user's database."""
    migrated, modelled = new_store(kind), new_store(kind)
    by_migrations = make_engine(migrated)
    check_schema(by_migrations, create=True)
    by_migrations.dispose()
    by_models = create_engine(normalise(modelled))
    Base.metadata.create_all(by_models)
    by_models.dispose()
    assert shape(migrated) == shape(modelled) and "runs" in shape(migrated)


def test_a_version_1_database_is_adopted_without_losing_a_row(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    url = version_1_database(path)
    runs, results, info = rows(url, "runs"), rows(url, "query_results"), rows(url, "schema_info")
    store = Store(url)
    assert [r.id for r in store.runs()] == [1, 2] and store.count_results(2) == 2
    store.close()
    assert rows(url, "runs") == runs and rows(url, "query_results") == [(*r, None) for r in results]  # m002's column
    assert rows(url, "schema_info") == [(*info[0][:1], len(KNOWN), *info[0][2:])]
    with sqlite3.connect(path) as conn:  # m001 is recorded as applied when the database was made
        recorded = conn.execute("SELECT name, applied_at FROM schema_migrations ORDER BY applied_at").fetchall()
    assert recorded[0] == ("m001_initial_schema", CREATED_AT) and [name for name, _ in recorded] == KNOWN
    conn.close()


def test_a_reader_reads_a_version_1_database_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With nothing pending (this code's list cut back to m001) a reader writes nothing."""
    monkeypatch.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:1])
    path = tmp_path / "results.sqlite"
    url = version_1_database(path)
    before = digest(path)
    reader = ResultsReader(url)
    assert reader.available() and reader.status()["n_runs"] == 2 and list(reader.runs()["n_results"]) == [2, 2]
    assert digest(path) == before


def test_migrations_are_recorded_in_order_and_applying_twice_does_nothing(db_url: str,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    names = extended(monkeypatch, Migration("m003_judge_score", add_judge_score),
                     Migration("m004_reviewer", add_reviewer))
    url = db_url
    Store(url).close()
    assert records(url) == names and schema_version(url) == 4
    first, schema = query(url, "SELECT * FROM schema_migrations ORDER BY name"), shape(url)
    assert "judge_score" in {c[0] for c in schema["query_results"][0]}
    engine = make_engine(url)
    assert migrations.upgrade(engine) == []
    assert check_schema(engine, create=True) and check_schema(engine, create=False)
    engine.dispose()
    Store(url).close()
    assert query(url, "SELECT * FROM schema_migrations ORDER BY name") == first and shape(url) == schema


def version_1(_: str, tmp_path: Path) -> str:
    return version_1_database(tmp_path / "results.sqlite")


def current(url: str, _: Path) -> str:
    return current_database(url)


@pytest.mark.parametrize(("kind", "made_by"), [("sqlite", version_1), ("sqlite", current), ("postgresql", current)],
                         ids=["sqlite-version-1", "sqlite-current", "postgresql-current"])
@pytest.mark.parametrize("opener", ["store", "reader"])
def test_an_appended_migration_reaches_a_database_with_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            new_store: Callable[[str], str], kind: str,
                                                            made_by: Callable[[str, Path], str], opener: str) -> None:
    url = made_by(new_store(kind), tmp_path)
    runs, results = rows(url, "runs"), rows(url, "query_results")
    names = extended(monkeypatch, Migration("m003_judge_score", add_judge_score))
    if opener == "store":
        Store(url).close()
    else:
        assert ResultsReader(url).available()
    assert records(url) == names and schema_version(url) == 3
    assert rows(url, "runs") == runs
    added = 3 - (1 if made_by is version_1 else 2)  # the columns of the migrations the database lacked
    assert [(*r, *(None,) * added) for r in results] == rows(url, "query_results")  # new columns last and empty


def test_a_failing_migration_leaves_the_database_as_it_was(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its DDL rolls back with it: no record, no half-added column, the next open tries again."""
    url = current_database(db_url)

    def half_done(conn: Connection) -> None:
        add_judge_score(conn)
        raise RuntimeError("disk full")

    extended(monkeypatch, Migration("m003_judge_score", half_done))
    with pytest.raises(RuntimeError, match="disk full"):
        Store(url)
    assert records(url) == KNOWN and schema_version(url) == 2
    assert "judge_score" not in {c[0] for c in shape(url)["query_results"][0]}
    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS[:-1], Migration("m003_judge_score",
                                                                                           add_judge_score)])
    Store(url).close()
    assert records(url) == [*KNOWN, "m003_judge_score"]


def test_a_database_with_an_unknown_migration_asks_to_update_the_code(db_url: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    url = current_database(db_url)
    with monkeypatch.context() as newer:
        extended(newer, Migration("m003_judge_score", add_judge_score))
        Store(url).close()
    with pytest.raises(SchemaMismatch, match=r"m003_judge_score.*update the code \(git pull\)") as raised:
        Store(url)
    assert "\n" not in str(raised.value)
    status = ResultsReader(url).status()
    assert not status["available"] and "update the code (git pull)" in status["error"]
    assert records(url) == [*KNOWN, "m003_judge_score"] and schema_version(url) == 3
    # Code that knows as many migrations, but another third one (another branch's), is refused too.
    extended(monkeypatch, Migration("m003_reviewer", add_reviewer))
    with pytest.raises(SchemaMismatch, match=r"schema version 3 \(migrations m003_judge_score are unknown here\)"):
        Store(url)


def test_a_foreign_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE things (id INTEGER)")
        conn.execute("INSERT INTO things VALUES (1)")
    conn.close()
    before = digest(path)
    url = f"sqlite:///{path}"
    with pytest.raises(SchemaMismatch, match="not a Tool Discovery Lab results database") as raised:
        Store(url)
    assert "\n" not in str(raised.value)
    assert "not a Tool Discovery Lab" in ResultsReader(url).status()["error"]
    assert digest(path) == before and not path.with_name(path.name + "-wal").exists()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    conn.close()


@pytest.mark.slow
def test_the_committed_database_opens_with_the_store_and_the_reader(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    shutil.copyfile(COMMITTED, tmp_path / "results.sqlite.gz")
    url = f"sqlite:///{path}"
    assert unpack_if_packed(url)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        # The reader reads one registry's runs (ToolBench's "full" by default; the store holds others too).
        n_runs, n_results = conn.execute("SELECT count(*), (SELECT count(*) FROM query_results q JOIN runs r ON "
                                         "q.run_id = r.id WHERE r.registry_name = 'full') FROM runs "
                                         "WHERE registry_name = 'full'").fetchone()
    conn.close()
    assert n_runs > 0 and n_results > 0

    def read() -> tuple[int, int]:
        reader = ResultsReader(url)
        assert reader.available() and reader.status()["schema_version"] == SCHEMA_VERSION
        runs = reader.runs()
        return len(runs), int(runs["n_results"].sum())

    assert read() == (n_runs, n_results)  # the first reader applies what is pending
    assert records(url) == KNOWN
    before = digest(path)
    assert read() == (n_runs, n_results)
    assert digest(path) == before  # nothing pending: the reader wrote nothing
    store = Store(url)
    assert len([r for r in store.runs() if r.spec.registry_name == "full"]) == n_runs
    store.close()
    assert records(url) == [m.name for m in migrations.MIGRATIONS]
    assert read() == (n_runs, n_results)


# ------------------------------------------------------------- m002: a row's failure kind as a column

TIMED_OUT = failure_reason(FailureKind.TIMEOUT, "no reply in 30 s")
SLOWED = failure_reason(FailureKind.RATE_LIMIT, "slow down")
PLAN = {"selected_apis": [], "steps": [], "refusal": None, "cached": False}
# (query_id, stub_error, plan, error, the row's kind): what each kind of row holds, and the kind it is read as
FAILURE_CASES = [
    (1, None, {**PLAN, "parse_error": None}, None, None),  # a measured row
    (2, TIMED_OUT, None, f"LLM failure, stub writer: {TIMED_OUT}", FailureKind.TIMEOUT),
    (3, None, {**PLAN, "parse_error": SLOWED}, f"LLM failure, planner: {SLOWED}", FailureKind.RATE_LIMIT),
    (4, TIMED_OUT, {**PLAN, "parse_error": SLOWED}, f"LLM failure, stub writer: {TIMED_OUT}; planner: {SLOWED}",
     FailureKind.TIMEOUT),  # the stub writer's kind first, as the row's error names them
    (5, None, None, "RuntimeError: boom", None),  # failed, but not by the LLM
    (6, "malformed_json: no JSON object", None, None, None),  # the model's own bad answer, a counted fallback
]
OLD_ROW_SQL = ("INSERT INTO query_results (run_id, query_uid, subset, query_id, k, stub_error, \"plan\", error, "
               "stub_prompt_tokens, stub_output_tokens, stub_thoughts_tokens, plan_prompt_tokens, plan_output_tokens, "
               "plan_thoughts_tokens) VALUES (2, :uid, 'G1_instruction', :query_id, 5, :stub_error, :plan, :error, "
               "0, 0, 0, 0, 0, 0)")


def m001_database(kind: str, new_store: Callable[[str], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A database of the schema before m002, with runs 1 and 2: version 1 on SQLite, m001 alone on PostgreSQL."""
    if kind == "sqlite":
        return version_1_database(tmp_path / "results.sqlite")
    url = new_store(kind)
    with monkeypatch.context() as older:
        older.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:1])
        Store(url).close()
    for run_id, arch in ((1, "rtp"), (2, "ptr")):
        query(url, RUN_SQL, id=run_id, arch=arch, config=CONFIG)
    return url


def kinds_read(store: Store, uids: list[str]) -> tuple[list, list]:
    """failure_kind of each row, read from the model and from a mapping (Store.results)."""
    with store.session() as s:
        models = {r.query_uid: r for r in s.scalars(select(QueryResult).where(QueryResult.query_uid.in_(uids)))}
    mappings = {r["query_uid"]: r for r in store.results(2, ("query_uid", *SOURCE_COLUMNS))}
    return [failure_kind(models[u]) for u in uids], [failure_kind(mappings[u]) for u in uids]


@pytest.mark.parametrize("kind", STORES)
def test_m002_reads_old_rows_through_their_texts_and_new_rows_carry_the_kind(
        kind: str, new_store: Callable[[str], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = m001_database(kind, new_store, tmp_path, monkeypatch)
    old = [f"G1_instruction:{10 + case[0]}" for case in FAILURE_CASES]
    for uid, (query_id, stub_error, plan, error, _) in zip(old, FAILURE_CASES):
        query(url, OLD_ROW_SQL, uid=uid, query_id=10 + query_id, stub_error=stub_error,
              plan=None if plan is None else json.dumps(plan), error=error)
    before = rows(url, "query_results")
    store = Store(url)  # applies m002
    assert records(url) == KNOWN
    assert [r[:-1] for r in rows(url, "query_results")] == before  # every old value kept, the new column last
    assert query(url, "SELECT count(*) FROM query_results WHERE failure_kind IS NOT NULL") == [(0,)]
    expected = [case[-1] for case in FAILURE_CASES]
    assert kinds_read(store, old) == (expected, expected)  # through failure_of, the one parser

    new = [f"G1_instruction:{20 + case[0]}" for case in FAILURE_CASES]
    store.add_results([{"run_id": 2, "query_uid": uid, "subset": "G1_instruction", "query_id": 20 + query_id, "k": 5,
                        "stub_error": stub_error, "plan": plan, "error": error}
                       for uid, (query_id, stub_error, plan, error, _) in zip(new, FAILURE_CASES)])
    stored = dict(query(url, "SELECT query_uid, failure_kind FROM query_results WHERE query_id >= 20"))
    assert [stored[u] for u in new] == [None if k is None else k.value for k in expected]
    assert kinds_read(store, new) == (expected, expected)

    # A writer's own kind is stored as it is and read from the column, whatever the texts say.
    reworded = "LLM failure, stub writer: malformed_json: fine"
    store.add_results([{"run_id": 2, "query_uid": "G1_instruction:30", "subset": "G1_instruction", "query_id": 30,
                        "k": 5, "stub_error": "malformed_json: fine", "error": reworded,
                        "failure_kind": FailureKind.CLIENT}])
    assert query(url, "SELECT failure_kind FROM query_results WHERE query_id = 30") == [("client",)]
    assert kinds_read(store, ["G1_instruction:30"]) == ([FailureKind.CLIENT], [FailureKind.CLIENT])
    store.close()
