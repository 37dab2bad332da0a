"""The results store: schema on first use, version check, WAL, uniqueness, concurrent read while writing.

Every test that takes `db_url` runs on SQLite and on a real PostgreSQL server (tests/stores.py)."""
from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import update
from sqlalchemy.exc import IntegrityError

from core.analysis.reader import ResultsReader
from core.store.commit import git_commit
from core.store.dburl import sqlite_path
from core.store.schema import SchemaInfo
from core.store.schema_check import SCHEMA_VERSION, SchemaMismatch
from core.store.store import RunSpec, Store
from tests.stores import query, tables


def spec(**changes) -> RunSpec:
    base = dict(kind="main", arch="rtp", subset="G1_instruction", k=5, run_index=0, registry_name="small",
                registry_size=10, registry_hash="abc", embedding_model="fake", llm_backend="offline",
                llm_model="offline-heuristic", backend_label="offline heuristic, not an LLM",
                discovery_prompt_version="d1", planner_prompt_version="p1")
    return RunSpec(**{**base, **changes})


def result(run_id: int, i: int) -> dict:
    return {"run_id": run_id, "query_uid": f"G1_instruction:{i}", "subset": "G1_instruction", "query_id": i, "k": 5,
            "recall_api_list": 0.5, "precision_api_list": 0.2, "hits": [{"rank": 1, "tool_name": "T", "api_name": "a"}]}


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'sub' / 'results.sqlite'}"


def test_schema_is_created_on_first_use_in_wal_mode(url: str) -> None:
    store = Store(url)
    path = sqlite_path(url)
    assert path is not None and path.exists()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT version FROM schema_info").fetchone()[0] == SCHEMA_VERSION
    store.close()


def test_schema_is_created_once_on_first_use(db_url: str) -> None:
    store = Store(db_url)
    run_id = store.start_run(spec(), 0, "abc123")
    assert query(db_url, "SELECT version FROM schema_info") == [(SCHEMA_VERSION,)]
    Store(db_url).close()  # a second open checks, never recreates
    assert [r.id for r in store.runs()] == [run_id]
    store.close()


def test_run_lifecycle_and_find_by_spec(db_url: str) -> None:
    store = Store(db_url)
    run_id = store.start_run(spec(), 3, "abc123", {"concurrency": 4})
    assert store.find_run(spec()).status == "running"
    assert store.find_run(spec(run_index=1)) is None
    store.add_results([result(run_id, 1), result(run_id, 2)])
    store.finish_run(run_id)
    found = store.find_run(spec())
    assert found.id == run_id and found.status == "complete" and found.finished_at is not None
    assert found.git_commit == "abc123" and store.count_results(run_id) == 2
    assert store.latest_complete("main", "rtp", "G1_instruction")[0].id == run_id
    assert store.results(run_id, ("query_uid", "hits"))[0]["hits"][0]["tool_name"] == "T"


def test_a_run_can_never_hold_a_query_twice(db_url: str) -> None:
    store = Store(db_url)
    run_id = store.start_run(spec(), 1, "x")
    store.add_results([result(run_id, 1)])
    with pytest.raises(IntegrityError):
        store.add_results([result(run_id, 2), result(run_id, 1)])
    assert store.count_results(run_id) == 1  # the failed batch left nothing behind


def test_reopen_drops_error_rows_and_returns_done_queries(db_url: str) -> None:
    store = Store(db_url)
    run_id = store.start_run(spec(), 3, "x")
    store.add_results([result(run_id, 1), {**result(run_id, 2), "error": "RuntimeError: boom"}])
    store.finish_run(run_id, "failed", "killed")
    assert store.reopen(run_id, 3) == {"G1_instruction:1"}
    assert store.count_results(run_id) == 1 and store.find_run(spec()).status == "running"


def test_a_newer_or_older_schema_is_refused_with_a_clear_message(db_url: str) -> None:
    store = Store(db_url)
    with store.session.begin() as s:
        s.execute(update(SchemaInfo).values(version=SCHEMA_VERSION + 1))
    with pytest.raises(SchemaMismatch, match="update the code"):
        Store(db_url)
    reader = ResultsReader(db_url)
    assert not reader.available() and "schema version" in reader.status()["error"]
    with store.session.begin() as s:
        s.execute(update(SchemaInfo).values(version=0))
    with pytest.raises(SchemaMismatch, match="new DATABASE_URL"):
        Store(db_url)
    store.close()


