"""Every dashboard page under streamlit's AppTest, on tiny data with the real MiniLM model.

`build_app_env` writes a tiny ToolBench directory (conftest's APIs plus one with a hostile
description) and a results database filled by the real benchmark runner (fake encoder, offline
agents), so pages render real reader output in a second. The browser test reuses it.
"""
from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.agents.factory import Agents
from core.agents.llm import LLMError
from core.agents.planner import LLMPlanner
from core.agents.stubs import LLMStubWriter
from core.analysis.compare import Side, summarise
from core.analysis.reader import ResultsReader
from core.retrieval.records import Stub
from core.settings import BOUNDS, PROJECT_ROOT, Settings
from core.store.store import Store
from core.study.edited_stubs import EDITED, to_param
from tests.fake_llm_servers import ModeServer, Scripted, openai_ok
from tests.helpers import APIS, APP, EVIL_DESCRIPTION, MAIN_K, QUERIES, SCRUBBED, TIMEOUT_S, build_app_env
from ui.widgets import GOLD_BADGE

pytestmark = pytest.mark.pages  # every test here runs pages under Streamlit's AppTest


@pytest.fixture(scope="module")
def app_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    env = build_app_env(tmp_path_factory.mktemp("app"))
    with pytest.MonkeyPatch.context() as mp:
        for key in SCRUBBED:
            mp.delenv(key, raising=False)
        for key, value in env.items():
            mp.setenv(key, value)
        yield env


@pytest.fixture(scope="module")
def index_ready(app_env: dict[str, str]) -> None:
    """The tiny index built once (real model, 11 documents) before page tests that need it."""
    from ui.index_job import index_job

    job = index_job(Settings.from_env())
    assert job.wait(120) and job.ready, job.error


