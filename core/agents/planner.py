"""The planner both architectures share: choose among the k retrieved APIs, write steps, or refuse.

Selections are matched back to the retrieved set (exact display name, then a normalised name), so
fidelity (share of selections that were actually retrieved) is measurable for any backend.
"""
from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from core.retrieval.records import Hit
from core.agents.llm import FailureKind, LLMClient, Usage, failure_of, generate_json
from core.agents.llm.base import usage_json
from core.agents.llm.budget import within_budget
from core.agents.offline_split import split_subrequests
from core.backends import OFFLINE_MODEL, backend_label
from core.agents.prompts import STYLES, PromptStyle, validate_plan
from core.data.toolbench import ApiKey

if TYPE_CHECKING:  # reading a stored plan (core.study.query_result) needs no retriever
    from core.retrieval.discovery import Retriever

# Cosine a sub-request needs with an API document for the offline planner to pick it. A round
# value read off MiniLM's scale (unrelated pairs sit near 0.1-0.2), not fitted to any benchmark.
OFFLINE_SELECT_THRESHOLD = 0.4
OFFLINE_PLANNER_VERSION = f"offline-planner-v1-t{OFFLINE_SELECT_THRESHOLD}"


def normalise_name(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", name.lower())


@dataclass(frozen=True)
class Plan:
    """The planner's answer to one query over the k hits it was given: the one type a result holds, whether the
    planner just ran or the store gave it back (core.study.query_result), so its readers never ask which."""

    selected_apis: tuple[str, ...]
    matched: tuple[ApiKey, ...]
    steps: tuple[str, ...]
    refusal: str | None
    k: int
    backend: str
    model: str
    prompt_version: str
    usage: Usage = Usage()
    latency_s: float = 0.0
    parse_error: str | None = None
    cached: bool = False
    failure: FailureKind | None = None  # the parse error is an outage, not the model's own bad answer

    @property
    def apis_named(self) -> int:
        return len(self.selected_apis)

    @property
    def fidelity(self) -> float | None:
        """Share of selections that are in the retrieved set; None when nothing was selected."""
        return len(self.matched) / len(self.selected_apis) if self.selected_apis else None

    @property
    def selection_rate(self) -> float:
        """Share of the k retrieved APIs the planner used."""
        return len(set(self.matched)) / self.k if self.k else 0.0

    @property
    def label(self) -> str:
        return backend_label(self.backend, self.model)

    def to_json(self) -> dict:
        return {"selected_apis": list(self.selected_apis), "matched": [list(m) for m in self.matched],
                "steps": list(self.steps), "refusal": self.refusal, "fidelity": self.fidelity,
                "selection_rate": self.selection_rate, "apis_named": self.apis_named,
                "parse_error": self.parse_error, "backend": self.backend, "model": self.model,
                "backend_label": self.label, "prompt_version": self.prompt_version,
                "usage": usage_json(self.usage), "latency_s": round(self.latency_s, 4), "cached": self.cached}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], k: int) -> Plan:
        """The plan to_json wrote, planned over `k` hits: the JSON keeps the measures k gave, not k itself, and
        no failure kind, which its parse error's tag names (failure_of)."""
        usage = data["usage"]
        return cls(tuple(data["selected_apis"]), tuple((tool, api) for tool, api in data["matched"]),
                   tuple(data["steps"]), data["refusal"], k, data["backend"], data["model"], data["prompt_version"],
                   Usage(usage["prompt_tokens"], usage["output_tokens"], usage["thoughts_tokens"]),
                   data["latency_s"], data["parse_error"], data["cached"], failure_of(data["parse_error"]))


def match_selections(selected: Sequence[str], hits: Sequence[Hit]) -> tuple[ApiKey, ...]:
    """Retrieved keys the selections name: exact display name first, then normalised; unknown names drop."""
    exact = {h.display_name: h.key for h in hits}
    exact.update({f"{h.tool_name}/{h.api_name}": h.key for h in hits})
    loose = {normalise_name(h.display_name): h.key for h in hits}
    out: list[ApiKey] = []
    for name in selected:
        key = exact.get(name.strip()) or exact.get(name) or loose.get(normalise_name(name))
        if key is not None and key not in out:
            out.append(key)
    return tuple(out)


