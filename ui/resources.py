"""Resources the pages share: backends, cached database reads and figures, live inspections.

Database reads call the shared ResultsReader's methods, which cache per set of complete runs, and so are the
charts of them. What a shared ?q= link reads comes from core.analysis.store_summary, without pandas. The page
settings live in ui.page_settings, the index build in ui.index_job and the Registry page's map in
ui.registry_views.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go  # imported by Streamlit already
import streamlit as st

from core.retrieval.archs import WrittenStubs
from core.retrieval.discovery import Retriever
from core.study.one_query import run_query
from core.study.query_result import QueryOutcome, StubWriting
from core.analysis.provenance import provenance_line
from core.analysis.store_summary import StoreSummary
from core.agents.systems import available_systems, with_system
from core.local_models import LOCAL_MODELS
from core.settings import Settings
from core.study.gold_trace import GoldTrace, trace_gold
from core.store.commit import git_commit
from core.store.packing import still_packed
from ui.chart_text import subtitled

if TYPE_CHECKING:  # the reader imports pandas: a shared ?q= link never needs it (core.analysis.store_summary)
    from core.analysis.reader import ResultsReader
    from core.analysis.router_fit import RouterFit



def stored_studies(settings: Settings) -> list[str]:
    """The systems with a complete main study on the chosen registry's study registry (StoreSummary.systems), or
    none when the store cannot be read (the pages say why) or is still being unpacked (a fresh clone's first
    seconds: app.py unpacks it in the background, and the next run lists them)."""
    if still_packed(settings.results_url):
        return []
    try:
        return _summary(settings.results_url, settings.cache_dir).systems(settings.registry_declared.study_registry)
    except Exception:  # a missing or damaged store is reported by the page, not the sidebar
        return []


def router_fit(settings: Settings, gold: str, k: int, study: str | None) -> RouterFit | None:
    """ResultsReader.router_fit (what the Inspector applies to a live query), kept under the store's complete runs so
    that a later server's first ?q= answer reads it without pandas; None when the store cannot be read or holds no
    fit. Raises what the reader raises on a damaged store (the page says it in one line)."""
    return _summary(settings.results_url, settings.cache_dir).kept(
        ("router_fit", gold, k, study), lambda: results(settings).router_fit(gold=gold, k=k, backend=study))


def available_backends(settings: Settings) -> list[str]:
    """What the Inspector offers (core.agents.systems.available_systems, which `query --models` reads too)."""
    return available_systems(settings)


def backend_title(system: str) -> str:
    """A picker's label: the local model's own label, the offline heuristic named as no LLM."""
    backend, _, model = system.partition(":")
    if backend == "local":
        spec = LOCAL_MODELS.get(model)
        return f"local · {spec.label}" if spec else f"local · {model or 'not installed'}"
    return "offline heuristic (not an LLM)" if backend == "offline" else backend


def with_backend(settings: Settings, system: str) -> Settings:
    """Settings using `system`, one of available_backends(settings) (core.agents.systems.with_system)."""
    return with_system(settings, system)


@st.cache_resource(show_spinner=False)
def commit() -> str:
    """The checkout's git commit, read once per server: live results carry it as their provenance."""
    return git_commit()


@st.cache_resource(show_spinner=False)
def _reader(url: str, cache_dir: Path, registry: str) -> ResultsReader:
    from core.analysis.reader import ResultsReader  # pandas: imported by the first page that reads a table

    return ResultsReader(url, cache_dir, registry)


@st.cache_resource(show_spinner=False)
def _summary(url: str, cache_dir: Path) -> StoreSummary:
    return StoreSummary(url, cache_dir)


def results(settings: Settings) -> ResultsReader:
    """The results database's reader, one per server: pages call its table methods directly. Each is
    cached per set of complete runs and hands back a copy, so a benchmark that finishes a run shows up
    on the next page load without a restart; the tables are also kept in CACHE_DIR for the next server."""
    return _reader(settings.results_url, settings.cache_dir, settings.registry_declared.study_registry)


