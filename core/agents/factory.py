"""Who writes stubs and who plans, for the configured backend: the one place agents are built.

The single-query path (core.study.one_query) and the batch studies both take their agents from
here. Repeated benchmark runs (run_index > 0) key their cached LLM calls apart, so each run gets its
own answers and a resumed run replays them; run 0 shares the Inspector's cache.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.agents.llm import CachedClient, CallCache, make_client
from core.agents.planner import LLMPlanner, OfflinePlanner, Planner
from core.agents.prompts import STYLES
from core.agents.stubs import LLMStubWriter, OfflineStubWriter, StubWriter
from core.retrieval.discovery import Retriever
from core.settings import Settings


@dataclass(frozen=True)
class Agents:
    """The LLM-facing half of the study for one backend: who writes stubs and who plans."""

    stub_writer: StubWriter
    planner: Planner


AgentsFactory = Callable[[int], Agents]


def make_agents(settings: Settings, retriever: Retriever, use_cache: bool = True, run_index: int = 0) -> Agents:
    """The offline heuristic for a backend that is not an LLM; else its client behind the call cache."""
    client = make_client(settings)
    if client is None:
        return Agents(OfflineStubWriter(), OfflinePlanner(retriever))
    cache = CallCache(settings.cache_dir / "llm_calls.sqlite") if use_cache else None
    tag = f"+run{run_index}" if run_index else ""
    style = STYLES[getattr(client, "prompt_style", "instruction")]
    secrets = settings.secrets()
    return Agents(LLMStubWriter(CachedClient(client, cache, style.discovery_version + tag, use_cache, secrets), style,
                                settings.query_budget_s),
                  LLMPlanner(CachedClient(client, cache, style.planner_version + tag, use_cache, secrets),
                             retriever.registry.get, style, settings.query_budget_s))


def agents_factory(settings: Settings, retriever: Retriever, use_cache: bool = True) -> AgentsFactory:
    """Run index -> Agents. The offline heuristic is deterministic: one instance serves every run."""
    if not settings.backend.is_llm:
        agents = make_agents(settings, retriever, use_cache)
        return lambda run_index: agents
    return lambda run_index: make_agents(settings, retriever, use_cache, run_index)
