"""The bench's pool finishes a query before it starts the next stub call, so PtR rows are stored as they are done:
a study stopped half-way through its stub calls has kept the rows of the queries whose calls are paid."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from core.agents.factory import Agents
from core.retrieval.memo import memoised
from core.study.main_study import run_main
from core.store.store import Store
from tests.helpers import FakePlanner, FakeStubWriter, bench_context, make_queries, make_retriever


def test_ptr_rows_are_stored_while_stub_calls_are_still_to_come(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    stored_at_each_call: list[int] = []

    class CountingWriter(FakeStubWriter):
        def write(self, query: str):
            with sqlite3.connect(path) as db:
                stored_at_each_call.append(db.execute(
                    "select count(*) from query_results q join runs r on r.id = q.run_id where r.arch = 'ptr'"
                ).fetchone()[0])
            return super().write(query)

    queries = make_queries()
    run_main(bench_context(Store(f"sqlite:///{path}"), memoised(make_retriever()), queries, commit="order"), runs=1,
             concurrency=1, agents_for=lambda run_index: Agents(CountingWriter(run_index, delay_s=0.05), FakePlanner()))
    assert len(stored_at_each_call) == len(queries)
    assert stored_at_each_call[-1] > 0, "every stub call ran before the first PtR row was stored"
