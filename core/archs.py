"""The discovery architectures, each declared once: name, labels, colour, what it needs, its retrieval.

The single query (CLI `query`, the Inspector), `eval`, the stored results' reader, every label, colour and
loop on the pages read these declarations, so another architecture is one more entry here plus its
retrieval functions. Those are named as "module:function" and imported on first use, as they live in the
layers above this module, which sits below every layer and imports none of them:
- `one(query, written, k, retriever) -> Discovery`: one query, `written` being its StubOutcome (None when
  the architecture needs no stubs);
- `batch(texts, written, ks, retriever) -> {k: [Discovery]}`: many queries at every k in ks, `written`
  their StubOutcomes in order (None when it needs no stubs).
The stored names ("rtp", "ptr", "hybrid") are in every run and row: never rename one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.declared import declared_function


@dataclass(frozen=True)
class Arch:
    """One way of discovering tools. `plans`: the planner runs on its hits (the paper's two). `needs_stubs`: it
    searches the stubs written for the query, written once however many architectures search them;
    `carries_stubs`: its result holds those stubs and what writing them cost (the others reuse them for free)."""

    name: str
    label: str                  # tables and verdicts: "RtP"
    title: str                  # the Inspector's column heading
    colour: str                 # every chart's colour for it
    one: str                    # "module:function", see the module's docstring
    batch: str
    needs_stubs: bool = False
    carries_stubs: bool = False
    plans: bool = False
    beyond_paper: bool = False  # ours only: no paper figure to set beside it
    map_marker: str | None = None  # its hits on the embedding map (plotly symbol); None: not drawn there

    @property
    def legend(self) -> str:
        """The label starting a chart's legend entry: capitalised ("Hybrid")."""
        return self.label[:1].upper() + self.label[1:]

    @property
    def table_label(self) -> str:
        """The label in a table that mixes it with the paper's architectures."""
        return f"{self.label} (beyond the paper)" if self.beyond_paper else self.label

    def retrieve(self, query: str, written: Any, k: int, retriever: Any) -> Any:
        """This architecture's Discovery for one query (`written`: its StubOutcome, or None)."""
        return declared_function(self.one)(query, written, k, retriever)

    def retrieve_batch(self, texts: Any, written: Any, ks: Any, retriever: Any) -> dict[int, list]:
        """Its Discoveries for many queries at every k in ks (`written`: their StubOutcomes, or None)."""
        return declared_function(self.batch)(texts, written, ks, retriever)


_RETRIEVAL = "core.study.arch_retrieval"

ARCH_LIST = (
    Arch("rtp", "RtP", "RtP · Retrieve-then-Plan", "#1f77b4", f"{_RETRIEVAL}:rtp_one", f"{_RETRIEVAL}:rtp_many",
         plans=True, map_marker="circle-open"),
    Arch("ptr", "PtR", "PtR · Plan-then-Retrieve", "#d62728", f"{_RETRIEVAL}:ptr_one", f"{_RETRIEVAL}:ptr_many",
         needs_stubs=True, carries_stubs=True, plans=True, map_marker="square-open"),
    Arch("hybrid", "hybrid", "Hybrid · PtR's stubs + the raw query (beyond the paper)", "#9467bd",
         f"{_RETRIEVAL}:hybrid_one", f"{_RETRIEVAL}:hybrid_many", needs_stubs=True, beyond_paper=True),
)
# The registry the dispatch reads at call time (declared()), so a test may declare one more with setitem.
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