def page(path: str, params: dict[str, str] | None = None, state: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    if path != "app.py":
        at.run()
        at.switch_page(path)
    at.query_params.update(params or {})
    for key, value in (state or {}).items():
        at.session_state[key] = value
    return at.run()


def texts(at: AppTest, kind: str) -> list[str]:
    return [str(e.value) for e in getattr(at, kind)]


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def markdown_everywhere(at: AppTest) -> str:
    return "\n".join([*texts(at, "markdown"), *texts(at, "caption"), *(e.label for e in at.expander),
                      *texts(at, "warning"), *texts(at, "error"), *texts(at, "info"), *texts(at, "success")])


# ---------------------------------------------------------------- overview and app frame

def test_overview_shows_explanation_chart_and_status_and_no_llm_banner(app_env, index_ready) -> None:
    at = page("app.py")
    no_exception(at)
    assert at.title[0].value == "Tool Discovery Lab"
    assert not any("No LLM is configured" in w for w in texts(at, "warning"))  # the Inspector's banner, not here
    assert len(at.get("plotly_chart")) == 3  # PtR - RtP per subset, per registry, and the model-size answer
    headline = json.loads(at.get("plotly_chart")[0].proto.spec)
    ours, theirs = headline["data"][0], headline["data"][-1]
    assert {t["type"] for t in headline["data"]} == {"bar"} and theirs["name"] == "paper: Gemini 2.5 Flash (gte-base)"
    assert ours["error_y"]["visible"] and ours["x"][0] == "G1_instruction"
    assert theirs["y"][0] == pytest.approx(-0.083) and not theirs["error_y"]["visible"]  # the paper's G1, no interval
    assert "PtR − RtP" in headline["layout"]["title"]["text"]
    assert any("paired bootstrap 95% intervals" in t for t in texts(at, "caption"))
    bars = json.loads(at.get("plotly_chart")[1].proto.spec)["data"]
    assert bars[0]["x"] == ["ToolBench"]  # PtR - RtP per registry: the only one this store holds
    assert bars[1]["x"] == ["paper: ToolBench"] and bars[1]["y"] == [pytest.approx(-0.083)]  # the paper's G1
    # Coupling is measured on demand (every query embedded once), then kept: the button draws it.
    assert any("measured once per clone" in t for t in texts(at, "info"))
    at = at.button(key="measure_coupling").click().run()
    no_exception(at)
    coupling = json.loads(at.get("plotly_chart")[2].proto.spec)
    assert "Coupling" in coupling["layout"]["title"]["text"] and coupling["data"][0]["x"]
    at = page("app.py")  # kept: a later visit draws it at once
    assert not any("measured once per clone" in t for t in texts(at, "info")) and len(at.get("plotly_chart")) == 4
    status = at.dataframe[-1].value.set_index("")["status"]
    assert status["Registry"] == f"full · {len(APIS)} APIs" and "offline heuristic" in status["LLM backend"]
    assert re.match(r"\d+ complete runs \(.*main \d+", status["Results"])
    assert at.sidebar.radio[0].value == "full" and at.sidebar.slider[0].value == 5
    shown = BOUNDS["k"].shown  # tests/test_input_checks.py asks every other reader of k's range
    assert (at.sidebar.slider[0].min, at.sidebar.slider[0].max) == (shown.low, shown.high)


def test_the_banner_names_the_installed_local_models_and_how_to_pick_one(app_env, monkeypatch, tmp_path) -> None:
    from core.local_models import GEMMA_270M

    monkeypatch.setattr("core.agents.llm.local_model.WHEELS_DIR", tmp_path / "no-wheels")
    (Path(app_env["CACHE_DIR"]) / "models").mkdir(parents=True, exist_ok=True)
    (Path(app_env["CACHE_DIR"]) / "models" / GEMMA_270M.file).write_bytes(b"")  # present: verified only on use
    at = page("app_pages/inspector.py")
    [banner] = [w for w in texts(at, "warning") if "No LLM is configured" in w]
    assert GEMMA_270M.label in banner and "backend picker" in banner and banner.count("\n") == 0
    (Path(app_env["CACHE_DIR"]) / "models" / GEMMA_270M.file).unlink()
    at = page("app_pages/inspector.py")
    [banner] = [w for w in texts(at, "warning") if "No LLM is configured" in w]
    assert "No local model is installed" in banner and "make llm" in banner


def test_a_cache_dir_that_cannot_be_a_folder_is_one_line(app_env, monkeypatch) -> None:
    monkeypatch.setenv("CACHE_DIR", "/proc/self/nope")
    at = page("app.py")
    no_exception(at)
    assert any("CACHE_DIR /proc/self/nope cannot be created" in e.replace("\\", "") for e in texts(at, "error"))


def test_a_corrupt_results_database_gives_one_sentence_and_what_to_do(app_env, monkeypatch, tmp_path) -> None:
    """Issue 23: five pages showed SQLAlchemy's raw error with its help link for a database damaged in the middle."""
    # A copy through SQLite's backup API: open() and close() of the live file itself in this process would drop
    # SQLite's POSIX locks on it, and the next process to close it would then delete the WAL under our connections.
    stored, copy = Path(app_env["DATABASE_URL"].removeprefix("sqlite:///")), tmp_path / "copy.sqlite"
    with sqlite3.connect(stored) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    blob = bytearray(copy.read_bytes())
    blob[len(blob) // 2: len(blob) // 2 + 8192] = b"\xab" * 8192
    (tmp_path / "corrupt.sqlite").write_bytes(bytes(blob))
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'corrupt.sqlite'}")
    for path in ("app.py", "app_pages/results.py", "app_pages/examples.py", "app_pages/stubs.py"):
        at = page(path)
        no_exception(at)
        errors = texts(at, "error")
        assert errors, path
        assert not any("sqlalche.me" in e or "Background on this error" in e for e in errors), (path, errors)
        assert any("Restore the committed results" in e for e in errors), (path, errors)


def test_missing_data_dir_and_database_give_messages_not_tracebacks(app_env, monkeypatch) -> None:
    monkeypatch.setenv("TOOLBENCH_DATA", "/nonexistent")
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{Path(app_env['CACHE_DIR']).parent / 'missing.sqlite'}")
    for path in ("app.py", "app_pages/inspector.py", "app_pages/results.py", "app_pages/examples.py",
                 "app_pages/stubs.py", "app_pages/registry.py"):
        at = page(path)
        no_exception(at)
        shown = markdown_everywhere(at)
        assert "No ToolBench data found" in shown or "No results yet" in shown, (path, shown)


def test_bad_setting_is_reported(app_env, monkeypatch) -> None:
    monkeypatch.setenv("REGISTRY", "huge")
    at = page("app.py")
    no_exception(at)
    assert "Configuration error" in texts(at, "error")[0]


def test_empty_database_says_how_to_fill_it(app_env, tmp_path, monkeypatch) -> None:
    Store(f"sqlite:///{tmp_path / 'empty.sqlite'}").close()  # schema, no runs
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'empty.sqlite'}")
    at = page("app_pages/results.py")
    no_exception(at)
    assert "bench all" in texts(at, "info")[0]


# ---------------------------------------------------------------- Query Inspector

