"""Every LLM fault mode against a real OpenAI-compatible HTTP server on 127.0.0.1 that misbehaves on purpose
(and a Gemini one whose safety filter blocks the reply).

For each mode, through the real client, the call cache and the real study runner and store: RtP still
answers; the failure is stored and shown (a failed row, or a labelled fallback for a reply the model
itself got wrong); nothing unusable is cached. Then an outage, a recovery and `--resume`: the failed
rows are redone.
"""
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.agents.llm import CallCache
from core.analysis.reader import ResultsReader
from core.analysis.report import NoUsableRows, build_report
from core.retrieval.memo import memoised
from core.settings import PROJECT_ROOT, Settings
from core.study.main_study import run_main
from core.retrieval.archs import arch
from core.study.one_query import run_query
from core.store.store import Store
from tests.fake_llm_servers import (FakeServer, ModeServer, Scripted, gemini_prompt_blocked, gemini_reply_blocked,
                                    openai_error, openai_filtered, openai_ok)
from tests.helpers import bench_context, make_queries, make_retriever

pytestmark = pytest.mark.slow  # every fault mode end to end: real servers, real timeouts and back-off

KEY = "sk-CANARY-fault-matrix-7Q2"
STUBS_OK = json.dumps({"stubs": [{"name": "search_hotels", "reasoning": "hotels in a city"}]})
PLAN_OK = json.dumps({"selected_apis": [], "steps": [], "refusal": "nothing fits"})


def many_stubs(n: int) -> str:
    return json.dumps({"stubs": [{"name": f"tool_{i}", "reasoning": f"step {i}"} for i in range(n)]})


@dataclass(frozen=True)
class Mode:
    reply: Scripted
    failed: bool  # an outage (stored as a failed row, redone on resume) rather than the model's own bad answer
    reason: str  # what the stored and shown failure says


def chat(content: str | None) -> Scripted:
    body = openai_ok("").body
    return Scripted(200, {**body, "choices": [{**body["choices"][0], "message": {"role": "assistant",
                                                                                 "content": content}}]})


MODES = {
    "timeout": Mode(Scripted(200, openai_ok(STUBS_OK).body, delay_s=1.5), True, "llm_error[timeout]"),
    "429_retry_after_3600": Mode(openai_error(429, "slow down", {"Retry-After": "3600"}), True,
                                 "query's time budget"),
    "500": Mode(openai_error(500, "boom"), True, "llm_error["),
    "503": Mode(openai_error(503, "unavailable"), True, "llm_error["),
    "html_200": Mode(Scripted(200, "<html><body>Bad gateway</body></html>", content_type="text/html"), True,
                     "llm_error[client]"),
    "truncated_json_200": Mode(Scripted(200, '{"id": "x", "choices": [{"message": {"content": "{'), True,
                               "llm_error["),
    "malformed_json": Mode(chat("{stubs: [oops"), False, "malformed_json"),
    "empty": Mode(chat(""), False, "malformed_json"),
    "null_content": Mode(chat(None), False, "malformed_json"),
    "no_choices": Mode(Scripted(200, {**openai_ok("").body, "choices": []}), False, "malformed_json"),
    "refusal": Mode(chat("I'm sorry, but I can't help with that request."), False, "malformed_json"),
    "wrong_schema": Mode(chat(json.dumps({"tools": ["search_hotels"], "selected": 3})), False, "validation"),
    "huge_reply": Mode(chat(json.dumps({"stubs": [{"name": "x" * 100_000, "reasoning": "y"}]})), True,
                       "reply_too_large"),
    "thousands_of_stubs": Mode(chat(many_stubs(5000)), True, "reply_too_large"),
    "content_filter": Mode(openai_filtered(), True,
                           "llm_error[blocked]: the reply was blocked by the API's content filter (content_filter)"),
}
# A Gemini safety block: a failed call (its own kind), never an empty reply counted as the model's answer.
GEMINI_MODES = {
    "prompt_blocked": Mode(gemini_prompt_blocked("SAFETY"), True,
                           "llm_error[blocked]: the prompt was blocked by the API's safety filter (SAFETY)"),
    "reply_blocked": Mode(gemini_reply_blocked("SAFETY"), True,
                          "llm_error[blocked]: the reply was blocked by the API's safety filter (SAFETY)"),
}


@pytest.fixture
def settings_for(tmp_path: Path) -> Iterator:
    servers: list[FakeServer] = []

    def make(server: FakeServer, backend: str = "openai") -> Settings:
        servers.append(server.start())
        client = ({"GEMINI_BASE_URL": server.url, "GEMINI_API_KEY": KEY} if backend == "gemini" else
                  {"OPENAI_BASE_URL": f"{server.url}/v1", "OPENAI_MODEL": "fake-model", "OPENAI_API_KEY": KEY})
        return Settings.from_env({"LLM_BACKEND": backend, **client, "LLM_TIMEOUT_S": "0.5",
                                  "LLM_QUERY_BUDGET_S": "3", "CACHE_DIR": str(tmp_path / "cache")})
    yield make
    for server in servers:
        server.stop()


def cached_rows(settings: Settings) -> int:
    path = settings.cache_dir / "llm_calls.sqlite"
    return len(CallCache(path)) if path.exists() else 0


@pytest.mark.parametrize("name", list(MODES))
def test_fault_mode(name: str, settings_for, tmp_path: Path) -> None:
    mode = MODES[name]
    check_mode(mode, settings_for(ModeServer(mode.reply)), tmp_path)