class Planner(Protocol):
    """Chooses among the retrieved APIs and writes the steps (or refuses): an LLM or the offline heuristic."""

    backend: str
    model: str
    prompt_version: str

    def plan(self, query: str, hits: Sequence[Hit]) -> Plan: ...


NO_COSINE = ("the offline planner selects by cosine, and BM25 gives no cosine: no plan (an LLM backend plans on BM25's "
             "hits)")


class OfflinePlanner:
    """Selects retrieved APIs whose cosine to some sub-request clears a threshold: an offline heuristic, not an LLM."""

    backend = "offline"
    model = OFFLINE_MODEL
    prompt_version = OFFLINE_PLANNER_VERSION

    def __init__(self, retriever: Retriever, threshold: float = OFFLINE_SELECT_THRESHOLD) -> None:
        self.retriever = retriever
        self.threshold = threshold
        self._memo: dict[str, np.ndarray] = {}

    def _vectors(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            for text, vec in zip(missing, self.retriever.encode(missing)):
                self._memo[text] = vec
        return np.stack([self._memo[t] for t in texts])

    def plan(self, query: str, hits: Sequence[Hit]) -> Plan:
        from core.retrieval.discovery import clean_query  # here: the store's readers import Plan, never plan

        start = time.perf_counter()
        parts = split_subrequests(clean_query(query))
        k = len(hits)
        refusal = "nothing was retrieved" if not hits else NO_COSINE if self.retriever.lexical else None
        if refusal:
            return Plan((), (), (), refusal, k, self.backend, self.model, self.prompt_version,
                        latency_s=time.perf_counter() - start)
        sims = self._vectors([p.text for p in parts]) @ self.retriever.vectors_of([h.key for h in hits]).T
        chosen: list[int] = []
        steps: list[str] = []
        for i, part in enumerate(parts):
            best = int(np.argmax(sims[i]))
            if sims[i, best] >= self.threshold:
                steps.append(f"{part.text} -> {hits[best].display_name} (cosine {sims[i, best]:.2f})")
                chosen += [j for j in np.flatnonzero(sims[i] >= self.threshold) if j not in chosen]
            else:
                steps.append(f"{part.text} -> no retrieved API fits (best cosine {sims[i, best]:.2f})")
        selected = tuple(hits[j].display_name for j in chosen)
        refusal = None if chosen else f"no retrieved API reaches cosine {self.threshold} with any sub-request"
        return Plan(selected, tuple(hits[j].key for j in chosen), tuple(steps), refusal, k, self.backend,
                    self.model, self.prompt_version, latency_s=time.perf_counter() - start)


class LLMPlanner:
    """Asks an LLM to plan with the versioned planner prompt of its style (instruction or few-shot)."""

    def __init__(self, client: LLMClient, registry_lookup, style: PromptStyle = STYLES["instruction"],
                 budget_s: float | None = None) -> None:
        self.client = client
        self.lookup = registry_lookup
        self.style = style
        self.budget_s = budget_s
        self.backend = client.backend
        self.model = client.model
        self.prompt_version = style.planner_version

    def plan(self, query: str, hits: Sequence[Hit]) -> Plan:
        from core.retrieval.discovery import clean_query  # here: the store's readers import Plan, never plan

        text = clean_query(query)
        apis = [(h.display_name, getattr(self.lookup(h.key), "description", "")) for h in hits]
        names = [name for name, _ in apis]

        def validate(answer: dict) -> dict:
            return validate_plan(self.style.plan_from_reply(answer, names))

        with within_budget(self.budget_s):
            reply = generate_json(self.client, self.style.planner(text, apis), self.style.planner_schema(names), 0.0,
                                  validate)
        usage, latency = reply.usage, reply.latency_s
        cached = bool(reply.response and reply.response.cached)
        if reply.obj is None:
            return Plan((), (), (), None, len(hits), self.backend, self.model, self.prompt_version, usage, latency,
                        parse_error=reply.error, cached=cached, failure=reply.failure)
        obj = validate(reply.obj)
        selected = tuple(str(s) for s in obj.get("selected_apis") or [])
        refusal = obj.get("refusal") or None
        return Plan(selected, match_selections(selected, hits), tuple(str(s) for s in obj.get("steps") or []),
                    str(refusal) if refusal else None, len(hits), self.backend, self.model, self.prompt_version,
                    usage, latency, cached=cached)
