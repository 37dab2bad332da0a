"""A sink for a reply's text as it is generated, so a page can show stubs while the model writes them.

Like the query budget, it travels in a context variable: the stub writer, the JSON repair loop and the
call cache need no new parameters, a backend that can stream (the local one) reads it, and every other
backend (or a cache hit) simply delivers the whole reply at the end. The sink is called with the text
so far, from whatever thread generates it, so it must only hand the text on (to a queue, say).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

TextSink = Callable[[str], None]
_sink: ContextVar[TextSink | None] = ContextVar("llm_text_sink", default=None)


@contextmanager
def streaming_to(sink: TextSink | None) -> Iterator[None]:
    """Send the text of every reply generated inside the block to `sink` as it grows."""
    token = _sink.set(sink)
    try:
        yield
    finally:
        _sink.reset(token)


def current_sink() -> TextSink | None:
    return _sink.get()