def test_free_text_query_fills_both_columns_and_the_url(app_env, index_ready) -> None:
    at = page("app_pages/inspector.py")
    no_exception(at)
    assert "Type a request" in texts(at, "info")[0]
    assert any("offline heuristic" in w for w in texts(at, "warning"))  # app.py's frame ran around the page
    at.text_area[0].input("Find hotels in Paris and convert 200 EUR to USD").run()
    no_exception(at)
    assert [s.value for s in at.subheader] == ["RtP · Retrieve-then-Plan", "PtR · Plan-then-Retrieve",
                                               "Hybrid · PtR's stubs + the raw query (beyond the paper)",
                                               "RtP and PtR compared"]  # free text: no gold, the top-k diff only
    assert len(at.expander) == 3 * 5  # k=5 hits per column and for the hybrid, each with its description
    diff_titles = [m.value for m in at.markdown if m.value.startswith("*Shared") or m.value.startswith("*Only")]
    assert len(diff_titles) == 3
    assert at.query_params["q"] == "Find hotels in Paris and convert 200 EUR to USD" and at.query_params["k"] == "5"
    shown = markdown_everywhere(at)
    assert "stubs" in shown and "Planner" in shown and "top-1 cosine" in shown


# A later server's first answer to a shared ?q= link, in a process of its own: which heavy modules did it import?
SHARED_LINK_RUN = """
import json, sys
from core.settings import Settings
from ui.index_job import index_job
assert index_job(Settings.from_env()).wait(120)
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(sys.argv[1], default_timeout=120)
at.switch_page("app_pages/inspector.py")
at.query_params["q"] = sys.argv[2]
at.run()
print(json.dumps({"exceptions": [str(e.value) for e in at.exception], "errors": [str(e.value) for e in at.error],
                  "router": any("Adaptive router" in str(i.value) for i in at.info),
                  "columns": [s.value for s in at.subheader][:2],
                  "imported": sorted(m for m in ("pandas", "scipy.stats", "faiss") if m in sys.modules)}))
"""


