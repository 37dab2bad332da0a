"""Headlines computed from the numbers they describe, and the declared rule for which study a page shows."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from core.analysis.headlines import crossover_lines, crossover_verdict, differences
from core.analysis.reader import ResultsReader
from core.study.hybrid import run_hybrid
from tests.helpers import bench_context, run_study


def board(system: str, recalls: dict[str, tuple[float, float]]) -> pd.DataFrame:
    return pd.DataFrame([{"system": system, "arch": arch, "subset": subset, "recall": value}
                         for subset, pair in recalls.items() for arch, value in zip(("rtp", "ptr"), pair)])


@pytest.mark.parametrize("recalls, finding", [
    ({"G1_instruction": (0.35, 0.30), "G2_instruction": (0.13, 0.20), "G3_instruction": (0.12, 0.17)},
     "the paper's crossover"),
    ({"G1_instruction": (0.35, 0.23), "G2_instruction": (0.135, 0.112), "G3_instruction": (0.12, 0.09)},
     "PtR trails RtP on every subset: no crossover"),
    ({"G1_instruction": (0.35, 0.30), "G2_instruction": (0.13, 0.20), "G3_instruction": (0.17, 0.16)},
     "a partial crossover"),
    ({"G1_instruction": (0.30, 0.35), "G2_instruction": (0.13, 0.20)}, "PtR leads RtP on every subset"),
    ({"G2_instruction": (0.135, 0.128)}, "only G2 stored so far, where PtR trails RtP: the crossover needs"),
    ({"G1_instruction": (0.35, 0.30)}, "only G1 stored so far, where PtR trails RtP"),
    ({"G1_instruction": (0.35, 0.30), "G2_instruction": (0.135, 0.180)},
     "RtP leads on single-tool G1 and PtR on multi-tool G2: the paper's crossover"),
])
def test_the_verdict_follows_the_signs_and_quotes_the_numbers(recalls, finding) -> None:
    verdict = crossover_verdict(differences(board("s", recalls), "s"))
    assert finding in verdict
    for subset, (rtp, ptr) in recalls.items():
        assert f"{subset[:2]} {ptr - rtp:+.3f}" in verdict


def test_no_study_no_claim() -> None:
    assert crossover_verdict({}) == "no main study of the instruction subsets"
    assert crossover_lines(pd.DataFrame(columns=["system", "arch", "subset", "recall"])) == []


def test_a_tab_falls_back_to_the_latest_study_that_has_its_runs(tmp_path: Path) -> None:
    """The fake backend's study (an LLM's, so the default) has main, k sweep and scaling runs but no hybrid; an
    offline main study written later has a hybrid run: the hybrid tab falls back to it, the scaling tab keeps the
    default's own."""
    from core.settings import Settings
    from core.study.main_study import run_main

    url = f"sqlite:///{tmp_path / 'two.sqlite'}"
    store, retriever, queries = run_study(url, runs=1, ks=(5,), sizes=(4, None), seeds=1)
    offline = bench_context(store, retriever, queries, commit="abc123",
                            settings=Settings.from_env(env={"LLM_BACKEND": "offline", "CACHE_DIR": str(tmp_path)}))
    run_main(offline, runs=1, k=5)
    run_hybrid(offline)  # on the latest main study: the offline one
    store.close()
    reader = ResultsReader(url)
    assert reader.setup()["llm_backend"] == "fake"
    assert reader.study_with("scaling") is None and not reader.scaling().empty  # the default has its own
    assert reader.study_with("hybrid") == "offline"  # the default has none: the one that has
    assert reader.study_with("scaling", "offline") == "fake"
    assert reader.study_with("distractors") == ""  # no study has any


def test_the_default_study_is_an_llms_whole_study_not_the_latest(tmp_path: Path) -> None:
    """A later offline study of G2 alone (a study under way) leaves the pages on the fake LLM's whole study, and so
    does a later whole offline one: the heuristic is the LLM-free baseline, not the study a reader came for."""
    from core.settings import Settings
    from core.study.main_study import run_main

    url = f"sqlite:///{tmp_path / 'partial.sqlite'}"
    store, retriever, queries = run_study(url, runs=1, ks=(5,), sizes=(None,), seeds=1)
    offline = Settings.from_env(env={"LLM_BACKEND": "offline", "CACHE_DIR": str(tmp_path)})
    g2 = [q for q in queries if q.subset == "G2_instruction"]
    run_main(bench_context(store, retriever, g2, commit="abc123", settings=offline), runs=1, k=5)
    assert ResultsReader(url).setup()["llm_backend"] == "fake"
    assert set(ResultsReader(url).main_table()["subset"]) == {"G1_instruction", "G2_instruction"}
    run_main(bench_context(store, retriever, queries, commit="abc123", settings=offline), runs=1, k=5)
    store.close()
    assert ResultsReader(url).setup()["llm_backend"] == "fake"
    assert ResultsReader(url).setup("offline")["llm_backend"] == "offline"  # the sidebar still reaches it


