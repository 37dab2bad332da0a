"""The app-side read API and the report: shapes the pages rely on, no registry or model, speed, CLI."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from core.analysis import tables as A
from core.analysis.tables import OUTCOMES
from core.cli.main import main
from core.analysis.report import build_report, render_text
from core.analysis.paper import load_paper
from core.analysis.reader import ResultsReader
from core.analysis.table_schemas import PER_QUERY
from core.settings import PROJECT_ROOT
from core.study.query_result import QueryOutcome
from core.evaluation.run_means import RUN_MEANS
from tests.helpers import bench_context, run_means, run_means_both_ways, run_study

SECTIONS = {"main", "paired", "wins", "ksweep", "scaling", "divergence", "trajectory", "stubs", "search_width",
            "hybrid", "retrievers", "router", "cost", "backends", "model_size", "distractors"}


@pytest.fixture(scope="module")
def study_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('study') / 'results.sqlite'}"
    run_study(url).__getitem__(0).close()
    return url


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "core", *args], cwd=PROJECT_ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


def test_status_and_runs(study_url: str) -> None:
    reader = ResultsReader(study_url)
    assert reader.available()
    status = reader.status()
    assert status["kinds"] == {"main": 8, "ksweep": 18, "scaling": 8} and status["backends"] == ["fake fake-llm-1"]
    assert status["git_commit"] == "abc123" and status["error"] is None
    runs = reader.runs()
    for col in ("kind", "arch", "subset", "k", "run_index", "registry_name", "registry_size", "registry_hash",
                "sub_size", "sub_seed", "embedding_model", "llm_backend", "llm_model", "backend_label",
                "discovery_prompt_version", "planner_prompt_version", "git_commit", "status", "started_at",
                "finished_at", "n_results"):
        assert col in runs.columns
    assert set(runs["status"]) == {"complete", "skipped"}


def test_table_columns_the_pages_use(study_url: str) -> None:
    reader = ResultsReader(study_url)
    main = reader.main_table()
    assert list(main.columns) == ["subset", "metric", "rtp_mean", "rtp_std", "ptr_mean", "ptr_std", "p_value", "test",
                                  "better", "n_queries", "runs"]
    assert (set(main["metric"]) == {"recall", "precision", "pass_rate_proxy"}
            and set(main["better"]) <= {"rtp", "ptr", "tie"})
    pq = reader.per_query("G2_instruction")
    assert list(pq.columns) == PER_QUERY.names and len(pq) == 6 and set(pq["outcome"]) <= set(OUTCOMES)
    assert (pq["recall_diff"] == pq["ptr_recall"] - pq["rtp_recall"]).all()
    assert pq["stub_names"].str.len().gt(0).all() and pq["n_stubs"].ge(1).all()
    assert len(reader.per_query()) == 12 and len(reader.per_query(k=3)) == 12  # k=3 comes from the k sweep
    assert list(reader.ksweep().columns)[:7] == ["subset", "arch", "k", "recall_mean", "recall_std", "precision_mean",
                                                 "precision_std"]
    assert sorted(reader.ksweep()["k"].unique()) == [1, 3, 5]
    assert list(reader.scaling().columns)[:7] == ["subset", "size", "arch", "recall_mean", "recall_std",
                                                  "divergence_not_identical", "divergence_disjoint"]
    assert set(reader.scaling_notes()["size"]) == {4, 7}
    shares = {(r.subset, r.size): r.gold_share for r in reader.scaling().itertuples()}
    assert shares[("G2_instruction", 7)] == pytest.approx(6 / 7) and shares[("G1_instruction", 10)] == 0.8
    assert list(reader.stub_cosines().columns)[:5] == ["subset", "query_id", "stub", "cosine", "correct"]
    assert len(reader.stub_stats()) == 2 and len(reader.trajectory()) == 4 and len(reader.cost()) == 2
    assert len(reader.divergence()) == 2 and len(reader.search_width()) == 4
    assert list(reader.brand_name_losses().columns) == PER_QUERY.names
    wins = reader.decomposition_wins()
    assert (wins["recall_diff"] > 0).all() and (wins["n_stubs"] >= 2).all()
    assert reader.main_table(gold="relevant")["rtp_mean"].notna().all()


def test_query_detail_is_the_type_run_query_returns(study_url: str) -> None:
    reader = ResultsReader(study_url)
    stored = reader.query_detail("G2_instruction", 106)
    assert isinstance(stored, QueryOutcome) and stored.get("rtp").latency_s is None  # batched: no time per query
    detail = stored.to_json()
    assert detail["k"] == 5 and set(detail) >= {"rtp", "ptr", "provenance"}
    hit = detail["rtp"]["hits"][0]
    assert set(hit) >= {"rank", "tool_name", "api_name", "category", "score", "gold", "gold_relevant"}
    plan = detail["rtp"]["plan"]
    assert plan["selected_apis"] and "usage" in plan and plan["steps"]
    assert plan["matched"] and plan["fidelity"] == 1.0 and plan["apis_named"] == len(plan["selected_apis"])
    ptr = detail["ptr"]
    assert [s["name"] for s in ptr["stubs"]] and ptr["stub_fallback"] is False
    assert ptr["backend_label"] == "fake fake-llm-1" and ptr["usage"]["total_tokens"] == 46
    assert {"top1_score", "search_width", "recall", "precision"} <= set(ptr)
    assert detail["provenance"]["registry_name"] == "small" and detail["provenance"]["git_commit"] == "abc123"
    assert {"rtp_overlap", "same_as_rtp"} <= set(ptr) and "recall_relevant" in ptr and "stub_latency_s" in ptr
    swept = reader.query_detail("G2_instruction", 106, k=1)
    assert len(swept.get("rtp").hits) == 1 and swept.get("rtp").plan is None and swept.writing.stubs
    assert (reader.query_detail("G2_instruction", 9999) is None
            and reader.query_detail("G2_instruction", 106, k=7) is None)
    assert QueryOutcome.from_json(json.loads(json.dumps(detail))) == stored  # the JSON keeps everything


def per_query_rows(url: str, kind: str) -> pd.DataFrame:
    """Every stored per-query row of a kind, with its run keys, read without the reader."""
    path = url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        return pd.read_sql_query(
            "SELECT q.*, r.arch, r.run_index, r.sub_size, r.sub_seed FROM query_results q "
            "JOIN runs r ON r.id = q.run_id "
            "WHERE r.kind = ? AND r.status = 'complete' AND q.error IS NULL", conn, params=(kind,))


def test_every_declared_run_mean_is_the_same_in_sql_and_in_python(study_url: str) -> None:
    """Each mean core.evaluation.run_means declares, for every run of the test study: the reader's SQL and the
    declaration's Python over the stored rows give the same bits (tests/test_stores_agree.py covers every
    branch of each, on both stores)."""
    differ, defined = run_means_both_ways(study_url)
    assert not differ, "\n".join(differ)
    assert defined >= set(RUN_MEANS), f"never defined on the test study: {sorted(set(RUN_MEANS) - defined)}"


@pytest.mark.slow
def test_sql_run_means_match_the_pandas_analyses(study_url: str) -> None:
    """The reader averages per run in SQL; the pure analyses over the declared means in Python give the same tables."""
    reader = ResultsReader(study_url)
    for gold in ("api_list", "relevant"):
        main = per_query_rows(study_url, "main")
        expected = A.main_table(run_means(main, [A.metric_column(m, gold) for m in A.MAIN_METRICS]), gold)
        pd.testing.assert_frame_equal(reader.main_table(gold), expected, check_dtype=False)
        sweep = per_query_rows(study_url, "ksweep")
        cols = [f"recall_{gold}", f"precision_{gold}"]
        expected = A.ksweep_table(run_means(sweep, cols, ("subset", "arch", "k")), gold)
        pd.testing.assert_frame_equal(reader.ksweep(gold), expected, check_dtype=False)
        per_seed = run_means(per_query_rows(study_url, "scaling"), [*cols, "not_identical", "disjoint"],
                             ("subset", "arch", "k", "sub_size", "sub_seed"))
        pd.testing.assert_frame_equal(reader.scaling(gold).drop(columns="gold_share"),
                                      A.scaling_table(per_seed, gold), check_dtype=False)
        main["plan_matched"] = main["plan_matched"].map(lambda m: json.loads(m) if m else None)
        per_run = run_means(main, list(A.TRAJECTORY_MEASURES.values()), gold=gold)
        expected = A.trajectory(per_run, A.planner_jaccard(main))
        pd.testing.assert_frame_equal(reader.trajectory(gold), expected, check_dtype=False)


@pytest.mark.subprocess
def test_reading_needs_neither_registry_nor_model(study_url: str) -> None:
    """In a fresh interpreter: every read method works and faiss, torch and the registry loader stay unloaded."""
    code = f"""
