"""The registry and the test queries for a Settings, each loaded once per process, whatever the registry.

ToolBench's two registries are read from its data folder (through the columnar cache: 47k APIs); the others from
their folder under data/registries/ with their declared source (core.data.sources) and query set
(core.data.query_sets), a few thousand APIs that parse in a fraction of a second.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from core.data.query_sets import QuerySet, read_query_set
from core.data.registry import Registry
from core.data.registry_cache import load_registry_cached
from core.data.sources import source
from core.data.toolbench import Query, load_queries
from core.registries import RegistryDecl
from core.settings import Settings


@lru_cache(maxsize=4)
def _registry(data_dir: str, declared: RegistryDecl, cache_dir: str) -> Registry:
    if declared.is_toolbench:
        return Registry(declared.name, tuple(load_registry_cached(Path(data_dir), declared.name, Path(cache_dir))))
    return Registry(declared.name, tuple(source(declared.source).read(Path(data_dir) / declared.tools, declared.name)))


@lru_cache(maxsize=2)
def _toolbench_queries(data_dir: str) -> tuple[Query, ...]:
    return tuple(load_queries(Path(data_dir)))


@lru_cache(maxsize=4)
def _query_set(data_dir: str, declared: RegistryDecl, cache_dir: str) -> QuerySet:
    if not declared.queries:  # a registry imported without queries: searchable, nothing to score
        return QuerySet((), (), 0, ())
    registry = _registry(data_dir, declared, cache_dir)
    return read_query_set(Path(data_dir) / declared.queries, registry.apis)


def registry_for(settings: Settings) -> Registry:
    return _registry(str(settings.registry_dir()), settings.registry_declared, str(settings.cache_dir))


def query_set_for(settings: Settings) -> QuerySet | None:
    """The chosen registry's query set with what its gold names did; None for ToolBench's (its gold is keys)."""
    if settings.registry_declared.is_toolbench:
        return None
    return _query_set(str(settings.registry_dir()), settings.registry_declared, str(settings.cache_dir))


def queries_for(settings: Settings, subset: str | None = None) -> list[Query]:
    chosen_set = query_set_for(settings)
    queries = _toolbench_queries(str(settings.data_dir())) if chosen_set is None else chosen_set.queries
    if subset is None:
        return list(queries)
    chosen = [q for q in queries if q.subset == subset]
    if not chosen:
        known = sorted({q.subset for q in queries})
        raise ValueError(f"Unknown subset {subset!r}; known subsets: {', '.join(known)}")
    return chosen
