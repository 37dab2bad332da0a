"""The Inspector's live path: every stage reaches the page on the page's own thread, the first stub's hits
before the reply is complete, and the result is the one the CLI prints."""
from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from core.agents.factory import Agents
from core.agents.llm.base import Usage
from core.agents.llm.stream import current_sink
from core.agents.stubs import Stub, StubOutcome
from core.study.one_query import (LLMFailed, Planned, Retrieved, Stage, StubSearched, Writing, complete_stubs,
                                  run_query, stage_label)
from core.settings import Settings
from tests.helpers import FakePlanner, FakeStubWriter, make_retriever

REPLY = ('{"stubs": [{"name": "search_hotels", "reasoning": "Find hotels in Paris."}, '
         '{"name": "convert_currency", "reasoning": "Convert 200 \\"EUR\\" to USD."}]}')
STUBS = (Stub("search_hotels", "Find hotels in Paris."), Stub("convert_currency", 'Convert 200 "EUR" to USD.'))
QUERY = "Find hotels in Paris and convert 200 EUR to USD"


class StreamingWriter(FakeStubWriter):
    """Writes REPLY a few characters at a time to the stream's sink, from the thread that calls it; once the first
    stub is complete it waits (up to 5 s) for `shown`, so a test can see that stub's hits arrive mid-reply."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()
        self.shown = threading.Event()

    def write(self, query: str) -> StubOutcome:
        self.threads.add(threading.get_ident())
        sink = current_sink()
        first_done = REPLY.index("}") + 1
        for end in range(5, len(REPLY) + 5, 5):
            if sink is not None:
                sink(REPLY[:end])
            if end >= first_done and not self.shown.is_set():
                self.shown.wait(5)
        return StubOutcome(STUBS, self.backend, self.model, self.prompt_version, Usage(30, 40, 0), 0.2)


def test_complete_stubs_reads_only_the_finished_objects_of_a_partial_reply() -> None:
    assert complete_stubs(REPLY[:40]) == []
    cut = REPLY.index("}") + 1
    assert complete_stubs(REPLY[:cut]) == [STUBS[0]]
    assert complete_stubs(REPLY) == list(STUBS)  # escaped quotes decoded


def shape(stage: Stage) -> str:
    """A stage as "kind" or "kind:arch", for comparing orders."""
    block = getattr(stage, "block", None)
    return type(stage).__name__ + (f":{block.arch}" if block is not None else "")


def test_stages_come_in_order_on_the_callers_thread_and_end_in_the_clis_result() -> None:
    retriever, writer = make_retriever(), StreamingWriter()
    stages: list[tuple[Stage, int]] = []

    def emit(stage: Stage) -> None:
        stages.append((stage, threading.get_ident()))
        if isinstance(stage, StubSearched):
            writer.shown.set()

    result = run_query(QUERY, 3, retriever, Settings.from_env(env={}), emit, agents=Agents(writer, FakePlanner()))
    shapes = [shape(s) for s, _ in stages]
    assert shapes[0] == "Retrieved:rtp" and shapes[-4:] == ["Retrieved:ptr", "Retrieved:hybrid", "Planned:ptr",
                                                            "Planned:rtp"]
    assert {t for _, t in stages} == {threading.get_ident()} and threading.get_ident() not in writer.threads
    stub_stages = [s for s, _ in stages if isinstance(s, StubSearched)]
    assert [s.stub.name for s in stub_stages] == ["search_hotels", "convert_currency"]
    assert all(len(s.hits) == 3 for s in stub_stages)
    first = shapes.index("StubSearched")
    partial = [s.text for s, _ in stages[:first] if isinstance(s, Writing)][-1]
    assert "convert_currency" not in partial  # the first stub was searched before the reply was complete
    seconds = [s.seconds for s, _ in stages]
    assert seconds == sorted(seconds)
    labels = [stage_label(s) for s, _ in stages]
    assert [label for label in labels if label] == ["RtP hits", *["first stub"] * 2, "stubs + PtR hits", "hybrid hits",
                                                    "PtR plan", "RtP plan"]
    again = StreamingWriter()
    again.shown.set()
    whole = run_query(QUERY, 3, retriever, Settings.from_env(env={}), agents=Agents(again, FakePlanner()))
    assert list(result.to_json()) == list(whole.to_json())
    for name in ("rtp", "ptr", "hybrid"):
        assert result.get(name).hits == whole.get(name).hits
    for name in ("rtp", "ptr"):
        assert replace(result.get(name).plan, latency_s=0.0) == replace(whole.get(name).plan, latency_s=0.0)
    assert result.writing.stubs == whole.writing.stubs
    # Each stage carries its architecture's block as it stands; the last one of each is the result's.
    assert [s.block for s, _ in stages if isinstance(s, Planned)] == [result.get("ptr"), result.get("rtp")]
    assert [s.block.plan for s, _ in stages if isinstance(s, Retrieved)] == [None, None, None]


def test_a_reply_that_comes_whole_still_shows_each_stubs_hits() -> None:
    stages: list[Stage] = []
    run_query(QUERY, 3, make_retriever(), Settings.from_env(env={}), stages.append,
              agents=Agents(FakeStubWriter(), FakePlanner()))
    assert [s.stub.name for s in stages if isinstance(s, StubSearched)] == ["find_hotels_in", "convert_200_eur"]
    assert not any(isinstance(s, Writing) for s in stages)


def test_an_llm_that_cannot_run_leaves_rtp_complete() -> None:
    stages: list[Stage] = []
    settings = Settings.from_env(env={"LLM_BACKEND": "gemini"})  # no key on this machine
    result = run_query(QUERY, 3, make_retriever(), settings, stages.append)
    assert [shape(s) for s in stages] == ["Retrieved:rtp", "LLMFailed"]
    assert isinstance(stages[-1], LLMFailed) and "GEMINI_API_KEY" in stages[-1].message
    assert "GEMINI_API_KEY" in result.llm_error and len(result.get("rtp").hits) == 3


class MeetingPlanner(FakePlanner):
    """Each plan waits (up to 5 s) until `parties` plans are under way at once: two plans on the parallel schedules
    pass, on the sequential one the first times out. Records the threads it ran on."""

    def __init__(self, parties: int) -> None:
        super().__init__()
        self.meeting = threading.Barrier(parties, timeout=5)
        self.threads: set[int] = set()
        self.started, self.finished = threading.Event(), threading.Event()

    def plan(self, query: str, hits):  # type: ignore[no-untyped-def]
        self.threads.add(threading.get_ident())
        self.started.set()
        self.meeting.wait()
        plan = super().plan(query, hits)
        self.finished.set()
        return plan


def test_the_parallel_schedule_runs_both_plans_at_once_and_emits_on_the_callers_thread() -> None:
    planner, stages = MeetingPlanner(2), []
    result = run_query(QUERY, 3, make_retriever(), Settings.from_env(env={}),
                       lambda stage: stages.append((stage, threading.get_ident())),
                       agents=Agents(FakeStubWriter(), planner), schedule="parallel")
    assert {threading.get_ident()} == {thread for _, thread in stages}  # Streamlit can draw every stage
    assert threading.get_ident() not in planner.threads and len(planner.threads) == 2
    plain = run_query(QUERY, 3, make_retriever(), Settings.from_env(env={}), agents=Agents(FakeStubWriter(),
                                                                                              FakePlanner()))
    assert [(b.arch, b.plan.selected_apis) for b in result.blocks if b.plan] == \
        [(b.arch, b.plan.selected_apis) for b in plain.blocks if b.plan]
    assert sorted(shape(s) for s, _ in stages if isinstance(s, Planned)) == ["Planned:ptr", "Planned:rtp"]


@pytest.mark.slow
def test_the_sequential_schedule_plans_one_at_a_time() -> None:
    import pytest

    with pytest.raises(threading.BrokenBarrierError):
        run_query(QUERY, 3, make_retriever(), Settings.from_env(env={}),
                  agents=Agents(FakeStubWriter(), MeetingPlanner(2)), schedule="sequential")


class WaitsForAPlan(FakeStubWriter):
    """A stub writer that finishes only once a plan has finished (up to 5 s): the early schedule's overlap."""

    def __init__(self, planner: MeetingPlanner) -> None:
        super().__init__()
        self.planner = planner
        self.saw_a_plan = False

    def write(self, query: str) -> StubOutcome:
        self.saw_a_plan = self.planner.finished.wait(5)
        return super().write(query)


def test_the_early_schedule_plans_rtp_while_the_stubs_are_written() -> None:
    planner = MeetingPlanner(1)
    writer = WaitsForAPlan(planner)
    stages: list[Stage] = []
    run_query(QUERY, 3, make_retriever(), Settings.from_env(env={}), stages.append, agents=Agents(writer, planner),
              schedule="early")
    assert writer.saw_a_plan
    order = [shape(s) for s in stages if isinstance(s, (Planned, Retrieved))]
    assert order.index("Planned:rtp") < order.index("Retrieved:ptr")  # RtP's plan shown before PtR's hits


def test_plans_run_at_once_on_the_local_backend_with_two_instances_only() -> None:
    from core.study.one_query import plan_schedule

    local = Settings.from_env(env={"LLM_BACKEND": "local"})
    assert plan_schedule(local) == "parallel" and local.local_instances == 2
    assert plan_schedule(local.with_(local_instances=1)) == "sequential"
    assert plan_schedule(Settings.from_env(env={"LLM_BACKEND": "offline"})) == "sequential"