def db_version(settings: Settings) -> tuple[int, ...]:
    """What the charts and tables are drawn from: the store's complete runs. A benchmark under way writes rows
    every few seconds; keyed on the SQLite file's time, the Overview rebuilt its tables on every rerun meanwhile."""
    return results(settings).complete_run_ids()


class _Uncached(Exception):
    """Carries a result out of the cached function without caching it."""

    def __init__(self, result: QueryOutcome) -> None:
        super().__init__("not cached")
        self.result = result


@st.cache_data(show_spinner=False, max_entries=128)
def _inspect(text: str, k: int, index_key: tuple, backend: str, model: str, _retriever: Retriever,
             _settings: Settings) -> QueryOutcome:
    result = run_query(text, k, _retriever, _settings)
    if result.llm_error:  # e.g. the model is not installed yet: ask again on the next run
        raise _Uncached(result)
    return result


def inspect_live(text: str, k: int, retriever: Retriever, settings: Settings) -> QueryOutcome:
    """run_query (every declared architecture, with plans), cached per (text, k, index, backend) so reruns of the
    page are instant.

    QueryError (empty or oversized text) propagates for the page to show; gold marks are applied
    by the caller (QueryOutcome.with_gold), so the gold choice is not part of the cache key.
    """
    index_key = (retriever.registry.name, retriever.registry.content_hash, retriever.encoder.model_id)
    try:
        return _inspect(text, k, index_key, settings.llm_backend, settings.llm_model, retriever, settings)
    except _Uncached as uncached:
        return uncached.result


LIVE_RESULTS = 64  # finished live inspections kept (shared by every session), oldest dropped first


@st.cache_resource(show_spinner=False)
def live_results() -> dict:
    """Finished live inspections by (view, backend, model, registry): a rerun of the page (another gold, a widget
    elsewhere) redraws them at once instead of asking the model again."""
    return {}


def remember(done: dict, key: tuple, value: Any) -> None:
    done[key] = value
    while len(done) > LIVE_RESULTS:
        done.pop(next(iter(done)))


@st.cache_data(show_spinner=False, max_entries=256)
def _traces(query: str, written: WrittenStubs | None, gold: tuple, index_key: tuple,
            _retriever: Retriever) -> list[GoldTrace]:
    return trace_gold(query, written, gold, _retriever)


def gold_traces(query: str, writing: StubWriting | None, gold: frozenset, retriever: Retriever) -> list[GoldTrace]:
    """trace_gold for one shown result, cached per (query, stubs, gold, index): the stubs as stored or written
    (none when no stubs were written), each declared architecture searching them as the studies do."""
    written = None if writing is None else WrittenStubs(writing.stubs, writing.fallback)
    index_key = (retriever.registry.name, retriever.registry.content_hash, retriever.encoder.model_id)
    return _traces(query, written, tuple(sorted(gold)), index_key, retriever)


@st.cache_resource(show_spinner=False, max_entries=64)
def _figure(url: str, version: tuple[int, ...], key: tuple, subtitle: str,
            _build: Callable[[], go.Figure]) -> go.Figure:
    fig = _build()
    return subtitled(fig, subtitle) if subtitle else fig


def db_figure(settings: Settings, key: tuple, build: Callable[[], go.Figure], source: dict | None = None) -> go.Figure:
    """A chart of database data, built once per set of complete runs (db_version): plotly builds cost ~0.1 s each.

    `key` names the chart and every input that changes it (gold, backend, metric, subset); `source`
    (core.analysis.provenance) becomes the chart's subtitle, so a saved image says where it comes from.
    Figures are shared across sessions and must not be mutated after building.
    """
    url = settings.results_url
    return _figure(url, db_version(settings), key, provenance_line(source) if source else "", build)
