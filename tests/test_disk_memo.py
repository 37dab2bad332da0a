"""The reader's tables kept on disk between processes (core.analysis.disk_memo): found again only for the same data
and code, recomputed when a run completes or a file is damaged, and never needed for correctness."""
from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd
import pytest

from core.analysis import stored_rows
from core.analysis.reader import ResultsReader
from core.retrieval.memo import memoised
from core.study.main_study import run_main
from core.store.store import Store
from tests.helpers import bench_context, fake_agents, make_queries, make_retriever


@pytest.fixture
def study(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    run_main(bench_context(Store(url), memoised(make_retriever()), make_queries(), commit="memo"), runs=1,
             agents_for=fake_agents())
    return url


def tables(folder: Path) -> list[Path]:
    return sorted(folder.glob("tables/*.pkl"))


def test_a_new_reader_reads_the_kept_table_instead_of_computing_it(study: str, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    first = ResultsReader(study, cache).main_table()
    assert tables(cache), "nothing was kept"

    def never(*args, **kwargs):
        raise AssertionError("computed again")

    monkeypatch.setattr(stored_rows, "load_per_run", never)
    pd.testing.assert_frame_equal(ResultsReader(study, cache).main_table(), first)


def test_a_run_that_completes_is_a_new_signature(study: str, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    before = ResultsReader(study, cache).main_table()
    queries = [q for q in make_queries() if q.subset == "G1_instruction"]
    # adds run 1
    run_main(bench_context(Store(study), memoised(make_retriever()), queries, commit="memo"), runs=2,
             agents_for=fake_agents())
    after = ResultsReader(study, cache).main_table()
    assert not after.equals(before)
    pd.testing.assert_frame_equal(after, ResultsReader(study).main_table())


def test_a_damaged_table_is_computed_again_with_one_line(study: str, tmp_path: Path,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    cache = tmp_path / "cache"
    expected = ResultsReader(study, cache).main_table()
    [kept] = tables(cache)
    data = bytearray(kept.read_bytes())
    data[len(data) // 2] ^= 0xFF
    kept.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        got = ResultsReader(study, cache).main_table()
    pd.testing.assert_frame_equal(got, expected)
    assert [r.getMessage() for r in caplog.records if "cached results table" in r.getMessage()]


def test_a_cache_folder_that_cannot_be_written_costs_only_the_speed_up(study: str, tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    got = ResultsReader(study, blocked).main_table()
    pd.testing.assert_frame_equal(got, ResultsReader(study).main_table())


def test_two_threads_asking_for_one_value_compute_it_once(tmp_path: Path) -> None:
    """A fresh clone's warm start fits the router while a page may ask for the same fit: the page waits for the
    fit in progress and reads what it kept, instead of fitting it a second time beside it."""
    import threading
    import time

    from core.analysis.disk_memo import DiskMemo

    calls: list[int] = []

    def compute() -> dict:
        calls.append(1)
        time.sleep(0.3)
        return {"threshold": 0.5}

    got: list[dict] = []
    threads = [threading.Thread(target=lambda: got.append(DiskMemo(tmp_path).get(("fit",), ("data",), compute)))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert got == [{"threshold": 0.5}] * 2 and len(calls) == 1
