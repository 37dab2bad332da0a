"""Tool Discovery Lab dashboard: navigation, sidebar settings and a status banner around each page.

Run with `make run` (python -m ui.warm_start: the same, with the first answer's work begun at start) or `streamlit
run app.py`. Pages live in app_pages/, not pages/: Streamlit treats a folder
named pages/ as a legacy multipage app, and a shared link opened first (e.g. /inspector?qid=...)
would then run its page without this file, i.e. without sidebar, banner or settings. Pages read the
widgets set here through st.session_state ("registry", "gold", "k_default"), which are bound to the URL.
"""
from __future__ import annotations

import threading

import streamlit as st

from ui import first_answer, warm_start

warm_start.wait()  # under `make run` (python -m ui.warm_start): until its thread has imported what follows

from core.data.toolbench import GOLD_DEFINITIONS, GOLD_LIST  # noqa: E402
from core.registries import registries  # noqa: E402
from core.threads import one_blas_thread  # noqa: E402
from core.settings import BOUNDS, DataNotFoundError, check_cache_dir  # noqa: E402
from ui.index_job import index_job  # noqa: E402
from ui.page_settings import DEFAULT_STUDY, base_settings, current_settings  # noqa: E402


def skip_the_repl_check() -> None:
    """Streamlit's first element in a process asks whether it runs in a REPL (to warn that it should not) through
    inspect.stack(), which reads the source of every frame: 0.17-0.77 s of a fresh server's first answer
    (benchmarks/app_load.py --profile). This file runs under `streamlit run`, so the answer is known: the flag
    Streamlit sets once it has asked (a private one: if it is renamed, setting it changes nothing)."""
    import streamlit.delta_generator

    streamlit.delta_generator._use_warning_has_been_displayed = True


@st.cache_resource(show_spinner=False)
def blas_once() -> None:
    """core.threads.one_blas_thread, set once per server."""
    one_blas_thread()


def start_index() -> None:
    """Start (once per server) the background index load before the heavier page imports below: it runs
    while they import, which is most of a fresh server's first answer."""
    try:
        index_job(current_settings())
    except (DataNotFoundError, ValueError):
        pass  # said on the page, below


@st.cache_resource(show_spinner=False)
def start_results_unpack() -> None:
    """A fresh clone's first request unpacks the committed results (core.store.packing.unpack_if_packed: 9.8 MB of
    gzip to 69 MB) for the sidebar's study list: started once per server here, beside the page imports below, rather
    than after them. A failure is said by the page, whose own call meets it again."""
    from core.store.packing import readable, still_packed

    if warm_start.started() or not still_packed(base_settings().results_url):
        return  # the warm start unpacks them after the index; or unpacked already (every server after a clone's first)
    # Imported here, not in the thread: two threads importing the same package at once can each meet the other's
    # half-initialised module (a fresh server's first page failed so: "partially initialized module"). The
    # unpack reaches SQLAlchemy lazily (core.store.dburl) while this thread imports it for the store summary below.
    import sqlalchemy.engine  # noqa: F401

    def unpack() -> None:
        try:
            readable(base_settings().results_url)
        except Exception:  # the page's own call (or its settings check) reports it in one line
            pass

    threading.Thread(target=unpack, name="results-unpack", daemon=True).start()


skip_the_repl_check()
blas_once()
start_index()
start_results_unpack()

from core.analysis.store_summary import DEFAULT_STUDY_RULE  # noqa: E402
from ui.resources import stored_studies  # noqa: E402
from ui.safe import md  # noqa: E402
from ui.widgets import error  # noqa: E402

PAGES = [
    st.Page("app_pages/overview.py", title="Overview", icon=":material/home:", default=True),  # served at /
    st.Page("app_pages/inspector.py", title="Query Inspector", icon=":material/search:", url_path="inspector"),
    st.Page("app_pages/results.py", title="Results", icon=":material/monitoring:", url_path="results"),
    st.Page("app_pages/examples.py", title="Examples", icon=":material/compare_arrows:", url_path="examples"),
    st.Page("app_pages/stubs.py", title="Stubs", icon=":material/psychology:", url_path="stubs"),
    st.Page("app_pages/registry.py", title="Registry", icon=":material/inventory_2:", url_path="registry"),
]
# Bound pickers show their values and describe them in captions: Streamlit writes a bound picker's *displayed*
# text into the URL and drops a URL value that is not one, so with a format_func a shared `?gold=relevant` opened
# as api_list (and the address bar carried "relevant (ToolBench)" instead). The captions are declared with the
# registries (core.registries).

st.set_page_config(page_title="Tool Discovery Lab", page_icon=":material/travel_explore:", layout="wide")
page = st.navigation(PAGES)

try:
    settings = base_settings()
    cache_warning = check_cache_dir(settings.cache_dir)
except ValueError as exc:  # a bad REGISTRY or LLM_BACKEND value, a CACHE_DIR that cannot be a folder: say which, stop
    error(f"Configuration error: {exc}")
    st.stop()

# Every choice here is bound to the URL (?registry=, ?gold=, ?k_default=; absent = the default), so a
# reloaded or shared link shows the same numbers; the pages bind their own pickers the same way.
with st.sidebar:
    known = registries(settings.root)  # the shipped ones, then the team's imported ones
    names = [r.name for r in known]
    st.radio("Registry", names, key="registry", index=names.index(settings.registry),
             captions=[r.caption for r in known], bind="query-params",
             help="Which API registry the live index searches. Results pages show what the benchmark stored.")
    st.radio("Gold APIs", GOLD_DEFINITIONS, key="gold", captions=[g.caption for g in GOLD_LIST], bind="query-params",
             help="api_list: the APIs a query was generated from (close to the paper's ground truth). "
                  "relevant: ToolBench's 'relevant APIs'. Every number on every page uses this choice.")
    k_shown = BOUNDS["k"].shown  # the part of k's range a slider offers, declared with it
    st.slider("Default k", k_shown.low, k_shown.high, value=5, key="k_default", bind="query-params",
              help="How many APIs each architecture retrieves.")
    studies = stored_studies(current_settings())
    linked = st.session_state.get("study") or st.query_params.get("study")
    if not studies and linked and linked != DEFAULT_STUDY:  # not listed yet (a fresh clone's results unpacking)
        studies = [linked]  # kept, not dropped from the link, until the next run lists the stored ones
    st.selectbox("Study", [DEFAULT_STUDY, *studies], key="study", bind="query-params",
                 help=f"Which stored study the results pages show; {DEFAULT_STUDY}: {DEFAULT_STUDY_RULE}.")
    st.caption(f"LLM backend: **{md(settings.backend_label, 80)}**  \n"
               f"Embedding model: {md(settings.embedding_model, 80)}")

settings = current_settings()
try:
    job = index_job(settings)  # starts the background build on the first visit to any page
    st.sidebar.caption(f"Index ({settings.registry}): {md(job.status, 120)}")
except DataNotFoundError:
    st.sidebar.caption("Index: no ToolBench data found")

if cache_warning:
    st.warning(md(cache_warning), icon=":material/info:")
try:
    page.run()
finally:  # also when the page stops (st.stop) or reruns
    first_answer.answered()
