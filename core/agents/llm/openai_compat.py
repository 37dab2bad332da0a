"""Backend for any OpenAI-compatible chat-completions server (OpenAI, vLLM, Ollama, llama.cpp), or a pool of them.

OPENAI_BASE_URL may list several servers of the same model, comma-separated (e.g. one vLLM server per
GPU): calls go to them in turn, one call each, so a study's `--concurrency` calls in flight are spread
evenly, and a retry goes to the next server. Every server is recorded in the run's provenance, without
credentials.
"""
from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import openai

from core.agents.llm.budget import call_timeout_s
from core.agents.llm.base import LLMError, LLMResponse, LLMUnavailable, Usage, kind_for_status
from core.agents.llm.retry import RetryPolicy, call_with_retry, parse_retry_after
from core.settings import Settings

PLACEHOLDER_KEY = "not-needed"  # local servers ignore the key, but the SDK insists on one


def server_urls(base_url: str) -> list[str]:
    """The servers named in OPENAI_BASE_URL: one URL, or several separated by commas."""
    return [url.strip() for url in base_url.split(",") if url.strip()]


def public_url(url: str) -> str:
    """The URL without user, password, query or fragment: what provenance may show."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class OpenAICompatClient:
    """`LLMClient` over `openai` chat.completions with SDK retries off so `retry.py` decides; one SDK client per
    server in `base_url` (comma-separated), taken in turn, one call (attempt) each."""

    backend = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout_s: float = 60,
        max_attempts: int = 4,
        sleep: Callable[[float], None] = time.sleep,
        max_tokens: int | None = None,
    ) -> None:
        if not model:
            raise ValueError("OpenAICompatClient needs a model name (set LLM_MODEL or OPENAI_MODEL)")
        self.model = model
        self.base_url = base_url
        # In the call cache's key: the same model name on another server is another model (a pool is one).
        self.identity = base_url or ""
        self._secrets = (api_key,) if api_key else ()
        self._policy = RetryPolicy(max_attempts=max_attempts)
        self._sleep = sleep
        self._max_tokens = max_tokens  # a bound on the reply; None leaves it to the server
        self._timeout_s = timeout_s
        self._clients = [openai.OpenAI(base_url=url, api_key=api_key or PLACEHOLDER_KEY, timeout=timeout_s,
                                       max_retries=0) for url in (server_urls(base_url) or [None])]
        self._turn = itertools.count()
        self._turn_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAICompatClient(model={self.model!r}, servers={self.servers!r})"

    @property
    def servers(self) -> list[str]:
        return [public_url(str(client.base_url)) for client in self._clients]

    def provenance(self) -> dict[str, Any]:
        """What every stored run of this backend records: the servers its calls went to, in turn."""
        return {"servers": self.servers, "routing": "round-robin per call" if len(self._clients) > 1 else "single"}

    def _next_client(self) -> openai.OpenAI:
        with self._turn_lock:
            return self._clients[next(self._turn) % len(self._clients)]

    def generate(
        self, prompt: str, *, schema: dict[str, Any] | None = None, temperature: float = 0.0
    ) -> LLMResponse:
        (text, usage, latency), attempts = call_with_retry(
            lambda: self._once(prompt, schema is not None, temperature), self._policy, sleep=self._sleep
        )
        return LLMResponse(text, usage, latency, self.backend, self.model, attempts=attempts)

    def _once(self, prompt: str, json_mode: bool, temperature: float) -> tuple[str, Usage, float]:
        start = time.perf_counter()
        extra: dict[str, Any] = {"response_format": {"type": "json_object"}} if json_mode else {}
        if self._max_tokens is not None:
            extra["max_tokens"] = self._max_tokens
        try:
            response = self._next_client().chat.completions.create(
                model=self.model,
                messages=[{"role": "user", "content": prompt}],
                temperature=temperature,
                timeout=call_timeout_s(self._timeout_s),  # never past the query's budget
                **extra,
            )
        except openai.APIError as exc:
            raise self._map(exc) from None
        latency = time.perf_counter() - start
        if response.choices and response.choices[0].finish_reason == "content_filter":
            # an empty or cut text would pass for the model's own malformed answer
            raise LLMError("blocked", "the reply was blocked by the API's content filter (content_filter)",
                           secrets=self._secrets)
        text = (response.choices[0].message.content or "") if response.choices else ""
        usage = Usage()
        if response.usage is not None:
            details = response.usage.completion_tokens_details
            thoughts = (details.reasoning_tokens or 0) if details is not None else 0
            # OpenAI counts reasoning inside completion_tokens; split it out to match Gemini.
            usage = Usage(
                prompt_tokens=response.usage.prompt_tokens or 0,
                output_tokens=max(0, (response.usage.completion_tokens or 0) - thoughts),
                thoughts_tokens=thoughts,
            )
        return text, usage, latency

    def _map(self, exc: openai.APIError) -> LLMError:
        if isinstance(exc, openai.APITimeoutError):
            return LLMError("timeout", "request timed out", secrets=self._secrets)
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            return LLMError("transport", f"{type(cause).__name__}: {cause}", secrets=self._secrets)
        if not isinstance(exc, openai.APIStatusError):
            return LLMError("server", f"unreadable response: {exc.message}", secrets=self._secrets)
        code = exc.status_code
        return LLMError(
            kind_for_status(code),
            f"HTTP {code}: {exc.message}",
            secrets=self._secrets,
            status=code,
            retry_after_s=parse_retry_after(exc.response.headers.get("retry-after")),
        )


def client_from_settings(settings: Settings) -> OpenAICompatClient:
    """The openai backend's client (core.backends); LLMUnavailable without a server URL."""
    if not server_urls(settings.openai_base_url):
        raise LLMUnavailable("LLM_BACKEND=openai needs OPENAI_BASE_URL (one URL, or several separated by commas)")
    return OpenAICompatClient(settings.openai_base_url, settings.llm_model, api_key=settings.openai_api_key,
                              timeout_s=settings.llm_timeout_s)
