"""The Registry page's resources: the registry as a searchable table and the PCA map of its embeddings, each built
once per index and shared by every session."""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core.retrieval.archs import ARCH_LIST
from core.data.loaders import registry_for
from core.data.registry import UNKNOWN_CATEGORY
from core.retrieval.discovery import Retriever
from core.settings import Settings
from core.study.query_result import QueryOutcome
from ui.projection import Projection, fit_pca, sample_rows

MAP_SAMPLE = 5_000  # registry vectors the PCA map is fitted on and draws


@st.cache_resource(show_spinner=False, max_entries=4)
def _map(index_key: tuple, _retriever: Retriever, sample: int) -> tuple[Projection, pd.DataFrame]:
    vectors = _retriever.corpus_vectors
    rows = sample_rows(len(vectors), sample)
    projection = fit_pca(vectors[rows])
    xy = projection.apply(vectors[rows])
    apis = [_retriever.registry.apis[r] for r in rows]
    background = pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1], "label": [a.display_name for a in apis],
                               "category": [a.category for a in apis]})
    return projection, background


def registry_map(retriever: Retriever, sample: int = MAP_SAMPLE) -> tuple[Projection, pd.DataFrame]:
    """PCA fitted once per index on a sample of its vectors, and that sample's 2-D coordinates."""
    index_key = (retriever.registry.name, retriever.registry.content_hash, retriever.encoder.model_id)
    return _map(index_key, retriever, sample)


def map_overlay(result: QueryOutcome, retriever: Retriever, projection: Projection) -> pd.DataFrame:
    """[x, y, kind, label] for a query, PtR's stubs (as embedded) and the hits of each architecture the map
    draws (core.retrieval.archs: a map marker)."""
    items: list[tuple[str, str]] = [("query", result.query or "")]
    items += [("stub", s.text()) for s in (result.writing.stubs if result.writing is not None else ())]
    vectors = [retriever.encode([text for _, text in items])]
    labels = [(kind, f"{kind}: {text}") for kind, text in items]
    for arch in (a.name for a in ARCH_LIST if a.map_marker):
        block = result.get(arch)
        hits = block.hits if block is not None else ()
        if hits:
            vectors.append(retriever.vectors_of([h.key for h in hits]))
            labels += [(arch, f"{arch.upper()} #{h.rank} {h.tool_name.strip()}/{h.api_name.strip()} ({h.score:.3f})")
                       for h in hits]
    xy = projection.apply(np.vstack(vectors))
    return pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1], "kind": [k for k, _ in labels], "label": [t for _, t in labels]})


@st.cache_resource(show_spinner=False, max_entries=4)
def _registry_frame(data_dir: str, registry: str, _settings: Settings) -> pd.DataFrame:
    apis = registry_for(_settings).apis
    frame = pd.DataFrame({"tool": [a.tool_name.strip() for a in apis], "api": [a.api_name.strip() for a in apis],
                          "category": [a.category or UNKNOWN_CATEGORY for a in apis],
                          "description": [a.description for a in apis], "doc_source": [a.doc_source for a in apis]})
    frame["_haystack"] = (frame["tool"] + "\n" + frame["api"] + "\n" + frame["description"]).str.lower()
    frame["_row"] = range(len(frame))  # the registry row, for the semantic search's hits
    # Described APIs with a category first: the registry file lists the name-only ones first.
    order = (frame["doc_source"] != "full").astype(int) * 2 + (frame["category"] == UNKNOWN_CATEGORY).astype(int)
    return frame.assign(_order=order).sort_values(["_order", "tool", "api"], kind="stable").drop(columns="_order")


def registry_frame(settings: Settings) -> pd.DataFrame:
    """The registry as a table with a lowercase search column and each API's registry row, described APIs
    first; raises DataNotFoundError without data."""
    return _registry_frame(str(settings.registry_dir()), settings.registry, settings)
