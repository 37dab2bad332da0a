"""Records and the client protocol shared by every LLM backend.

Kept free of SDK imports so discovery, the planner and the fakes in tests depend only on this.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from core.settings import redact


class FailureKind(StrEnum):
    """Why the model could not be asked or its reply not read: an outage, not the model's answer.

    Every outcome carries it as a field (JsonReply, StubOutcome, Plan), so whether a row failed never
    depends on how its message is worded. The value is the tag in the stored text (core.agents.llm.jsonparse).
    A malformed or off-schema reply is the model's own answer, so it has no kind here.
    """

    TIMEOUT = "timeout"
    RATE_LIMIT = "rate_limit"
    SERVER = "server"
    TRANSPORT = "transport"
    AUTH = "auth"
    BAD_REQUEST = "bad_request"
    # The API's safety or content filter withheld the reply (Gemini's blockReason or a SAFETY-like
    # finishReason, OpenAI's finish_reason "content_filter"): the row would measure the filter, not the
    # model's answer; asking again gets the same verdict, so it is not retried.
    BLOCKED = "blocked"
    CLIENT = "client"  # a client raised something other than LLMError (an SDK choking on an HTML page, say)
    REPLY_TOO_LARGE = "reply_too_large"  # past jsonparse.MAX_REPLY_CHARS, so never parsed


# What a failed call (LLMError) can say: CLIENT and REPLY_TOO_LARGE arise around the call (jsonparse).
ERROR_KINDS: frozenset[FailureKind] = frozenset(FailureKind) - {FailureKind.CLIENT, FailureKind.REPLY_TOO_LARGE}
RETRYABLE_KINDS: frozenset[FailureKind] = frozenset(
    {FailureKind.TIMEOUT, FailureKind.RATE_LIMIT, FailureKind.SERVER, FailureKind.TRANSPORT})
MAX_MESSAGE_CHARS = 500


@dataclass(frozen=True)
class Usage:
    """Token counts of one or more calls; thoughts are reported apart because they are billed."""

    prompt_tokens: int = 0
    output_tokens: int = 0
    thoughts_tokens: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.output_tokens + self.thoughts_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.output_tokens + other.output_tokens,
            self.thoughts_tokens + other.thoughts_tokens,
        )


def usage_json(usage: Usage) -> dict:
    return {"prompt_tokens": usage.prompt_tokens, "output_tokens": usage.output_tokens,
            "thoughts_tokens": usage.thoughts_tokens, "total_tokens": usage.total}


@dataclass(frozen=True)
class LLMResponse:
    """One successful call. `latency_s` is the successful attempt only (backoff waits excluded)."""

    text: str
    usage: Usage
    latency_s: float
    backend: str
    model: str
    cached: bool = False
    attempts: int = 1


class LLMUnavailable(ValueError):
    """The configured backend cannot be used at all (no key, no model, not installed); the message says
    what to do. Retrieval never needs an LLM, so callers show RtP and this message side by side."""


class LLMError(Exception):
    """A failed call, classified by `kind` so retry and reporting need no SDK knowledge.

    The message is redacted against `secrets` and truncated, so it is safe to log or store.
    """

    def __init__(
        self,
        kind: FailureKind | str,
        message: str,
        *,
        secrets: tuple[str, ...] = (),
        status: int | None = None,
        retry_after_s: float | None = None,
        attempts: int = 1,
    ) -> None:
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown LLMError kind {kind!r}")
        clean = redact(message, secrets)[:MAX_MESSAGE_CHARS]
        self.kind = FailureKind(kind)
        super().__init__(self.kind.value, clean)  # both in args, so the error pickles across processes
        self.message = clean
        self.status = status
        self.retry_after_s = retry_after_s
        self.attempts = attempts

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE_KINDS

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


def kind_for_status(code: int) -> FailureKind:
    """Classify an HTTP error status the same way for every backend."""
    if code == 429:
        return FailureKind.RATE_LIMIT
    if code == 408:
        return FailureKind.TIMEOUT
    if code in (401, 403):
        return FailureKind.AUTH
    if 400 <= code < 500:
        return FailureKind.BAD_REQUEST
    return FailureKind.SERVER


class LLMClient(Protocol):
    """What discovery and the planner need from a backend: one prompt in, one text out."""

    backend: str
    model: str

    def generate(
        self, prompt: str, *, schema: dict[str, Any] | None = None, temperature: float = 0.0
    ) -> LLMResponse:
        """Return the model's reply; JSON mode when `schema` is given. Raises LLMError."""
        ...