@pytest.mark.parametrize(("studies", "default"), [
    # The stored studies' shape: the heuristic and two smaller models on six subsets, the 1.5B on the paper's three.
    ({"offline-heuristic": 6, "gemma-3-270m-q4_k_m": 6, "qwen2.5-coder-0.5b-instruct-q4_k_m": 6,
      "qwen2.5-coder-1.5b-instruct-q4_k_m": 3}, "local:qwen2.5-coder-1.5b-instruct-q4_k_m"),
    # The 1.5B still under way (G1 alone): the largest model with all three paper subsets.
    ({"offline-heuristic": 6, "gemma-3-270m-q4_k_m": 6, "qwen2.5-coder-0.5b-instruct-q4_k_m": 3,
      "qwen2.5-coder-1.5b-instruct-q4_k_m": 1}, "local:qwen2.5-coder-0.5b-instruct-q4_k_m"),
    # A hosted model (size not declared) outranks every local one; the heuristic only when it alone is whole.
    ({"gemini-2.5-flash": 3, "qwen2.5-coder-1.5b-instruct-q4_k_m": 3}, "gemini"),
    ({"offline-heuristic": 3, "gemma-3-270m-q4_k_m": 2}, "offline"),
])
def test_the_default_study_rule(studies: dict[str, int], default: str) -> None:
    from core.analysis.run_selection import default_study
    from core.data.toolbench import SUBSETS

    order = ["G1_instruction", "G2_instruction", "G3_instruction", *(s for s in SUBSETS if "instruction" not in s)]
    backend = {"offline-heuristic": "offline", "gemini-2.5-flash": "gemini"}
    rows = [{"id": 100 - 10 * i - j, "llm_backend": backend.get(model, "local"), "llm_model": model, "subset": subset}
            for i, (model, n) in enumerate(studies.items()) for j, subset in enumerate(order[:n])]
    assert default_study(pd.DataFrame(rows)) == default


def test_the_results_page_verdict_reads_the_shown_studys_main_table() -> None:
    """The Results page's sentence above its chart, from the same main table the chart draws: a study without the
    crossover is not captioned with one."""
    from core.analysis.headlines import main_differences

    main = pd.DataFrame([{"subset": s, "metric": m, "rtp_mean": rtp, "ptr_mean": ptr}
                         for s, rtp, ptr in (("G1_instruction", 0.348, 0.230), ("G2_instruction", 0.135, 0.112),
                                             ("G3_instruction", 0.118, 0.086), ("G1_tool", 0.336, 0.231))
                         for m in ("recall", "precision")])
    diffs = main_differences(main, "recall")
    assert diffs == pytest.approx({"G1_instruction": -0.118, "G2_instruction": -0.023, "G3_instruction": -0.032})
    verdict = crossover_verdict(diffs, "recall", k=10)
    assert "no crossover" in verdict and "recall@10" in verdict


def paired(rows: list[tuple[str, str, float]]) -> pd.DataFrame:
    """ResultsReader.paired_tests' columns that the headline reads: (subset, metric, mean difference)."""
    return pd.DataFrame([{"subset": s, "metric": m, "n": 200, "mean_diff": d, "diff_low": d - 0.02,
                          "diff_high": d + 0.02} for s, m, d in rows])


def test_the_headline_table_holds_each_systems_paired_recall_differences_then_the_papers() -> None:
    """One row per system and subset it holds, in the study's subset order; recall only; a difference no query
    defines is left out; the paper's Gemini 2.5 Flash last, from its reported means, with no interval."""
    from core.analysis.paper import PAPER_SYSTEM, load_paper
    from core.analysis.subset_gains import subset_gains

    table = subset_gains({
        "a": paired([("G2_category", "recall", 0.05), ("G1_instruction", "recall", -0.04),
                     ("G1_instruction", "precision", 0.9), ("G3_instruction", "recall", float("nan"))]),
        "b": paired([("G2_instruction", "recall", 0.06)])}, load_paper())
    assert list(zip(table["system"], table["subset"])) == [
        ("a", "G1_instruction"), ("a", "G2_category"), ("b", "G2_instruction"), (PAPER_SYSTEM, "G1_instruction"),
        (PAPER_SYSTEM, "G2_instruction"), (PAPER_SYSTEM, "G3_instruction")]
    assert table["diff"].tolist()[:3] == pytest.approx([-0.04, 0.05, 0.06])
    assert table["low"].tolist()[:3] == pytest.approx([-0.06, 0.03, 0.04])
    theirs = table[table["source"] == "paper"]
    assert theirs["diff"].tolist() == pytest.approx([0.289 - 0.372, 0.188 - 0.143, 0.172 - 0.160])
    assert theirs["n"].tolist() == [200, 200, 100] and theirs[["low", "high"]].isna().all().all()
    assert subset_gains({}, {}).empty  # no study and no paper figures: nothing to draw


def test_the_headlines_interval_is_the_model_size_tables_own() -> None:
    """The headline reads the paired tests' bootstrap; the model-size table draws its own from the same per-query
    differences: the two must agree, or the Overview's two charts would disagree on one number."""
    import numpy as np

    from core.analysis.model_size import paired_difference
    from core.analysis.subset_gains import subset_gains
    from core.analysis.tables import paired_tests

    rng = np.random.default_rng(3)
    pq = pd.DataFrame({"subset": "G2_instruction", "rtp_recall": rng.uniform(0, 1, 40).round(2),
                       "ptr_recall": rng.uniform(0, 1, 40).round(2), "rtp_precision": 0.2, "ptr_precision": 0.3})
    [row] = subset_gains({"s": paired_tests(pq)}, {}).itertuples()
    assert (row.diff, row.low, row.high) == pytest.approx(paired_difference(pq["ptr_recall"], pq["rtp_recall"]))
    assert row.low < row.diff < row.high and row.n == 40
