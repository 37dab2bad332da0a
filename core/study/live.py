"""One query stage by stage, for a page that shows each stage the moment it is done: RtP's hits at once, PtR's
stubs while the model writes them and each stub's own hits as soon as that stub is complete, then PtR's merged
hits, the hybrid's, and the two plans. The result is inspect_query's QueryOutcome (core.study.single_query), so
the page's later reruns, the JSON download and the CLI read one type.

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
from core.archs import declared
from core.data.toolbench import ApiKey
from core.retrieval.discovery import Discovery, Retriever, check_k, clean_query, ptr_retrieve
from core.settings import Settings
from core.study.query_result import ArchResult, QueryOutcome

_STRING = r'"((?:[^"\\]|\\.)*)"'
_COMPLETE_STUB = re.compile(r'\{\s*"name"\s*:\s*' + _STRING + r'\s*,\s*"reasoning"\s*:\s*' + _STRING + r'\s*\}')
POLL_S = 0.05


@dataclass(frozen=True)
class Stage:
    """One finished stage: its name, seconds since the query started, and what it produced. In order: each
    declared architecture that needs no stubs (its ArchResult: "rtp"), "writing" (the reply's text so far),
    "stub" (one stub's own hits), each architecture that searches stubs ("ptr", "hybrid"), then "<arch>_plan"
    (the block with its plan), the stub searchers' first; "llm_error" (its text) ends the query when the LLM
    cannot run."""

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
               agents: Agents | None = None) -> QueryOutcome:
    """inspect_query(text, k, archs="all") stage by stage (see the module's docstring). QueryError for empty or
    oversized text, before anything runs; an LLM that cannot run is "llm_error", with RtP's column complete."""
    start = time.perf_counter()

    def stage(name: str, data: Any) -> None:
        emit(Stage(name, time.perf_counter() - start, data))

    query = clean_query(text)
    check_k(k)
    free = [a for a in declared() if not a.needs_stubs]
    with_stubs = [a for a in declared() if a.needs_stubs]
    found: dict[str, Discovery] = {}
    blocks: dict[str, ArchResult] = {}
    for a in free:
        found[a.name] = a.retrieve(query, None, k, retriever)
        blocks[a.name] = ArchResult.of(a.name, found[a.name], None, gold)
        stage(a.name, blocks[a.name])
    if agents is None:
        try:
            agents = make_agents(settings, retriever, use_cache)
        except LLMUnavailable as exc:
            stage("llm_error", str(exc))
            return QueryOutcome(k, tuple(blocks.values()), query, llm_error=str(exc))
    with within_budget(settings.query_budget_s):
        written = _write_streaming(agents.stub_writer, query, k, retriever, stage)
        for a in with_stubs:
            found[a.name] = a.retrieve(query, written, k, retriever)
            blocks[a.name] = ArchResult.of(a.name, found[a.name], None, gold, written if a.carries_stubs else None)
            stage(a.name, blocks[a.name])
        for a in (*with_stubs, *free):
            if a.plans:
                blocks[a.name] = blocks[a.name].with_plan(agents.planner.plan(query, found[a.name].hits))
                stage(f"{a.name}_plan", blocks[a.name])
    return QueryOutcome(k, tuple(blocks[a.name] for a in declared()), query)
