"""One query through the declared architectures, stage by stage: what the CLI's `query` prints and the Inspector draws.

Each architecture that needs no stubs answers at once (RtP), then the stub writer's reply streams in and each
stub is searched as soon as its JSON object is complete, then each architecture that searches stubs answers
(PtR, the hybrid), then the planners run on the hits of those that plan. `emit` receives every stage as it
finishes, on the caller's thread; the return value is the whole QueryOutcome, which a page's later reruns, the
JSON download and the CLI read alike. The query is cleaned once, and each text embedded once (a memoised
retriever), whoever searches it.

The stub writer runs in a worker thread that streams its reply's text into a queue (core.agents.llm.stream);
this thread reads the queue, finds the stubs completed so far and searches each. The plans follow a schedule
(PLAN_SCHEDULES): one after the other, both at once once the retrievals are done (the local backend loads two
model instances), or RtP's started while the stubs are still being written; each plan's stage is emitted on the
caller's thread as it finishes.
"""
from __future__ import annotations

import contextvars
import json
import queue
import re
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from core.agents.factory import Agents, make_agents
from core.agents.llm import LLMUnavailable
from core.agents.llm.budget import within_budget
from core.agents.llm.stream import streaming_to
from core.agents.planner import Plan
from core.agents.stubs import StubOutcome, StubWriter
from core.data.toolbench import ApiKey
from core.retrieval.archs import ARCHS_BY_NAME, Arch, WrittenStubs, declared, stub_carrier
from core.retrieval.discovery import CleanQuery, Retriever, check_k, clean_query
from core.retrieval.memo import memoised
from core.retrieval.records import Hit, Stub
from core.settings import Settings
from core.study.query_result import ArchResult, QueryOutcome

_STRING = r'"((?:[^"\\]|\\.)*)"'
_COMPLETE_STUB = re.compile(r'\{\s*"name"\s*:\s*' + _STRING + r'\s*,\s*"reasoning"\s*:\s*' + _STRING + r'\s*\}')
POLL_S = 0.05
PLAN_SCHEDULES = ("sequential", "parallel", "early")
DEFAULT_PLAN_SCHEDULE = "sequential"


def plan_schedule(settings: Settings) -> str:
    """The schedule a query's plans follow: both at once on the local backend with two model instances or more, one
    after the other elsewhere. Measured with the 1.5B on 2 cores (benchmarks/inspector_stream.py --schedule all, 6
    queries, docs/benchmarks.md): both at once, the cores shared out, end the query 16% sooner (both plans p50
    18.9 s against 22.6 s) at the cost of PtR's column (15.4 s against 11.8 s); early (RtP's plan beside the stub
    writer) doubles the first stub's time. A remote backend's calls were not measured so: they keep their order."""
    return "parallel" if settings.llm_backend == "local" and settings.local_instances >= 2 else DEFAULT_PLAN_SCHEDULE


@dataclass(frozen=True)
class Stage:
    """One finished stage of a query; `seconds` counts from the query's start."""

    seconds: float


@dataclass(frozen=True)
class Answered(Stage):
    """An architecture's block as it stands: its hits (Retrieved), later with its plan (Planned)."""

    block: ArchResult


@dataclass(frozen=True)
class Retrieved(Answered):
    """An architecture's hits, before any plan."""


@dataclass(frozen=True)
class Writing(Stage):
    """The stub writer's reply so far."""

    text: str


@dataclass(frozen=True)
class StubSearched(Stage):
    """One stub, complete in the reply, with its own top hits (the stub carrier's search of it alone)."""

    stub: Stub
    hits: tuple[Hit, ...]


@dataclass(frozen=True)
class Planned(Answered):
    """An architecture's block with its plan."""


@dataclass(frozen=True)
class LLMFailed(Stage):
    """The LLM cannot run at all (no key, no model): what needs none has answered; nothing more comes."""

    message: str


Emit = Callable[[Stage], None]


def stage_label(stage: Stage) -> str | None:
    """What the times line calls a stage ("RtP hits", "stubs + PtR hits", "PtR plan", "first stub"); None for
    the stages it does not time."""
    if isinstance(stage, Retrieved):
        declared_arch = ARCHS_BY_NAME[stage.block.arch]
        return f"{'stubs + ' if declared_arch.carries_stubs else ''}{declared_arch.label} hits"
    if isinstance(stage, Planned):
        return f"{ARCHS_BY_NAME[stage.block.arch].label} plan"
    if isinstance(stage, StubSearched):
        return "first stub"
    return None


def complete_stubs(text: str) -> list[Stub]:
    """The stubs whose JSON object is complete in a reply's text so far, in order (name and reasoning, the
    paper's shape and every style's)."""
    return [Stub(json.loads(f'"{name}"'), json.loads(f'"{reasoning}"'))
            for name, reasoning in _COMPLETE_STUB.findall(text)]