@pytest.mark.subprocess
def test_a_shared_free_text_link_is_answered_without_pandas(app_env, index_ready) -> None:
    """The sidebar's studies and the router's fit come from core.analysis.store_summary: once a server has kept the
    fit, the next server's first ?q= answer never imports pandas (its import was 2-4 s of that answer here), nor
    scipy.stats or FAISS (exact search needs neither)."""
    text = "Find hotels in Paris and convert 200 EUR to USD"
    first = page("app_pages/inspector.py", {"q": text})
    no_exception(first)
    assert any("Adaptive router" in i for i in texts(first, "info"))
    run = subprocess.run([sys.executable, "-c", SHARED_LINK_RUN, str(APP), text], cwd=PROJECT_ROOT,
                         env=dict(os.environ), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report == {"exceptions": [], "errors": [], "router": True,
                      "columns": ["RtP · Retrieve-then-Plan", "PtR · Plan-then-Retrieve"], "imported": []}


def test_the_local_backend_is_offered_and_says_why_it_cannot_run(app_env, index_ready, monkeypatch,
                                                                  tmp_path) -> None:
    """A local model that is not there: RtP still answers, and the page says what is wrong in one line."""
    monkeypatch.setenv("LOCAL_MODEL", str(tmp_path / "missing.gguf"))
    at = page("app_pages/inspector.py", {"q": "Find hotels in Paris", "backend": "local"})
    no_exception(at)
    picker = at.selectbox[0]  # options as labelled: the configured backend, LOCAL_MODEL's file, the installed models
    assert (picker.options[:2] == ["offline heuristic (not an LLM)", "local · missing"]
            and picker.value == "local:missing")
    assert all(o.startswith("local · ") for o in picker.options[2:])
    assert [s.value for s in at.subheader][0] == "RtP · Retrieve-then-Plan" and len(at.expander) >= 5
    [message] = [e.replace("\\", "") for e in texts(at, "error") if "local · missing cannot run" in e]
    assert "LOCAL_MODEL points at" in message and "missing.gguf, which is not a file" in message


def test_url_restores_a_stored_benchmark_view_with_gold_marks(app_env) -> None:
    at = page("app_pages/inspector.py", {"qid": "G1_instruction:1", "k": str(MAIN_K)})
    no_exception(at)
    assert at.radio[0].value == "Benchmark query" and at.slider[0].value == MAIN_K
    assert (at.slider[0].min, at.slider[0].max) == (BOUNDS["k"].shown.low, BOUNDS["k"].shown.high)
    assert "Stored benchmark outputs" in texts(at, "success")[0]
    labels = [e.label for e in at.expander]
    assert any(GOLD_BADGE in label and "Hotels/search hotels" in label for label in labels)
    assert "recall@3" in markdown_everywhere(at)
    assert at.query_params["qid"] == "G1_instruction:1"
    headers = [s.value for s in at.subheader]
    assert headers[-2].startswith("Hybrid")  # the stored hybrid run, under the columns
    assert headers[-1] == "Gold APIs: found, missed, and why"
    [scores] = [d.value for d in at.dataframe if "architecture" in d.value.columns]
    assert scores["architecture"].tolist() == ["RtP", "PtR", "hybrid"]
    assert list(scores.columns[1:]) == [f"{m}@{MAIN_K}" for m in ("recall", "precision", "hit", "MRR", "nDCG")]
    [both] = [d.value for d in at.dataframe if "relevant" in d.value.columns and "api_list" in d.value.columns]
    assert set(both["API"]) == {"Hotels/search hotels", "Hotels/hotel details"}
    [verdict] = [t for t in texts(at, "info") if "Adaptive router" in t]
    assert "this query would go to" in verdict and "stored queries" in verdict


def test_the_inspector_explains_each_gold_api_with_its_ranks(app_env, index_ready) -> None:
    """With the index loaded, every gold API gets its rank in each architecture, cosines and a verdict."""
    at = page("app_pages/inspector.py", {"qid": "G2_instruction:4", "k": str(MAIN_K)}, state={"gold": "relevant"})
    no_exception(at)
    [trace] = [d.value for d in at.dataframe if "why" in getattr(d.value, "columns", [])]
    query = next(q for q in QUERIES if q.uid == "G2_instruction:4")
    assert sorted(trace["API"]) == sorted(f"{t.strip()}/{a.strip()}" for t, a in query.relevant_apis)
    assert {"RtP rank", "PtR rank", "hybrid rank", "cos(query)", "cos(best stub)", "document"} <= set(trace.columns)
    assert all(r.isdigit() for r in trace["RtP rank"])  # 11 APIs in the registry, searched 100 deep: all ranked
    assert all(v.startswith(("found by", "near miss", "beyond rank")) for v in trace["why"])
    assert f"appear in no top {MAIN_K}" in markdown_everywhere(at)


def test_a_query_too_long_for_a_link_says_the_link_omits_it(app_env, index_ready) -> None:
    at = page("app_pages/inspector.py")
    at.text_area[0].input("find hotels " * 300).run()
    no_exception(at)
    assert "q" not in at.query_params
    assert any("The link omits this query" in w for w in texts(at, "warning"))
    assert "URL reproduces it" not in markdown_everywhere(at)


def test_recompute_live_runs_the_pipeline(app_env, index_ready) -> None:
    at = page("app_pages/inspector.py", {"qid": "G2_instruction:4", "k": "5"})
    [recompute] = [b for b in at.button if b.label == "Recompute live"]
    recompute.click().run()
    no_exception(at)
    assert not texts(at, "success") and "Computed live" in markdown_everywhere(at)
    assert any(GOLD_BADGE in e.label for e in at.expander)


@pytest.mark.parametrize("params, message", [
    ({"qid": "G1_instruction:99999"}, "no benchmark query"),
    ({"qid": "garbage"}, "not of the form"),
    ({"qid": "G1_instruction:" + "9" * 5000}, "not of the form"),  # past Python's 4,300-digit limit: no exception box
    ({"q": "hotels", "k": "500"}, "not a whole number"),
    ({"q": "hotels", "backend": "gemini"}, "not configured"),
])
def test_bad_url_parameters_show_a_message(app_env, index_ready, params, message) -> None:
    at = page("app_pages/inspector.py", params)
    no_exception(at)
    assert any(message in w for w in texts(at, "warning")), texts(at, "warning")


def test_oversized_query_is_refused_politely(app_env, index_ready) -> None:
    at = page("app_pages/inspector.py")
    at.text_area[0].input("x" * 100_001).run()
    no_exception(at)
    assert any("limit is 100,000" in w for w in texts(at, "warning"))
    assert "q" not in at.query_params  # too long for a link, but the page still works


class FailingClient:
    backend = "gemini"
    model = "gemini-test"

    def generate(self, prompt: str, *, schema=None, temperature: float = 0.0):
        raise LLMError("server", "upstream exploded")


def test_llm_failure_mid_query_keeps_rtp(app_env, index_ready, monkeypatch) -> None:
    """A failing LLM: PtR falls back to the raw query, the planners report errors, RtP shows in full."""
    monkeypatch.setattr("core.study.one_query.make_agents", lambda settings, retriever, use_cache=True: Agents(
        LLMStubWriter(FailingClient()), LLMPlanner(FailingClient(), retriever.registry.get)))
    at = page("app_pages/inspector.py", {"q": "Tell me a random joke about football"})
    no_exception(at)
    assert len(at.expander) == 15
    labels = [e.label for e in at.expander]
    assert labels[10:] == labels[:5]  # with fallback stubs the hybrid searches the query alone: RtP's hits
    shown = markdown_everywhere(at)
    assert "fell back to the raw query" in shown and "upstream exploded" in shown


def test_a_stage_that_runs_out_of_time_is_named_on_the_page(app_env, index_ready, monkeypatch) -> None:
    """A hanging server and a 1 s budget per stage: each stage says that it, by name, ran out of time."""
    from core.agents.llm.openai_compat import OpenAICompatClient

    with ModeServer(Scripted(200, openai_ok("{}").body, delay_s=30)) as server:
        client = OpenAICompatClient(f"{server.url}/v1", "fake-model", timeout_s=60)
        monkeypatch.setattr("core.study.one_query.make_agents", lambda settings, retriever, use_cache=True: Agents(
            LLMStubWriter(client, budget_s=1), LLMPlanner(client, retriever.registry.get, budget_s=1)))
        at = page("app_pages/inspector.py", {"q": "A hotel in Lisbon and the weather there"})
    no_exception(at)
    shown = (markdown_everywhere(at) + " ".join(texts(at, "warning") + texts(at, "error"))).replace("\\", "")
    for stage in ("PtR's stub writing ran out of time", "RtP's planner ran out of time",
                  "PtR's planner ran out of time"):
        assert stage in shown
    assert "time budget of 1 s" in shown


def test_unexpected_ptr_crash_is_contained_to_its_column(app_env, index_ready, monkeypatch) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("stub writer crashed")

    monkeypatch.setattr("core.study.one_query.make_agents", broken)
    at = page("app_pages/inspector.py", {"q": "Weather forecast for a city and a joke"})
    no_exception(at)
    assert len(at.expander) == 5  # RtP's hits
    assert any("stub writer crashed" in e for e in texts(at, "error"))


def test_hostile_description_is_shown_as_text(app_env, index_ready) -> None:
    at = page("app_pages/inspector.py", {"q": "render page widget evil", "k": "11"})
    no_exception(at)
    assert any(EVIL_DESCRIPTION in t for t in texts(at, "text"))
    shown = markdown_everywhere(at)
    assert "<script>" not in shown and "![pwn](" not in shown and ":red[" not in shown
    assert any("Evil Widget/render page" in e.label for e in at.expander)


# ---------------------------------------------------------------- results, examples, stubs, registry

RESULT_TABS = ["Main table", "k sweep", "Scaling", "Per query", "Beyond the paper", "Leaderboard", "Model size",
               "Token cost", "Planner", "Retrievers", "Runs"]


def test_results_page_renders_only_the_open_tab_named_in_the_url(app_env) -> None:
    at = page("app_pages/results.py", state={"gold": "relevant"})
    no_exception(at)
    assert len(at.tabs) == len(RESULT_TABS)
    assert "gold relevant" in markdown_everywhere(at)
    first = [d.value.columns.tolist() for d in at.dataframe]
    assert any("PtR − RtP" in columns for columns in first)  # the main tab's tables, and no other tab's
    assert "p-value" not in first[1] and "test" not in first[1]  # one deterministic run: no run-level test
    assert not any("hybrid_recall" in columns or "size" in columns for columns in first)
    charts = tables_seen = downloads = 0
    for label in RESULT_TABS:
        at = page("app_pages/results.py", {"tab": label}, state={"gold": "relevant"})
        no_exception(at)
        charts += len(at.get("plotly_chart"))
        tables_seen += len(at.dataframe)
        downloads += len(at.get("download_button"))
        assert {b.label for b in at.get("download_button")} <= {"CSV", "JSON"}
        if label == "Beyond the paper":
            [hybrid] = [d.value for d in at.dataframe if "hybrid_recall" in d.value.columns]
            assert hybrid["subset"].tolist() == ["G1_instruction", "G2_instruction", "all"]
            assert hybrid["n"].iloc[-1] == len(QUERIES) and hybrid["hybrid_recall"].between(0, 1).all()
            [router_table] = [d.value for d in at.dataframe if "router_recall" in d.value.columns]
            assert router_table["subset"].tolist()[-1] == "all" and router_table["n"].iloc[-1] == len(QUERIES)
            assert "Spearman" in markdown_everywhere(at)
        if label == "Token cost":  # the offline heuristic spends nothing: said, and the paper's figures shown
            assert any("spends no tokens" in t for t in texts(at, "info"))
            [figures_table] = [d.value for d in at.dataframe if "figure" in d.value.columns]
            assert "PtR token overhead over RtP" in figures_table["figure"].tolist()
        if label == "Planner":
            assert "wrong_tool_rate" in markdown_everywhere(at) and "complete misses" in markdown_everywhere(at)
        if label == "Per query":
            [listing] = [d.value for d in at.dataframe if "inspect" in d.value.columns]
            assert set(listing["subset"]) == {"G1_instruction"} and listing["query"].str.len().min() > 0
            assert listing["inspect"].iloc[0].startswith("inspector?qid=G1_instruction:")
        if label == "Leaderboard":
            [board] = [d.value for d in at.dataframe if "G1_instruction 95% CI" in d.value.columns]
            systems = board["system"].tolist()
            assert "offline heuristic, not an LLM" in systems and "paper: Gemini 2.5 Flash (gte-base)" in systems
            ours = board[board["system"] == "offline heuristic, not an LLM"]
            assert ours["architecture"].tolist() == ["RtP", "PtR", "hybrid (beyond the paper)"]
            assert ours["G1_instruction 95% CI"].str.match(r"^\[\d\.\d{3}, \d\.\d{3}\]$").all()
            assert set(ours["gold"]) == {"relevant"} and set(ours["llm_backend"]) == {"offline"}
            assert "decomposition or the model" in markdown_everywhere(at)
    assert charts >= 7 and tables_seen >= 10 and downloads >= 18


def test_examples_page_filters_and_links_to_the_inspector(app_env) -> None:
    at = page("app_pages/examples.py")
    no_exception(at)
    table = at.dataframe[0].value
    assert len(table) == len(QUERIES) and table["query"].str.len().min() > 0
    assert table["inspect"].iloc[0].startswith("inspector?qid=G1_instruction:1&k=")
    at.text_input[0].input("weather").run()
    no_exception(at)
    assert set(at.dataframe[0].value["query_id"]) == {3, 5}


def test_stubs_page(app_env) -> None:
    at = page("app_pages/stubs.py")
    no_exception(at)
    assert [s.value for s in at.subheader][:2] == ["Stub statistics per subset",
                                                    "Does a stub's top-1 cosine tell a right match from a wrong one?"]
    assert len(at.get("plotly_chart")) == 1 and len(at.dataframe) >= 1


def test_registry_page_search_categories_and_map(app_env, index_ready) -> None:
    at = page("app_pages/registry.py", {"q": "Find hotels and the weather"})
    no_exception(at)
    assert len(at.dataframe[0].value) == len(APIS)
    at.text_input(key="reg_search").input("JOKE").run()
    assert set(at.dataframe[0].value["tool"]) == {"Jokes"}
    assert at.text_input(key="q").value == "Find hotels and the weather"
    kinds = set(at.dataframe[-1].value["kind"])
    assert kinds >= {"query", "stub", "rtp", "ptr"}
    assert len(at.get("plotly_chart")) == 1  # the map: the Categories tab runs only when it is open
    cats = page("app_pages/registry.py", {"reg_tab": "Categories"})
    no_exception(cats)
    assert len(cats.get("plotly_chart")) == 2
    assert any(c.value.startswith(f"{len({a.category for a in APIS})} categories") for c in cats.caption)


def test_documented_registry_choice_reaches_the_pages(app_env, index_ready) -> None:
    at = page("app_pages/registry.py", state={"registry": "documented"})
    no_exception(at)
    assert "documented registry" in markdown_everywhere(at)



def test_scaling_tab_shows_the_distractor_scale_and_the_index_table(app_env) -> None:
    """The distractors study (labelled synthetic) beside the real scaling curve, and the committed index benchmark
    (data/index_scale.json) with its sweeps and the distractors' distribution check."""
    from core.data.registry import Registry
    from core.retrieval.discovery import Retriever
    from core.retrieval.index import VectorIndex
    from core.study.distractors import run_distractors
    from tests.helpers import APIS, FakeEncoder, bench_context

    encoder = FakeEncoder()
    retriever = Retriever(Registry("full", APIS), encoder, VectorIndex(encoder.encode([a.document for a in APIS])))
    store = Store(app_env["DATABASE_URL"])
    run_distractors(bench_context(store, retriever, QUERIES), sizes=(len(APIS) + 30,), seeds=2, k=MAIN_K)
    store.close()
    at = page("app_pages/results.py", {"tab": "Scaling"})
    no_exception(at)
    [far] = [d.value for d in at.dataframe if "synthetic_distractors" in d.value.columns]
    assert set(far["registry"]) == {"real", "real + synthetic distractors"}
    assert set(far.loc[far["registry"] != "real", "runs"]) == {2}
    [index] = [d.value for d in at.dataframe if "batch_qps" in d.value.columns]
    assert set(index["index"]) == {"flat", "hnsw", "ivf"}
    assert index["registry"].str.contains("synthetic distractors").any() and (index["registry"] == "real").any()
    assert index["recall_at_5_vs_exact"].between(0, 1).all() and (index["p50_ms"] > 0).all()
    assert (index.loc[index["index"] == "flat", "recall_at_5_vs_exact"] == 1.0).all()
    assert any("hnsw_ef_search" in set(d.value.get("parameter", [])) for d in at.dataframe)
    assert "SYNTHETIC" in markdown_everywhere(at)
    figures_json = [chart.proto.spec for chart in at.get("plotly_chart")]
    assert any("SYNTHETIC distractors" in spec for spec in figures_json)


def test_a_declared_architecture_appears_on_the_inspector_with_no_page_edit(app_env, index_ready,
                                                                           monkeypatch) -> None:
    from core.retrieval import archs
    from tests.helpers import WIDE

    monkeypatch.setitem(archs.ARCHS_BY_NAME, WIDE.name, WIDE)
    at = page("app_pages/inspector.py", {"q": "Find hotels in Paris and convert 200 EUR to USD", "k": "3"})
    no_exception(at)
    headings = [s.value for s in at.subheader]
    assert headings[:4] == ["RtP · Retrieve-then-Plan", "PtR · Plan-then-Retrieve",
                            "Hybrid · PtR's stubs + the raw query (beyond the paper)", WIDE.title]
    assert WIDE.caption in texts(at, "caption")
    assert len(at.expander) == 4 * 3  # k=3 hits in each of the four architectures
    assert any("RtP@2k hits" in c for c in texts(at, "caption"))  # the stage times name it too


# ---------------------------------------------------------------- probing one query (issue 33)

PROBE_QID = "G2_instruction:4"
HOSTILE = Stub("render_page", "**bold** <b>x</b> ![img](http://evil.example/x.png) :red[red] " + "y" * 50_000)


def test_every_stored_system_shows_each_systems_stubs_hits_and_the_gold_none_found(app_env, index_ready) -> None:
    at = page("app_pages/inspector.py", {"qid": PROBE_QID, "k": str(MAIN_K), "show": "Every system"})
    no_exception(at)
    headers = [h.value for h in at.subheader]
    assert headers[0] == "RtP" and "offline heuristic (no model)" in headers
    shown = markdown_everywhere(at)
    assert "Gold APIs no system found" in shown and "stub" in shown
    [table] = [d.value for d in at.dataframe]
    assert {"API", "gold", "RtP"} <= set(table.columns) and table["gold"].iloc[0]  # the gold first


def test_edited_stubs_from_the_url_are_searched_labelled_and_shown_as_text(app_env, index_ready) -> None:
    stubs = [Stub("search_hotels", "find a hotel in London"), HOSTILE]
    at = page("app_pages/inspector.py",
              {"qid": PROBE_QID, "k": str(MAIN_K), "show": "Edit stubs", "stubs": to_param(stubs)})
    no_exception(at)
    assert all(EDITED in h for h in [h.value for h in at.subheader]) and len(at.subheader) == 2
    assert at.text_area(key="edit_text").value.splitlines()[0] == "search_hotels: find a hotel in London"
    shown = markdown_everywhere(at)
    assert "<b>" not in shown and "![img]" not in shown and ":red[" not in shown  # every text escaped
    assert sum(line.startswith(f"recall@{MAIN_K} **") and "→" in line for line in texts(at, "markdown")) == 2
    assert "stubs" not in at.query_params and any("The link omits these stubs" in c for c in texts(at, "caption"))
    # An edit is applied at once: drop the hostile stub, and the link carries the one left.
    at.text_area(key="edit_text").set_value("search_hotels: find a hotel in London").run()
    no_exception(at)
    assert json.loads(at.query_params["stubs"]) == [["search_hotels", "find a hotel in London"]]


def test_an_edit_is_kept_across_reruns_and_replaced_only_by_picking_another_start(app_env, index_ready) -> None:
    """The start's stubs replace the edit only when the user picks another start (the select box's on_change), not
    on a rerun for any other reason (such as a fresh clone's results unpacking mid-edit, which adds starts)."""
    edit = "search_hotels: find a hotel in London"
    at = page("app_pages/inspector.py", {"qid": PROBE_QID, "k": str(MAIN_K), "show": "Edit stubs"})
    no_exception(at)
    at.text_area(key="edit_text").set_value(edit).run()
    at = at.run()
    assert at.text_area(key="edit_text").value == edit
    box = at.selectbox(key="edit_from")
    other = next(option for option in box.options if option != box.value and option != "(no stubs)")
    box.select(other).run()
    no_exception(at)
    assert at.text_area(key="edit_text").value not in ("", edit)


def test_stubs_that_cannot_be_searched_are_one_warning(app_env, index_ready) -> None:
    at = page("app_pages/inspector.py", {"qid": PROBE_QID, "show": "Edit stubs", "stubs": "[[\"!!!\"]]"})
    no_exception(at)
    assert any("no name with a letter or digit" in w for w in texts(at, "warning"))
    at = page("app_pages/inspector.py", {"qid": PROBE_QID, "show": "Edit stubs", "stubs": "{not json"})
    no_exception(at)
    assert any("The link's stubs cannot be used" in w for w in texts(at, "warning"))


def test_two_systems_on_examples_agree_with_the_reader(app_env, index_ready) -> None:
    at = page("app_pages/examples.py", {"ex_view": "Two systems"})
    no_exception(at)
    reader = ResultsReader(app_env["DATABASE_URL"])
    [system] = reader.backends()
    expected = summarise(reader.compare_systems(Side(system, "ptr"), Side(system, "rtp")))
    metrics = {m.label: m.value for m in at.metric}
    assert metrics == {"A wins": f"{expected.a_wins:,}", "B wins": f"{expected.b_wins:,}",
                       "ties": f"{expected.ties:,}", "both miss": f"{expected.both_miss:,}"}
    assert any(f"**{expected.mean_diff:+.3f}**" in m for m in texts(at, "markdown"))
    table = at.dataframe[0].value
    assert len(table) == expected.n and list(table["diff"]) == sorted(table["diff"], reverse=True)
    assert all(link.endswith("&show=Every+system") for link in table["inspect"])


def test_every_system_on_free_text_runs_on_demand_and_is_kept(app_env, index_ready, monkeypatch, tmp_path) -> None:
    monkeypatch.setattr("core.agents.llm.local_model.WHEELS_DIR", tmp_path / "no-wheels")  # the heuristic alone
    at = page("app_pages/inspector.py", {"q": "Find hotels in London and check the currency exchange rate",
                                          "show": "Every system"})
    no_exception(at)
    assert "Not run yet." in texts(at, "caption")
    [run] = [b for b in at.button if b.label.startswith("Run all")]
    at = run.click().run()
    no_exception(at)
    assert "Not run yet." not in texts(at, "caption")
    assert [h.value for h in at.subheader] == ["RtP", "offline heuristic (not an LLM)"]
    hits = [e.label for e in at.expander]
    assert len(hits) == 2 * 5
    at = at.run()  # a rerun (another widget, a gold change) draws the finished systems at once, without running them
    assert ([e.label for e in at.expander] == hits
            and [b for b in at.button if b.label.startswith("Run all")][0].disabled)
    at.radio(key="show").set_value("Edit stubs").run()  # an edit can start from the stubs a system wrote live
    no_exception(at)
    assert "offline heuristic (not an LLM) (live)" in at.selectbox(key="edit_from").options


# ---------------------------------------------------------------- the retriever picker
def test_the_retriever_named_in_the_url_searches_and_every_score_says_what_it_is(app_env, index_ready) -> None:
    at = page("app_pages/inspector.py", {"q": "find hotels in Paris", "retriever": "bm25"})
    no_exception(at)
    assert at.selectbox(key="insp_retriever").value == "bm25" and at.query_params["retriever"] == "bm25"
    shown = markdown_everywhere(at)
    assert "Searched with **BM25**" in shown and "top-1 BM25 score" in shown and "top-1 cosine" not in shown
    assert "no plan" in shown  # the offline planner selects by cosine, which BM25 does not give
    assert "Adaptive router" not in shown  # its threshold is a cosine of the studies' retriever
    at.selectbox(key="insp_retriever").select("all-MiniLM-L6-v2").run()
    no_exception(at)
    assert "retriever" not in at.query_params and "top-1 cosine" in markdown_everywhere(at)


@pytest.mark.parametrize("asked, words", [
    ("gte-base", "which is not declared here"),
    ("all-mpnet-base-v2", "is not installed here: run `make embed MODEL=all-mpnet-base-v2`"),
])
def test_a_retriever_that_cannot_search_is_one_line_and_the_default_still_answers(app_env, index_ready, asked,
                                                                                  words) -> None:
    at = page("app_pages/inspector.py", {"q": "find hotels in Paris", "retriever": asked})
    no_exception(at)
    assert sum(words in line for line in [*texts(at, "warning"), *texts(at, "info")]) == 1
    shown = markdown_everywhere(at)
    assert "top-1 cosine" in shown and "Top 5 APIs" in shown  # RtP with the studies' model answers


def test_every_system_under_another_retriever_searches_each_systems_stored_stubs(app_env, index_ready) -> None:
    at = page("app_pages/inspector.py", {"qid": PROBE_QID, "k": str(MAIN_K), "show": "Every system",
                                         "retriever": "bm25"})
    no_exception(at)
    headers = [h.value for h in at.subheader]
    assert headers[0] == "RtP" and "offline heuristic (no model)" in headers
    shown = markdown_everywhere(at)
    assert "searched again by this retriever" in shown and "top-1 BM25 score" in shown
    assert "top-1 cosine" not in shown
