"""The distractor-scale study on tiny data: its runs, their provenance, monotone recall as distractors grow,
resume, and the reader's and report's labelled view."""
from __future__ import annotations

from pathlib import Path

import pytest

from core.analysis.reader import ResultsReader
from core.analysis.report import build_report
from core.retrieval.memo import memoised
from core.retrieval.synthetic import DistractorModel
from core.study.distractors import distractor_sizes, run_distractors
from core.study.main_study import run_main
from core.study.scaling import run_scaling
from core.store.store import Store
from tests.helpers import bench_context, fake_agents, make_queries, make_retriever


@pytest.fixture
def study(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    store = Store(url)
    retriever = memoised(make_retriever())
    queries = make_queries()
    run_main(bench_context(store, retriever, queries, commit="x"), runs=1, concurrency=2, agents_for=fake_agents())
    return url, store, retriever, queries


def recall_by(store: Store, size: int, seed: int) -> dict[tuple[str, str], float]:
    out = {}
    for run in store.runs(kind="distractors"):
        if run.spec.sub_size == size and run.spec.sub_seed == seed:
            for row in store.results(run.id, ("query_uid", "recall_api_list")):
                out[(run.spec.arch, row["query_uid"])] = row["recall_api_list"]
    return out


def test_sizes_start_at_the_real_registry() -> None:
    assert distractor_sizes((1000, None, 50, 20, 10, 50), 20) == [20, 50, 1000]
    assert distractor_sizes((5,), 20) == [20]


def test_runs_record_the_distractors_and_recall_never_rises_as_they_grow(study) -> None:
    url, store, retriever, queries = study
    n = len(retriever.registry)
    touched = run_distractors(bench_context(store, retriever, queries, commit="x"), sizes=(4, None, n + 20, n + 200),
                              seeds=2, k=3)
    runs = store.runs(kind="distractors")
    assert len(touched) == len(runs) == 2 * 2 * (1 + 2 * 2)  # subsets x archs x (real once + 2 sizes x 2 seeds)
    assert all(r.status == "complete" and store.count_results(r.id) == 6 for r in runs)
    assert {(r.spec.sub_size, r.spec.sub_seed) for r in runs} == {(n, 0), (n + 20, 0), (n + 20, 1), (n + 200, 0),
                                                                  (n + 200, 1)}
    frame = ResultsReader(url).runs()
    frame = frame[frame["kind"] == "distractors"]
    configs = {(int(z), int(s)): c for z, s, c in zip(frame["sub_size"], frame["sub_seed"], frame["config"])}
    assert configs[(n, 0)]["synthetic_distractors"] == 0 and "distractors" not in configs[(n, 0)]
    big = configs[(n + 200, 1)]
    assert big["synthetic_distractors"] == 200 and big["index"] == {"kind": "flat"}
    assert big["distractors"]["draw_seed"] == 1 and "Gaussian mixture" in big["distractors"]["method"]
    # Nested registries under exact search: a gold API in the top-k of a larger one is in the smaller one's.
    for seed in (0, 1):
        real, mid, large = recall_by(store, n, 0), recall_by(store, n + 20, seed), recall_by(store, n + 200, seed)
        assert real.keys() == mid.keys() == large.keys()
        assert all(large[key] <= mid[key] + 1e-9 and mid[key] <= real[key] + 1e-9 for key in real)
    assert sum(recall_by(store, n + 200, 0).values()) < sum(recall_by(store, n, 0).values())


def test_the_real_point_equals_the_scaling_study_on_the_full_registry(study) -> None:
    url, store, retriever, queries = study
    n = len(retriever.registry)
    context = bench_context(store, retriever, queries, commit="x")
    run_distractors(context, sizes=(None,), seeds=1, k=5)
    run_scaling(context, sizes=(None,), seeds=1, k=5)
    reader = ResultsReader(url)
    ours, theirs = reader.distractors(), reader.scaling()
    assert ours["size"].tolist() == theirs["size"].tolist() == [n] * 4
    assert ours["recall_mean"].tolist() == theirs["recall_mean"].tolist()
    assert set(ours["registry"]) == {"real"} and set(ours["synthetic_distractors"]) == {0}


def test_resume_skips_finished_runs_without_refitting(study, monkeypatch) -> None:
    url, store, retriever, queries = study
    n = len(retriever.registry)
    run_distractors(bench_context(store, retriever, queries, commit="x"), sizes=(n + 30,), seeds=1, k=3)
    before = len(store.runs(kind="distractors"))

    def refuse(*args, **kwargs):
        raise AssertionError("nothing left to do: the mixture must not be fitted again")

    monkeypatch.setattr(DistractorModel, "fit", refuse)
    resumed = bench_context(store, retriever, queries, commit="x", resume=True)
    assert run_distractors(resumed, sizes=(n + 30,), seeds=1, k=3) == []
    assert len(store.runs(kind="distractors")) == before


def test_reader_and_report_label_the_synthetic_sizes(study) -> None:
    url, store, retriever, queries = study
    n = len(retriever.registry)
    run_distractors(bench_context(store, retriever, queries, commit="x"), sizes=(n + 40,), seeds=2, k=5)
    table = ResultsReader(url).distractors()
    assert sorted(set(table["size"])) == [n, n + 40]
    synthetic = table[table["size"] == n + 40]
    assert set(synthetic["registry"]) == {"real + synthetic distractors"}
    assert set(synthetic["synthetic_distractors"]) == {40} and set(synthetic["runs"]) == {2}
    section = build_report(ResultsReader(url), "api_list", paper={})["sections"]["distractors"]
    assert "synthetic" in section["title"] and "SYNTHETIC" in section["note"]
    assert {row["size"] for row in section["ours"]} == {n, n + 40}


@pytest.mark.slow
def test_bench_distractors_through_the_cli_records_the_index(tiny_env: dict[str, str], monkeypatch, capsys) -> None:
    """`bench distractors` after `bench main`: sizes at or below the registry are the scaling study's (only the
    real registry runs here), and every run's config names the configured index; INDEX=hnsw is recorded too."""
    import json

    from core.cli.main import main

    common = ["--subsets", "G1_instruction,G2_instruction", "--no-progress", "--json"]
    assert main(["bench", "main", "--runs", "1", *common]) == 0
    capsys.readouterr()
    monkeypatch.setenv("INDEX", "hnsw")
    assert main(["bench", "distractors", "--sizes", "5,full,40", "--seeds", "2", *common]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["distractors"]["runs"] == 2 * 2 * (1 + 2)  # subsets x archs x (real once + 1 size x 2 draws)
    runs = ResultsReader(tiny_env["DATABASE_URL"]).runs()
    mains, far = runs[runs["kind"] == "main"], runs[runs["kind"] == "distractors"]
    assert all(c["index"] == {"kind": "flat", "made": "exact"} for c in mains["config"])
    assert all(c["index"] == {"kind": "flat"} for c in far["config"])  # the curves are exact search, always
    assert sorted(set(far["sub_size"])) == [10, 40]
    assert main(["bench", "scaling", "--sizes", "5,full", "--seeds", "1", *common]) == 0
    runs = ResultsReader(tiny_env["DATABASE_URL"]).runs()
    hnsw = runs[runs["kind"] == "scaling"]["config"].iloc[0]["index"]
    assert hnsw["kind"] == "hnsw" and hnsw["hnsw_ef_search"] == 1024