def run_query(text: str, k: int, retriever: Retriever, settings: Settings, emit: Emit | None = None, *,
              archs: Sequence[Arch] | None = None, plans: bool = True, gold: Collection[ApiKey] | None = None,
              agents: Agents | None = None, written: StubOutcome | None = None,
              use_cache: bool = True, schedule: str | None = None) -> QueryOutcome:
    """`archs` (default: every declared one) on one query, each stage emitted as it finishes (see the module's
    docstring); the planners run when `plans`. QueryError for empty, undecodable or oversized text, or a k out of
    range, before anything runs.

    `written` replays given stubs instead of writing new ones; `schedule` is one of PLAN_SCHEDULES (None: the
    settings' plan_schedule). Failures of the LLM are recorded in the result
    (fallback stubs, parse errors, and llm_error when the backend cannot run at all); they never stop the
    architectures that need no stubs (RtP) from answering.
    """
    started = time.perf_counter()

    def stage(kind: type, *data: object) -> None:
        if emit is not None:
            emit(kind(time.perf_counter() - started, *data))

    query = clean_query(text)
    check_k(k)
    schedule = plan_schedule(settings) if schedule is None else schedule
    if schedule not in PLAN_SCHEDULES:
        raise ValueError(f"schedule must be one of {', '.join(PLAN_SCHEDULES)}, not {schedule!r}")
    retriever = memoised(retriever)
    chosen = declared() if archs is None else tuple(archs)
    free = [a for a in chosen if not a.needs_stubs]
    with_stubs = [a for a in chosen if a.needs_stubs]
    blocks: dict[str, ArchResult] = {}
    hits: dict[str, tuple[Hit, ...]] = {}

    def answer(a: Arch, outcome: StubOutcome | None) -> None:
        found = a.retrieve(query, outcome, k, retriever)
        hits[a.name] = found.hits
        blocks[a.name] = ArchResult.of(a.name, found, None, gold, outcome if a.carries_stubs else None)
        stage(Retrieved, blocks[a.name])

    for a in free:
        answer(a, None)
    llm_error = None
    if agents is None and (with_stubs or (plans and any(a.plans for a in chosen))):
        try:
            agents = make_agents(settings, retriever, use_cache)
        except LLMUnavailable as exc:
            llm_error = str(exc)
            stage(LLMFailed, llm_error)
    if agents is not None:
        with within_budget(settings.query_budget_s):  # the whole query's LLM work, whatever the calls' budgets
            planning = _Plans(agents, query, schedule if plans else "sequential", blocks, stage)
            if plans and schedule == "early":
                for a in free:
                    if a.plans:
                        planning.start(a, hits[a.name])
            if with_stubs:
                outcome = written or _write_streaming(agents.stub_writer, query, k, retriever, stage,
                                                      planning.emit_done)
                for a in with_stubs:
                    answer(a, outcome)
            for a in (*with_stubs, *free) if plans else ():
                if a.plans and not planning.started(a):
                    planning.start(a, hits[a.name])
            planning.finish()
    return QueryOutcome(k, tuple(blocks[a.name] for a in chosen if a.name in blocks), query, llm_error=llm_error)


class _Plans:
    """The planners of one query on a schedule: "sequential" plans where started; the others in worker threads
    (each with the query's budget), their stages emitted on the caller's thread by emit_done and finish."""

    def __init__(self, agents: Agents, query: CleanQuery, schedule: str, blocks: dict[str, ArchResult],
                 stage: Callable[..., None]) -> None:
        self.agents, self.query, self.schedule, self.blocks, self.stage = agents, query, schedule, blocks, stage
        self.pool = ThreadPoolExecutor(2, thread_name_prefix="planner") if schedule != "sequential" else None
        self.running: dict[str, Future] = {}
        self.names: set[str] = set()

    def started(self, a: Arch) -> bool:
        return a.name in self.names

    def start(self, a: Arch, hits: tuple[Hit, ...]) -> None:
        self.names.add(a.name)
        if self.pool is None:
            self._planned(a.name, self.agents.planner.plan(self.query, hits))
        else:
            self.running[a.name] = self.pool.submit(contextvars.copy_context().run, self.agents.planner.plan,
                                                    self.query, hits)

    def _planned(self, name: str, plan: Plan) -> None:
        self.blocks[name] = self.blocks[name].with_plan(plan)
        self.stage(Planned, self.blocks[name])

    def emit_done(self) -> None:
        for name, future in list(self.running.items()):
            if future.done():
                del self.running[name]
                self._planned(name, future.result())

    def finish(self) -> None:
        """Every plan still running, emitted in the order they were started (PtR's, then RtP's, as the sequential
        schedule emits them), so a query's stages come in one order whichever plan ends first."""
        try:
            for name, future in list(self.running.items()):
                del self.running[name]
                self._planned(name, future.result())
        finally:
            if self.pool is not None:
                self.pool.shutdown(wait=True, cancel_futures=True)


def _write_streaming(writer: StubWriter, query: CleanQuery, k: int, retriever: Retriever,
                     stage: Callable[..., None], between: Callable[[], None] = lambda: None) -> StubOutcome:
    """writer.write(query) in a worker thread, its text streamed here: Writing with the text so far, and
    StubSearched for each completed stub (the outcome's stubs too when the reply came whole, from the call
    cache or a backend that does not stream)."""
    texts: queue.SimpleQueue[str] = queue.SimpleQueue()
    context = contextvars.copy_context()  # the query's budget travels with the call
    carrier = stub_carrier()

    def searched(stub: Stub) -> None:
        stage(StubSearched, stub, carrier.retrieve(query, WrittenStubs((stub,)), k, retriever).hits)

    def work() -> StubOutcome:
        with streaming_to(texts.put):
            return writer.write(query)

    seen = 0
    with ThreadPoolExecutor(1, thread_name_prefix="stub-writer") as pool:
        future = pool.submit(context.run, work)
        while not (future.done() and texts.empty()):
            between()  # a plan started early is shown as soon as it is done
            try:
                text = texts.get(timeout=POLL_S)
            except queue.Empty:
                continue
            while not texts.empty():  # only the latest text matters
                text = texts.get()
            stage(Writing, text)
            stubs = complete_stubs(text)
            for stub in stubs[seen:]:
                searched(stub)
            seen = max(seen, len(stubs))
        outcome = future.result()
    between()
    if not outcome.fallback:
        for stub in outcome.stubs[seen:]:
            searched(stub)
    return outcome
