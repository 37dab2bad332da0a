"""SQLite and PostgreSQL hold and give back the same: one small bench (real CLI processes, the app's tiny data)
and its `report --json` on both, `db copy` both ways, and the strings PostgreSQL would refuse, stored alike.
report and db copy run in this process, through the CLI's own entry point."""
from __future__ import annotations

import json
import math
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from core.analysis.reader import ResultsReader
from core.cli.main import main
from core.data.toolbench import GOLD_DEFINITIONS
from core.settings import PROJECT_ROOT, Settings
from core.store.db_copy import copy_runs
from core.evaluation.run_means import RUN_MEANS, trajectory_means
from core.store.cleaning import TRUNCATED
from core.store.store import RunSpec, Store
from tests.helpers import SCRUBBED, run_means_both_ways, write_data
from tests.stores import STORES, PostgresServer, query
from ui.resources import db_version

BENCH = ("bench", "all", "--subsets", "G1_instruction,G2_instruction", "--runs", "2", "--k", "3", "--ks", "1,3,5",
         "--sizes", "6,full", "--seeds", "2", "--no-progress")
BENCH_TIMES = ("created", "first_started", "last_finished")  # when a store was made and benched
NAIVE_TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?"  # ISO, no offset: naive UTC


def bench(env: dict[str, str], url: str) -> None:
    out = subprocess.run([sys.executable, "-m", "core", *BENCH, "--db", url], cwd=PROJECT_ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """stdout of `python -m core ARGS`, run here."""
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    assert code == 0, err[-2000:]
    return out


@pytest.fixture(scope="module")
def benched(tmp_path_factory: pytest.TempPathFactory, pg_server: PostgresServer) -> dict[str, str]:
    """{store: URL}: the same bench run by the CLI into a SQLite file and a PostgreSQL database."""
    folder = tmp_path_factory.mktemp("stores")
    env = {**{k: v for k, v in os.environ.items() if k not in SCRUBBED and k != "DATABASE_URL"},
           "TOOLBENCH_DATA": str(write_data(folder / "toolbench")), "CACHE_DIR": str(folder / "cache"),
           "INDEX_DIR": str(folder / "index"), "LLM_BACKEND": "offline", "REGISTRY": "full"}
    urls = {"sqlite": f"sqlite:///{folder / 'results.sqlite'}", "postgresql": pg_server.new_database()}
    for url in urls.values():
        bench(env, url)
    return urls


def report(capsys: pytest.CaptureFixture[str], url: str, *without: str) -> str:
    """`report --json` of a store, re-serialised in its own key order with the named status fields left out."""
    parsed = json.loads(cli(capsys, "report", "--json", "--db", url))
    assert parsed["status"]["available"] and parsed["status"]["error"] is None
    for name in without:
        parsed["status"].pop(name)
    return json.dumps(parsed, ensure_ascii=False)


def rows_per_run(url: str) -> list[int]:
    """Each finished run's row count, in run order."""
    return [n for _, n in query(url, "SELECT runs.id, COUNT(query_results.id) FROM runs LEFT JOIN query_results "
                                     "ON query_results.run_id = runs.id WHERE runs.status IN ('complete', 'skipped') "
                                     "GROUP BY runs.id ORDER BY runs.id")]


@pytest.mark.subprocess
def test_the_same_bench_reports_the_same_on_both_stores(benched: dict[str, str],
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    urls = benched
    full = {store: json.loads(report(capsys, url)) for store, url in urls.items()}
    for parsed in full.values():  # times as naive UTC on both, never in the PostgreSQL session's zone
        assert all(re.fullmatch(NAIVE_TIME, parsed["status"][name]) for name in BENCH_TIMES), parsed["status"]
        assert parsed["status"]["kinds"]["main"] == 8 and parsed["status"]["kinds"]["ksweep"] == 18  # every study
    assert report(capsys, urls["sqlite"], *BENCH_TIMES) == report(capsys, urls["postgresql"], *BENCH_TIMES)
    assert rows_per_run(urls["sqlite"]) == rows_per_run(urls["postgresql"])


@pytest.mark.subprocess
def test_db_copy_both_ways_keeps_every_run_and_reads_the_same(
        benched: dict[str, str], pg_server: PostgresServer, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """SQLite -> PostgreSQL -> SQLite: every finished run with its rows, the report unchanged (times included: they
    are the same runs), and a second copy adds nothing."""
    original = benched["sqlite"]
    n_runs = len(rows_per_run(original))
    there, back = pg_server.new_database(), f"sqlite:///{tmp_path / 'back.sqlite'}"
    for src, dst in ((original, there), (there, back)):
        copied = json.loads(cli(capsys, "db", "copy", src, dst, "--json"))
        assert len(copied["copied"]) == n_runs and copied["already_there"] == [] and copied["left_out"] == []
        assert [run["rows"] for run in copied["copied"]] == rows_per_run(src) == rows_per_run(dst)
        assert copied["rows"] == sum(rows_per_run(original))
        assert report(capsys, dst, "created") == report(capsys, original, "created")
        again = json.loads(cli(capsys, "db", "copy", src, dst, "--json"))
        assert again["copied"] == [] and len(again["already_there"]) == n_runs
        assert rows_per_run(dst) == rows_per_run(src)
    assert "copied 0 run(s)" in cli(capsys, "db", "copy", there, back)


def spec(**changes: object) -> RunSpec:
    base = dict(kind="main", arch="rtp", subset="G1_instruction", k=5, run_index=0, registry_name="small",
                registry_size=10, registry_hash="abc", embedding_model="fake", llm_backend="offline",
                llm_model="offline-heuristic", backend_label="offline heuristic, not an LLM",
                discovery_prompt_version="d1", planner_prompt_version="p1")
    return RunSpec(**{**base, **changes})


def row(run_id: int, i: int, **changes: object) -> dict:
    return {"run_id": run_id, "query_uid": f"G1_instruction:{i}", "subset": "G1_instruction", "query_id": i, "k": 5,
            "recall_api_list": 0.5, **changes}


def test_copy_leaves_unfinished_runs_out_and_maps_source_runs(new_store: Callable[[str], str]) -> None:
    """A running run (and the run built on it) stays behind; a k sweep's source run points at DST's copy."""
    src_url, dst_url = new_store("sqlite"), new_store("postgresql")
    src = Store(src_url)
    main = src.start_run(spec(), 2, "c")
    src.add_results([row(main, 1), row(main, 2)])
    src.finish_run(main)
    sweep = src.start_run(spec(kind="ksweep", k=3, source_run_id=main), 2, "c")
    src.add_results([row(sweep, 1, k=3)])
    src.finish_run(sweep)
    running = src.start_run(spec(arch="ptr"), 2, "c")
    src.add_results([row(running, 1)])
    built_on_running = src.start_run(spec(kind="ksweep", arch="ptr", k=3, source_run_id=running), 0, "c",
                                     status="skipped")
    src.close()
    Store(dst_url).close()
    query(dst_url, "INSERT INTO runs (kind, arch, subset, k, run_index, registry_name, registry_size, registry_hash, "
                   "embedding_model, llm_backend, llm_model, backend_label, discovery_prompt_version, "
                   "planner_prompt_version, git_commit, n_queries, status, config, started_at) VALUES ('other', 'rtp', "
                   "'G1_instruction', 5, 0, 'x', 1, 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 0, 'complete', '{}', "
                   "'2026-01-01 00:00:00+00')")  # DST's own run: its id 1 is taken, so ids shift
    done = copy_runs(src_url, dst_url)
    assert [run.source_id for run in done.copied] == [main, sweep] and [run.rows for run in done.copied] == [2, 1]
    assert done.left_out == (running, built_on_running) and done.already_there == ()
    target = {run.id: run for run in Store(dst_url).runs()}
    main_copy, sweep_copy = (target[run.target_id] for run in done.copied)
    assert main_copy.id != main and sweep_copy.spec.source_run_id == main_copy.id
    assert copy_runs(src_url, dst_url).already_there == (main, sweep)
    with pytest.raises(ValueError, match="the same database"):
        copy_runs(dst_url, dst_url)


def test_strings_postgresql_refuses_are_stored_alike_on_both(db_url: str) -> None:
    """NUL characters are dropped everywhere (JSON too) and a string longer than its column is cut with a marker,
    on both stores, and the uncut spec still finds its run."""
    long_model = "m" * 250
    stored_model = "m" * (200 - len(TRUNCATED)) + TRUNCATED
    asked = spec(llm_model=long_model, backend_label="label\x00end")
    store = Store(db_url)
    run_id = store.start_run(asked, 1, "abc\x00123", {"limit\x00": "a\x00b"})
    store.add_results([row(run_id, 1, stub_error="stub\x00failed", error="Value\x00Error",
                           hits=[{"tool_name": "T\x00", "api_name": "a\x00b", "score": 0.5}])])
    store.finish_run(run_id, "complete", "resumed\x00 once")
    found = store.find_run(asked)
    assert found is not None and found.id == run_id
    assert found.spec.llm_model == stored_model and len(found.spec.llm_model) == 200
    assert found.spec.backend_label == "labelend" and found.git_commit == "abc123" and found.note == "resumed once"
    assert store.latest_complete("main", "rtp", "G1_instruction", llm_model=long_model)[0].id == run_id
    assert store.results(run_id, ("query_uid", "stub_error", "error", "hits")) == [
        {"query_uid": "G1_instruction:1", "stub_error": "stubfailed", "error": "ValueError",
         "hits": [{"tool_name": "T", "api_name": "ab", "score": 0.5}]}]
    assert ResultsReader(db_url).runs()["config"].tolist() == [{"limit": "ab"}]
    assert (query(db_url, "SELECT llm_model, backend_label, git_commit FROM runs")
            == [(stored_model, "labelend", "abc123")])
    store.close()


@pytest.mark.parametrize("kind", STORES)
def test_the_app_charts_follow_the_complete_runs(new_store: Callable[[str], str], kind: str) -> None:
    """The charts' and model-size table's cache key is the store's complete runs: a finished bench shows on the next
    page load (PostgreSQL has no file whose time changes), and rows a bench under way writes do not rebuild them on
    every rerun (the SQLite file's time did: the Overview recomputed its tables each time)."""
    url = new_store(kind)
    settings = Settings.from_env(env={"DATABASE_URL": url, "LLM_BACKEND": "offline"})
    store = Store(url)
    assert db_version(settings) == ()
    run_id = store.start_run(spec(), 2, "c")
    store.add_results([row(run_id, 1)])
    assert db_version(settings) == ()
    store.finish_run(run_id)
    assert db_version(settings) == (run_id,)
    other = store.start_run(spec(arch="ptr"), 2, "c")
    store.add_results([row(other, 1)])
    assert db_version(settings) == (run_id,)
    store.close()


def test_run_means_are_the_same_bits_on_both_stores(new_store: Callable[[str], str]) -> None:
    """Two runs' rows written interleaved, as the runner commits them: PostgreSQL's AVG adds a run's values in
    another order than SQLite's and differs in the last bits; the reader's exact means do not."""
    rng = random.Random(14)
    values = {arch: [rng.random() for _ in range(300)] for arch in ("rtp", "ptr")}
    tables = []
    for kind in STORES:
        url = new_store(kind)
        store = Store(url)
        ids = {arch: store.start_run(spec(arch=arch), 300, "c") for arch in values}
        store.add_results([row(ids[arch], i, recall_api_list=values[arch][i], precision_api_list=values[arch][i] / 5)
                           for i in range(300) for arch in values])
        for run_id in ids.values():
            store.finish_run(run_id)
        store.close()
        tables.append(ResultsReader(url).main_table())
    pd.testing.assert_frame_equal(tables[0], tables[1], check_exact=True)
    recall = tables[0].set_index("metric").loc["recall"]
    assert abs(recall["rtp_mean"] - math.fsum(values["rtp"]) / 300) < 2 ** -40
    assert abs(recall["ptr_mean"] - math.fsum(values["ptr"]) / 300) < 2 ** -40


def test_run_means_are_exact(db_url: str) -> None:
    """Ten recalls of 0.1 mean 0.1, not the 0.09999999999999999 that adding them up in floating point gives."""
    assert sum([0.1] * 10) / 10 != 0.1
    store = Store(db_url)
    for arch in ("rtp", "ptr"):
        run_id = store.start_run(spec(arch=arch), 10, "c")
        store.add_results([row(run_id, i, recall_api_list=0.1, precision_api_list=0.7) for i in range(10)])
        store.finish_run(run_id)
    store.close()
    means = ResultsReader(db_url).main_table().set_index("metric")
    assert means.loc["recall", "rtp_mean"] == means.loc["recall", "ptr_mean"] == 0.1
    assert means.loc["precision", "rtp_mean"] == 0.7


def declared_measures_row(rng: random.Random, run_id: int, i: int) -> dict:
    """A row whose every column the run means read is drawn from values that reach each branch of their
    declarations: NULLs, a plan or none, misses (recall 0) with and without APIs named or a refusal."""
    planned = rng.random() < 0.8
    plan = {"plan_steps": rng.choice((0, 1, 3)), "plan_apis_named": rng.choice((0, 1, 2)),
            "plan_refusal": rng.random() < 0.3, "plan_parse_error": rng.random() < 0.2,
            "plan_fidelity": rng.choice((None, 0.0, 1 / 3, 0.5, 1.0)),
            "plan_selection_rate": rng.choice((0.0, 0.25, 2 / 3)),
            "plan_pass_api_list": rng.random() < 0.5, "plan_pass_relevant": rng.random() < 0.5} if planned else {}
    recall = {f"recall_{gold}": rng.choice((None, 0.0, 0.0, 0.1, 1 / 3, 0.5, 1.0)) for gold in GOLD_DEFINITIONS}
    precision = {f"precision_{gold}": rng.choice((0.0, 0.2, 0.4, 1.0)) for gold in GOLD_DEFINITIONS}
    return row(run_id, i, **recall, **precision,
               **{f"hit_{gold}": float(bool(recall[f"recall_{gold}"])) for gold in GOLD_DEFINITIONS},
               same_as_rtp=rng.choice((None, True, False)), rtp_overlap=rng.choice((None, 0, 2, 5)), **plan)


def test_every_declared_run_mean_is_the_same_bits_in_sql_and_in_python(db_url: str) -> None:
    """Every branch of each mean core.evaluation.run_means declares: the reader's SQL on this store and the
    declaration's Python over the same rows give the same bits (or both none)."""
    rng = random.Random(24)
    store = Store(db_url)
    for arch in ("rtp", "ptr"):
        run_id = store.start_run(spec(arch=arch), 60, "c")
        store.add_results([declared_measures_row(rng, run_id, i) for i in range(60)])
        store.finish_run(run_id)
    store.close()
    differ, defined = run_means_both_ways(db_url)
    assert not differ, "\n".join(differ)
    declared = {name for gold in GOLD_DEFINITIONS for name in {**RUN_MEANS, **trajectory_means(gold)}}
    assert defined == declared, f"never defined: {sorted(declared - defined)}"
