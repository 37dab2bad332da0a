"""Two bench processes on one SQLite file (tests/test_two_writers.py is the PostgreSQL version): started together on a
file that does not exist yet, each writes its own subset completely; two identical resumes at once leave the runs to
one of them, and the other says so in one line instead of dying in an IntegrityError traceback (on PostgreSQL too,
whose claims are advisory locks rather than lock files: core.store.claims).

The writers are real processes running the main study on the tiny data with fake agents. Each imports once and then
waits at a gate file per attempt, so an attempt starts both at the same moment (the races are in their first
milliseconds). A writer reports a DatabaseUnavailable as `python -m core` does (core.cli.main: one line, exit 1).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from core.retrieval.memo import memoised
from core.settings import PROJECT_ROOT
from core.study.main_study import run_main
from core.store.store import Store
from tests.helpers import bench_context, fake_agents, make_queries, make_retriever
from tests.stores import STORES, query

pytestmark = pytest.mark.subprocess

SCRIPT = """
import sys, time
from pathlib import Path
from core.retrieval.memo import memoised
from core.store.dburl import DatabaseUnavailable
from core.study.main_study import run_main
from core.store.store import Store
from tests.helpers import bench_context, fake_agents, make_queries, make_retriever

name, subsets, runs, delay = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), float(sys.argv[4])
resume, folder, urls = sys.argv[5] == "1", Path(sys.argv[6]), sys.argv[7:]
queries = [q for q in make_queries() if q.subset in subsets]
retriever = memoised(make_retriever())
for attempt, url in enumerate(urls):
    factory = fake_agents(delay)
    (folder / f"ready-{attempt}-{name}").touch()
    while not (folder / f"go-{attempt}").exists():
        time.sleep(0.002)
    try:
        store = Store(url)
        try:
            run_main(bench_context(store, retriever, queries, commit="two-writers", resume=resume), runs=runs,
                     concurrency=2, agents_for=factory)
        finally:
            store.close()
    except DatabaseUnavailable as exc:  # what python -m core prints for it: one line, exit 1
        sys.exit(f"error: {exc}")
    print(sum(a.planner.calls for a in factory.made.values()), flush=True)
"""
RUNS = 2
SUBSETS = ("G1_instruction", "G2_instruction")
ARCHS = ("rtp", "ptr")
ATTEMPTS = 3
TIMEOUT_S = 60


def start_together(folder: Path, writers: dict[str, str], urls: list[str], delay: float,
                   resume: bool) -> dict[str, subprocess.Popen]:
    """name -> a writer of those subsets, each started on every URL in turn, both at once per URL."""
    script = folder / "writer.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    args = [str(RUNS), str(delay), str(int(resume)), str(folder), *urls]
    procs = {name: subprocess.Popen([sys.executable, str(script), name, subsets, *args], cwd=PROJECT_ROOT, env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name, subsets in writers.items()}
    try:
        for attempt in range(len(urls)):
            deadline = time.monotonic() + TIMEOUT_S
            while not all((folder / f"ready-{attempt}-{name}").exists() for name in procs):
                dead = {name: p.communicate()[1][-2000:] for name, p in procs.items() if p.poll() is not None}
                assert not dead, f"attempt {attempt}: {dead}"
                assert time.monotonic() < deadline, f"attempt {attempt}: the writers did not get ready"
                time.sleep(0.01)
            (folder / f"go-{attempt}").touch()
    except BaseException:
        for proc in procs.values():
            proc.kill()
            proc.communicate()
        raise
    return procs


def stored(url: str) -> list[tuple]:
    return query(url, "SELECT runs.subset, runs.arch, runs.run_index, query_results.query_uid FROM query_results "
                      "JOIN runs ON runs.id = query_results.run_id")


def expected(subsets: tuple[str, ...]) -> list[tuple]:
    return sorted((q.subset, arch, r, q.uid) for q in make_queries() if q.subset in subsets
                  for arch in ARCHS for r in range(RUNS))


def test_two_writers_on_a_new_sqlite_file_both_write_their_subset_once(tmp_path: Path) -> None:
    urls = [f"sqlite:///{tmp_path / f'attempt{i}' / 'results.sqlite'}" for i in range(ATTEMPTS)]
    procs = start_together(tmp_path, {"g1": SUBSETS[0], "g2": SUBSETS[1]}, urls, 0.01, False)
    outputs = {name: proc.communicate(timeout=TIMEOUT_S) for name, proc in procs.items()}
    assert {name: p.returncode for name, p in procs.items()} == {"g1": 0, "g2": 0}, \
        {name: err[-2000:] for name, (_, err) in outputs.items()}
    for url in urls:
        assert sorted(stored(url)) == expected(SUBSETS)  # both subsets, every row once
        runs = query(url, "SELECT subset, arch, run_index, status FROM runs")
        assert sorted(runs) == sorted((s, a, r, "complete") for s in SUBSETS for a in ARCHS for r in range(RUNS))


@pytest.mark.parametrize("kind", STORES)
def test_two_identical_resumes_at_once_leave_the_runs_to_one_and_no_traceback(
        kind: str, new_store: Callable[[str], str], tmp_path: Path) -> None:
    url = new_store(kind)
    store = Store(url)
    try:
        run_main(bench_context(store, memoised(make_retriever()), make_queries(), commit="two-writers"), runs=RUNS,
                 agents_for=fake_agents())
    finally:
        store.close()
    # As a killed bench leaves them: every run still running, two rows in three never committed.
    query(url, "UPDATE runs SET status = 'running', finished_at = NULL")
    query(url, "DELETE FROM query_results WHERE id % 3 != 0")
    missing = len(expected(SUBSETS)) - len(stored(url))

    both = ",".join(SUBSETS)
    procs = start_together(tmp_path, {"first": both, "second": both}, [url], 0.2, True)
    outputs = {name: proc.communicate(timeout=TIMEOUT_S) for name, proc in procs.items()}
    for name, (_, err) in outputs.items():
        assert "Traceback" not in err, f"{name}: {err[-3000:]}"
    codes = {name: p.returncode for name, p in procs.items()}
    refused = [name for name, code in codes.items() if code != 0]
    assert len(refused) <= 1, outputs
    for name in refused:  # the loser said why in one line, and wrote nothing
        assert codes[name] == 1
        lines = outputs[name][1].strip().splitlines()
        assert len(lines) == 1 and "is being written by another process (pid" in lines[0], lines
        assert outputs[name][0] == ""
    redone = sum(int(out.strip().splitlines()[-1]) for out, _ in outputs.values() if out.strip())
    assert redone == missing  # no row computed twice

    assert Counter(stored(url)) == Counter(expected(SUBSETS))  # none lost, none twice
    assert {status for (status,) in query(url, "SELECT status FROM runs")} == {"complete"}
    if kind == "sqlite":
        assert not Path(url.removeprefix("sqlite:///") + "-claims").exists()  # every claim let go
