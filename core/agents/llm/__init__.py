"""LLM backends behind one small protocol, plus the call cache, retries and JSON handling.

The SDK-backed clients are imported on first use: google-genai and openai take ~1.5 s to
import, which offline runs, the CLI's --help and every Streamlit page would otherwise pay.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from core.agents.llm.base import (ERROR_KINDS, RETRYABLE_KINDS, FailureKind, LLMClient, LLMError, LLMResponse,
                                  LLMUnavailable, Usage)
from core.agents.llm.cache import CachedClient, CallCache, cache_key
from core.agents.llm.jsonparse import JsonReply, MalformedJSON, failure_of, generate_json, parse_json_object
from core.agents.llm.retry import RetryPolicy, call_with_retry
from core.declared import declared_function
from core.settings import Settings

if TYPE_CHECKING:
    from core.agents.llm.gemini import GeminiClient
    from core.agents.llm.openai_compat import OpenAICompatClient

__all__ = [
    "ERROR_KINDS", "RETRYABLE_KINDS", "CachedClient", "CallCache", "FailureKind", "GeminiClient", "LLMClient",
    "JsonReply", "LLMError", "LLMResponse", "LLMUnavailable", "MalformedJSON", "OpenAICompatClient", "RetryPolicy",
    "Usage", "cache_key", "call_with_retry", "failure_of", "generate_json", "make_client", "parse_json_object",
]

_LAZY = {"GeminiClient": "core.agents.llm.gemini", "OpenAICompatClient": "core.agents.llm.openai_compat"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_client(settings: Settings) -> LLMClient | None:
    """The configured backend's client, as core.backends declares it; None for the offline heuristic."""
    client = settings.backend.client
    if client is None:
        return None
    return declared_function(client)(settings)
