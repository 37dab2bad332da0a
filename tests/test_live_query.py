"""The Inspector's live path: every stage reaches the page on the page's own thread, the first stub's hits
before the reply is complete, and the result is inspect_query's."""
from __future__ import annotations

import threading

from core.agents.factory import Agents
from core.agents.llm.base import Usage
from core.agents.llm.stream import current_sink
from core.agents.stubs import Stub, StubOutcome
from core.study.live import Stage, complete_stubs, live_query
from core.study.single_query import inspect_query
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


def test_stages_come_in_order_on_the_callers_thread_and_match_inspect_query() -> None:
    retriever, writer = make_retriever(), StreamingWriter()
    stages: list[tuple[Stage, int]] = []

    def emit(stage: Stage) -> None:
        stages.append((stage, threading.get_ident()))
        if stage.name == "stub":
            writer.shown.set()

    result = live_query(QUERY, 3, retriever, Settings.from_env(env={}), emit, agents=Agents(writer, FakePlanner()))
    names = [s.name for s, _ in stages]
    assert names[0] == "rtp" and names[-4:] == ["ptr", "hybrid", "ptr_plan", "rtp_plan"]
    assert {t for _, t in stages} == {threading.get_ident()} and threading.get_ident() not in writer.threads
    stub_stages = [s for s, _ in stages if s.name == "stub"]
    assert [s.data["name"] for s in stub_stages] == ["search_hotels", "convert_currency"]
    assert all(len(s.data["hits"]) == 3 for s in stub_stages)
    first = names.index("stub")
    partial = [s.data for s, _ in stages[:first] if s.name == "writing"][-1]
    assert "convert_currency" not in partial  # the first stub was searched before the reply was complete
    seconds = [s.seconds for s, _ in stages]
    assert seconds == sorted(seconds)
    again = StreamingWriter()
    again.shown.set()
    whole = inspect_query(QUERY, 3, retriever, Settings.from_env(env={}), agents=Agents(again, FakePlanner()))
    assert type(result) is type(whole) and list(result.to_json()) == list(whole.to_json())
    for arch in ("rtp", "ptr", "hybrid"):
        assert result.get(arch).hits == whole.get(arch).hits
    for arch in ("rtp", "ptr"):
        assert {**result.get(arch).plan, "latency_s": 0} == {**whole.get(arch).plan, "latency_s": 0}
    assert result.writing.stubs == whole.writing.stubs
    # Each plan stage carries its architecture's block with the plan, as the page draws it.
    assert [s.data.plan for s, _ in stages if s.name.endswith("_plan")] == [result.get("ptr").plan,
                                                                           result.get("rtp").plan]


def test_a_reply_that_comes_whole_still_shows_each_stubs_hits() -> None:
    stages: list[Stage] = []
    live_query(QUERY, 3, make_retriever(), Settings.from_env(env={}), stages.append,
               agents=Agents(FakeStubWriter(), FakePlanner()))
    assert [s.data["name"] for s in stages if s.name == "stub"] == ["find_hotels_in", "convert_200_eur"]
    assert not any(s.name == "writing" for s in stages)


def test_an_llm_that_cannot_run_leaves_rtp_complete() -> None:
    stages: list[Stage] = []
    settings = Settings.from_env(env={"LLM_BACKEND": "gemini"})  # no key on this machine
    result = live_query(QUERY, 3, make_retriever(), settings, stages.append)
    assert [s.name for s in stages] == ["rtp", "llm_error"]
    assert "GEMINI_API_KEY" in result.llm_error and len(result.get("rtp").hits) == 3
