"""Query Inspector: one query through RtP and PtR side by side, as a shareable URL.

A benchmark query (`?qid=G1_instruction:577`) shows the outputs the benchmark stored, at once,
with its gold APIs marked; free text (`?q=...`) and "Recompute live" run the pipeline now.
"""
from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlencode

import streamlit as st

from core.retrieval.discovery import QueryError, clean_query, undecodable_at
from core.data.loaders import queries_for, registry_for
from core.settings import BOUNDS, DataNotFoundError
from core.data.toolbench import subset_order
from core.embedding_models import retriever_names
from ui.safe import md, one_line
from ui.page_settings import chosen_study, current_settings, shared_choices
from core.retrieval.archs import arch, baseline
from core.agents.systems import runnable_systems
from core.retrieval.memo import memoised
from core.study.one_query import run_query
from core.study.query_result import ArchResult, QueryOutcome
from ui.live_view import LiveColumns, Slots, draw_result, replay
from ui.resources import (available_backends, backend_title, commit, live_results, remember, results,
                          stored_studies, with_backend)
from ui.inspector_view import View, parse_view
from ui.gold_section import gold_section
from ui.retriever_choice import KEY as RETRIEVER_KEY, pick_retriever, search_settings
from ui.widgets import (describe, error, index_gate, json_download, offline_banner, quiet_retriever,
                        rerun_when_index_ready, router_verdict, stored_router_fit)

MODES = ("Your query", "Benchmark query")
SHOWS = ("One system", "Every system", "Edit stubs")  # ?show=: the probing views (ui.probe_views)
URL_KEYS = ("q", "qid", "k", "backend", "retriever")
MAX_URL_QUERY = 2_000  # longer free text still runs, but is not put into the URL

settings = current_settings()
state = st.session_state
st.title("Query Inspector")
offline_banner(settings)

try:
    queries = queries_for(settings)
except DataNotFoundError as exc:
    error(exc)
    st.stop()
by_uid = {(q.subset, q.query_id): q for q in queries}
subsets = subset_order({q.subset for q in queries})
backends = available_backends(settings)
retrievers = retriever_names(settings.embedding_model)

# URL -> widgets, whenever the URL names another view than the one on screen (a shared link, a row
# clicked on the Examples page); coming back from another page restores the last view.
params = {key: st.query_params[key] for key in URL_KEYS if key in st.query_params}
if not params and "insp_view" in state:
    params = state["insp_view"]
if params != state.get("insp_applied"):
    view, messages = parse_view(params, int(state.get("k_default", 5)), backends, retrievers)
    if view.qid is not None and view.qid not in by_uid:
        messages.append(f"There is no benchmark query {view.qid[0][:40]}:{view.qid[1]} in this data; "
                        "pick one below or type your own.")
        view = replace(view, qid=None)
    state["insp_mode"] = MODES[view.qid is not None]
    if view.qid is not None:
        state["insp_subset"], state["insp_id"] = view.qid
    else:
        state["insp_text"] = view.text
    state["insp_k"] = view.k
    state["insp_backend"] = view.backend or backends[0]
    state[RETRIEVER_KEY] = view.retriever or retrievers[0]
    state["insp_messages"] = messages
for message in state.pop("insp_messages", []):
    st.warning(md(message, 300), icon=":material/link_off:")

mode = st.radio("Query source", MODES, key="insp_mode", horizontal=True, label_visibility="collapsed")
query = None
if mode == MODES[1]:
    left, right = st.columns([1, 3])
    subset = left.selectbox("Subset", subsets, key="insp_subset")
    ids = [q.query_id for q in queries if q.subset == subset]
    if state.get("insp_id") not in ids:
        state["insp_id"] = ids[0]
    right.selectbox("Query id", ids, key="insp_id",
                    format_func=lambda i: f"{i} · {one_line(by_uid[(subset, i)].query, 110)}")
    query = by_uid[(subset, state["insp_id"])]
    text = query.query
    st.text(text)
else:
    text = st.text_area("Query", key="insp_text", height=90,
                        placeholder="What should the agent do? e.g. Find hotels in Paris and convert 200 EUR to USD")
