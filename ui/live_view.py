"""The Inspector's live columns, drawn stage by stage as core.study.live emits them: RtP's column at once, PtR's
stubs while the model writes them (each with its own top hits as soon as it is complete), then PtR's merged hits,
the hybrid, and the two plans, with the seconds each stage took."""
from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from core.data.toolbench import ApiKey
from core.evaluation import metrics
from core.study.live import Stage
from core.study.query_result import ArchResult, QueryOutcome
from ui.safe import md
from ui.widgets import arch_column, hybrid_section

WRITING_REFRESH_S = 0.1  # the partial reply is redrawn at most this often (a model writes 40-60 tokens a second)
STAGE_NAMES = {"rtp": "RtP hits", "first_stub": "first stub", "ptr": "stubs + PtR hits", "hybrid": "hybrid hits",
               "ptr_plan": "PtR plan", "rtp_plan": "RtP plan"}


def stage_line(seconds: dict[str, float]) -> str:
    """"RtP hits 0.04 s · first stub 1.31 s · …": when each stage was done, counted from the query's start."""
    return " · ".join(f"{label} {seconds[name]:.2f} s" for name, label in STAGE_NAMES.items() if name in seconds)


@dataclass
class LiveColumns:
    """Placeholders for the two columns and the hybrid, and what has arrived so far."""

    rtp_box: Any
    ptr_box: Any
    hybrid_box: Any
    times_box: Any
    lookup: Callable[[ApiKey], Any]
    k: int
    gold: Collection[ApiKey] | None
    model: str
    on_rtp: Callable[[ArchResult], None] | None = None  # what else the page draws from RtP's column alone
    result: QueryOutcome = field(init=False)  # what has arrived, without gold marks (added when drawn)
    seconds: dict[str, float] = field(default_factory=dict)
    stubs: list[dict] = field(default_factory=list)
    _stub_area: Any = None
    _writing: Any = None
    _drawn_at: float = 0.0

    def __post_init__(self) -> None:
        self.result = QueryOutcome(self.k)

    def emit(self, stage: Stage) -> None:
        """Draws one stage (core.study.live.live_query's `emit`)."""
        name = stage.name
        if name in STAGE_NAMES:
            self.seconds[name] = stage.seconds
        if isinstance(stage.data, ArchResult):
            self.result = self.result.with_block(stage.data)
        if name == "rtp":
            self._draw_rtp()
            if self.on_rtp is not None:
                self.on_rtp(stage.data)
            self._start_ptr()
        elif name == "writing":
            if time.perf_counter() - self._drawn_at >= WRITING_REFRESH_S:
                self._drawn_at = time.perf_counter()
                self._writing.code(stage.data[-400:], language="json", wrap_lines=True)
        elif name == "stub":
            self.seconds.setdefault("first_stub", stage.seconds)
            self._draw_stub(stage)
        elif name == "ptr":
            self._draw_ptr()
        elif name == "hybrid":
            self._draw_hybrid()
        elif name == "ptr_plan":
            self._draw_ptr()
        elif name == "rtp_plan":
            self._draw_rtp()
        elif name == "llm_error":
            with self.ptr_box.container():
                arch_column("ptr", None, self.lookup, self.k, failure=f"{self.model} cannot run: {stage.data}")
        self.times_box.caption(f"Live, stage by stage ({md(self.model, 80)}): {stage_line(self.seconds)}")

    def _marked(self, arch: str) -> ArchResult | None:
        block = self.result.get(arch)
        return None if block is None else block.with_gold(self.gold, self.k)

    def _draw_rtp(self) -> None:
        with self.rtp_box.container():
            arch_column("rtp", self._marked("rtp"), self.lookup, self.k)

    def _draw_ptr(self) -> None:
        with self.ptr_box.container():
            arch_column("ptr", self._marked("ptr"), self.lookup, self.k)

    def _draw_hybrid(self) -> None:
        with self.hybrid_box.container():
            hybrid_section(self._marked("hybrid"), self.lookup, self.k)

    def _start_ptr(self) -> None:
        with self.ptr_box.container():
            st.subheader("Plan-then-Retrieve")
            st.caption(f"{md(self.model, 80)} is writing stubs; each stub is searched as soon as it is complete.")
            self._stub_area = st.container()
            self._writing = st.empty()

    def _draw_stub(self, stage: Stage) -> None:
        stub = stage.data
        self.stubs.append(stub)
        top = stub["hits"][:3]
        flags = (metrics.gold_flags([(h["tool_name"], h["api_name"]) for h in top], self.gold) if self.gold
                 else [False] * len(top))
        found = ", ".join(("✅ " if flag else "") + md(f"{h['tool_name'].strip()}/{h['api_name'].strip()}", 60)
                          for h, flag in zip(top, flags))
        reasoning = f": {md(stub['reasoning'], 200)}" if stub.get("reasoning") else ""
        with self._stub_area:
            st.markdown(f"- **{md(stub['name'], 80)}**{reasoning} · {stage.seconds:.2f} s  \n"
                        f"  its own top hits → {found or 'none'}")


def replay(columns: LiveColumns, result: QueryOutcome, seconds: dict[str, float], failure: str | None = None) -> None:
    """A finished live result drawn at once (a rerun of the page, the cache): the same columns, the same times."""
    columns.result, columns.seconds = result, dict(seconds)
    columns._draw_rtp()
    rtp = result.get("rtp")
    if columns.on_rtp is not None and rtp is not None:
        columns.on_rtp(rtp)
    if result.get("ptr") is not None:
        columns._draw_ptr()
    else:
        with columns.ptr_box.container():
            arch_column("ptr", None, columns.lookup, columns.k,
                        failure=failure or (f"{columns.model} cannot run: {result.llm_error}"
                                            if result.llm_error else None))
    if result.get("hybrid") is not None:
        columns._draw_hybrid()
    columns.times_box.caption(f"Live ({md(columns.model, 80)}), when each stage was done: {stage_line(seconds)}")
