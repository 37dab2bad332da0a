"""The LLM backends, each declared once: name, label, default model, whether it is an LLM, its client.

Settings, the agents, the store's provenance, the report and every page read these declarations,
so a new backend is one more entry here plus its client module in core.agents.llm. A client is
named as "module:function" and imported on first use by core.agents.llm.make_client, as the SDKs
take seconds to import; the function takes the Settings and returns an LLMClient (or raises
LLMUnavailable saying what to do). This module sits below every layer and imports none of them.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from core.local_models import model_name_of

OFFLINE_LABEL = "offline heuristic, not an LLM"


@dataclass(frozen=True)
class Backend:
    """One way of writing stubs and plans. `model_from` gives the model when LLM_MODEL does not say
    (from the environment's other settings); `fixed_model` ignores LLM_MODEL (the local model is
    whatever file LOCAL_MODEL points to)."""

    name: str
    is_llm: bool
    description: str
    model_from: Callable[[Mapping[str, str]], str]
    client: str | None = None
    fixed_model: bool = False
    needs_nothing: bool = False  # runs on any machine with no key and no server: offered on every Inspector

    def default_model(self, env: Mapping[str, str] | None = None) -> str:
        return self.model_from(env or {})

    def label(self, model: str) -> str:
        """What every page, export and stored run calls this backend; the heuristic never passes as an LLM."""
        return f"{self.name} {model}" if self.is_llm else OFFLINE_LABEL


DEFAULT_GEMINI_MODEL = "gemini-2.5-flash"
OFFLINE_MODEL = "offline-heuristic"

BACKEND_LIST = (
    Backend("offline", False, "a deterministic heuristic that splits the request; not an LLM",
            lambda env: OFFLINE_MODEL, needs_nothing=True),
    Backend("gemini", True, "Google Gemini through google-genai (GEMINI_API_KEY)",
            lambda env: DEFAULT_GEMINI_MODEL, "core.agents.llm.gemini:client_from_settings"),
    Backend("openai", True, "any OpenAI-compatible server (OPENAI_BASE_URL, OPENAI_MODEL)",
            lambda env: env.get("OPENAI_MODEL", ""), "core.agents.llm.openai_compat:client_from_settings"),
    Backend("local", True, "llama.cpp on this machine (make llm; LOCAL_MODEL: a declared model or a path)",
            lambda env: model_name_of(env.get("LOCAL_MODEL", "")),
            "core.agents.llm.local_llama:client_from_settings", fixed_model=True, needs_nothing=True),
)
BACKENDS_BY_NAME = {b.name: b for b in BACKEND_LIST}
BACKENDS = tuple(BACKENDS_BY_NAME)


def backend(name: str) -> Backend:
    """The declaration of `name`; ValueError naming the known ones otherwise."""
    try:
        return BACKENDS_BY_NAME[name]
    except KeyError:
        raise ValueError(f"LLM_BACKEND must be one of {', '.join(BACKENDS)}, not {name!r}") from None


def backend_label(name: str, model: str) -> str:
    """The label of a stored or configured (backend, model); an unknown stored backend keeps its names."""
    found = BACKENDS_BY_NAME.get(name)
    return found.label(model) if found else f"{name} {model}"
