"""The retriever axis (core.study.retriever_axis): every architecture searched by another retriever with the stubs a
stored main study wrote, no LLM call, each run naming the retriever that searched and the main run it builds on."""
from __future__ import annotations

import numpy as np
from sqlalchemy import select

from core.retrieval.discovery import Retriever
from core.retrieval.index import VectorIndex
from core.retrieval.memo import memoised
from core.study.main_study import run_main
from core.study.retriever_axis import run_axis, stored_systems
from core.store.schema import Run
from core.store.store import Store
from tests.helpers import FakeEncoder, bench_context, fake_agents, make_queries, make_retriever


class OtherEncoder(FakeEncoder):
    """Another retriever: the same words hashed into other buckets, so that its rankings differ."""

    model_id = "other-bow-64"

    def encode(self, texts, *, batch_size: int = 64, progress=None) -> np.ndarray:
        return super().encode([f"{t} {t[::-1]}" for t in texts], batch_size=batch_size, progress=progress)


def other_retriever(source: Retriever) -> Retriever:
    encoder = OtherEncoder()
    return Retriever(source.registry, encoder, VectorIndex(encoder.encode(source.registry.documents)))


def test_every_architecture_is_searched_by_the_other_retriever_from_the_stored_stubs(db_url: str) -> None:
    store = Store(db_url)
    retriever = memoised(make_retriever())
    queries = make_queries()
    factory = fake_agents()
    context = bench_context(store, retriever, queries)
    run_main(context, runs=1, k=5, concurrency=2, agents_for=factory)
    calls = (factory.made[0].stub_writer.calls, factory.made[0].planner.calls)
    assert stored_systems(context) == [("fake", "fake-llm-1")]
    other = other_retriever(retriever)
    ids = run_axis(context, other, ks=(5,))
    runs = [r for r in store.runs(kind="retrievers") if r.id in ids]
    assert sorted((r.spec.subset, r.spec.arch) for r in runs) == sorted(
        (s, a) for s in ("G1_instruction", "G2_instruction") for a in ("rtp", "ptr", "hybrid"))
    assert (factory.made[0].stub_writer.calls, factory.made[0].planner.calls) == calls  # no LLM call
    main = {(r.spec.subset, r.spec.arch): r for r in store.runs(kind="main")}
    with store.session() as session:
        configs = dict(session.execute(select(Run.id, Run.config).where(Run.id.in_(ids))).all())
    for run in runs:
        assert run.status == "complete" and run.spec.embedding_model == "other-bow-64"
        assert configs[run.id]["stubs_from"] == "fake-bow-64" and configs[run.id]["retriever_runtime"] == "fake"
        source = main[(run.spec.subset, "rtp" if run.spec.arch == "rtp" else "ptr")]
        assert run.spec.source_run_id == source.id and run.spec.llm_model == "fake-llm-1"
        assert store.count_results(run.id) == 6
    assert run_axis(bench_context(store, retriever, queries, resume=True), other, ks=(5,)) == []  # nothing to redo


def test_the_table_sets_each_retriever_beside_the_main_study_with_paired_differences(db_url: str) -> None:
    from core.analysis.reader import ResultsReader

    store = Store(db_url)
    retriever = memoised(make_retriever())
    queries = make_queries()
    context = bench_context(store, retriever, queries)
    run_main(context, runs=1, k=5, concurrency=2, agents_for=fake_agents())
    ids = run_axis(context, other_retriever(retriever), ks=(1, 5))  # k=1 is the sweep's: the table reads k=5 only
    ids = [r.id for r in store.runs(kind="retrievers") if r.id in ids and r.spec.k == 5]
    table = ResultsReader(db_url).retriever_axis()
    assert sorted(set(table["retriever"])) == ["fake-bow-64", "other-bow-64"]
    assert list(table["source"].unique()) == ["main study", "retriever axis"] or set(table["source"]) == {
        "main study", "retriever axis"}
    assert (table["n"] == 6).all() and len(table) == 2 * 2  # two subsets x (main study + the other retriever)
    row = table[(table["retriever"] == "other-bow-64") & (table["subset"] == "G2_instruction")].iloc[0]
    runs = {r.spec.arch: r.id for r in store.runs(kind="retrievers")
            if r.id in ids and r.spec.subset == "G2_instruction"}
    recall = {arch: {r["query_uid"]: r["recall_api_list"]
                     for r in store.results(run_id, ("query_uid", "recall_api_list"))}
              for arch, run_id in runs.items()}
    expected = np.mean([recall["ptr"][uid] - recall["rtp"][uid] for uid in recall["rtp"]])
    assert abs(row["ptr_minus_rtp"] - expected) < 1e-9 and row["ptr_low"] <= row["ptr_minus_rtp"] <= row["ptr_high"]


def test_bm25_is_a_retriever_of_the_axis_and_an_unknown_name_is_refused(db_url: str) -> None:
    import argparse

    import pytest

    from core.study.catalog import parse_retrievers
    from core.study.retriever_axis import run_retrievers

    assert parse_retrievers("bm25, paraphrase-MiniLM-L3-v2") == ["bm25", "paraphrase-MiniLM-L3-v2"]
    with pytest.raises(argparse.ArgumentTypeError, match="declared: all-MiniLM-L6-v2"):
        parse_retrievers("bm25,gte-base")
    store = Store(db_url)
    retriever = memoised(make_retriever())
    context = bench_context(store, retriever, make_queries())
    run_main(context, runs=1, k=5, concurrency=2, agents_for=fake_agents())
    ids = run_retrievers(context, ks=(5,), retrievers=["bm25"])
    runs = [r for r in store.runs(kind="retrievers") if r.id in ids]
    assert len(runs) == 2 * 3 and all(r.spec.embedding_model.startswith("bm25s-lucene") for r in runs)


def test_the_k_sweep_sets_each_retriever_beside_the_main_study_own_sweep(db_url: str) -> None:
    from core.analysis.reader import ResultsReader
    from core.study.ksweep import run_ksweep

    store = Store(db_url)
    retriever = memoised(make_retriever())
    context = bench_context(store, retriever, make_queries())
    run_main(context, runs=1, k=5, concurrency=2, agents_for=fake_agents())
    run_ksweep(context, ks=(1, 3, 5))
    ids = run_axis(context, other_retriever(retriever), ks=(1, 3, 5))
    assert len(ids) == 2 * 3 * 3  # subsets x architectures x ks
    table = ResultsReader(db_url).retriever_axis_ksweep()
    assert set(table["source"]) == {"main study", "retriever axis"} and set(table["k"]) == {1, 3, 5}
    assert set(table[table["source"] == "main study"]["arch"]) == {"rtp", "ptr"}  # the main sweep has no hybrid
    for (retriever_id, subset, arch), part in table.groupby(["retriever", "subset", "arch"]):
        recall = part.set_index("k")["recall"]
        assert recall.is_monotonic_increasing, (retriever_id, subset, arch)  # a k's top k holds the smaller k's
    run = next(r for r in store.runs(kind="retrievers") if r.id in ids and r.spec.k == 3 and r.spec.arch == "ptr"
               and r.spec.subset == "G2_instruction")
    expected = np.mean([r["recall_api_list"] for r in store.results(run.id, ("recall_api_list",))])
    row = table[(table["retriever"] == "other-bow-64") & (table["subset"] == "G2_instruction")
                & (table["arch"] == "ptr") & (table["k"] == 3)].iloc[0]
    assert abs(row["recall"] - expected) < 1e-12 and row["n"] == 6
