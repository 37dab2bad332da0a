"""The results store in a hostile environment (issue 37, cases 2, 3, 9 and 11's database half, items 4 and 6): an
archive that is not ours, a full disk and a read-only folder while the committed results unpack, a results database
whose disk fills during a study, and what the pages say about each store they cannot read.

Real SQLite files, real tmpfs and read-only bind mounts (tests/mounts.py), the CLI in-process; EIO, ENOSPC and
SQLite's own "database or disk is full" are injected where a real disk cannot give them on cue. Each test failed
before the fix: case 2 left the foreign file as results.sqlite and later runs blamed it; case 3 called an intact
archive damaged; case 9 was an OSError traceback from the unpack's clean-up; case 11 was a SQLAlchemy traceback,
with the runs stored as failed and SQLAlchemy's help link as their note; the pages said no fix for a file that is
not a database nor for a server that does not answer.
"""
from __future__ import annotations

import errno
import gzip
import os
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from sqlalchemy import event
from streamlit.testing.v1 import AppTest

import core.store.store as store_module
from core.cli.main import main
from core.store.store import Store
from tests.helpers import APP, SCRUBBED, SMALL_APIS, TIMEOUT_S, build_app_env, make_queries, write_compact_data
from tests.mounts import fill, read_only, small_disk

REPORT = ("report",)
BENCH = ("bench", "main", "--runs", "2", "--subsets", "G1_instruction,G2_instruction", "--no-progress")
RUNS = 2 * 2 * 2  # runs x subsets x architectures
ROWS_PER_RUN = 6  # make_queries: six queries in each subset


