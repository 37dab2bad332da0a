"""Streamlit renderers the pages share: gates that explain what is missing, hit lists, downloads.

Every untrusted string (API names and descriptions, query text, LLM output, error messages) goes
through ui.safe.md before any markdown-rendering call, or is shown with st.text / st.code / st.json.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import streamlit as st

from core.retrieval.discovery import Hit, Retriever
from core.data.loaders import registry_for
from core.retrieval.assemble import shipped_index_ready
from core.agents.llm.local_model import installed_models
from core.agents.planner import Plan
from core.analysis.router_fit import RouterFit
from core.retrieval.archs import QUERY_LABEL, Arch
from core.backends import OFFLINE_LABEL
from core.data.registry import Registry
from core.settings import DataNotFoundError, Settings, redact
from core.store.packing import still_packed
from core.data.toolbench import Api, ApiKey
from core.store.dburl import DatabaseUnavailable, open_error, shown
from core.study.query_result import ArchResult
from ui.safe import md
from ui.index_job import IndexJob, index_job
from ui.resources import results, router_fit
from ui.inspector_view import latency_text, ran_out_of_time

if TYPE_CHECKING:  # pandas is imported where a table is drawn: a shared ?q= link never needs it
    import pandas as pd

T = TypeVar("T")

GOLD_BADGE = ":green-badge[gold]"
# A job that loads a shipped or cached index (no embedding) gets this long from its start before a progress bar
# shows: a fresh clone's first load took 3-5 s, so with 3 s its first answer came in a second run, about 1 s later.
# A job that embeds shows its progress as soon as it starts to.
INDEX_WAIT_S = 8.0


def error(message: object, settings: Settings | None = None) -> None:
    """A friendly error line; secrets are scrubbed and markdown escaped."""
    text = str(message)
    if settings is not None:
        text = redact(text, settings.secrets())
    st.error(md(text, 600), icon=":material/error:")


def offline_banner(settings: Settings) -> None:
    """One line where an LLM's absence changes what is shown (the Inspector, whose PtR column it writes), not on the
    pages of stored results: which local models are installed and how to pick one, or how to get one."""
    if settings.backend.is_llm:
        return
    installed = installed_models(settings.cache_dir)
    if installed:
        models = ", ".join(spec.label for spec in installed)
        how = (f"Installed local models: {models}. Pick one in the Inspector's backend picker, or set "
               f"LLM_BACKEND=local LOCAL_MODEL=<name> (e.g. {installed[0].name}).")
    else:
        how = "No local model is installed: `make llm` adds one (`make llm MODEL=all`: every declared model)."
    st.warning(f"No LLM is configured: PtR's stubs and the planners come from the **{md(OFFLINE_LABEL)}**. {how}",
               icon=":material/info:")


def database_trouble(settings: Settings, exc: BaseException) -> str:
    """A store's failure as one line that says what to do (core.store.dburl.open_error's words for a damaged file, a
    full or read-only disk and a server that does not answer): never SQLAlchemy's raw text with its help link."""
    from sqlalchemy.exc import SQLAlchemyError

    if isinstance(exc, SQLAlchemyError):
        return str(open_error(settings.results_url, exc))
    if isinstance(exc, DatabaseUnavailable):  # foreign, damaged archive, newer schema: each says what to do
        return str(exc)
    return (f"{type(exc).__name__}: {exc}. Restore the committed results (move data/results.sqlite aside: "
            "data/results.sqlite.gz unpacks anew) or set DATABASE_URL to another store.")


def results_ready(settings: Settings) -> bool:
    """True when the results database has runs; otherwise explains how to make some."""
    try:
        reader = results(settings)
        if reader.available():
            return True
        trouble = reader.trouble()
    except Exception as exc:  # a broken or foreign database must not show a traceback
        trouble = database_trouble(settings, exc)
    if trouble:  # damaged, another schema, unreachable: not "missing or empty"
        error(f"The results database could not be read: {trouble}", settings)
        return False
    st.info("No results yet: the database at "
            f"{md(shown(settings.results_url), 200)} is missing or empty. "
            "Run `python -m core bench all` to fill it (or set DATABASE_URL).", icon=":material/database:")
    return False