@pytest.mark.parametrize("name", list(GEMINI_MODES))
def test_gemini_safety_block(name: str, settings_for, tmp_path: Path) -> None:
    mode = GEMINI_MODES[name]
    server = ModeServer(mode.reply)
    check_mode(mode, settings_for(server, "gemini"), tmp_path)
    assert len(server.requests) == 6  # stubs and two plans, in the Inspector and the study: none retried or repaired
    with pytest.raises(NoUsableRows, match="no usable row \\(2 failed rows"):  # left out of the means
        build_report(ResultsReader(f"sqlite:///{tmp_path / 'results.sqlite'}"))


def check_mode(mode: Mode, settings: Settings, tmp_path: Path) -> None:
    """RtP answers, the failure is shown and stored as `mode` says, and nothing is cached."""
    retriever = memoised(make_retriever())
    [query] = make_queries(1)[:1]

    # The Inspector's and `python -m core query`'s path: RtP answers, the failure is shown.
    answer = run_query(query.query, 3, retriever, settings).to_json()
    assert [h["api_name"] for h in answer["rtp"]["hits"]], "RtP must answer whatever the LLM does"
    assert answer["ptr"]["stub_fallback"] and mode.reason in answer["ptr"]["stub_error"]
    assert mode.reason in answer["rtp"]["plan"]["parse_error"]
    assert KEY not in json.dumps(answer)

    # The study's path: the rows are stored, failed or labelled, and the report counts them.
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    run_main(bench_context(Store(url), retriever, [query], commit="fault", settings=settings), runs=1, k=3,
             concurrency=2)
    rows = Store(url).results(1, ("error", "stub_fallback", "stub_error")) + Store(url).results(2, (
        "error", "stub_fallback", "stub_error"))
    ptr = [r for r in rows if r["stub_fallback"] is not None]
    assert len(rows) == 2 and ptr[0]["stub_fallback"] and mode.reason in ptr[0]["stub_error"]
    if mode.failed:
        assert all(r["error"] and r["error"].startswith("LLM failure") for r in rows)
        assert ResultsReader(url).status()["failed_rows"] == 2
    else:
        assert not any(r["error"] for r in rows)  # the model's own answer: a labelled fallback, in the means

    # Nothing unusable was cached: every reply of this server was a failure.
    assert cached_rows(settings) == 0


def test_a_429_with_a_long_retry_after_ends_within_the_budget(settings_for) -> None:
    import time

    settings = settings_for(ModeServer(MODES["429_retry_after_3600"].reply))
    retriever = memoised(make_retriever())
    started = time.monotonic()
    run_query(make_queries(1)[0].query, 3, retriever, settings)
    assert time.monotonic() - started < settings.query_budget_s + 2 * settings.llm_timeout_s


def test_stub_cap_is_said(settings_for) -> None:
    server = ModeServer(chat(PLAN_OK))
    server.enqueue(chat(many_stubs(40)))
    settings = settings_for(server)
    answer = run_query(make_queries(1)[0].query, 3, make_retriever(), settings, archs=[arch("ptr")],
                       plans=False).to_json()
    assert len(answer["ptr"]["stubs"]) == 10
    assert answer["ptr"]["stub_capped"] == "stub cap: kept the first 10 of 40 stubs"


def test_a_key_echoed_in_a_successful_reply_reaches_nothing(settings_for, tmp_path: Path) -> None:
    echoed = json.dumps({"stubs": [{"name": "get_key", "reasoning": f"use key {KEY}"}]})
    server = ModeServer(chat(json.dumps({"selected_apis": [], "steps": [f"send {KEY}"], "refusal": None})))
    server.enqueue(chat(echoed), chat(echoed))
    settings = settings_for(server)
    retriever = memoised(make_retriever())
    query = make_queries(1)[0]
    assert KEY not in json.dumps(run_query(query.query, 3, retriever, settings).to_json())
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    run_main(bench_context(Store(url), retriever, [query], settings=settings), runs=1, k=3, concurrency=1)
    for file in tmp_path.rglob("*"):
        if file.is_file():
            assert KEY.encode() not in file.read_bytes(), file


@pytest.mark.subprocess
def test_an_outage_then_resume_redoes_the_failed_rows(settings_for, tmp_path: Path) -> None:
    server = ModeServer(openai_error(503, "down"))
    settings = settings_for(server)
    retriever = memoised(make_retriever())
    queries = make_queries(2)
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    run_main(bench_context(Store(url), retriever, queries, settings=settings), runs=1, k=3, concurrency=2)
    reader = ResultsReader(url)
    assert reader.status()["failed_rows"] == 2 * len(queries)
    runs = reader.runs()
    assert set(runs["status"]) == {"complete"} and all("--resume" in note for note in runs["note"])
    with pytest.raises(NoUsableRows, match="no usable row \\(8 failed rows"):
        build_report(reader)
    cli = subprocess.run([sys.executable, "-m", "core", "report", "--db", url], cwd=PROJECT_ROOT,
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode != 0 and "Traceback" not in cli.stderr
    assert cli.stderr.strip().count("\n") == 0 and "no usable row" in cli.stderr

    # The server is back: one reply that parses as stubs and as a plan answers both calls.
    server.reply = Scripted(200, openai_ok(json.dumps({"stubs": [{"name": "search_hotels", "reasoning": "r"}],
                                                       "selected_apis": [], "steps": [], "refusal": "none fits"})
                                           ).body)
    run_main(bench_context(Store(url), retriever, queries, settings=settings, resume=True), runs=1, k=3,
             concurrency=2)
    reader = ResultsReader(url)
    assert reader.status()["failed_rows"] == 0
    rows = [r for run in reader.runs()["id"] for r in Store(url).results(int(run), ("error", "stub_fallback"))]
    assert len(rows) == 2 * len(queries) and not any(r["error"] for r in rows)
    assert not any(r["stub_fallback"] for r in rows if r["stub_fallback"] is not None)
    assert reader.runs()["note"].isna().all()

