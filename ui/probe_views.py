"""The Inspector's two probing views: every system on one query, side by side, and stubs a researcher edits.

"Every system": for a stored benchmark query a column per stored discovery system (its stubs, its PtR top k with
gold marked, its recall and its plan), RtP once beside them, a table of where their retrievals differ and the gold
APIs no system found; for free text each runnable system on demand, one after another, each streamed.
"Edit stubs": start from any system's stubs (or none), edit them as lines of `name: reasoning`, and PtR's and the
hybrid's retrieval is searched again at once (no LLM call), with the difference against the unedited stubs. The
edited stubs are in the URL (`?stubs=`); an edited result is labelled EDITED and never stored.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

import streamlit as st

from core.analysis.model_size import describe as describe_study
from core.data.toolbench import Api, ApiKey, Query, display_name
from core.retrieval.archs import WrittenStubs, arch
from core.retrieval.discovery import Retriever
from core.retrieval.memo import memoised
from core.retrieval.records import Stub
from core.study.edited_stubs import (EDITED, MAX_PARAM_CHARS, EditDiff, StubsError, check_stubs, edit_diff,
                                     from_param, search_edited, to_param)
from core.study.one_query import Answered, LLMFailed, Stage, StubSearched, Writing, run_query
from core.study.query_result import ArchResult, QueryOutcome
from core.agents.stubs import OfflineStubWriter
from core.settings import Settings
from ui.resources import backend_title, live_results, remember, results, with_backend
from ui.safe import md
from ui.widgets import GOLD_BADGE, error, hit_list, plan_view, score_line

NO_STUBS = "(no stubs)"
OFFLINE_START = "offline heuristic (computed now)"


@dataclass(frozen=True)
class StoredSystem:
    """One stored system's outcome for the query (None: not stored for it at this k)."""

    system: str
    label: str
    outcome: QueryOutcome | None


def stored_systems(settings: Settings, systems: Sequence[str], query: Query, k: int,
                   gold: Collection[ApiKey]) -> list[StoredSystem]:
    """Every stored system's run-0 outcome for a benchmark query, marked under the view's gold."""
    reader = results(settings)
    out = []
    for system in systems:
        label = describe_study(reader.setup(system) or {"llm_backend": system})[0]
        outcome = reader.query_detail(query.subset, query.query_id, k=k, backend=system)
        out.append(StoredSystem(system, label, None if outcome is None else outcome.with_gold(gold)))
    return out


def _short(key: ApiKey) -> str:
    return md(display_name(*key), 70)


def _stub_lines(stubs: Sequence[Stub], limit: int = 200) -> None:
    for stub in stubs:
        reasoning = f": {md(stub.reasoning, limit)}" if stub.reasoning else ""
        st.markdown(f"- **{md(stub.name, 80)}**{reasoning}")


def _system_column(label: str, outcome: QueryOutcome | None, lookup: Callable[[ApiKey], Api | None], k: int,
                   missing: str) -> None:
    st.subheader(label)
    block = outcome.get("ptr") if outcome is not None else None
    if block is None:
        st.caption(missing)
        return
    st.markdown(score_line(block, k, f"{block.search_width} candidates"))
    if block.writing is not None:
        if block.writing.fallback:
            st.warning("Stub writing failed: PtR searched the raw query.", icon=":material/warning:")
        st.markdown(f"**{len(block.writing.stubs)} stub{'' if len(block.writing.stubs) == 1 else 's'}**")
        _stub_lines(block.writing.stubs)
    st.markdown(f"**PtR top {len(block.hits)}**")
    hit_list(block.marked_hits(), lookup)
    hybrid = outcome.get("hybrid") if outcome is not None else None
    if hybrid is not None and hybrid.gold is not None and hybrid.gold.recall is not None:
        st.caption(f"Hybrid recall@{k}: {hybrid.gold.recall:.2f}")
    plan_view(block.plan, "PtR's planner")


def difference_table(columns: dict[str, ArchResult], gold: Collection[ApiKey]) -> list[dict[str, Any]]:
    """A row per API in any column's top k: its rank in each (blank: not there), gold or not; the gold first."""
    keys: list[ApiKey] = []
    for block in columns.values():
        keys += [key for key in block.keys if key not in keys]
    rows = []
    for key in keys:
        ranks = {label: next((h.rank for h in block.hits if h.key == key), None) for label, block in columns.items()}
        rows.append({"API": display_name(*key), "gold": key in gold, **ranks})
    return sorted(rows, key=lambda row: (not row["gold"], sum(r is None for r in list(row.values())[2:])))


