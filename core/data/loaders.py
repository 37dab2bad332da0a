"""The registry and the test queries for a Settings, each loaded once per process."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from core.data.registry import Registry
from core.data.registry_cache import load_registry_cached
from core.data.toolbench import Query, load_queries
from core.settings import Settings


@lru_cache(maxsize=4)
def _registry(data_dir: str, which: str, cache_dir: str) -> Registry:
    return Registry(which, tuple(load_registry_cached(Path(data_dir), which, Path(cache_dir))))


@lru_cache(maxsize=2)
def _queries(data_dir: str) -> tuple[Query, ...]:
    return tuple(load_queries(Path(data_dir)))


def registry_for(settings: Settings) -> Registry:
    return _registry(str(settings.data_dir()), settings.registry, str(settings.cache_dir))


def queries_for(settings: Settings, subset: str | None = None) -> list[Query]:
    queries = _queries(str(settings.data_dir()))
    if subset is None:
        return list(queries)
    chosen = [q for q in queries if q.subset == subset]
    if not chosen:
        known = sorted({q.subset for q in queries})
        raise ValueError(f"Unknown subset {subset!r}; known subsets: {', '.join(known)}")
    return chosen
