"""Intent-Registry Coupling: the measure against numpy, its bins against a hand count, the summary over two
registries, and the couplings kept on disk once per registry."""
from __future__ import annotations

import json

import numpy as np
import pytest

from core.evaluation.coupling import coupling, coupling_bins
from core.settings import Settings
from core.analysis.coupling_gains import summarise
from core.study.coupling import cached_couplings, couplings_path, query_couplings, registry_couplings
from tests.helpers import make_queries, make_retriever


def test_coupling_is_the_best_cosine_to_a_gold_document() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(4, 8))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    assert coupling(vectors[0], vectors[1:]) == pytest.approx(float(np.max(vectors[1:] @ vectors[0])), abs=1e-6)
    assert coupling(vectors[0], vectors[:1]) == pytest.approx(1.0, abs=1e-6)
    assert coupling(vectors[0], vectors[:0]) is None


def test_bins_hold_equal_counts_with_their_means() -> None:
    couplings = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    diffs = [1, 1, 0, 0, -1, -1, 0.5, 0.5, 0, 0]
    bins = coupling_bins(couplings, diffs, bins=5)
    assert [b.n for b in bins] == [2, 2, 2, 2, 2]
    assert [b.mean_diff for b in bins] == [1.0, 0.0, -1.0, 0.5, 0.0]
    assert (bins[0].low, bins[0].high, bins[0].ptr_wins, bins[2].rtp_wins) == (0.1, 0.2, 2, 2)
    assert all(b.diff_low <= b.mean_diff <= b.diff_high for b in bins)
    assert coupling_bins([], []) == []
    assert [b.n for b in coupling_bins([0.5] * 6, [0.1] * 6)] == [6]  # ties stay in one bin


def test_query_couplings_read_the_gold_rows_vectors() -> None:
    retriever = make_retriever()
    queries = make_queries()
    found = query_couplings(retriever, queries)
    query = queries[0]
    rows = [retriever.registry.row(key) for key in sorted(query.gold("api_list"))]
    expected = float(np.max(retriever.corpus_vectors[rows] @ retriever.encode([query.query])[0]))
    assert found[query.uid] == pytest.approx(expected, abs=1e-6)
    assert set(found) == {q.uid for q in queries if q.gold("api_list")}


def test_summary_pools_registries_and_keeps_each_apart() -> None:
    rows = [{"registry": r, "benchmark": r, "kind": kind, "coupling": c, "diff": d, "rtp_top1": c, "rtp_recall": 0.5,
             "ptr_recall": 0.5 + d} for r, kind, c, d in (("full", "single", 0.9, -0.25), ("full", "multi", 0.3, 0.25),
                                                          ("full", "multi", 0.4, 0.125), ("b", "single", 0.8, 0.0),
                                                          ("b", "multi", 0.2, 0.375))]
    report = summarise(rows)
    cells = {(c["registry"], c["kind"]): c for c in report["cells"]}
    assert cells[("full", "multi")]["n"] == 2 and cells[("full", "multi")]["diff_mean"] == 0.1875
    assert cells[("full", "all")]["n"] == 3 and report["pooled"]["n"] == 5
    assert report["pooled"]["spearman_rho"] == pytest.approx(-1.0)  # ranks exactly reversed: lower coupling, more gain
    assert sum(b["n"] for b in report["bins"]) == 5 and json.dumps(report)
    # Fitted on full: PtR below a top-1 of 0.9 (its two multi queries gain, its single one loses), so on b both
    # queries (top-1 0.8 and 0.2) go to PtR: routed = mean(0.5, 0.875).
    (router,) = report["router"]
    assert (router["registry"], router["threshold"], router["share_to_ptr"]) == ("b", 0.9, 1.0)
    assert router["routed_recall"] == 0.6875 and (router["rtp_recall"], router["ptr_recall"]) == (0.5, 0.6875)


def test_couplings_are_kept_once_per_registry_and_a_damaged_file_is_measured_again(tiny_env: dict[str, str]) -> None:
    settings = Settings.from_env()
    calls: list[str] = []

    def retriever_for(one: Settings):
        calls.append(one.registry)
        return make_retriever()

    assert cached_couplings(settings) is None
    first = registry_couplings(settings, retriever_for)
    assert first and registry_couplings(settings, retriever_for) == first and calls == ["full"]
    assert cached_couplings(settings) == first
    couplings_path(settings).write_text("{not json", encoding="utf-8")
    assert cached_couplings(settings) is None
    assert registry_couplings(settings, retriever_for) == first and calls == ["full", "full"]
