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
    """The fake backend's study has main, k sweep and scaling runs; an offline main study written later has none:
    the latest study is then the offline one, and its scaling tab falls back to the fake one's runs."""
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
    assert reader.setup()["llm_backend"] == "offline"
    assert reader.study_with("hybrid") is None  # the latest study has its own
    assert reader.study_with("scaling") == "fake" and not reader.scaling(backend="fake").empty
    assert reader.study_with("scaling", "fake") == "fake"
    assert reader.study_with("hybrid", "fake") == "offline"  # the fake study has no hybrid: the one that has
    assert reader.study_with("distractors") == ""  # no study has any


def test_a_study_under_way_on_one_subset_does_not_replace_a_whole_one(tmp_path: Path) -> None:
    """The default study covers the most subsets: a later offline study of G2 alone (a model study under way) leaves
    the pages on the whole fake study; with every subset it becomes the default."""
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
    assert ResultsReader(url).setup()["llm_backend"] == "offline"


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