def safe_read(settings: Settings, read: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    """`read(reader, *args, **kwargs)` for a ResultsReader method such as ResultsReader.main_table, on the
    shared reader; on failure an error line and None, never a traceback."""
    try:
        return read(results(settings), *args, **kwargs)
    except Exception as exc:
        error(f"Reading {read.__name__} from the results database failed: {database_trouble(settings, exc)}", settings)
        return None


def _use_documented() -> None:
    st.session_state["registry"] = "documented"


@st.fragment(run_every=1.0)
def _build_progress(job: IndexJob) -> None:
    """Polls the background build once a second; reruns the whole page when the index is there."""
    if job.finished:
        st.rerun()
    if job.notice:
        st.caption(md(job.notice, 300))
    if job.total:
        rate = job.rate
        left = f", about {(job.total - job.done) / rate / 60:.0f} min left at {rate:.0f} APIs/s" if rate else ""
        text = (f"Embedding the {job.registry} registry: {job.done:,} / {job.total:,} APIs "
                f"({job.elapsed_s:.0f} s so far{left}; this happens once, then the index loads from the cache)")
    else:
        text = f"Loading the embedding model and the {job.registry} registry ({job.elapsed_s:.0f} s)…"
    st.progress(job.fraction, text=text)
    if job.registry == "full":
        st.caption(f"The documented registry (4,940 APIs): {_documented_hint(job.settings, job)}.")


def _documented_hint(settings: Settings, job: IndexJob) -> str:
    """How soon the documented registry would be ready: at once from the shipped index, else measured."""
    documented = settings.with_(registry="documented")
    if shipped_index_ready(documented):
        return "ready at once from the shipped index"
    rate = job.rate
    if rate is None:
        return "its embedding time shows once this build has measured its speed"
    return f"about {len(registry_for(documented)) / rate:.0f} s to embed at this build's measured {rate:.0f} APIs/s"


def index_gate(settings: Settings, wait_s: float = INDEX_WAIT_S) -> Retriever | None:
    """The retriever when the index is ready; else build progress (or the reason it failed) and None."""
    try:
        job = index_job(settings)
    except DataNotFoundError as exc:
        error(exc)
        return None
    if not job.finished:  # a young job may be loading a shipped or cached index: give it a moment, once
        loading(job, wait_s)
    if job.ready:
        return job.retriever
    if job.error:
        error(f"Building the {job.registry} index failed: {job.error}", settings)
        st.button("Retry", icon=":material/refresh:")
        return None
    _build_progress(job)
    if settings.registry == "full":
        st.button("Use the documented registry (4,940 APIs) meanwhile",
                  on_click=_use_documented, icon=":material/bolt:")
    return None


def quiet_retriever(settings: Settings, wait_s: float = INDEX_WAIT_S) -> Retriever | None:
    """The retriever if the index is (or within `wait_s` becomes) ready, else None, showing nothing: for
    extras of a page that renders without the index."""
    try:
        job = index_job(settings)
    except DataNotFoundError:
        return None
    if not job.finished:
        loading(job, wait_s)
    return job.retriever if job.ready else None


def loading(job: IndexJob, wait_s: float, poll_s: float = 0.05) -> None:
    """Wait until `wait_s` after the job started for it to finish, while it has not started embedding."""
    deadline = job.started + wait_s
    while not job.wait(poll_s) and not job.total and time.perf_counter() < deadline:
        pass


@st.fragment(run_every=1.0)
def rerun_when_index_ready(settings: Settings) -> None:
    """Polls the index build once a second and reruns the page when it is ready: for a page section that
    needs the index while the rest of the page renders without it."""
    try:
        job = index_job(settings)
    except DataNotFoundError:
        return
    if job.ready:
        st.rerun()
    if job.error:
        st.caption(f"The {md(job.registry)} index could not be built: {md(job.error, 200)}")
        return
    st.caption(f"Loading the {md(job.registry)} index ({job.elapsed_s:.0f} s)…")


def download_buttons(df: pd.DataFrame, name: str, source: dict) -> None:
    """CSV and JSON downloads of one table, side by side; both carry `source` (core.analysis.provenance):
    the CSV as columns on every row, the JSON as a "provenance" object beside the rows."""
    from ui.tables import export_json, with_provenance

    left, right = st.columns(2)
    left.download_button("CSV", with_provenance(df, source).to_csv(index=False).encode(), f"{name}.csv", "text/csv",
                         key=f"dl-csv-{name}", icon=":material/download:", width="stretch")
    right.download_button("JSON", export_json(df, source), f"{name}.json", "application/json",
                          key=f"dl-json-{name}", icon=":material/download:", width="stretch")


def describe(registry: Registry | None) -> Callable[[ApiKey], Api | None]:
    return (lambda key: registry.get(key)) if registry is not None else (lambda key: None)


def hit_list(hits: Sequence[tuple[Hit, bool | None]], lookup: Callable[[ApiKey], Api | None]) -> None:
    """Ranked hits, each with its gold flag (ArchResult.marked_hits): rank, name, score, category, gold mark; the
    description in an expander."""
    for hit, gold in hits:
        api = lookup(hit.key)
        name = f"{hit.tool_name.strip()}/{hit.api_name.strip()}"
        label = (f"{hit.rank}\\. {md(name, 80)} · {hit.score:.3f} · {md(hit.category or '-', 40)}"
                 + (f" · {GOLD_BADGE}" if gold else ""))
        with st.expander(label, icon=":material/check_circle:" if gold else None):
            if api is None:
                st.caption("Not in the loaded registry.")
            elif api.description:
                st.text(api.description)
            else:
                st.caption("No description: its registry knows this API by name only.")
            if hit.stub == QUERY_LABEL:
                st.caption("found by the raw query")
            elif hit.stub:
                st.caption(f"found by stub {md(hit.stub, 80)}")


def _fmt(value: object, digits: int = 3) -> str:
    return "–" if value is None else f"{float(value):.{digits}f}"


def plan_view(plan: Plan | None, stage: str = "The planner") -> None:
    """The planner's answer: selected APIs, steps, refusal, and how faithful it stayed to the retrieved set."""
    if plan is None:
        st.caption("The planner did not run.")
        return
    st.markdown(f"**Planner** ({md(plan.label, 60)})")
    if plan.parse_error:
        st.error(md(ran_out_of_time(stage, plan.parse_error)
                    or f"The planner's answer could not be used: {plan.parse_error}", 300))
    if plan.refusal:
        st.warning(f"Refused: {md(plan.refusal, 400)}")
    if plan.selected_apis:
        st.markdown("Selected: " + ", ".join(f"**{md(s, 80)}**" for s in plan.selected_apis))
    for i, step in enumerate(plan.steps, 1):
        st.markdown(f"{i}\\. {md(step, 400)}")
    st.caption(f"fidelity {_fmt(plan.fidelity, 2)} · selection rate {_fmt(plan.selection_rate, 2)} · "
               f"{plan.apis_named} APIs named")


def score_line(block: ArchResult, k: int, tail: str) -> str:
    """One architecture's numbers: recall@k and precision@k when gold is known (a benchmark query), top-1
    score (a cosine, or BM25's), then `tail`."""
    numbers = [f"top-1 {block.score_name} **{_fmt(block.top1_score)}**", tail]
    if block.gold is not None:
        numbers.insert(0, f"recall@{k} **{_fmt(block.gold.recall, 2)}** · precision@{k} "
                          f"**{_fmt(block.gold.precision, 2)}**")
    return " · ".join(numbers)


def arch_column(declared: Arch, block: ArchResult | None, lookup: Callable[[ApiKey], Api | None], k: int,
                failure: str | None = None) -> None:
    """One architecture's column of the Inspector (one the planner runs on)."""
    st.subheader(declared.title)
    if block is None:
        error(failure or "This architecture produced no result.")
        return
    st.markdown(score_line(block, k, f"{block.total_tokens:,} tokens · {latency_text(block)}"))
    writing = block.writing
    if writing is not None:
        if writing.fallback:
            timed_out = ran_out_of_time(f"{declared.label}'s stub writing", writing.error)
            st.warning(f"{md(timed_out, 300)}; {declared.label} fell back to the raw query as its only stub."
                       if timed_out else
                       f"Stub writing failed; {declared.label} fell back to the raw query as its only stub"
                       + (f": {md(writing.error, 300)}" if writing.error else "."))
        if writing.capped:
            st.warning(f"A cap was hit: {md(writing.capped, 120)} (each stub is one more search).")
        groups = block.stub_hits()
        st.markdown(f"**{len(groups)} stub{'' if len(groups) == 1 else 's'}** ({md(block.backend_label or '?', 60)}) · "
                    f"{block.search_width} candidates before the top-{k} cut")
        for stub, found in groups:
            found_text = ", ".join(f"#{h.rank} {md(h.tool_name.strip() + '/' + h.api_name.strip(), 60)}"
                                   for h in found) or "no hit in the final top-k"
            reasoning = f": {md(stub.reasoning, 200)}" if stub.reasoning else ""
            st.markdown(f"- **{md(stub.name, 80)}**{reasoning}  \n  → {found_text}")
    st.markdown(f"**Top {len(block.hits)} APIs**")
    hit_list(block.marked_hits(), lookup)
    plan_view(block.plan, f"{declared.label}'s planner")
    if failure:
        error(failure)


def arch_section(declared: Arch, block: ArchResult | None, lookup: Callable[[ApiKey], Api | None], k: int) -> None:
    """An architecture no planner runs on, under the columns (the hybrid): hits and scores only."""
    if block is None:
        return
    with st.container(border=True):
        st.subheader(declared.title)
        st.markdown(score_line(block, k, f"{block.search_width} candidates before the top-{k} cut"))
        if declared.caption:
            st.caption(declared.caption)
        hit_list(block.marked_hits(), lookup)


def stored_router_fit(settings: Settings, gold: str, k: int, study: str | None) -> RouterFit | None:
    """The router's fit on the stored study (ui.resources.router_fit); None without one, and one error line, never
    a traceback, when the store cannot be read; None while a fresh clone's results are still being unpacked (a live
    answer does not wait for them: the next run shows the verdict)."""
    if still_packed(settings.results_url):
        return None
    try:
        return router_fit(settings, gold, k, study)
    except Exception as exc:
        error(f"Reading the router's fit from the results database failed: {database_trouble(settings, exc)}", settings)
        return None


def router_verdict(top1: float | None, fit: RouterFit | None) -> None:
    """Where the adaptive router fitted on the stored study would send this query, and why."""
    if top1 is None or fit is None:
        return
    tau = fit.threshold
    to_ptr = top1 < tau
    st.info(f"**Adaptive router** (beyond the paper): RtP's top-1 cosine {top1:.3f} {'<' if to_ptr else '≥'} "
            f"τ = {tau:.3f}, the threshold fitted on {fit.n:,} stored queries → this query would go to "
            f"**{'PtR' if to_ptr else 'RtP'}**{'' if to_ptr else ', skipping the discovery call'}. "
            "Results → Beyond the paper shows how well that policy does.", icon=":material/alt_route:")


def json_download(obj: dict, name: str) -> None:
    st.download_button("Download this view as JSON", json.dumps(obj, indent=1, ensure_ascii=False).encode(),
                       f"{name}.json", "application/json", icon=":material/download:")


def slug(label: str) -> str:
    """A label as a link writes it by hand: lower case, words joined by dashes ("k sweep" -> "k-sweep")."""
    return "-".join(label.lower().split())


def accept_slug(key: str, labels: Sequence[str]) -> None:
    """Let a hand-written link name a bound picker's option by its slug (?tab=k-sweep): Streamlit's binding knows
    only the label it writes itself (?tab=k+sweep, what a copied address holds) and drops anything else, so the
    slug's option is chosen here, before the widget. The address bar then shows the label once it is clicked."""
    wanted = st.query_params.get(key)
    if wanted is None or wanted in labels or key in st.session_state:
        return
    match = next((label for label in labels if slug(label) == slug(wanted)), None)
    if match is not None:
        st.session_state[key] = match
