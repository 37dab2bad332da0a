"""LLM backends behind one small protocol, plus the call cache, retries and JSON handling.

The SDK-backed clients are imported on first use: google-genai and openai take ~1.5 s to
import, which offline runs, the CLI's --help and every Streamlit page would otherwise pay.
"""
from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from core.llm.base import ERROR_KINDS, RETRYABLE_KINDS, LLMClient, LLMError, LLMResponse, LLMUnavailable, Usage
from core.llm.cache import CachedClient, CallCache, cache_key
from core.llm.jsonparse import JsonReply, MalformedJSON, generate_json, parse_json_object
from core.llm.retry import RetryPolicy, call_with_retry
from core.settings import Settings

if TYPE_CHECKING:
    from core.llm.gemini import GeminiClient
    from core.llm.openai_compat import OpenAICompatClient

__all__ = [
    "ERROR_KINDS", "RETRYABLE_KINDS", "CachedClient", "CallCache", "GeminiClient", "LLMClient",
    "JsonReply", "LLMError", "LLMResponse", "LLMUnavailable", "MalformedJSON", "OpenAICompatClient", "RetryPolicy", "Usage",
    "cache_key", "call_with_retry", "generate_json", "make_client", "parse_json_object",
]

_LAZY = {"GeminiClient": "core.llm.gemini", "OpenAICompatClient": "core.llm.openai_compat"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_client(settings: Settings, *, sleep: Callable[[float], None] = time.sleep) -> LLMClient | None:
    """The configured backend's client, or None for the offline backend (no LLM calls at all)."""
    if settings.llm_backend == "offline":
        return None
    if settings.llm_backend == "gemini":
        from core.llm.gemini import DEFAULT_MODEL, GeminiClient

        if not settings.gemini_api_key:
            raise LLMUnavailable("LLM_BACKEND=gemini needs GEMINI_API_KEY (or GOOGLE_API_KEY)")
        return GeminiClient(
            settings.gemini_api_key, model=settings.llm_model or DEFAULT_MODEL,
            base_url=settings.gemini_base_url or None,
            timeout_s=settings.llm_timeout_s, sleep=sleep,
        )
    if settings.llm_backend == "openai":
        from core.llm.openai_compat import OpenAICompatClient

        if not settings.openai_base_url:
            raise LLMUnavailable("LLM_BACKEND=openai needs OPENAI_BASE_URL")
        return OpenAICompatClient(
            settings.openai_base_url, settings.llm_model, api_key=settings.openai_api_key,
            timeout_s=settings.llm_timeout_s, sleep=sleep,
        )
    if settings.llm_backend == "local":
        from core.llm.local_llama import local_client

        return local_client(settings.local_model, settings.cache_dir, settings.local_threads,
                            settings.local_instances, settings.llm_timeout_s)
    raise ValueError(f"unknown LLM backend {settings.llm_backend!r}")