def searched_again(stored: Sequence[StoredSystem], query: Query, k: int, gold: Collection[ApiKey],
                   retriever: Retriever) -> list[StoredSystem]:
    """Each stored system's stubs searched by another retriever, as the retriever-axis study searches them (a
    fallback's raw query too): RtP once, PtR and the hybrid per system. No LLM call, so no plan: the stored plans were
    made over the studies' retriever's hits."""
    retriever = memoised(retriever)
    rtp = ArchResult.of("rtp", arch("rtp").retrieve(query.query, None, k, retriever), gold=gold)
    out = []
    for system in stored:
        block = system.outcome.get("ptr") if system.outcome is not None else None
        if block is None or block.writing is None:
            out.append(StoredSystem(system.system, system.label, None))
            continue
        written = WrittenStubs((Stub(query.query),), True) if block.writing.fallback else WrittenStubs(
            block.writing.stubs)
        blocks = [rtp, *(replace(ArchResult.of(name, arch(name).retrieve(query.query, written, k, retriever),
                                               gold=gold), writing=block.writing if name == "ptr" else None,
                                 backend_label=system.label) for name in ("ptr", "hybrid"))]
        out.append(StoredSystem(system.system, system.label, QueryOutcome(k, tuple(blocks), query.query,
                                                                          query.subset, query.query_id)))
    return out


def every_stored_system(settings: Settings, systems: Sequence[str], query: Query, k: int,
                        gold: Collection[ApiKey], lookup: Callable[[ApiKey], Api | None],
                        retriever: Retriever | None = None) -> list[StoredSystem]:
    """The side-by-side view of a stored benchmark query (columns, differences, gold no system found); with
    `retriever` (another than the studies'), each system's stored stubs searched by it instead (searched_again)."""
    stored = stored_systems(settings, systems, query, k, gold)
    if retriever is not None:
        stored = searched_again(stored, query, k, gold, retriever)
        st.caption("Each system's stored stubs, searched again by this retriever (as the retriever-axis study does): "
                   "no LLM call, so no plans; the stored ones were made over the studies' retriever's hits.")
    rtp = next((s.outcome.get("rtp") for s in stored if s.outcome is not None and s.outcome.get("rtp")), None)
    if rtp is None and not any(s.outcome for s in stored):
        st.info(f"No stored system holds this query at k = {k}; pick another k, or run it live.",
                icon=":material/database:")
        return stored
    cells = st.columns(1 + len(stored))
    with cells[0]:
        st.subheader("RtP")
        if rtp is not None:
            st.markdown(score_line(rtp, k, "the same for every system"))
            hit_list(rtp.marked_hits(), lookup)
    for cell, system in zip(cells[1:], stored):
        with cell:
            _system_column(system.label, system.outcome, lookup, k, f"Not stored for this query at k = {k}.")
    blocks = {"RtP": rtp} if rtp is not None else {}
    blocks.update({f"{s.label} PtR": s.outcome.get("ptr") for s in stored
                   if s.outcome is not None and s.outcome.get("ptr") is not None})
    found = {key for block in blocks.values() for key in block.keys}
    found |= {key for s in stored if s.outcome is not None and (h := s.outcome.get("hybrid")) for key in h.keys}
    missed = sorted(set(gold) - found)
    st.markdown(f"**Gold APIs no system found** ({len(missed)} of {len(gold)}): "
                + (", ".join(_short(key) for key in missed) or "none"))
    st.markdown("**Where the retrievals differ**: each API's rank in each top k")
    st.dataframe(difference_table(blocks, gold), hide_index=True, width="stretch")
    return stored


