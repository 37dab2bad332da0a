"""One query stage by stage, for a page that shows each stage the moment it is done: RtP's hits at once, PtR's
stubs while the model writes them and each stub's own hits as soon as that stub is complete, then PtR's merged
hits, the hybrid's, and the two plans. The result is inspect_query's (core.study.single_query), so the page's
later reruns, the JSON download and the CLI read one shape.

The stub writer runs in a worker thread that streams its reply's text into a queue (core.agents.llm.stream);
this thread reads the queue, finds the stubs completed so far, searches each, and calls `emit` with every
stage, so `emit` (a page's renderer) always runs on the caller's thread.
"""
from __future__ import annotations

import contextvars
import json
import queue
import re
import time
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from core.agents.factory import Agents, make_agents
from core.agents.llm import LLMUnavailable
from core.agents.llm.budget import within_budget
from core.agents.llm.stream import streaming_to
from core.agents.stubs import Stub, StubOutcome
from core.data.toolbench import ApiKey
from core.retrieval.discovery import Retriever, check_k, clean_query, hybrid_retrieve, ptr_retrieve, rtp
from core.settings import Settings
from core.study.single_query import discovery_json, ptr_json

STAGES = ("rtp", "writing", "stub", "ptr", "hybrid", "ptr_plan", "rtp_plan", "llm_error")
_STRING = r'"((?:[^"\\]|\\.)*)"'
_COMPLETE_STUB = re.compile(r'\{\s*"name"\s*:\s*' + _STRING + r'\s*,\s*"reasoning"\s*:\s*' + _STRING + r'\s*\}')
POLL_S = 0.05


@dataclass(frozen=True)
class Stage:
    """One finished stage: its name (STAGES), seconds since the query started, and what it produced."""

    name: str
    seconds: float
    data: Any


def complete_stubs(text: str) -> list[Stub]:
    """The stubs whose JSON object is complete in a reply's text so far, in order (name and reasoning, the
    paper's shape and every style's)."""
    return [Stub(json.loads(f'"{name}"'), json.loads(f'"{reasoning}"'))
            for name, reasoning in _COMPLETE_STUB.findall(text)]


def _stub_stage(stub: Stub, k: int, retriever: Retriever) -> dict[str, Any]:
    found = ptr_retrieve((stub,), k, retriever)
    return {"name": stub.name, "reasoning": stub.reasoning, "hits": [h.to_json() for h in found.hits]}


def _write_streaming(writer: Any, query: str, k: int, retriever: Retriever,
                     stage: Callable[[str, Any], None]) -> StubOutcome:
    """writer.write(query) in a worker thread, its text streamed here: "writing" with the text so far, and
    "stub" with each completed stub's own hits (the outcome's stubs too when the reply came whole, from the
    call cache or a backend that does not stream)."""
    texts: queue.SimpleQueue[str] = queue.SimpleQueue()
    context = contextvars.copy_context()  # the query's budget travels with the call

    def work() -> StubOutcome:
        with streaming_to(texts.put):
            return writer.write(query)

    seen = 0
    with ThreadPoolExecutor(1, thread_name_prefix="stub-writer") as pool:
        future = pool.submit(context.run, work)
        while not (future.done() and texts.empty()):
            try:
                text = texts.get(timeout=POLL_S)
            except queue.Empty:
                continue
            while not texts.empty():  # only the latest text matters
                text = texts.get()
            stage("writing", text)
            stubs = complete_stubs(text)
            for stub in stubs[seen:]:
                stage("stub", _stub_stage(stub, k, retriever))
            seen = max(seen, len(stubs))
        outcome = future.result()
    if not outcome.fallback:
        for stub in outcome.stubs[seen:]:
            stage("stub", _stub_stage(stub, k, retriever))
    return outcome


def live_query(text: str, k: int, retriever: Retriever, settings: Settings, emit: Callable[[Stage], None],
               use_cache: bool = True, gold: Collection[ApiKey] | None = None,
               agents: Agents | None = None) -> dict:
    """inspect_query(text, k, archs="all") stage by stage (see the module's docstring). QueryError for empty or
    oversized text, before anything runs; an LLM that cannot run is "llm_error", with RtP's column complete."""
    start = time.perf_counter()

    def stage(name: str, data: Any) -> None:
        emit(Stage(name, time.perf_counter() - start, data))

    query = clean_query(text)
    check_k(k)
    out: dict[str, Any] = {"query": query, "k": k}
    rtp_found = rtp(query, k, retriever)
    out["rtp"] = discovery_json(rtp_found, None, gold)
    stage("rtp", out["rtp"])
    if agents is None:
        try:
            agents = make_agents(settings, retriever, use_cache)
        except LLMUnavailable as exc:
            out["llm_error"] = str(exc)
            stage("llm_error", str(exc))
            return {key: out[key] for key in ("query", "k", "llm_error", "rtp")}
    with within_budget(settings.query_budget_s):
        outcome = _write_streaming(agents.stub_writer, query, k, retriever, stage)
        found = ptr_retrieve(outcome.stubs, k, retriever)
        block = ptr_json(found, outcome, None, gold)
        out["ptr"] = block
        stage("ptr", block)
        out["hybrid"] = discovery_json(hybrid_retrieve(query, () if outcome.fallback else outcome.stubs, k, retriever),
                                       None, gold)
        stage("hybrid", out["hybrid"])
        block["plan"] = agents.planner.plan(query, found.hits).to_json()
        stage("ptr_plan", block["plan"])
        out["rtp"]["plan"] = agents.planner.plan(query, rtp_found.hits).to_json()
        stage("rtp_plan", out["rtp"]["plan"])
    return {key: out[key] for key in ("query", "k", "rtp", "ptr", "hybrid")}
