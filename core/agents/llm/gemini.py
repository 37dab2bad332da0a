"""Gemini backend over google-genai, with the SDK's own retries off so `retry.py` decides."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx2
from google import genai
from google.genai import errors, types

from core.agents.llm.budget import call_timeout_s
from core.agents.llm.base import LLMError, LLMResponse, LLMUnavailable, Usage, kind_for_status
from core.agents.llm.retry import RetryPolicy, call_with_retry, parse_retry_after
from core.backends import DEFAULT_GEMINI_MODEL as DEFAULT_MODEL
from core.settings import Settings

# Finish reasons by which the API's filters withheld a reply (types.FinishReason); a reply stopped by one
# is a failed call, whatever text came before the stop.
BLOCKING_FINISH_REASONS = frozenset({"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
                                     "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "MODEL_ARMOR"})


class GeminiClient:
    """`LLMClient` for the Gemini Developer API (or any server speaking its REST dialect)."""

    backend = "gemini"

    def __init__(
        self,
        api_key: str,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        timeout_s: float = 60,
        max_attempts: int = 4,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not api_key:
            raise ValueError("GeminiClient needs an API key (set GEMINI_API_KEY)")
        self.model = model
        self.base_url = base_url
        # in the call cache's key: the same model name on another server is another model
        self.identity = base_url or ""
        self._secrets = (api_key,)
        self._policy = RetryPolicy(max_attempts=max_attempts)
        self._sleep = sleep
        self._timeout_s = timeout_s
        self._client = genai.Client(api_key=api_key, vertexai=False, http_options=_http_options(timeout_s, base_url))

    def __repr__(self) -> str:
        return f"GeminiClient(model={self.model!r}, base_url={self.base_url!r})"

    def generate(
        self, prompt: str, *, schema: dict[str, Any] | None = None, temperature: float = 0.0
    ) -> LLMResponse:
        config = types.GenerateContentConfig(
            temperature=temperature,
            response_mime_type="application/json" if schema is not None else None,
            response_schema=schema,
        )
        (text, usage, latency), attempts = call_with_retry(
            lambda: self._once(prompt, config), self._policy, sleep=self._sleep
        )
        return LLMResponse(text, usage, latency, self.backend, self.model, attempts=attempts)

    def _once(self, prompt: str, config: types.GenerateContentConfig) -> tuple[str, Usage, float]:
        start = time.perf_counter()
        # The request's own timeout, never past the query's budget.
        timed = config.model_copy(update={"http_options": _http_options(call_timeout_s(self._timeout_s))})
        try:
            response = self._client.models.generate_content(
                model=self.model, contents=prompt, config=timed
            )
        except errors.APIError as exc:
            raise self._api_error(exc) from None
        except httpx2.TimeoutException as exc:
            raise LLMError("timeout", f"request timed out: {exc}", secrets=self._secrets) from None
        except httpx2.RequestError as exc:
            raise LLMError("transport", f"{type(exc).__name__}: {exc}", secrets=self._secrets) from None
        except errors.UnknownApiResponseError as exc:
            raise LLMError("server", f"unreadable response: {exc}", secrets=self._secrets) from None
        latency = time.perf_counter() - start
        blocked = blocked_reason(response)
        if blocked is not None:  # an empty text would pass for the model's own malformed answer
            raise LLMError("blocked", blocked, secrets=self._secrets)
        meta = response.usage_metadata
        usage = Usage(
            prompt_tokens=(meta.prompt_token_count or 0) if meta else 0,
            output_tokens=(meta.candidates_token_count or 0) if meta else 0,
            thoughts_tokens=(meta.thoughts_token_count or 0) if meta else 0,
        )
        return response.text or "", usage, latency

    def _api_error(self, exc: errors.APIError) -> LLMError:
        code = int(exc.code or 0)
        return LLMError(
            kind_for_status(code),
            f"HTTP {code} {exc.status or ''}: {exc.message or ''}".strip(),
            secrets=self._secrets,
            status=code,
            retry_after_s=_retry_after(exc),
        )


def _http_options(timeout_s: float, base_url: str | None = None) -> types.HttpOptions:
    """A timeout in the SDK's milliseconds, and the SDK's own retries off (retry.py decides)."""
    return types.HttpOptions(base_url=base_url, timeout=max(1, int(timeout_s * 1000)),
                             retry_options=types.HttpRetryOptions(attempts=1))


def blocked_reason(response: types.GenerateContentResponse) -> str | None:
    """Why the API's filter withheld the reply: the prompt's `promptFeedback.blockReason` (no candidates
    then), or the first candidate's blocking `finishReason`; None when nothing was blocked."""
    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason is not None:
        detail = f": {feedback.block_reason_message}" if feedback.block_reason_message else ""
        return f"the prompt was blocked by the API's safety filter ({_name(feedback.block_reason)}){detail}"
    finish = _name(response.candidates[0].finish_reason) if response.candidates else None
    if finish in BLOCKING_FINISH_REASONS:
        return f"the reply was blocked by the API's safety filter ({finish})"
    return None


def _name(reason: object) -> str | None:
    """An SDK enum's wire name ("SAFETY"), also for a value the SDK does not know."""
    return None if reason is None else str(getattr(reason, "value", reason))


def _retry_after(exc: errors.APIError) -> float | None:
    """Retry-After header, else Google's RetryInfo `retryDelay` ("37s") from the error body."""
    headers = getattr(exc.response, "headers", None)
    from_header = parse_retry_after(headers.get("retry-after")) if headers is not None else None
    if from_header is not None:
        return from_header
    body = exc.details.get("error", exc.details) if isinstance(exc.details, dict) else {}
    for detail in body.get("details", []) if isinstance(body, dict) else []:
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            return parse_retry_after(delay[:-1])
    return None


def client_from_settings(settings: Settings) -> GeminiClient:
    """The gemini backend's client (core.backends); LLMUnavailable without a key."""
    if not settings.gemini_api_key:
        raise LLMUnavailable("LLM_BACKEND=gemini needs GEMINI_API_KEY (or GOOGLE_API_KEY)")
    return GeminiClient(settings.gemini_api_key, model=settings.llm_model or DEFAULT_MODEL,
                        base_url=settings.gemini_base_url or None, timeout_s=settings.llm_timeout_s)
