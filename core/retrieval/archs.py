"""The discovery architectures, each declared once with its retrieval: what it searches, how deep, how it is shown.

An architecture is the searches it makes for one query (the raw query, the stubs written for it, or both),
each searched `depth(k)` deep, merged by best similarity (each API keeps its best cosine; ties go to the lower
registry row) and cut at k. `discover` runs that for many queries at several k with one encode call and one
batched search, and `Arch.retrieve` for one query is the same function on a batch of one: the live query, the
studies, the gold trace and `eval` all reach an architecture's retrieval here, never by its name.
The stored names ("rtp", "ptr", "hybrid") are in every run and row: never rename one.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from core.retrieval.records import Stub

if TYPE_CHECKING:  # the read API's labels and colours come from here; it must not load the search (numpy, FAISS)
    from core.retrieval.discovery import Discovery, Retriever

QUERY_LABEL = "(query)"  # the hybrid's extra search: the raw query, as RtP embeds it


class Written(Protocol):
    """The stubs written for a query, as the writer gave them (core.agents.stubs.StubOutcome) or the store holds
    them (core.study.query_result.StubWriting): `fallback` means the one stub is the raw query itself."""

    @property
    def stubs(self) -> tuple[Stub, ...]: ...

    @property
    def fallback(self) -> bool: ...


@dataclass(frozen=True)
class WrittenStubs:
    """Written stubs as plain values: what the studies read back from a stored run, a cache key, a test."""

    stubs: tuple[Stub, ...]
    fallback: bool = False


@dataclass(frozen=True)
class Search:
    """One text an architecture searches for a query, and what its hits are credited to (Hit.stub)."""

    label: str | None  # None: RtP's query, whose hits name no stub
    text: str
    stub: Stub | None = None


Searches = Callable[[str, "Written | None"], tuple[Search, ...]]


def beside_query(written: Written) -> tuple[Stub, ...]:
    """The stubs the hybrid searches besides the raw query: none after a fallback, whose one stub is the raw
    query itself."""
    return () if written.fallback else written.stubs


def the_query(query: str, written: Written | None) -> tuple[Search, ...]:
    return (Search(None, query),)


def the_stubs(query: str, written: Written | None) -> tuple[Search, ...]:
    if written is None or not written.stubs:
        raise ValueError("PtR needs at least one stub")
    return tuple(Search(s.name, s.text(), s) for s in written.stubs)


def query_and_stubs(query: str, written: Written | None) -> tuple[Search, ...]:
    stubs = beside_query(written) if written is not None else ()
    return (Search(QUERY_LABEL, query), *(Search(s.name, s.text(), s) for s in stubs))


def same_k(k: int) -> int:
    return k


@dataclass(frozen=True)
class Arch:
    """One way of discovering tools. `plans`: the planner runs on its hits (the paper's two), and the Inspector
    gives it a column; the others are drawn beneath. `needs_stubs`: it searches the stubs written for the query,
    written once however many architectures search them; `carries_stubs`: its result holds those stubs and what
    writing them cost (the others reuse them for free). `baseline`: the one every other architecture's overlap
    is measured against. `in_ksweep`: the k sweep runs it from the main study's stored stubs."""

    name: str
    label: str                  # tables and verdicts: "RtP"
    title: str                  # the Inspector's column heading
    colour: str                 # every chart's colour for it
    searches: Searches          # the texts it searches for one query
    depth: Callable[[int], int] = same_k  # how deep each search goes for a final top k
    needs_stubs: bool = False
    carries_stubs: bool = False
    plans: bool = False
    baseline: bool = False
    in_ksweep: bool = False
    beyond_paper: bool = False  # ours only: no paper figure to set beside it
    map_marker: str | None = None  # its hits on the embedding map (plotly symbol); None: not drawn there
    caption: str = ""           # what the Inspector says under its heading

    @property
    def legend(self) -> str:
        """The label starting a chart's legend entry: capitalised ("Hybrid")."""
        return self.label[:1].upper() + self.label[1:]

    @property
    def table_label(self) -> str:
        """The label in a table that mixes it with the paper's architectures."""
        return f"{self.label} (beyond the paper)" if self.beyond_paper else self.label

    def retrieve(self, query: str, written: Written | None, k: int, retriever: Retriever) -> Discovery:
        """Its Discovery for one cleaned query (`written`: the stubs written for it, or None): discover on one."""
        return discover(self, [query], [written], [k], retriever)[k][0]


def discover(arch: Arch, texts: Sequence[str], written: Sequence[Written | None] | None, ks: Sequence[int],
             retriever: Retriever) -> dict[int, list[Discovery]]:
    """`arch`'s Discoveries for many queries at every k in ks: one encode call, one batched search at the
    deepest k, each smaller k merged from the prefixes. Exact for every k: a row in the top k by best score is
    inside some search's own top k, so depth beyond k changes only the search width, counted per k."""
    from core.retrieval.discovery import Discovery, merge_stub_hits  # see TYPE_CHECKING above

    start = time.perf_counter()
    stubs_of = list(written) if written is not None else [None] * len(texts)
    per_query = [arch.searches(text, w) for text, w in zip(texts, stubs_of)]
    flat = [search for searches in per_query for search in searches]
    vectors = retriever.encode([search.text for search in flat])
    scores, rows = retriever.index.batch_search(vectors, arch.depth(max(ks)))
    seconds = (time.perf_counter() - start) / max(len(texts), 1)
    out: dict[int, list[Discovery]] = {k: [] for k in ks}
    first = 0
    for searches in per_query:
        block = range(first, first + len(searches))
        first += len(searches)
        top1 = tuple((int(rows[i, 0]), float(scores[i, 0])) for i in block)  # each search's own best
        stubs = tuple(s.stub for s in searches if s.stub is not None)
        for k in ks:
            depth = arch.depth(k)
            merged, width = merge_stub_hits([(flat[i].label, scores[i, :depth], rows[i, :depth]) for i in block], k)
            out[k].append(Discovery(arch.name, k, retriever.merged_hits(merged), stubs, width, seconds, top1,
                                     retriever.score_name))
    return out


ARCH_LIST = (
    Arch("rtp", "RtP", "RtP · Retrieve-then-Plan", "#1f77b4", the_query, plans=True, baseline=True,
         in_ksweep=True, map_marker="circle-open"),
    Arch("ptr", "PtR", "PtR · Plan-then-Retrieve", "#d62728", the_stubs, needs_stubs=True, carries_stubs=True,
         plans=True, in_ksweep=True, map_marker="square-open"),
    Arch("hybrid", "hybrid", "Hybrid · PtR's stubs + the raw query (beyond the paper)", "#9467bd", query_and_stubs,
         needs_stubs=True, beyond_paper=True,
         caption="PtR's stubs and the query itself are searched, and each API keeps its best similarity: RtP's "
                 "whole-query match survives when stub writing drops a brand name. No extra LLM call; Results → "
                 "Beyond the paper compares it with both architectures."),
)
# The registry every reader consults at call time (declared()), so a test may declare one more with setitem.
ARCHS_BY_NAME = {a.name: a for a in ARCH_LIST}
ARCHS = tuple(ARCHS_BY_NAME)
PAPER_ARCHS = tuple(a.name for a in ARCH_LIST if not a.beyond_paper)  # the two the paper compares


def declared() -> tuple[Arch, ...]:
    """Every declared architecture, in order."""
    return tuple(ARCHS_BY_NAME.values())


def arch(name: str) -> Arch:
    """The declaration of `name`; ValueError naming the known ones otherwise."""
    try:
        return ARCHS_BY_NAME[name]
    except KeyError:
        raise ValueError(f"arch must be one of {', '.join(ARCHS_BY_NAME)}, not {name!r}") from None


def planning() -> tuple[Arch, ...]:
    """The architectures the planner runs on (the paper's two): the ones the main and scaling studies run."""
    return tuple(a for a in declared() if a.plans)


def baseline() -> Arch:
    """The architecture the others' overlap is measured against (RtP)."""
    return next(a for a in declared() if a.baseline)


def stub_carrier() -> Arch:
    """The architecture that carries the stubs written for a query (PtR): one stub's own hits are its search."""
    return next(a for a in declared() if a.carries_stubs)
