"""Two bench processes write into one PostgreSQL database at once, from its empty start: both are killed with
SIGKILL mid-run, both resume at once, and every (run, query) row is there exactly once, with only the rows
the killed processes had not committed computed again."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy.exc import SQLAlchemyError

from core.settings import PROJECT_ROOT
from tests.helpers import make_queries
from tests.stores import PostgresServer, query

pytestmark = pytest.mark.subprocess

SCRIPT = """
import sys, time
from pathlib import Path
from core.retrieval.memo import memoised
from core.study.main_study import run_main
from core.store.store import Store
from tests.helpers import bench_context, fake_agents, make_queries, make_retriever

url, subset, delay, resume, gate = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4] == "1", Path(sys.argv[5])
queries = [q for q in make_queries() if q.subset == subset]
factory = fake_agents(delay)
retriever = memoised(make_retriever())
(gate.parent / f"{gate.name}.{subset}").touch()  # imported and ready
while not gate.exists():  # both writers open the store and start together
    time.sleep(0.01)
run_main(bench_context(Store(url), retriever, queries, commit="two-writers", resume=resume), runs=2, concurrency=1,
         agents_for=factory)
print(sum(a.planner.calls for a in factory.made.values()))
"""
SUBSETS = ("G1_instruction", "G2_instruction")
PER_SUBSET = 6 * 2 * 2  # queries x runs x archs
# With one worker and 0.5 s per stub, each writer commits RtP run 0 (6 rows) at once, RtP run 1 after PtR run 0's
# six stubs (3 s), PtR's rows after PtR run 1's stubs (6 s): killed past 7 rows, both are mid-run.
DELAY_S, KILL_AT = 0.5, 7
TIMEOUT_S = 120


def rows_by_subset(url: str) -> dict[str, int]:
    try:
        return dict(query(url, "SELECT subset, COUNT(*) FROM query_results GROUP BY subset"))
    except SQLAlchemyError:  # the schema is not made yet
        return {}


def start_together(url: str, delay: float, resume: bool, folder: Path) -> list[subprocess.Popen]:
    """One writer per subset, started at the same moment once both have imported everything."""
    script, gate = folder / "writer.py", folder / f"go-{int(resume)}"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    procs = [subprocess.Popen([sys.executable, str(script), url, subset, str(delay), str(int(resume)), str(gate)],
                              cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for subset in SUBSETS]
    deadline = time.monotonic() + TIMEOUT_S
    while not all((folder / f"{gate.name}.{subset}").exists() for subset in SUBSETS):
        assert all(p.poll() is None for p in procs), [p.stderr.read()[-2000:] for p in procs]
        assert time.monotonic() < deadline, "the writers did not start"
        time.sleep(0.02)
    gate.touch()
    return procs


def test_two_writers_killed_and_resumed_lose_and_duplicate_nothing(pg_server: PostgresServer, tmp_path: Path) -> None:
    url = pg_server.new_database()
    procs = start_together(url, DELAY_S, False, tmp_path)
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while min(rows_by_subset(url).get(s, 0) for s in SUBSETS) < KILL_AT:
            assert all(p.poll() is None for p in procs), [p.stderr.read()[-2000:] for p in procs]
            assert time.monotonic() < deadline, "the writers wrote too little"
            time.sleep(0.05)
        for proc in procs:
            os.kill(proc.pid, signal.SIGKILL)
    finally:
        for proc in procs:
            proc.wait(30)
    assert [p.returncode for p in procs] == [-signal.SIGKILL] * 2
    partial = rows_by_subset(url)
    assert all(KILL_AT <= partial[s] < PER_SUBSET for s in SUBSETS), partial  # both killed mid-run
    assert Counter(status for (status,) in query(url, "SELECT status FROM runs"))["running"] >= 2

    procs = start_together(url, 0.0, True, tmp_path)
    outputs = [proc.communicate(timeout=TIMEOUT_S) for proc in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outputs]
    redone = sum(int(out.strip().splitlines()[-1]) for out, _ in outputs)
    assert redone == 2 * PER_SUBSET - sum(partial.values())  # only what was not committed

    runs = query(url, "SELECT id, subset, arch, run_index, status FROM runs ORDER BY id")
    assert sorted((s, a, r) for _, s, a, r, _ in runs) == sorted(
        (s, a, r) for s in SUBSETS for a in ("rtp", "ptr") for r in (0, 1))  # resumed, none started again
    assert {status for *_, status in runs} == {"complete"}
    stored = query(url, "SELECT runs.subset, runs.arch, runs.run_index, query_results.query_uid FROM query_results "
                        "JOIN runs ON runs.id = query_results.run_id")
    expected = [(q.subset, arch, r, q.uid) for q in make_queries() for arch in ("rtp", "ptr") for r in (0, 1)]
    assert sorted(stored) == sorted(expected)  # every row once: none lost, none twice
