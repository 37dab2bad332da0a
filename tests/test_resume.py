"""Kill the runner with SIGKILL mid-run, resume, and find every (run, query) row exactly once: on SQLite and
on a real PostgreSQL server."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import update
from sqlalchemy.exc import SQLAlchemyError

from core.retrieval.memo import memoised
from core.study.ksweep import run_ksweep
from core.study.main_study import run_main
from core.study.scaling import run_scaling
from core.settings import PROJECT_ROOT
from core.store.schema import QueryResult, Run
from core.store.store import Store
from tests.helpers import bench_context, fake_agents, make_queries, make_retriever
from tests.stores import query

SCRIPT = """
import sys
from core.retrieval.memo import memoised
from core.study.main_study import run_main
from core.store.store import Store
from tests.helpers import bench_context, fake_agents, make_queries, make_retriever

url, delay, resume = sys.argv[1], float(sys.argv[2]), sys.argv[3] == "1"
run_main(bench_context(Store(url), memoised(make_retriever()), make_queries(), commit="killed", resume=resume),
         runs=2, concurrency=2, agents_for=fake_agents(delay))
"""
TOTAL = 12 * 2 * 2  # queries x runs x archs


def count_rows(url: str) -> int:
    try:
        return int(query(url, "SELECT COUNT(*) FROM query_results")[0][0])
    except SQLAlchemyError:  # not created yet
        return 0


@pytest.mark.subprocess
def test_sigkill_mid_run_then_resume_loses_and_duplicates_nothing(tmp_path: Path, db_url: str) -> None:
    url = db_url
    script = tmp_path / "bench.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    proc = subprocess.Popen([sys.executable, str(script), url, "0.15", "0"], cwd=PROJECT_ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while count_rows(url) < 8:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the runner wrote nothing in 60 s"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    partial = count_rows(url)
    assert 8 <= partial < TOTAL, "the kill must land mid-run"

    store = Store(url)
    assert any(r.status == "running" for r in store.runs())  # the killed runs never finished
    factory = fake_agents()
    run_main(bench_context(store, memoised(make_retriever()), make_queries(), commit="killed", resume=True),
             runs=2, concurrency=2, agents_for=factory)
    runs = store.runs()
    assert len(runs) == 8 and all(r.status == "complete" for r in runs)  # continued, not restarted
    assert count_rows(url) == TOTAL
    dupes = query(url, "SELECT run_id, query_uid FROM query_results GROUP BY run_id, query_uid HAVING COUNT(*) > 1")
    per_run = query(url, "SELECT run_id, COUNT(*) FROM query_results GROUP BY run_id")
    assert dupes == [] and sorted(n for _, n in per_run) == [6] * 8
    redone = sum(a.planner.calls for a in factory.made.values())
    assert redone == TOTAL - partial  # only what the killed process had not committed


def test_interrupted_ksweep_and_scaling_runs_resume_without_duplicates(db_url: str) -> None:
    store = Store(db_url)
    retriever = memoised(make_retriever())
    queries = make_queries()
    context = bench_context(store, retriever, queries, commit="x")
    run_main(context, runs=2, concurrency=2, agents_for=fake_agents())
    run_ksweep(context, ks=(1, 5))
    run_scaling(context, sizes=(8, None), seeds=2)
    before = {r.id: store.count_results(r.id) for r in store.runs()}
    victims = [next(r for r in store.runs(kind=kind, status="complete")) for kind in ("ksweep", "scaling")]
    with store.session.begin() as s:  # as if killed between two committed chunks
        for victim in victims:
            ids = list(s.scalars(QueryResult.__table__.select().with_only_columns(QueryResult.id)
                                 .where(QueryResult.run_id == victim.id)))
            s.execute(QueryResult.__table__.delete().where(QueryResult.id.in_(ids[:3])))
            s.execute(update(Run).where(Run.id == victim.id).values(status="running", finished_at=None))
    resumed = bench_context(store, retriever, queries, commit="x", resume=True)
    run_ksweep(resumed, ks=(1, 5))
    run_scaling(resumed, sizes=(8, None), seeds=2)
    after = {r.id: store.count_results(r.id) for r in store.runs()}
    assert after == before
    assert all(r.status in ("complete", "skipped") for r in store.runs())