@pytest.fixture(scope="module")
def lab_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results database with runs, written by the real runner (the pages' test data)."""
    env = build_app_env(tmp_path_factory.mktemp("lab"))
    return Path(env["DATABASE_URL"].removeprefix("sqlite:///"))


def run_cli(args: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    """The CLI in-process: its exit code and its stderr lines. A traceback fails the test where it is raised."""
    capsys.readouterr()
    code = main(list(args))
    return code, capsys.readouterr().err.strip().splitlines()


def one_line(code: int, lines: list[str], *words: str) -> str:
    assert code == 1 and len(lines) == 1, (code, lines)
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def packed_beside(folder: Path, content: bytes) -> tuple[str, Path]:
    """`folder`/results.sqlite.gz holding `content` gzipped: the URL of its results.sqlite and the archive."""
    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / "results.sqlite.gz"
    archive.write_bytes(gzip.compress(content, mtime=0))
    return f"sqlite:///{folder / 'results.sqlite'}", archive


# ---------------------------------------------------------------- case 2: an archive that is not ours

def foreign_sqlite(path: Path) -> Path:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('not ours')")
    return path


def foreign_contents(tmp_path: Path) -> dict[str, bytes | None]:
    """name -> what results.sqlite.gz unpacks to (None: another of the repository's gzips, copied as it is)."""
    return {"text": b"a note that is no database\n" * 40,
            "foreign-sqlite": foreign_sqlite(tmp_path / "f.sqlite").read_bytes(),
            "empty": b"", "repository-gzip": None}


@pytest.mark.parametrize("kind", ["text", "foreign-sqlite", "empty", "repository-gzip"])
def test_an_archive_that_is_not_the_labs_is_named_and_nothing_is_left(tiny_env: dict[str, str], tmp_path: Path,
                                                                     kind: str, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Before: the archive was unpacked to results.sqlite and left there; later runs blamed that file ("is damaged
    (SQLite's quick_check…)", "not a Tool Discovery Lab results database"), or called the store empty."""
    content = foreign_contents(tmp_path)[kind]
    folder = tmp_path / "data"
    if content is None:
        folder.mkdir()
        shutil.copy(Path(tiny_env["TOOLBENCH_DATA"]) / "queries.jsonl.gz", folder / "results.sqlite.gz")
        url, archive = f"sqlite:///{folder / 'results.sqlite'}", folder / "results.sqlite.gz"
    else:
        url, archive = packed_beside(folder, content)
    before = archive.read_bytes()
    monkeypatch.setenv("DATABASE_URL", url)
    for command in (REPORT, REPORT, BENCH):  # the second run blames the archive again, not a file left behind
        line = one_line(*run_cli(command, capsys), str(archive), "not the lab's results database",
                        "nothing was unpacked")
        assert "damaged (SQLite" not in line and "Tool Discovery Lab" not in line
        assert sorted(p.name for p in folder.iterdir()) == ["results.sqlite.gz"] and archive.read_bytes() == before


def test_the_labs_own_archive_still_unpacks_and_reads(tiny_env: dict[str, str], lab_db: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    url, _ = packed_beside(tmp_path / "data", lab_db.read_bytes())
    monkeypatch.setenv("DATABASE_URL", url)
    assert main(["report", "--json"]) == 0
    assert (tmp_path / "data" / "results.sqlite").exists()
    assert not [p for p in (tmp_path / "data").iterdir() if p.name.endswith(".tmp")]


# ---------------------------------------------------------------- case 3: a full disk while unpacking

@pytest.mark.subprocess
def test_a_full_disk_while_unpacking_says_so_not_damaged(tiny_env: dict[str, str], lab_db: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "the packed results results.sqlite.gz are damaged (No space left on device); restore them"."""
    content = lab_db.read_bytes()
    packed = gzip.compress(content, mtime=0)
    disk = tmp_path / "disk"
    with small_disk(disk, f"{(len(packed) + len(content) // 2) // 1024}k"):
        url, archive = packed_beside(disk, content)
        monkeypatch.setenv("DATABASE_URL", url)
        line = one_line(*run_cli(REPORT, capsys), str(archive), f"no space left on the disk holding {disk}",
                        "free some space", "DATABASE_URL")
        assert "damaged" not in line
        assert sorted(p.name for p in disk.iterdir()) == ["results.sqlite.gz"] and archive.read_bytes() == packed


@pytest.mark.parametrize(("code", "words"), [(errno.EIO, "cannot be written (Input/output error)"),
                                             (errno.ENOSPC, "no space left on the disk holding")])
def test_other_os_errors_while_unpacking_are_said_in_words(tiny_env: dict[str, str], lab_db: Path, tmp_path: Path,
                                                           code: int, words: str, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The error injected where the one writer (core.files) syncs the unpacked file: before, "damaged" for both."""
    url, archive = packed_beside(tmp_path / "data", lab_db.read_bytes())
    monkeypatch.setenv("DATABASE_URL", url)

    def failing_fsync(fd: int) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr("core.files.os.fsync", failing_fsync)
    line = one_line(*run_cli(REPORT, capsys), str(archive), words)
    assert "damaged" not in line and sorted(p.name for p in archive.parent.iterdir()) == ["results.sqlite.gz"]


def test_a_damaged_archive_is_still_called_damaged(tiny_env: dict[str, str], lab_db: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    url, archive = packed_beside(tmp_path / "data", lab_db.read_bytes())
    archive.write_bytes(archive.read_bytes()[:archive.stat().st_size // 2])
    monkeypatch.setenv("DATABASE_URL", url)
    one_line(*run_cli(REPORT, capsys), f"{archive} are damaged (cut short)")
    assert sorted(p.name for p in archive.parent.iterdir()) == ["results.sqlite.gz"]


# ---------------------------------------------------------------- case 9: a read-only folder while unpacking

@pytest.mark.subprocess
def test_report_on_a_read_only_folder_with_packed_results(tiny_env: dict[str, str], lab_db: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Before: OSError errno 30 from tmp.unlink() in the unpack's error path, a traceback. Now one line saying the
    folder is read-only and what to do; doing it works."""
    folder = tmp_path / "data"
    url, archive = packed_beside(folder, lab_db.read_bytes())
    monkeypatch.setenv("DATABASE_URL", url)
    with read_only(folder):
        line = one_line(*run_cli(REPORT, capsys), str(archive), f"{folder} is read-only", "DATABASE_URL=sqlite:///")
        assert "damaged" not in line and sorted(p.name for p in folder.iterdir()) == ["results.sqlite.gz"]
        elsewhere = tmp_path / "writable"
        elsewhere.mkdir()
        shutil.copy(archive, elsewhere)
        monkeypatch.setenv("DATABASE_URL", f"sqlite:///{elsewhere / 'results.sqlite'}")
        assert main(["report", "--json"]) == 0


# ---------------------------------------------------------------- case 11: the results database's disk fills

@pytest.fixture
def study_env(tiny_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """tiny_env with twelve queries (six per subset), and the registry's index built once, so that a bench's stderr
    holds its own lines only."""
    rows = [{"subset": q.subset, "group": q.group, "query_id": q.query_id, "query": q.query,
             "relevant_apis": q.relevant_apis, "api_list": q.api_list} for q in make_queries()]
    monkeypatch.setenv("TOOLBENCH_DATA", str(write_compact_data(tmp_path / "study-data", SMALL_APIS, rows)))
    assert main(["index"]) == 0
    return dict(os.environ)


def stored_runs(path: Path) -> list[tuple[int, str, str | None, int, int]]:
    """(id, status, note, n_queries, rows) of every run, read without touching the file (immutable)."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        return conn.execute("SELECT r.id, r.status, r.note, r.n_queries, (SELECT count(*) FROM query_results q "
                            "WHERE q.run_id = r.id) FROM runs r ORDER BY r.id").fetchall()


def resumed_to_completion(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    code, lines = run_cli((*BENCH, "--resume"), capsys)
    assert code == 0, lines
    runs = stored_runs(path)
    assert len(runs) == RUNS and {status for _, status, *_ in runs} == {"complete"}, runs
    assert all(rows == n == ROWS_PER_RUN for *_, n, rows in runs), runs


@pytest.mark.subprocess
def test_a_full_disk_stops_a_study_in_one_line_and_resume_finishes_it(study_env: dict[str, str], tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A real full disk: it fills as the first rows are written. Before: a SQLAlchemy traceback ("database or disk is
    full", its help link). Now one line naming the disk; no run is failed (those the full disk let the runner mark
    are interrupted, the others still running: `--resume` continues both), and `--resume` finishes every run."""
    disk = tmp_path / "disk"
    path = disk / "results.sqlite"
    with small_disk(disk, "4m"):
        monkeypatch.setenv("DATABASE_URL", f"sqlite:///{path}")
        Store(f"sqlite:///{path}").close()
        add_results = Store.add_results

        def fills_first(self: Store, rows) -> None:
            if not (disk / "filler").exists():
                fill(disk)
            add_results(self, rows)

        monkeypatch.setattr(Store, "add_results", fills_first)
        one_line(*run_cli(BENCH, capsys), f"cannot write the results database {path}",
                 f"no space left on the disk holding {disk}", "--resume")
        monkeypatch.setattr(Store, "add_results", add_results)
        (disk / "filler").unlink()
        runs = stored_runs(path)
        assert runs and {status for _, status, *_ in runs} <= {"interrupted", "running", "complete"}, runs
        assert not any("sqlalche.me" in (note or "") for _, _, note, *_ in runs)
        resumed_to_completion(capsys, path)


@pytest.fixture
def sqlite_fills_while_adding_rows(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """SQLite's own "database or disk is full" (SQLITE_FULL) for writes of rows, by capping the database at its size
    (PRAGMA max_page_count) while Store.add_results runs; the runs' own updates still fit, as on a disk whose last
    free blocks take a status but not a batch of rows. Returns the switch: set its item False to lift the cap."""
    armed = [True]
    adding = [False]
    make_engine = store_module.make_engine

    def capped(url: str, **kwargs):
        engine = make_engine(url, **kwargs)

        @event.listens_for(engine, "checkout")
        def _cap(dbapi_connection, _record, _proxy) -> None:  # DB-API objects
            dbapi_connection.execute(f"PRAGMA max_page_count = {1 if adding[0] and armed[0] else 1 << 30}")

        return engine

    add_results = Store.add_results

    def add(self: Store, rows) -> None:
        adding[0] = True
        try:
            add_results(self, rows)
        finally:
            adding[0] = False

    monkeypatch.setattr(store_module, "make_engine", capped)
    monkeypatch.setattr(Store, "add_results", add)
    return armed


@pytest.mark.slow
def test_a_full_results_database_marks_its_runs_interrupted_not_failed(study_env: dict[str, str], tmp_path: Path,
                                                                       sqlite_fills_while_adding_rows: list[bool],
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Before: the runs were stored as failed, their note SQLAlchemy's text with its help link, and a traceback."""
    path = tmp_path / "full" / "results.sqlite"
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{path}")
    line = one_line(*run_cli(BENCH, capsys), f"no space left on the disk holding {path.parent}",
                    "the study stopped, and `--resume` continues its")
    runs = stored_runs(path)
    stopped = [run for run in runs if run[1] != "complete"]
    assert stopped and {status for _, status, *_ in stopped} == {"interrupted"}, runs
    assert f"its {len(stopped)} interrupted run" in line
    for _, _, note, *_ in stopped:
        assert "no space left on the disk holding" in note and "`--resume` continues it" in note
        assert "sqlalche.me" not in note and "Background on this error" not in note
    sqlite_fills_while_adding_rows[0] = False  # room again
    resumed_to_completion(capsys, path)


@pytest.mark.subprocess
def test_a_full_disk_before_a_study_is_not_called_damaged(study_env: dict[str, str], tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "the results database … is damaged (SQLite's quick_check: disk I/O error)" for an intact database
    on a full disk (SQLite cannot make its -shm file there)."""
    disk = tmp_path / "disk"
    path = disk / "results.sqlite"
    with small_disk(disk, "2m"):
        monkeypatch.setenv("DATABASE_URL", f"sqlite:///{path}")
        Store(f"sqlite:///{path}").close()
        fill(disk)
        line = one_line(*run_cli(BENCH, capsys), str(path), f"no space left on the disk holding {disk}")
        assert "damaged" not in line


def test_postgresql_disk_full_is_said_in_words() -> None:
    """PostgreSQL's disk_full (SQLSTATE 53100) reads as a full disk, not a library's text."""
    from psycopg.errors import DiskFull
    from sqlalchemy.exc import OperationalError

    from core.store.dburl import StoreNotWritable, not_writable, open_error

    url = "postgresql://lab:s3cret@db.example/results"
    exc = OperationalError("INSERT INTO query_results ...", {}, DiskFull("could not extend file: No space left"))
    problem = not_writable(url, exc)
    assert isinstance(problem, StoreNotWritable) and isinstance(open_error(url, exc), StoreNotWritable)
    assert "no space left on the PostgreSQL server's disk" in str(problem) and "s3cret" not in str(problem)


# ---------------------------------------------------------------- item 6: what the pages say to do

@pytest.fixture
def page_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    env = build_app_env(tmp_path / "app")
    for key in SCRUBBED:
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    yield tmp_path


def page_errors(path: str) -> list[str]:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    if path != "app.py":
        at.run()
        at.switch_page(path)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return [str(e.value).replace("\\", "") for e in at.error]


def store_of(kind: str, folder: Path) -> str:
    """The DATABASE_URL of a store of one kind of trouble."""
    if kind == "not-a-database":
        (folder / "text.sqlite").write_bytes(b"not a database at all\n" * 300)
        return f"sqlite:///{folder / 'text.sqlite'}"
    if kind == "foreign":
        return f"sqlite:///{foreign_sqlite(folder / 'foreign.sqlite')}"
    if kind == "foreign-archive":
        return packed_beside(folder / "packed", b"plain text, no database")[0]
    return "postgresql://lab:pw@127.0.0.1:1/results"  # unreachable: nothing listens on port 1


@pytest.mark.parametrize(("kind", "says"), [
    ("not-a-database", "Restore the committed results (move"),
    ("foreign", "point DATABASE_URL elsewhere"),
    ("foreign-archive", "restore them (git checkout"),
    ("unreachable", "start the server, or correct DATABASE_URL's host, port, user or password"),
])
@pytest.mark.pages
def test_the_pages_say_what_to_do_about_a_store_they_cannot_read(page_env: Path, kind: str, says: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a file that is not a database and a server that does not answer got one plain sentence, no fix."""
    monkeypatch.setenv("DATABASE_URL", store_of(kind, page_env))
    for path in ("app.py", "app_pages/results.py"):
        errors = page_errors(path)
        assert errors and all(says in e and "\n" not in e for e in errors), (path, errors)
        assert not any("sqlalche.me" in e for e in errors)


@pytest.mark.subprocess
@pytest.mark.pages
def test_the_pages_say_a_read_only_folder_holds_the_packed_results(page_env: Path, lab_db: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: "[Errno 30] Read-only file system: '….tmp'", then the advice to restore the committed results."""
    folder = page_env / "read-only"
    url, _ = packed_beside(folder, lab_db.read_bytes())
    monkeypatch.setenv("DATABASE_URL", url)
    with read_only(folder):
        errors = page_errors("app_pages/results.py")
    assert errors and all(f"{folder} is read-only" in e and "DATABASE_URL=sqlite:///" in e for e in errors), errors
    assert not any("Errno" in e or "Restore the committed" in e for e in errors)


def test_a_study_the_user_stops_is_interrupted_not_failed(tmp_path: Path) -> None:
    """Ctrl-C in the runner's own thread (here: in the batched retrieval). Before: failed, "KeyboardInterrupt: "."""
    from core.study.runner import Job, execute
    from core.store.store import RunSpec

    store = Store(f"sqlite:///{tmp_path / 'results.sqlite'}")
    try:
        run_id = store.start_run(RunSpec("main", "ptr", "G1_instruction", 5, 0, "small", 10, "abc", "fake", "offline",
                                         "offline-heuristic", "offline", "d1", "p1"), 2, "abc123")

        def stop(items):
            raise KeyboardInterrupt

        job = Job(run_id, tuple(make_queries(1)), 5, finish=lambda *_: {}, prepare=lambda q: None, retrieve=stop)
        with pytest.raises(KeyboardInterrupt):
            execute(store, [job], concurrency=1)
        [run] = store.runs()
        assert (run.status, run.note) == ("interrupted", "interrupted: stopped by the user; `--resume` continues it")
    finally:
        store.close()
