"""PtR's first step: abstract tool stubs written from the query alone, by an LLM or the offline heuristic.

A stub writer never raises for a bad LLM answer: it falls back to the raw query as the single stub
(`fallback=True`) and records why, so a benchmark never dies on one call.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from core.retrieval.discovery import Stub, clean_query
from core.agents.llm import FailureKind, LLMClient, Usage, generate_json
from core.agents.llm.base import usage_json
from core.agents.llm.budget import within_budget
from core.agents.offline_split import split_subrequests
from core.backends import OFFLINE_MODEL, backend_label
from core.agents.prompts import STYLES, PromptStyle, validate_stubs

OFFLINE_VERSION = "offline-split-v1"
# Each stub is one more search: a reply of 20,000 stubs once ran for over 240 s. The paper's stub writer
# writes 2.4-2.5 per query and ours at most 3 (the local model's grammar) or a few more (the heuristic's
# sub-requests), so the first MAX_STUBS are kept and the cut is said.
MAX_STUBS = 10


def stub_cap_note(written: int) -> str | None:
    """What the stub cap cut, for the page and the CLI; None when it cut nothing."""
    return f"stub cap: kept the first {MAX_STUBS} of {written:,} stubs" if written > MAX_STUBS else None


@dataclass(frozen=True)
class StubOutcome:
    stubs: tuple[Stub, ...]
    backend: str
    model: str
    prompt_version: str
    usage: Usage = Usage()
    latency_s: float = 0.0
    fallback: bool = False
    error: str | None = None
    cached: bool = False
    capped: str | None = None  # which cap cut the reply (stub_cap_note)
    failure: FailureKind | None = None  # the fallback is an outage, not the model's own bad answer

    @property
    def label(self) -> str:
        return backend_label(self.backend, self.model)

    def to_json(self) -> dict:
        return {"stubs": [{"name": s.name, "reasoning": s.reasoning} for s in self.stubs],
                "backend": self.backend, "model": self.model, "backend_label": self.label,
                "prompt_version": self.prompt_version, "stub_fallback": self.fallback, "error": self.error,
                "usage": usage_json(self.usage), "latency_s": round(self.latency_s, 4), "cached": self.cached,
                "capped": self.capped}


class StubWriter(Protocol):
    backend: str
    model: str
    prompt_version: str

    def write(self, query: str) -> StubOutcome: ...


class OfflineStubWriter:
    """Splits the request into sub-requests and names each verb_object: an offline heuristic, not an LLM."""

    backend = "offline"
    model = OFFLINE_MODEL
    prompt_version = OFFLINE_VERSION

    def write(self, query: str) -> StubOutcome:
        start = time.perf_counter()
        parts = split_subrequests(clean_query(query))
        stubs = tuple(Stub(p.name, p.text) for p in parts[:MAX_STUBS])
        return StubOutcome(stubs, self.backend, self.model, self.prompt_version,
                           latency_s=time.perf_counter() - start, capped=stub_cap_note(len(parts)))


class LLMStubWriter:
    """Asks an LLM for stubs with the versioned discovery prompt of its style (instruction or few-shot)."""

    def __init__(self, client: LLMClient, style: PromptStyle = STYLES["instruction"],
                 budget_s: float | None = None) -> None:
        self.client = client
        self.style = style
        self.budget_s = budget_s
        self.backend = client.backend
        self.model = client.model
        self.prompt_version = style.discovery_version

    def write(self, query: str) -> StubOutcome:
        text = clean_query(query)
        with within_budget(self.budget_s):
            reply = generate_json(self.client, self.style.discovery(text), self.style.discovery_schema(), 0.0,
                                  validate_stubs)
        cached = bool(reply.response and reply.response.cached)
        if reply.obj is None:
            return StubOutcome((Stub(text),), self.backend, self.model, self.prompt_version, reply.usage,
                               reply.latency_s, fallback=True, error=reply.error, cached=cached,
                               failure=reply.failure)
        stubs = validate_stubs(reply.obj)
        return StubOutcome(tuple(Stub(s["name"], s["reasoning"]) for s in stubs[:MAX_STUBS]), self.backend,
                           self.model, self.prompt_version, reply.usage, reply.latency_s, cached=cached,
                           capped=stub_cap_note(len(stubs)))