def test_a_foreign_database_is_refused(db_url: str) -> None:
    query(db_url, "CREATE TABLE things (id INTEGER)")
    with pytest.raises(SchemaMismatch, match="not a Tool Discovery Lab"):
        Store(db_url)
    assert query(db_url, "SELECT COUNT(*) FROM things") == [(0,)]


def test_a_reader_of_an_empty_database_says_so_and_creates_nothing(db_url: str) -> None:
    query(db_url, "SELECT 1")  # the database exists (SQLite: the file), with no table
    reader = ResultsReader(db_url)
    assert not reader.available() and "is empty" in reader.status()["error"]
    assert reader.main_table().empty and tables(db_url) == set()
    Store(db_url).close()
    status = ResultsReader(db_url).status()
    assert status["error"] is None and status["n_runs"] == 0 and not status["available"]
    assert tables(db_url) == {"schema_info", "schema_migrations", "runs", "query_results"}


def test_reader_never_creates_a_database(tmp_path: Path) -> None:
    path = tmp_path / "absent.sqlite"
    reader = ResultsReader(f"sqlite:///{path}")
    assert not reader.available()
    assert "bench all" in reader.status()["error"]
    assert reader.main_table().empty and list(reader.main_table().columns)[:3] == ["subset", "metric", "rtp_mean"]
    assert reader.query_detail("G1_instruction", 1) is None
    assert not path.exists()


def test_git_commit_is_head_or_unknown(tmp_path: Path) -> None:
    commit = git_commit()
    assert commit == "unknown" or (len(commit) == 40 and all(c in "0123456789abcdef" for c in commit))
    assert git_commit(tmp_path) == "unknown"


@pytest.mark.slow
def test_reading_while_a_writer_commits_raises_no_lock_error(db_url: str) -> None:
    url = db_url
    store = Store(url)
    run_id = store.start_run(spec(), 10_000, "x")
    store.add_results([result(run_id, 0)])
    first = store.start_run(spec(arch="ptr"), 1, "x")
    store.add_results([{**result(first, 0), "stubs": [{"name": "s", "reasoning": ""}]}])
    store.finish_run(first)
    errors: list[BaseException] = []
    stop = threading.Event()

    def write() -> None:
        writer = Store(url)  # its own engine and connections, like a separate process
        try:
            i = 1
            while not stop.is_set():
                writer.add_results([result(run_id, i), result(run_id, i + 1)])
                i += 2
                if i % 20 == 1:  # status changes too, which invalidates the reader's cache
                    writer.finish_run(writer.start_run(spec(run_index=i), 0, "x"))
        except BaseException as exc:  # reported to the test thread
            errors.append(exc)
        finally:
            writer.close()

    thread = threading.Thread(target=write)
    thread.start()
    reads = 0
    try:
        deadline = time.monotonic() + 60  # a bound, not a timing: the loop ends on counts (a busy machine reads slowly)
        while (reads < 5 or store.count_results(run_id) <= 10) and time.monotonic() < deadline:
            reader = ResultsReader(url)
            assert reader.available()
            reader.runs()
            reader.status()
            reader.main_table()
            reader.per_query()
            reads += 1
    finally:
        stop.set()
        thread.join(10)
    assert not errors, errors
    assert reads >= 5 and store.count_results(run_id) > 10


def test_packed_database_unpacks_on_first_read(url: str) -> None:
    from core.store.packing import pack, packed_path

    store = Store(url)
    run_id = store.start_run(spec(), 2, "abc123")
    store.add_results([result(run_id, 1), result(run_id, 2)])
    store.finish_run(run_id)
    store.close()
    path = sqlite_path(url)
    packed = pack(url)
    assert packed == packed_path(path) and packed.stat().st_size > 0
    assert packed.read_bytes()[4:8] == bytes(4)  # no gzip timestamp in the committed file
    path.unlink()
    reader = ResultsReader(url)
    assert reader.available() and path.exists()
    assert len(reader.runs()) == 1
    with pytest.raises(ValueError, match="existing SQLite"):
        pack(f"sqlite:///{path.parent / 'missing.sqlite'}")


def test_writer_appends_to_the_packed_database(url: str) -> None:
    """A bench on a fresh clone (only the .gz there) adds its runs to the committed ones; a pack then keeps both."""
    from core.store.packing import pack

    store = Store(url)
    store.finish_run(store.start_run(spec(), 0, "abc123"))
    store.close()
    pack(url)
    sqlite_path(url).unlink()
    store = Store(url)
    store.finish_run(store.start_run(spec(arch="ptr"), 0, "abc123"))
    store.close()
    pack(url)
    sqlite_path(url).unlink()
    assert sorted(ResultsReader(url).runs()["arch"]) == ["ptr", "rtp"]
