"""The Overview's "Across registries": PtR - RtP per registry beside the paper's ToolBench figures, and against
Intent-Registry Coupling, for a discovery system stored on several registries (bound to the URL)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from core.analysis.paper import load_paper
from core.analysis.registry_gains import paper_gains, registry_gains, systems_on_registries
from core.settings import Settings
from core.analysis.coupling_gains import coupling_report
from core.study.coupling import coupling_registries, couplings_kept
from ui import figures
from ui.resources import db_figure, db_version, stored_studies
from ui.safe import md


@st.cache_data(show_spinner=False, max_entries=32)
def _gains(url: str, system: str, gold: str, cache_dir: Path, version: object) -> pd.DataFrame:
    """registry_gains, once per set of complete runs (`version`, ui.resources.db_version)."""
    return registry_gains(url, system, gold=gold, cache_dir=cache_dir)


@st.cache_data(show_spinner=False, max_entries=16)
def _coupling(_settings: Settings, url: str, system: str, names: tuple[str, ...], version: object) -> dict:
    """coupling_report over `names`, once per set of complete runs; couplings not kept yet are measured here."""
    from core.retrieval.assemble import build_retriever

    return coupling_report(_settings, url, system, 5, list(names), lambda one: build_retriever(one)[0])


def _source(system: str, settings: Settings, gold: str) -> dict:
    backend, _, model = system.partition(":")
    return {"llm_backend": backend, "llm_model": model, "embedding_model": settings.embedding_model, "gold": gold,
            "k": 5}


def across_registries(settings: Settings, gold: str) -> None:
    systems = systems_on_registries(settings.results_url, settings.cache_dir)
    if not systems:
        st.info("No main study is stored yet: `python -m core bench main` runs one on ToolBench, and "
                "`make results-registries` on Seal-Tools and LiveMCPBench.")
        return
    system = st.selectbox("System", systems, index=systems.index("offline") if "offline" in systems else 0,
                          key="registry_system", bind="query-params",
                          help="Whose stored studies: every system with a main study, those on the most registries "
                               "first.")
    st.caption("Does the crossover hold beyond ToolBench? PtR − RtP recall@5 on each registry's single- and "
               "multi-tool queries, paired query by query, with bootstrap 95% intervals; hatched: the paper's "
               "ToolBench figures (Gemini 2.5 Flash, gte-base; G2 and G3 pooled by count, no interval reported).")
    table = _gains(settings.results_url, system, gold, settings.cache_dir, db_version(settings))
    st.plotly_chart(db_figure(settings, ("registry_gains", gold, system),
                              lambda: figures.registry_gains(table, paper_gains(load_paper(root=settings.root))),
                              _source(system, settings, gold)), width="stretch")
    with st.expander("The figures: RtP, PtR and hybrid recall@5 per registry"):
        shown = table.rename(columns={"mean_diff": "ptr_minus_rtp", "hybrid_diff": "hybrid_minus_rtp"})
        st.dataframe(shown.round(3), hide_index=True, width="stretch")
        st.download_button("Download CSV", shown.to_csv(index=False).encode(), f"registry_gains_{system}.csv",
                           key="registry_gains_csv")

    names = [n for n in coupling_registries() if system in stored_studies(settings.with_(registry=n))]
    st.caption("Intent-Registry Coupling, the paper's explanation of the crossover, measured: per query, the best "
               "cosine between the query and its gold APIs' documents (MiniLM, api_list gold), before any LLM call. "
               "Does a weakly coupled query gain more from PtR, across registries?")
    if not couplings_kept(settings, names):
        st.info("Each registry's couplings are measured once per clone (every query embedded: about 45 s on 2 cores), "
                "then kept in CACHE_DIR.")
        if not st.button("Measure coupling", key="measure_coupling"):
            return
    with st.spinner("Embedding every registry's queries…"):
        report = _coupling(settings, settings.results_url, system, tuple(names), db_version(settings))
    st.plotly_chart(db_figure(settings, ("coupling_gains", system), lambda: figures.coupling_gains(report),
                              _source(system, settings, "api_list")), width="stretch")
    pooled = report.get("pooled")
    if pooled:
        st.caption(md(f"Pooled over {pooled['n']:,} queries: Spearman's rho of coupling against PtR − RtP "
                      f"{pooled['spearman_rho']:+.3f} (p {pooled['spearman_p']:.2g}). "
                      + " ".join(f"The router's threshold fitted on ToolBench ({r['threshold']:.3f}) sends "
                                 f"{r['share_to_ptr']:.0%} of {r['registry']} to PtR: {r['routed_recall']:.3f} against "
                                 f"RtP {r['rtp_recall']:.3f} and PtR {r['ptr_recall']:.3f}."
                                 for r in report.get("router", [])), 900))