knob_k, knob_backend, knob_retriever = st.columns(3)
k_shown = BOUNDS["k"].shown  # the part of k's range a slider offers, declared with it
k = knob_k.slider("k", k_shown.low, k_shown.high, key="insp_k")
backend = knob_backend.selectbox("LLM backend", backends, key="insp_backend", format_func=backend_title,
                                 help="Every local model installed here (`make llm MODEL=<name>` adds one), run by "
                                      "llama.cpp in this process; the offline heuristic is no LLM at all.")
retriever_name = pick_retriever(knob_retriever, settings)
search, search_note = search_settings(retriever_name, settings)
own_retriever = search.embedding_model == settings.embedding_model

show = st.radio("Show", SHOWS, key="show", horizontal=True, bind="query-params",
                help="One system: RtP and PtR of the chosen backend, stage by stage. Every system: each stored (or, "
                     "for your own query, each runnable) system's stubs and hits side by side. Edit stubs: change "
                     "PtR's stubs and search again at once, with no LLM call.")
if show != SHOWS[2]:  # the editor's own parameters belong to its view alone
    for key in ("stubs", "from"):
        st.query_params.pop(key, None)

linkable = not query and len(text) <= MAX_URL_QUERY and undecodable_at(text) is None  # refused below anyway
view = View(text if linkable else "", (query.subset, query.query_id) if query else None, k, backend,
            None if retriever_name == retrievers[0] else retriever_name)
wanted = view.params()
for key in URL_KEYS:  # only the Inspector's own keys: the sidebar's are bound to the URL by their widgets
    if key in wanted and st.query_params.get(key) != wanted[key]:
        st.query_params[key] = wanted[key]
    elif key not in wanted and key in st.query_params:
        del st.query_params[key]
state["insp_applied"] = state["insp_view"] = view.params()

if not text.strip():
    st.info("Type a request (then Ctrl+Enter), or pick a benchmark query.", icon=":material/keyboard:")
    st.stop()
try:
    clean_query(text)  # undecodable, content-free or oversized text: one message, before anything runs
except QueryError as exc:
    st.warning(md(exc, 300), icon=":material/edit_note:")
    st.stop()

gold_def = state.get("gold", "api_list")
gold = query.gold(gold_def) if query else None
if query is not None:
    st.caption(f"Gold APIs ({gold_def}): " + ", ".join(md(f"{t.strip()}/{a.strip()}", 80) for t, a in sorted(gold))
               + " · why each was found or missed: below the two columns")
run_settings = with_backend(settings, backend)
view_key = urlencode(view.params(), safe=":")

if show != SHOWS[0]:  # imported here: the probing views read pandas tables, which a shared ?q= link never needs
    if search_note:
        st.info(search_note, icon=":material/manage_search:")
    from ui.probe_views import every_live_system, every_stored_system, stored_systems, stub_editor

    probe_lookup = describe(registry_for(settings))
    systems = stored_studies(settings) if query is not None else []
    if show == SHOWS[1] and query is not None:
        other = None
        if not own_retriever:  # each system's stored stubs searched by the chosen retriever: no LLM call
            other = index_gate(search)
            if other is None:
                st.stop()
        stored_views = every_stored_system(settings, systems, query, k, gold, probe_lookup, other)
    else:
        stored_views = stored_systems(settings, systems, query, k, gold) if query is not None else []
        probe_retriever = index_gate(search)
        if probe_retriever is None:
            st.stop()
        probe_retriever = memoised(probe_retriever)
        if show == SHOWS[1]:
            every_live_system(settings, runnable_systems(settings), text, k, gold, probe_retriever,
                              describe(probe_retriever.registry), view_key)
        else:
            stub_editor(stored_views, text, k, gold, probe_retriever, describe(probe_retriever.registry),
                        view_key, chosen_study())
    st.divider()
    st.caption("Share this view: the page's URL reproduces it, with the sidebar's choices.")
    st.stop()

result, failure = None, None
if search_note:
    st.info(search_note, icon=":material/manage_search:")
if query is not None and own_retriever and state.get("insp_live") != view_key:
    try:
        if results(settings).available():
            result = results(settings).query_detail(query.subset, query.query_id, k=k, backend=chosen_study())
    except Exception as exc:  # a broken database falls back to live computation
        st.caption(f"Stored outputs unavailable ({md(exc, 200)}); computing live.")