import sys
from core.analysis.report import build_report
from core.analysis.reader import ResultsReader

def read_everything():
    r = ResultsReader({study_url!r})
    build_report(r, "api_list"); build_report(r, "relevant")
    r.per_query("G1_instruction"); r.query_detail("G1_instruction", 100); r.stub_cosines()
    r.brand_name_losses(); r.decomposition_wins(); r.runs(); r.status()

read_everything()
heavy = [m for m in ("faiss", "torch", "sentence_transformers", "core.data.loaders", "core.retrieval.assemble",
                     "core.retrieval.discovery") if m in sys.modules]
import core.data.loaders, core.retrieval.assemble
def boom(*a, **k): raise AssertionError("the read API touched the registry or the model")
for module, names in ((core.data.loaders, ("registry_for", "queries_for")),
                      (core.retrieval.assemble, ("build_retriever", "load_encoder"))):
    for name in names:
        setattr(module, name, boom)
read_everything()
assert core.data.loaders._registry.cache_info().currsize == 0 and core.retrieval.assemble.load_encoder is boom
print(",".join(heavy) or "none")
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "none"


def test_repeated_reads_come_from_the_cache(study_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second read of each table computes nothing again and returns the same table (how fast that
    is belongs to `python -m core perf`, not to a test)."""
    reader = ResultsReader(study_url)
    computed: list[tuple] = []
    cached = reader._cached

    def counting(key: tuple, compute):
        def tracked():
            computed.append(key)
            return compute()
        return cached(key, tracked)

    monkeypatch.setattr(reader, "_cached", counting)
    calls = [reader.main_table, reader.per_query, reader.ksweep, reader.scaling, reader.stub_stats, reader.trajectory,
             reader.cost, reader.divergence, reader.stub_cosines, reader.win_counts]
    first = [call() for call in calls]
    assert {key[0] for key in computed} >= {call.__name__ for call in calls}
    computed.clear()
    for call, before in zip(calls, first):
        pd.testing.assert_frame_equal(call(), before, obj=call.__name__)
    assert computed == []


def test_returned_frames_are_copies(study_url: str) -> None:
    reader = ResultsReader(study_url)
    table = reader.main_table()
    table.loc[0, "rtp_mean"] = 123.0
    assert reader.main_table().loc[0, "rtp_mean"] != 123.0


@pytest.mark.slow
def test_build_report_has_both_sides_and_is_strict_json(study_url: str) -> None:
    report = build_report(ResultsReader(study_url), "api_list")
    assert set(report["sections"]) == SECTIONS
    assert report["sections"]["main"]["paper"] and report["sections"]["main"]["ours"]
    assert report["setup"]["backend_label"] == "fake fake-llm-1" and report["setup"]["runs"] == 2
    assert "pass-rate proxy" in report["pass_rate_note"] and "api_list" in report["gold_note"]
    json.dumps(report, allow_nan=False)
    text = render_text(report)
    for title in ("Main comparison", "k sweep", "Registry scaling", "Planner trajectory", "Stubs", "Tokens per query"):
        assert title in text
    assert "paper:" in text and "skipped: G1_instruction size 4" in text
    assert "relevant" in build_report(ResultsReader(study_url), "relevant")["gold_note"]
    with pytest.raises(ValueError):
        build_report(ResultsReader(study_url), "both")


def test_paper_main_rows_keep_the_judged_pass_rate_apart() -> None:
    from core.analysis.paper import main_rows

    rows = main_rows(load_paper())
    g1 = {r["metric"]: r for r in rows if r["subset"] == "G1_instruction"}
    assert g1["recall"]["rtp_mean"] == 0.372 and g1["recall"]["ptr_std"] == 0.01
    assert "pass_rate" in g1 and "pass_rate_proxy" not in g1


@pytest.mark.subprocess
def test_report_cli(study_url: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = cli("report", "--json", "--db", study_url)  # one real process: the entry point as users run it
    assert out.returncode == 0, out.stderr
    assert set(json.loads(out.stdout)["sections"]) == SECTIONS
    assert main(["report", "--gold", "relevant", "--db", study_url]) == 0
    assert "gold = relevant" in capsys.readouterr().out
    assert main(["report", "--db", f"sqlite:///{tmp_path / 'none.sqlite'}"]) == 1
    assert "bench all" in capsys.readouterr().err


def test_bench_rejects_unknown_subsets(capsys: pytest.CaptureFixture) -> None:
    assert main(["bench", "main", "--subsets", "G9_nothing"]) == 2
    err = capsys.readouterr().err
    assert "G9_nothing" in err and "G1_instruction" in err and err.count("\n") == 1


@pytest.mark.slow
def test_bench_all_then_report_through_the_cli(tiny_env: dict[str, str], capsys: pytest.CaptureFixture) -> None:
    args = ["bench", "all", "--registry", "documented", "--subsets", "G1_instruction,G2_instruction", "--runs", "2",
            "--ks", "1,3", "--sizes", "5,full", "--seeds", "2", "--no-progress", "--json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["main"]["runs"] == 8 and summary["ksweep"]["runs"] == 2 * (2 + 2 * 2)
    assert summary["scaling"]["runs"] == 2 * 2 * 3  # subsets x archs x (2 seeds at size 5 + full once)
    assert main([*args, "--resume"]) == 0  # everything finished: nothing is redone
    again = json.loads(capsys.readouterr().out)
    assert again["main"]["runs"] == again["ksweep"]["runs"] == again["scaling"]["runs"] == 0
    assert main(["report", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["setup"]["backend_label"] == "offline heuristic, not an LLM"
    recall_tests = {r["test"] for r in data["sections"]["main"]["ours"] if r["metric"] == "recall"}
    assert recall_tests == {"n/a (no variance across runs)"}  # the offline heuristic gives identical runs


@pytest.mark.slow
def test_leaderboard_puts_every_backend_beside_the_paper(tmp_path: Path) -> None:
    """Two backends' studies in one database: one row per system, architecture and subset, the paper's too."""
    from core.study.hybrid import run_hybrid
    from core.study.main_study import run_main
    from core.analysis.paper import PAPER_SYSTEM
    from core.analysis.report import leaderboard, leaderboard_wide
    from core.settings import Settings
    from core.evaluation.stats import bootstrap_ci
    from ui.tables import MEAN_COLUMN, leaderboard_view

    url = f"sqlite:///{tmp_path / 'two.sqlite'}"
    store, retriever, queries = run_study(url, runs=1, ks=(5,), sizes=(None,), seeds=1)
    run_hybrid(bench_context(store, retriever, queries, commit="abc123"))
    offline = Settings.from_env(env={"LLM_BACKEND": "offline", "CACHE_DIR": str(tmp_path)})
    run_main(bench_context(store, retriever, queries, commit="abc123", settings=offline), runs=1, k=5)
    store.close()
    reader = ResultsReader(url)
    assert reader.backends() == ["fake", "offline"]
    board = leaderboard(reader, "api_list", load_paper())
    systems = list(dict.fromkeys(board["system"]))
    assert systems == ["fake fake-llm-1", "offline heuristic, not an LLM", PAPER_SYSTEM]
    fake = board[board["system"] == "fake fake-llm-1"]
    assert set(fake["arch"]) == {"rtp", "ptr", "hybrid"}  # the offline study ran no hybrid
    assert set(board[board["system"] == "offline heuristic, not an LLM"]["arch"]) == {"rtp", "ptr"}
    assert set(fake["n"]) == {6}
    main = reader.main_table("api_list", "fake").set_index(["subset", "metric"])
    row = fake[(fake["arch"] == "ptr") & (fake["subset"] == "G2_instruction")].iloc[0]
    assert row["recall"] == pytest.approx(main.at[("G2_instruction", "recall"), "ptr_mean"])
    pq = reader.per_query(None, "api_list", 5, "fake")
    g2 = pq[pq["subset"] == "G2_instruction"]["ptr_recall"].astype(float)
    assert row["recall"] == pytest.approx(g2.mean())
    assert (row["recall_low"], row["recall_high"]) == bootstrap_ci(g2.tolist())
    assert ((row["llm_backend"], row["gold"], row["k"], row["runs"], row["commit"])
            == ("fake", "api_list", 5, 1, "abc123"))
    ours = board[board["system"] != PAPER_SYSTEM]
    assert ((ours["recall_low"] <= ours["recall"] + 1e-12) & (ours["recall"] <= ours["recall_high"] + 1e-12)).all()
    paper = board[board["system"] == PAPER_SYSTEM].set_index(["arch", "subset"])
    assert paper["recall_low"].isna().all() and set(paper["llm_backend"]) == {"paper (reported)"}
    assert paper.at[("ptr", "G2_instruction"), "recall"] == 0.188 and paper.at[("rtp", "G1_instruction"), "n"] == 200
    wide = leaderboard_wide(board)
    assert list(wide.columns[:5]) == ["system", "arch", "G1_instruction recall", "G1_instruction precision",
                                      "G1_instruction n"]
    assert len(wide) == 3 + 2 + 2
    view = leaderboard_view(board, "recall")
    assert list(view[["system", "architecture"]].itertuples(index=False, name=None))[:3] == [
        ("fake fake-llm-1", "RtP"), ("fake fake-llm-1", "PtR"), ("fake fake-llm-1", "hybrid (beyond the paper)")]
    paper_ptr = view[(view["system"] == PAPER_SYSTEM) & (view["architecture"] == "PtR")].iloc[0]
    assert paper_ptr["G2_instruction"] == 0.188 and paper_ptr["G2_instruction 95% CI"] == "–"
    assert paper_ptr[MEAN_COLUMN] == pytest.approx(paper.loc["ptr", "recall"].mean())
    fake_ptr = view[(view["system"] == "fake fake-llm-1") & (view["architecture"] == "PtR")].iloc[0]
    assert fake_ptr["G2_instruction 95% CI"] == f"[{row['recall_low']:.3f}, {row['recall_high']:.3f}]"
    gain = A.ptr_gain(board, "G2_instruction").set_index("system")
    assert gain.at[PAPER_SYSTEM, "ptr_minus_rtp"] == pytest.approx(0.188 - 0.143)
    report = build_report(reader)
    assert len(report["sections"]["backends"]["g2_gain"]) == 3 and "Backends side by side" in render_text(report)
