"""A time budget for one query's LLM work, so retries and Retry-After waits cannot add up without bound.

A 429 with `Retry-After: 3600` once made one query take 546 s: each wait was capped, but retries times
calls (stubs, plan, their repairs) added up. `within_budget` sets a deadline for the code inside it
(nested budgets keep the earlier deadline); the retry loop gives up, with a `timeout` error that says
so, rather than wait past it. A context variable carries it, so each worker thread's query has its own.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_deadline: ContextVar[tuple[float, float] | None] = ContextVar("llm_query_deadline", default=None)


@contextmanager
def within_budget(seconds: float | None) -> Iterator[None]:
    """Run the block under a deadline `seconds` from now (None: no budget of its own)."""
    if seconds is None:
        yield
        return
    now = time.monotonic()
    outer = _deadline.get()
    deadline = (now + seconds, seconds)
    token = _deadline.set(deadline if outer is None or deadline[0] < outer[0] else outer)
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining_s() -> float | None:
    """Seconds left in the current budget; None outside any budget."""
    current = _deadline.get()
    return None if current is None else current[0] - time.monotonic()


def budget_s() -> float | None:
    """The size of the budget in force, for messages."""
    current = _deadline.get()
    return None if current is None else current[1]
