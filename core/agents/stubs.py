"""PtR's first step: abstract tool stubs written from the query alone, by an LLM or the offline heuristic.

A stub writer never raises for a bad LLM answer: it falls back to the raw query as the single stub
(`fallback=True`) and records why, so a benchmark never dies on one call.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from core.retrieval.discovery import Stub, clean_query
from core.agents.llm import LLMClient, Usage, generate_json
from core.agents.offline_split import split_subrequests
from core.backends import OFFLINE_MODEL, backend_label
from core.agents.prompts import STYLES, PromptStyle, validate_stubs

OFFLINE_VERSION = "offline-split-v1"


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

    @property
    def label(self) -> str:
        return backend_label(self.backend, self.model)

    def to_json(self) -> dict:
        return {"stubs": [{"name": s.name, "reasoning": s.reasoning} for s in self.stubs],
                "backend": self.backend, "model": self.model, "backend_label": self.label,
                "prompt_version": self.prompt_version, "stub_fallback": self.fallback, "error": self.error,
                "usage": usage_json(self.usage), "latency_s": round(self.latency_s, 4), "cached": self.cached}


def usage_json(usage: Usage) -> dict:
    return {"prompt_tokens": usage.prompt_tokens, "output_tokens": usage.output_tokens,
            "thoughts_tokens": usage.thoughts_tokens, "total_tokens": usage.total}


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
        stubs = tuple(Stub(p.name, p.text) for p in parts)
        return StubOutcome(stubs, self.backend, self.model, self.prompt_version,
                           latency_s=time.perf_counter() - start)


class LLMStubWriter:
    """Asks an LLM for stubs with the versioned discovery prompt of its style (instruction or few-shot)."""

    def __init__(self, client: LLMClient, style: PromptStyle = STYLES["instruction"]) -> None:
        self.client = client
        self.style = style
        self.backend = client.backend
        self.model = client.model
        self.prompt_version = style.discovery_version

    def write(self, query: str) -> StubOutcome:
        text = clean_query(query)
        reply = generate_json(self.client, self.style.discovery(text), self.style.discovery_schema(), 0.0,
                              validate_stubs)
        cached = bool(reply.response and reply.response.cached)
        if reply.obj is None:
            return StubOutcome((Stub(text),), self.backend, self.model, self.prompt_version, reply.usage,
                               reply.latency_s, fallback=True, error=reply.error, cached=cached)
        stubs = tuple(Stub(s["name"], s["reasoning"]) for s in validate_stubs(reply.obj))
        return StubOutcome(stubs, self.backend, self.model, self.prompt_version, reply.usage, reply.latency_s,
                           cached=cached)
