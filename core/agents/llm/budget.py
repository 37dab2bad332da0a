"""A time budget for one query's LLM work, so retries and Retry-After waits cannot add up without bound.

A 429 with `Retry-After: 3600` once made one query take 546 s: each wait was capped, but retries times
calls (stubs, plan, their repairs) added up. `within_budget` sets a deadline for the code inside it
(nested budgets keep the earlier deadline); the retry loop gives up, with a `timeout` error that says
so, rather than wait past it. A context variable carries it, so each worker thread's query has its own.
"""
from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from core.agents.llm.base import LLMError

# A call whose timeout was cut to the budget's rest can fail a moment before the budget's own wait ends: its
# timeout is then the budget's, and said so.
BUDGET_RACE_S = 0.05

T = TypeVar("T")

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


def call_timeout_s(timeout_s: float) -> float:
    """A call's own timeout, cut to what is left of the budget (at least 0.1 s: clients refuse zero)."""
    left = remaining_s()
    return timeout_s if left is None else max(0.1, min(timeout_s, left))


def bounded(fn: Callable[[], T]) -> T:
    """fn(), but raise a `timeout` LLMError when the budget in force runs out first (no budget: fn() itself).

    The call runs on a daemon thread with this thread's context, so a nested budget still applies inside it;
    when the deadline passes the thread is left to end on its own and its result is dropped.
    """
    left = remaining_s()
    if left is None:
        return fn()
    if left <= 0:
        raise LLMError("timeout", f"the query's time budget of {budget_s():.0f} s is spent")
    done = threading.Event()
    outcome: list[tuple[bool, object]] = []

    def work() -> None:
        try:
            outcome.append((True, fn()))
        except BaseException as exc:  # handed back to the waiting thread as it was
            outcome.append((False, exc))
        finally:
            done.set()

    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(work,), daemon=True, name="llm-call").start()
    if not done.wait(left):
        raise LLMError("timeout", f"the query's time budget of {budget_s():.0f} s ran out during the call")
    ok, value = outcome[0]
    if not ok:
        spent = (remaining_s() or 0.0) <= BUDGET_RACE_S
        if isinstance(value, LLMError) and value.kind == "timeout" and spent:  # the call's own timeout was the budget
            raise LLMError("timeout",
                           f"the query's time budget of {budget_s():.0f} s ran out during the call") from None
        raise value  # type: ignore[misc]
    return value  # type: ignore[return-value]
