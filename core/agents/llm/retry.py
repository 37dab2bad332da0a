"""Our one retry loop, so both backends back off the same way and tests can skip the waits."""
from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from core.agents.llm.base import FailureKind, LLMError
from core.agents.llm.budget import bounded, budget_s, remaining_s

T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff with jitter; Retry-After wins when the server sends one."""

    max_attempts: int = 4
    base_s: float = 0.5
    cap_s: float = 20.0
    max_retry_after_s: float = 60.0

    def delay(self, attempt: int, error: LLMError, rng: Callable[[], float] = random.random) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based)."""
        if error.retry_after_s is not None and error.retry_after_s >= 0:
            return min(error.retry_after_s, self.max_retry_after_s)
        ceiling = min(self.cap_s, self.base_s * 2 ** (attempt - 1))
        return ceiling * (0.5 + 0.5 * rng())


def call_with_retry(
    fn: Callable[[], T],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], None] = time.sleep,
    rng: Callable[[], float] = random.random,
) -> tuple[T, int]:
    """Run `fn` until it succeeds or fails for good; return (result, attempts used).

    Only LLMError is retried, and only its retryable kinds; the final error carries `attempts`. Under a
    query budget (core.agents.llm.budget) no attempt starts, and no wait begins, that would end past it,
    and an attempt still in flight when it runs out is abandoned (`bounded`).
    """
    attempts = max(1, policy.max_attempts)
    attempt = 1
    while True:
        left = remaining_s()
        if left is not None and left <= 0:
            raise LLMError("timeout", f"the query's time budget of {budget_s():.0f} s is spent", attempts=attempt - 1)
        try:
            return bounded(fn), attempt
        except LLMError as err:
            err.attempts = attempt
            if not err.retryable or attempt >= attempts:
                raise
            wait = policy.delay(attempt, err, rng)
            left = remaining_s()
            if left is not None and left <= 0 and err.kind is FailureKind.TIMEOUT:
                raise  # the budget itself ran out: its own message says so
            if left is not None and wait >= left:
                raise LLMError("timeout", f"{err}; retrying in {wait:.0f} s would pass the query's time budget "
                               f"of {budget_s():.0f} s", status=err.status, attempts=attempt) from None
            log.info("LLM call failed (%s), attempt %d/%d, retrying in %.2fs", err, attempt, attempts, wait)
            sleep(wait)
            attempt += 1


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds form only; dates are rare from LLM APIs)."""
    if not value:
        return None
    try:
        return max(0.0, float(value.strip()))
    except ValueError:
        return None
