"""LLM_QUERY_BUDGET_S is a hard deadline: a query ends within its budget plus 2 s under every fault mode, however
long the call's own timeout, and its result says which stage ran out of time.

Real SDK clients against real HTTP servers on 127.0.0.1 that hang, trickle a byte at a time (no read ever times
out) or ask to be retried in an hour; and the real local backend with every model instance busy.
"""
from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path

import pytest

from core.agents.llm import LLMError
from core.agents.llm.budget import within_budget
from core.retrieval.memo import memoised
from core.settings import Settings
from core.study.one_query import run_query
from tests.fake_llm_servers import (FakeServer, ModeServer, Scripted, gemini_error, gemini_ok, openai_error,
                                    openai_ok)
from tests.helpers import MODEL_CACHE, llama_built, make_queries, make_retriever, needs_llama

BUDGET_S = 2.0
SLACK_S = 2.0  # the goal: every query ends within its budget plus 2 s
STUBS = json.dumps({"stubs": [{"name": "search_hotels", "reasoning": "hotels in a city"}]})
FAULTS = {
    "hang": {"openai": Scripted(200, openai_ok(STUBS).body, delay_s=30),
             "gemini": Scripted(200, gemini_ok(STUBS).body, delay_s=30)},
    "trickle": {"openai": Scripted(200, openai_ok(STUBS).body, trickle_s=0.2),
                "gemini": Scripted(200, gemini_ok(STUBS).body, trickle_s=0.2)},
    "retry_after_3600": {"openai": openai_error(429, "slow down", {"Retry-After": "3600"}),
                         "gemini": gemini_error(429, "slow down", {"Retry-After": "3600"})},
}


def settings_of(backend: str, server: FakeServer, cache: Path) -> Settings:
    """A backend whose call timeout (60 s) is far past the query's budget: only the budget can end the query."""
    env = {"LLM_TIMEOUT_S": "60", "LLM_QUERY_BUDGET_S": str(BUDGET_S), "CACHE_DIR": str(cache)}
    if backend == "openai":
        env |= {"LLM_BACKEND": "openai", "OPENAI_BASE_URL": f"{server.url}/v1", "OPENAI_MODEL": "fake-model"}
    else:
        env |= {"LLM_BACKEND": "gemini", "GEMINI_API_KEY": "fake-key", "GEMINI_BASE_URL": server.url}
    return Settings.from_env(env)


@pytest.mark.parametrize("backend", ["openai", "gemini"])
@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.slow
def test_a_query_ends_within_its_budget_and_says_which_stage_ran_out(fault: str, backend: str,
                                                                      tmp_path: Path) -> None:
    with ModeServer(FAULTS[fault][backend]) as server:
        settings = settings_of(backend, server, tmp_path / "cache")
        retriever = memoised(make_retriever())
        started = time.monotonic()
        answer = run_query(make_queries(1)[0].query, 3, retriever, settings).to_json()
        took = time.monotonic() - started
    assert took < BUDGET_S + SLACK_S, f"{fault} on {backend} took {took:.1f} s"
    assert answer["rtp"]["hits"], "RtP answers whatever the LLM does"
    assert answer["ptr"]["stub_fallback"]
    for reason in (answer["ptr"]["stub_error"], answer["ptr"]["plan"]["parse_error"],
                   answer["rtp"]["plan"]["parse_error"]):
        assert reason.startswith("llm_error[timeout]") and "time budget" in reason, reason


def test_the_budget_cuts_an_http_call_that_is_already_in_flight() -> None:
    """The budget in force when a call starts bounds that call, not only the waits between attempts."""
    from core.agents.llm.openai_compat import OpenAICompatClient

    with ModeServer(FAULTS["hang"]["openai"]) as server:
        client = OpenAICompatClient(f"{server.url}/v1", "fake-model", timeout_s=60)
        started = time.monotonic()
        with within_budget(0.5), pytest.raises(LLMError) as info:
            client.generate("hello")
        took = time.monotonic() - started
    assert info.value.kind == "timeout" and took < 0.5 + SLACK_S


@needs_llama(not llama_built() and not os.environ.get("CI"), reason="llama.cpp is not built here: run `make llm`")
@pytest.mark.slow
def test_a_local_call_waiting_for_a_busy_model_ends_within_its_budget() -> None:
    from core.agents.llm.local_llama import LocalLlamaClient
    from core.agents.llm.local_model import resolve_local_model
    from core.agents.llm.stream import streaming_to

    client = LocalLlamaClient(resolve_local_model("", MODEL_CACHE), timeout_s=60).load()
    writing, release = threading.Event(), threading.Event()

    class Released(Exception):
        """Ends the busy call at once when the test is done with it."""

    def hold(_: str) -> None:  # the busy call's sink: it keeps the only instance until released
        writing.set()
        release.wait(30)
        raise Released

    def busy() -> None:
        with streaming_to(hold), contextlib.suppress(Released):
            client.generate("Write a long story about a lighthouse.")

    thread = threading.Thread(target=busy)
    thread.start()
    try:
        assert writing.wait(60), "the busy call never started writing"
        started = time.monotonic()
        with within_budget(1.0), pytest.raises(LLMError) as info:
            client.generate("Say hello.")
        took = time.monotonic() - started
    finally:
        release.set()
        thread.join()
    assert info.value.kind == "timeout" and "busy" in info.value.message
    assert took < 1.0 + SLACK_S


@needs_llama(not llama_built() and not os.environ.get("CI"), reason="llama.cpp is not built here: run `make llm`")
@pytest.mark.slow
def test_a_deadline_stops_the_prompt_inside_one_evaluation_call() -> None:
    """One prompt chunk is one llama_decode call (21 s for the 1.5B on 2 busy cores): the deadline must cut into it,
    not wait for it. Measured against the same chunk's own time in this process, so a busy machine cannot fail it."""
    from core.agents.llm.local_llama import CHUNK, LocalLlamaClient
    from core.agents.llm.local_model import resolve_local_model

    client = LocalLlamaClient(resolve_local_model("", MODEL_CACHE), timeout_s=60).load()
    instance = client._instances_loaded[0]
    tokens = instance.tokenize("Plan the tools for this request. " * 40, special=False)[:CHUNK + 1]

    def evaluate(deadline_s: float) -> tuple[bool, float]:
        instance._last_prompt = []  # nothing reused: the whole chunk is computed
        started = time.perf_counter()
        done = instance._thread.submit(instance._evaluate, tokens, started + deadline_s).result()
        return done, time.perf_counter() - started

    whole = min(evaluate(600)[1] for _ in range(2))
    done, cut = evaluate(whole / 10)
    assert not done, "the deadline passed during the chunk, yet the prompt was evaluated"
    assert cut < whole / 2, f"cut at {cut:.3f} s; the chunk takes {whole:.3f} s"
    assert instance._thread.submit(instance._evaluate, tokens).result()  # the instance still works afterwards
