"""The Inspector's architectures, drawn from their declarations: a column for each one the planner runs on, a
section beneath for each other, filled stage by stage as core.study.one_query emits them (the stubs while the
model writes them, each with its own top hits as soon as it is complete) or at once for a stored or cached
result, with the seconds each stage took."""
from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from core.data.toolbench import ApiKey
from core.evaluation import metrics
from core.retrieval.archs import ARCHS_BY_NAME, Arch, baseline, declared, stub_carrier
from core.study.one_query import Answered, LLMFailed, Planned, Retrieved, Stage, StubSearched, Writing, stage_label
from core.study.query_result import ArchResult, QueryOutcome
from ui.safe import md
from ui.widgets import arch_column, arch_section

WRITING_REFRESH_S = 0.1  # the partial reply is redrawn at most this often (a model writes 40-60 tokens a second)


def stage_line(seconds: dict[str, float], rates: dict[str, float] | None = None) -> str:
    """"RtP hits 0.04 s · first stub 1.31 s · PtR plan 9.80 s (38 tok/s) · …": when each stage was done, counted from
    the query's start, and for an LLM stage the tokens per second its call wrote."""
    rates = rates or {}
    return " · ".join(f"{label} {value:.2f} s" + (f" ({rates[label]:.0f} tok/s)" if label in rates else "")
                      for label, value in seconds.items())


def llm_rate(stage: Stage) -> float | None:
    """Output tokens per second of the LLM call a stage finished (the stubs carried by a block, or its plan; a reply
    from the call cache: as it was first written); None for a stage with no LLM call."""
    if not isinstance(stage, Answered):
        return None
    block = stage.block
    call = block.plan if isinstance(stage, Planned) else block.writing
    if call is None or not call.latency_s or not call.usage.output_tokens:
        return None
    return call.usage.output_tokens / call.latency_s


def _declared(name: str) -> Arch:
    return ARCHS_BY_NAME[name]


@dataclass
class Slots:
    """A placeholder per declared architecture (columns for those that plan, sections beneath for the rest) and
    one for the stage times."""

    boxes: dict[str, Any]
    times: Any

    @classmethod
    def make(cls) -> Slots:
        columned = [a for a in declared() if a.plans]
        boxes = {a.name: column.empty() for a, column in zip(columned, st.columns(len(columned)))}
        boxes.update({a.name: st.empty() for a in declared() if not a.plans})
        return cls(boxes, st.empty())


def draw_block(slots: Slots, a: Arch, block: ArchResult | None, lookup: Callable[[ApiKey], Any], k: int,
               failure: str | None = None) -> None:
    """One architecture's answer in its slot: a column (with its plan) or a section (hits only)."""
    with slots.boxes[a.name].container():
        if a.plans:
            arch_column(a, block, lookup, k, failure=failure)
        else:
            arch_section(a, block, lookup, k)


def draw_result(slots: Slots, result: QueryOutcome, lookup: Callable[[ApiKey], Any], k: int,
                missing: str | None = None) -> None:
    """A finished result at once (stored, or a live one redrawn): every declared architecture in its slot; a
    column without a result says why (`missing`)."""
    for a in declared():
        block = result.get(a.name)
        if block is not None or a.plans:
            draw_block(slots, a, block, lookup, k, failure=None if block is not None else missing)


@dataclass
class LiveColumns:
    """The slots, what has arrived so far, and the stage times."""

    slots: Slots
    lookup: Callable[[ApiKey], Any]
    k: int
    gold: Collection[ApiKey] | None
    model: str
    on_baseline: Callable[[ArchResult], None] | None = None  # what else the page draws from RtP's block alone
    result: QueryOutcome = field(init=False)  # what has arrived, without gold marks (added when drawn)
    seconds: dict[str, float] = field(default_factory=dict)
    rates: dict[str, float] = field(default_factory=dict)  # tokens/s of the LLM stages, by stage label
    _stub_area: Any = None
    _writing: Any = None
    _drawn_at: float = 0.0

    def __post_init__(self) -> None:
        self.result = QueryOutcome(self.k)

    def emit(self, stage: Stage) -> None:
        """Draws one stage (core.study.one_query.run_query's `emit`)."""
        label = stage_label(stage)
        if label is not None:
            self.seconds.setdefault(label, stage.seconds)
            if (rate := llm_rate(stage)) is not None:
                self.rates.setdefault(label, rate)
        if isinstance(stage, Answered):
            self.result = self.result.with_block(stage.block)
            a = _declared(stage.block.arch)
            self._draw(a)
            if isinstance(stage, Retrieved) and a.baseline and self.on_baseline is not None:
                self.on_baseline(stage.block)
            if isinstance(stage, Retrieved) and not a.needs_stubs and self._stub_area is None:
                self._start_stubs()
        elif isinstance(stage, Writing):
            if time.perf_counter() - self._drawn_at >= WRITING_REFRESH_S:
                self._drawn_at = time.perf_counter()
                self._writing.code(stage.text[-400:], language="json", wrap_lines=True)
        elif isinstance(stage, StubSearched):
            self._draw_stub(stage)
        elif isinstance(stage, LLMFailed):
            draw_block(self.slots, stub_carrier(), None, self.lookup, self.k,
                       failure=f"{self.model} cannot run: {stage.message}")
        self.slots.times.caption(f"Live, stage by stage ({md(self.model, 80)}): "
                                 f"{stage_line(self.seconds, self.rates)}")

    def _draw(self, a: Arch) -> None:
        block = self.result.get(a.name)
        draw_block(self.slots, a, None if block is None else block.with_gold(self.gold, self.k), self.lookup, self.k)

    def _start_stubs(self) -> None:
        carrier = stub_carrier()
        with self.slots.boxes[carrier.name].container():
            st.subheader(carrier.title)
            st.caption(f"{md(self.model, 80)} is writing stubs; each stub is searched as soon as it is complete.")
            self._stub_area = st.container()
            self._writing = st.empty()

    def _draw_stub(self, stage: StubSearched) -> None:
        top = stage.hits[:3]
        flags = metrics.gold_flags([h.key for h in top], self.gold) if self.gold else [False] * len(top)
        found = ", ".join(("✅ " if flag else "") + md(f"{h.tool_name.strip()}/{h.api_name.strip()}", 60)
                          for h, flag in zip(top, flags))
        reasoning = f": {md(stage.stub.reasoning, 200)}" if stage.stub.reasoning else ""
        with self._stub_area:
            st.markdown(f"- **{md(stage.stub.name, 80)}**{reasoning} · {stage.seconds:.2f} s  \n"
                        f"  its own top hits → {found or 'none'}")


def replay(columns: LiveColumns, result: QueryOutcome, seconds: dict[str, float], failure: str | None = None) -> None:
    """A finished live result drawn at once (a rerun of the page, the cache): the same slots, the same times."""
    columns.result, columns.seconds = result, dict(seconds)
    missing = failure or (f"{columns.model} cannot run: {result.llm_error}" if result.llm_error else None)
    draw_result(columns.slots, result.with_gold(columns.gold), columns.lookup, columns.k, missing)
    base = result.get(baseline().name)
    if columns.on_baseline is not None and base is not None:
        columns.on_baseline(base)
    stages = [kind(0.0, block) for block in result.blocks for kind in (Retrieved, Planned)]
    rates = {stage_label(stage): rate for stage in stages if (rate := llm_rate(stage)) is not None}
    columns.slots.times.caption(f"Live ({md(columns.model, 80)}), when each stage was done: "
                                f"{stage_line(seconds, rates)}")
