"""The Inspector's stage line: each stage's seconds, and the tokens per second of the LLM calls (issue 34, part 4)."""
from __future__ import annotations

from core.agents.llm.base import Usage
from core.agents.planner import Plan
from core.study.one_query import Planned, Retrieved
from core.study.query_result import ArchResult, StubWriting
from core.retrieval.records import Stub
from ui.live_view import llm_rate, stage_line


def block(plan_tokens: int = 0, plan_s: float = 0.0, stub_tokens: int = 0, stub_s: float | None = None) -> ArchResult:
    plan = Plan((), (), (), None, 0, "local", "m", "v", Usage(100, plan_tokens), plan_s)
    writing = StubWriting((Stub("s"),), False, None, Usage(50, stub_tokens), stub_s)
    return ArchResult("ptr", (), None, 0, plan=plan, writing=writing)


def test_an_llm_stage_has_its_calls_tokens_per_second_and_others_none() -> None:
    answered = block(plan_tokens=60, plan_s=2.0, stub_tokens=30, stub_s=1.5)
    assert llm_rate(Planned(9.0, answered)) == 30.0 and llm_rate(Retrieved(4.0, answered)) == 20.0
    assert llm_rate(Retrieved(0.1, block())) is None  # no call (the heuristic writes no tokens)
    assert llm_rate(Planned(0.1, block(plan_tokens=5, plan_s=0.0))) is None


def test_the_stage_line_puts_the_rate_beside_an_llm_stage_only() -> None:
    line = stage_line({"RtP hits": 0.04, "PtR plan": 9.8}, {"PtR plan": 38.4})
    assert line == "RtP hits 0.04 s · PtR plan 9.80 s (38 tok/s)"
    assert stage_line({"RtP hits": 0.04}) == "RtP hits 0.04 s"