stored = result is not None
if stored:
    note, button = st.columns([4, 1])
    note.success("Stored benchmark outputs, shown without recomputing.", icon=":material/database:")
    button.button("Recompute live", icon=":material/refresh:", on_click=state.__setitem__, args=("insp_live", view_key))

slots = Slots.make()
if not stored:
    retriever = index_gate(search)
    if retriever is None:
        st.stop()
    retriever = memoised(retriever)  # the live query and the gold trace embed each text once between them
    lookup = describe(retriever.registry)
    router_box = st.empty()  # the router needs RtP's top-1 only: drawn with RtP's column, before any LLM call

    def draw_router(rtp_block: ArchResult) -> None:
        fit = stored_router_fit(settings, gold_def, k, chosen_study())
        if fit and own_retriever:  # its threshold is a cosine of the studies' retriever, meaningless under another
            with router_box.container():
                router_verdict(rtp_block.top1_score, fit)

    columns = LiveColumns(slots, lookup, k, gold, backend_title(backend), on_baseline=draw_router)
    done = live_results()
    live_key = (view_key, backend, run_settings.llm_model, retriever.registry.content_hash, retriever.encoder.model_id)
    if live_key in done:
        result, seconds, failure = done[live_key]
        replay(columns, result, seconds, failure)
    else:
        try:
            result = run_query(text, k, retriever, run_settings.with_(embedding_model=search.embedding_model),
                               columns.emit)
        except Exception as exc:  # an LLM or planner failure must not hide RtP
            failure = f"PtR and the planners failed: {exc}"
            kept = tuple(b for b in columns.result.blocks if not arch(b.arch).needs_stubs)  # what needs no LLM
            result = QueryOutcome(k, kept, text)
            replay(columns, result, columns.seconds, failure)
        if not result.llm_error and failure is None:  # a model not installed yet is asked again next time
            remember(done, live_key, (result, columns.seconds, failure))
    result = result.with_gold(gold)
else:
    result = result.with_gold(gold)
    registry_name = (result.provenance or {}).get("registry_name")
    try:
        lookup = describe(registry_for(settings.with_(registry=registry_name) if registry_name in ("full", "documented")
                                       else settings))
    except DataNotFoundError:
        lookup = describe(None)
    draw_result(slots, result, lookup, k)
if stored:
    registry_name = (result.provenance or {}).get("registry_name")
    trace_settings = settings.with_(registry=registry_name) if registry_name in ("full", "documented") else settings
    retriever = quiet_retriever(trace_settings)
gold_section(text, result, query, gold_def, k, retriever)
if stored and query is not None and retriever is None:
    rerun_when_index_ready(trace_settings)
if stored:
    base = result.get(baseline().name)
    router_verdict(base.top1_score if base is not None else None,
                   stored_router_fit(settings, gold_def, k, chosen_study()))

st.divider()
info, actions = st.columns([3, 2])
with info:
    if stored:
        with st.expander("Provenance of the stored outputs"):
            st.json(dict(result.provenance or {}))
    else:
        st.caption(f"Computed live · registry {md(settings.registry)} · retriever {md(search.embedding_model, 80)} · "
                   f"{md(backend_title(backend), 80)}"
                   + (f" · gold = {gold_def}" if gold is not None else " · no gold for free text"))
    if query is None and len(text) > MAX_URL_QUERY:
        st.warning(f"The link omits this query: it has {len(text):,} characters, more than a URL carries "
                   f"({MAX_URL_QUERY:,} here). Download the view as JSON to share it.", icon=":material/link_off:")
    else:
        st.caption("Share this view: the page's URL reproduces it, with the sidebar's choices.")
    st.code("?" + urlencode({**wanted, **shared_choices()}, safe=":"), language=None)
with actions:
    if len(text) <= MAX_URL_QUERY:
        st.page_link("app_pages/registry.py", label="Show on the embedding map", icon=":material/scatter_plot:",
                     query_params={"q": text})
    live_source = {"computed": "live", "backend_label": run_settings.backend_label,
                   "llm_backend": run_settings.llm_backend,
                   "llm_model": run_settings.llm_model, "embedding_model": search.embedding_model,
                   "registry": settings.registry, "gold": gold_def if gold is not None else None, "k": k,
                   "commit": commit()[:10]}
    json_download(result.to_json() if stored else {**result.to_json(), "provenance": live_source},
                  f"inspect-{query.uid.replace(':', '-') if query else 'query'}")
