"""A password in DATABASE_URL never reaches a log, a page, an error or a stored row: a canary password on a
server that is not there, a wrong password on the real one, and the real server's own password through a
whole bench, report, copy and the dashboard's pages."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.analysis.reader import ResultsReader
from core.cli.main import main
from core.settings import PROJECT_ROOT, Settings, redact
from core.store.db_copy import copy_runs
from core.store.dburl import DatabaseUnavailable
from core.store.store import Store
from tests.helpers import APP, SCRUBBED, TIMEOUT_S, build_app_env, free_port
from tests.stores import PostgresServer, query

pytestmark = pytest.mark.subprocess

CANARY = "canary-Pw-9c1f"


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "core", *args], cwd=PROJECT_ROOT, capture_output=True, text=True,
                          env={**{k: v for k, v in os.environ.items() if k not in SCRUBBED}, **env}, timeout=300)


def chain(exc: BaseException | None) -> Iterator[BaseException]:
    """An exception and every exception it was raised from or during."""
    while exc is not None:
        yield exc
        exc = exc.__cause__ or exc.__context__


def everything_stored(url: str) -> str:
    """Every table's every row, as text."""
    return repr([query(url, f"SELECT * FROM {table}")
                 for table in ("schema_info", "schema_migrations", "runs", "query_results")])


@pytest.fixture
def unreachable() -> str:
    return f"postgresql://lab:{CANARY}@127.0.0.1:{free_port()}/results"


def test_a_server_that_is_not_there_never_shows_the_password(tiny_env: dict[str, str], unreachable: str,
                                                              tmp_path: Path) -> None:
    elsewhere = f"sqlite:///{tmp_path / 'other.sqlite'}"
    commands = [("report",), ("report", "--json"),
                ("bench", "main", "--runs", "1", "--subsets", "G1_instruction", "--no-progress"),
                ("db", "copy", unreachable, elsewhere), ("db", "copy", elsewhere, unreachable),
                ("report", "--db", unreachable.replace("127.0.0.1:", "127.0.0.1:x"))]
    Store(elsewhere).close()
    for args in commands:
        out = cli({**tiny_env, "DATABASE_URL": unreachable}, *args)
        assert out.returncode == 1, (args, out.stderr)
        assert CANARY not in out.stdout + out.stderr, args
        assert out.stderr.startswith("error: ") and len(out.stderr.strip().splitlines()) == 1, (args, out.stderr)
    assert "postgresql://lab:***@127.0.0.1:" in cli({**tiny_env, "DATABASE_URL": unreachable}, "report").stderr
    for opening in (lambda: Store(unreachable), lambda: copy_runs(unreachable, elsewhere)):
        with pytest.raises(DatabaseUnavailable) as raised:
            opening()
        assert all(CANARY not in f"{e!s} {e!r}" for e in chain(raised.value))
    error = ResultsReader(unreachable).status()["error"]
    assert "Connection refused" in error and CANARY not in error and "\n" not in error
    settings = Settings.from_env(env={"DATABASE_URL": unreachable})
    assert CANARY not in repr(settings) and redact(f"x {CANARY} y", settings.secrets()) == "x *** y"


def test_without_the_driver_a_postgresql_url_says_what_to_install(unreachable: str) -> None:
    """psycopg made unimportable in a fresh process (sys.modules[name] = None is how Python blocks an import)."""
    out = subprocess.run([sys.executable, "-c", "import sys; sys.modules['psycopg'] = None; "
                          "from core.cli.main import main; sys.exit(main(['report']))"], cwd=PROJECT_ROOT,
                         capture_output=True, text=True, env={**os.environ, "DATABASE_URL": unreachable}, timeout=120)
    assert out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "psycopg is not installed" in out.stderr and "make setup" in out.stderr and CANARY not in out.stderr


def test_a_wrong_password_on_the_real_server_is_refused_without_showing_it(pg_server: PostgresServer) -> None:
    wrong = pg_server.url().replace(pg_server.password, CANARY)
    with pytest.raises(DatabaseUnavailable, match="password authentication failed") as raised:
        Store(wrong)
    assert all(CANARY not in f"{e!s} {e!r}" for e in chain(raised.value))
    out = cli({"DATABASE_URL": wrong}, "report")
    assert out.returncode == 1 and "password authentication failed" in out.stderr
    assert CANARY not in out.stdout + out.stderr


def test_the_real_password_stays_out_of_output_and_stored_rows(tiny_env: dict[str, str], pg_server: PostgresServer,
                                                                tmp_path: Path, capfd: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A bench, a report and a copy back to SQLite through a URL with the server's password (plain postgresql://,
    mapped to psycopg 3)."""
    url = pg_server.new_database().replace("postgresql+psycopg://", "postgresql://")
    monkeypatch.setenv("DATABASE_URL", url)
    assert main(["bench", "main", "--runs", "1", "--subsets", "G1_instruction,G2_instruction", "--no-progress"]) == 0
    assert main(["report", "--json"]) == 0
    assert main(["db", "copy", url, f"sqlite:///{tmp_path / 'copy.sqlite'}"]) == 0
    out, err = capfd.readouterr()
    assert pg_server.password not in out + err
    assert "postgresql://lab:***@127.0.0.1" in out and json.loads(out.splitlines()[1])["status"]["n_complete"] == 4
    stored = everything_stored(url)
    assert pg_server.password not in stored and "'encoder_runtime'" in stored  # the runs' config was written


@pytest.fixture(scope="module")
def app_on_postgres(tmp_path_factory: pytest.TempPathFactory, pg_server: PostgresServer) -> dict[str, str]:
    """The dashboard's test data copied into a PostgreSQL database: the app's environment pointing at it."""
    env = build_app_env(tmp_path_factory.mktemp("app"))
    url = pg_server.new_database()
    copy_runs(env["DATABASE_URL"], url)
    return {**env, "DATABASE_URL": url}


def page_text(at: AppTest) -> str:
    """Everything a page shows as text: markdown, captions, alerts, titles and table cells."""
    parts = [str(e.value) for kind in ("markdown", "caption", "warning", "error", "info", "success", "title")
             for e in getattr(at, kind)]
    parts += [frame.value.to_string() for frame in at.dataframe]
    return "\n".join(parts)


@pytest.mark.parametrize("reachable", [True, False], ids=["postgresql", "unreachable"])
def test_the_pages_read_postgresql_and_never_show_its_password(app_on_postgres: dict[str, str], reachable: bool,
                                                               unreachable: str, pg_server: PostgresServer,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    for key in SCRUBBED:
        monkeypatch.delenv(key, raising=False)
    for key, value in {**app_on_postgres, **({} if reachable else {"DATABASE_URL": unreachable})}.items():
        monkeypatch.setenv(key, value)
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = page_text(at)
    assert pg_server.password not in shown and CANARY not in shown
    if reachable:
        assert "42 complete runs (" in shown and "main 8" in shown and "postgresql+psycopg://lab:***@127.0.0.1" in shown
    else:
        assert "cannot open the results database postgresql://lab:***@127.0.0.1" in shown
