"""The Inspector's retriever picker (`?retriever=`): each declared embedding model and BM25, named with what it is,
whether it is installed, and what its scores mean, so that no page shows a score without saying which retriever gave
it. The index of a model that is installed but not built is built in the background with its progress shown
(ui.index_job); one that is not installed is one line saying how to install it."""
from __future__ import annotations

import streamlit as st

from core.embedding_models import LEXICAL, declared_embedding_model, retriever_names
from core.retrieval.embed_install import install_hint, is_installed
from core.settings import Settings

KEY = "insp_retriever"  # the widget's session key; its URL parameter is `retriever` (ui.inspector_view.View)


def retriever_title(name: str, settings: Settings) -> str:
    """One line for the picker: the model's label (dimension, size, what it stands in for), or BM25's."""
    if name == LEXICAL:
        return "BM25 (lexical, Lucene k1 1.2 b 0.75)"
    spec = declared_embedding_model(name)
    if spec is None:
        return name
    own = " · the studies' retriever" if spec.name == retriever_names(settings.embedding_model)[0] else ""
    missing = "" if is_installed(spec, settings.cache_dir) else " · not installed"
    return f"{spec.label}{own}{missing}"


def pick_retriever(column: st.delta_generator.DeltaGenerator, settings: Settings) -> str:
    """The chosen retriever's name (session key KEY, which the Inspector's view sets from and writes to the URL)."""
    names = retriever_names(settings.embedding_model)
    if st.session_state.get(KEY) not in names:
        st.session_state[KEY] = names[0]
    return column.selectbox(
        "Retriever", names, key=KEY, format_func=lambda n: retriever_title(n, settings),
        help="What searches the registry for RtP, PtR and the hybrid. The stored studies searched with the first "
             "(their outputs are shown at once); any other is computed live. `make embed MODEL=<name>` installs a "
             "model and builds its index; BM25 needs neither (about a second to build).")


def search_settings(name: str, settings: Settings) -> tuple[Settings, str | None]:
    """The settings to search with for the chosen retriever, and what a reader must know about it in one line (None
    for the studies' own). A model that is not installed is not searched: the studies' own answers meanwhile."""
    own = retriever_names(settings.embedding_model)[0]
    if name == own:
        return settings, None
    if name == LEXICAL:
        return settings.with_(embedding_model=LEXICAL), (
            "Searched with **BM25**: scores are BM25 sums (unbounded), not cosines; the offline heuristic's planner, "
            "which selects by cosine, makes no plan on them, and the gold trace of ranks 100 deep is the embedding's "
            "only. Computed live: the stored studies searched with " + own + ".")
    spec = declared_embedding_model(name)
    if spec is None:
        return settings, None
    if not is_installed(spec, settings.cache_dir):
        return settings, (f"{spec.name} is not installed here: {install_hint(spec)} (it downloads and checks the "
                          f"model, then builds its index), then reload. Meanwhile {own} answers.")
    stands = f" It stands in for {spec.stands_in_for} and is not that model." if spec.stands_in_for else ""
    return settings.with_(embedding_model=spec.name), (
        f"Searched with **{spec.name}**, computed live: the stored studies searched with {own}.{stands}")