class StreamedColumn:
    """One system's column filled as core.study.one_query emits its stages (the reply as it is written, each stub
    with its top hits, then PtR's block and plan)."""

    def __init__(self, box: Any, label: str, lookup: Callable[[ApiKey], Api | None], k: int,
                 gold: Collection[ApiKey] | None) -> None:
        self.box, self.label, self.lookup, self.k, self.gold = box, label, lookup, k, gold
        self.writing = self.box.empty()
        self.stubs = self.box.container()
        self.block = self.box.empty()
        self._drawn = 0.0

    def emit(self, stage: Stage) -> None:
        if isinstance(stage, Writing) and time.perf_counter() - self._drawn > 0.1:
            self._drawn = time.perf_counter()
            self.writing.code(stage.text[-300:], language="json", wrap_lines=True)
        elif isinstance(stage, StubSearched):
            with self.stubs:
                _stub_lines([stage.stub])
        elif isinstance(stage, LLMFailed):
            with self.block.container():
                error(f"{self.label} cannot run: {stage.message}")
        elif isinstance(stage, Answered) and stage.block.arch == "ptr":
            self.writing.empty()
            self.draw(stage.block)

    def draw(self, block: ArchResult) -> None:
        with self.block.container():
            marked = block.with_gold(self.gold, self.k)
            st.markdown(score_line(marked, self.k, f"{block.search_width} candidates"))
            hit_list(marked.marked_hits(), self.lookup)
            plan_view(block.plan, "PtR's planner")


def every_live_system(settings: Settings, backends: Sequence[str], text: str, k: int,
                      gold: Collection[ApiKey] | None, retriever: Retriever,
                      lookup: Callable[[ApiKey], Api | None], view_key: str) -> None:
    """Free text through every runnable system, one after another, on demand; finished ones are kept."""
    done = live_results()
    key_of = {b: ("every", view_key, b, retriever.registry.content_hash) for b in backends}
    ready = all(key_of[b] in done for b in backends)
    started = st.button(f"Run all {len(backends)} systems", icon=":material/play_arrow:", disabled=ready,
                        help="One after another; a local model writes its stubs in a few seconds to half a minute.")
    rtp = arch("rtp").retrieve(text, None, k, retriever)
    cells = st.columns(1 + len(backends))
    with cells[0]:
        st.subheader("RtP")
        block = ArchResult.of("rtp", rtp, gold=gold)
        st.markdown(score_line(block, k, "the same for every system"))
        hit_list(block.marked_hits(), lookup)
    for cell, backend in zip(cells[1:], backends):
        with cell:
            st.subheader(backend_title(backend))
            column = StreamedColumn(st.container(), backend_title(backend), lookup, k, gold)
        if key_of[backend] in done:
            outcome = done[key_of[backend]]
            with column.stubs:
                _stub_lines(outcome.writing.stubs if outcome.writing else ())
            if outcome.get("ptr") is not None:
                column.draw(outcome.get("ptr"))
            elif outcome.llm_error:
                with column.block.container():
                    error(f"cannot run: {outcome.llm_error}")
        elif started:
            outcome = run_query(text, k, retriever, with_backend(settings, backend), column.emit)
            remember(done, key_of[backend], outcome)
        else:
            column.block.caption("Not run yet.")


def stub_lines_text(stubs: Sequence[Stub]) -> str:
    """Stubs as the editor shows them: a line each, `name: reasoning`."""
    return "\n".join(stub.text() for stub in stubs)


def parse_stub_lines(text: str) -> tuple[Stub, ...]:
    """The editor's lines as stubs (blank lines skipped; a line without `:` is a name alone); StubsError if unusable."""
    stubs = []
    for line in text.splitlines():
        name, _, reasoning = line.partition(":")
        if line.strip():
            stubs.append(Stub(name.strip(), reasoning.strip()))
    return check_stubs(stubs)


def live_stubs(view_key: str) -> dict[str, tuple[Stub, ...]]:
    """The stubs each system wrote for this view live (in the Inspector's one-system view or Every system), by its
    label: what a researcher probing their own query starts an edit from."""
    found: dict[str, tuple[Stub, ...]] = {}
    for key, value in live_results().items():
        outcome = value[0] if isinstance(value, tuple) else value  # one-system entries hold (result, seconds, failure)
        system = key[2] if key[0] == "every" else key[1]
        if view_key in key[:2] and isinstance(outcome, QueryOutcome) and outcome.writing is not None \
                and not outcome.writing.fallback:
            found[f"{backend_title(system)} (live)"] = outcome.writing.stubs
    return found


def starting_points(stored: Sequence[StoredSystem], text: str, view_key: str) -> dict[str, tuple[Stub, ...]]:
    """What an edit can start from: no stubs, the offline heuristic's (computed now: no LLM), each stored system's
    stubs for this query, and those a system wrote for it live in this session."""
    points: dict[str, tuple[Stub, ...]] = {NO_STUBS: ()}
    points[OFFLINE_START] = OfflineStubWriter().write(text).stubs
    for system in stored:
        writing = system.outcome.writing if system.outcome is not None else None
        if writing is not None and not writing.fallback:
            points[system.label] = writing.stubs
    points.update(live_stubs(view_key))
    return points


