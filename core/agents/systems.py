"""The discovery systems this machine offers, by key: a backend ("offline", "gemini", "openai") or "local:<model>" for a
local model. The Inspector's picker (ui.resources) and `query --models` read the same list, so a key one accepts the
other does too; they live here, below both, because core never imports the dashboard.
"""
from __future__ import annotations

from core.agents.llm.local_model import installed_models
from core.backends import BACKEND_LIST
from core.local_models import model_name_of
from core.settings import Settings

LOCAL = "local"  # the bare key: no local model installed, offered only so that picking it says how to install one


def system_of(settings: Settings) -> str:
    """The key of the configured backend: "local:<model>" for the local one, else the backend's name."""
    return f"{LOCAL}:{settings.llm_model}" if settings.llm_backend == LOCAL else settings.llm_backend


def available_systems(settings: Settings) -> list[str]:
    """What the Inspector offers: the configured backend, every installed local model ("local:<model>"; the bare
    "local", which says how to install one, when none is), then every other backend that needs no key and no
    server (the offline heuristic)."""
    configured = [f"{LOCAL}:{model_name_of(settings.local_model)}"] if settings.local_model else []
    local = [*configured, *(f"{LOCAL}:{spec.name}" for spec in installed_models(settings.cache_dir))] or [LOCAL]
    others = [b.name for b in sorted(BACKEND_LIST, key=lambda b: not b.is_llm) if b.needs_nothing and b.name != LOCAL]
    return list(dict.fromkeys([system_of(settings), *local, *others]))


def runnable_systems(settings: Settings) -> list[str]:
    """The systems that can answer a query here: available_systems without the bare "local", which has no model
    to run. A configured backend stays even when its key or server is wrong: running it says why."""
    return [system for system in available_systems(settings) if system != LOCAL]


def with_system(settings: Settings, system: str) -> Settings:
    """Settings using `system`, one of available_systems(settings): a backend, or "local:<model>"."""
    backend, _, model = system.partition(":")
    chosen = settings.with_backend(backend)
    if backend != LOCAL or not model:
        return chosen
    path = settings.local_model if model_name_of(settings.local_model) == model else model  # LOCAL_MODEL=path kept
    return chosen.with_(local_model=path, llm_model=model)