def _diff_lines(diff: EditDiff, k: int) -> None:
    if diff.recall_before is not None and diff.recall_after is not None:
        change = diff.recall_change or 0.0
        st.markdown(f"recall@{k} **{diff.recall_before:.2f} → {diff.recall_after:.2f}** ({change:+.2f})")
    st.markdown("gained: " + (", ".join(_short(key) for key in diff.gained) or "none") + "  \n"
                + "lost: " + (", ".join(_short(key) for key in diff.lost) or "none"))
    if diff.gold_found or diff.gold_missed:
        st.markdown(f"{GOLD_BADGE} newly found: " + (", ".join(_short(k_) for k_ in diff.gold_found) or "none")
                    + "  \n" + f"{GOLD_BADGE} no longer found: "
                    + (", ".join(_short(k_) for k_ in diff.gold_missed) or "none"))


def stub_editor(stored: Sequence[StoredSystem], text: str, k: int,
                gold: Collection[ApiKey] | None, retriever: Retriever, lookup: Callable[[ApiKey], Api | None],
                view_key: str, preferred: str | None = None) -> tuple[Stub, ...] | None:
    """The editor and its results; the edited stubs (None when they cannot be searched). It starts from the
    `preferred` stored system's stubs (the sidebar's study), else the first stored one's, else the heuristic's."""
    state = st.session_state
    points = starting_points(stored, text, view_key)
    linked = st.query_params.get("stubs")
    if linked is not None and state.get("edit_linked") != linked:  # a shared link: its stubs, as they were
        state["edit_linked"] = linked
        try:
            state["edit_text"] = stub_lines_text(from_param(linked))
        except StubsError as exc:
            st.warning(f"The link's stubs cannot be used: {md(exc, 200)}", icon=":material/link_off:")
    start_names = list(points)
    if state.get("edit_from") not in start_names:
        labels = {s.system: s.label for s in stored}
        default = labels.get(preferred or "") if labels.get(preferred or "") in points else None
        state["edit_from"] = next(name for name in (st.query_params.get("from"), default,
                                                    start_names[min(2, len(start_names) - 1)]) if name in points)
    left, right = st.columns([1, 2])

    def restart() -> None:  # only when the user picks another start: a rerun for any other reason keeps the edit
        state["edit_text"] = stub_lines_text(points[state["edit_from"]])

    start = left.selectbox("Start from", start_names, key="edit_from", on_change=restart,
                           help="The unedited stubs every difference is measured against.")
    if "edit_text" not in state:
        state["edit_text"] = stub_lines_text(points[start])
    right.button("Reset to the start", on_click=state.__setitem__, args=("edit_text", stub_lines_text(points[start])),
                 icon=":material/undo:")
    edited_text = st.text_area("Stubs: a line each, `name: reasoning` (Ctrl+Enter applies)", key="edit_text",
                               height=140)
    try:
        stubs = parse_stub_lines(edited_text)
    except StubsError as exc:
        st.warning(md(exc, 300), icon=":material/edit_note:")
        return None
    param = to_param(stubs)
    if len(param) <= MAX_PARAM_CHARS:
        if st.query_params.get("stubs") != param:
            st.query_params["stubs"] = param
            state["edit_linked"] = param
        st.query_params["from"] = start
    else:
        st.query_params.pop("stubs", None)
        st.caption(f"The link omits these stubs: {len(param):,} characters, more than {MAX_PARAM_CHARS:,}.")
    started_at = time.perf_counter()
    before = search_edited(text, points[start], k, retriever)
    after = search_edited(text, stubs, k, retriever)
    seconds = time.perf_counter() - started_at
    st.caption(f"**{EDITED}**: searched now from these stubs in {seconds * 1000:.0f} ms (both versions); "
               "never stored as a model's output.")
    cells = st.columns(2)
    for cell, name in zip(cells, ("ptr", "hybrid")):
        declared = arch(name)
        with cell:
            st.subheader(f"{declared.label} · {EDITED}")
            found = after.get(name)
            if found is None:
                st.caption("No stubs: PtR has nothing to search.")
                continue
            block = ArchResult.of(name, found, gold=gold)
            st.markdown(score_line(block, k, f"{block.search_width} candidates"))
            was = before.get(name)
            _diff_lines(edit_diff(was.keys if was is not None else [], found.keys, gold, k), k)
            hit_list(block.marked_hits(), lookup)
    return stubs
