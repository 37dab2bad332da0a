"""One query's result, typed: a block per architecture, and the whole.

Two producers build it: the live path (core.study.one_query, from what it just
computed: ArchResult.of) and the store (core.analysis.reader's query_detail, from run 0's rows:
ArchResult.stored). The CLI's `query --json`, the Inspector and its download read it and never ask which made
it: what only one producer knows is None in the other's (a stored block has no retrieval time, as the studies
retrieve in batches; only a stored one keeps the marks under every gold definition and the plan's pass). A block's
plan is a core.agents.planner.Plan either way: the store's columns rebuild one (_stored_plan).
to_json() is the JSON `query --json` prints; from_json() reads it back.

JSON names: a block's unsuffixed marks ("recall", "precision", a hit's "gold") are those under the gold set
the view uses; a stored block also keeps the store's marks under the other definitions, suffixed as the
store's columns are (Gold.column: "recall_relevant", a hit's "gold_relevant").
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from core.agents.llm import failure_of
from core.agents.llm.base import Usage, usage_json
from core.agents.planner import Plan
from core.retrieval.archs import ARCHS_BY_NAME, declared
from core.data.toolbench import DEFAULT_GOLD, GOLD_LIST, ApiKey, Gold, gold_definition
from core.retrieval.records import Hit, Stub
from core.evaluation import metrics

if TYPE_CHECKING:  # reading the store needs no retriever nor stub writer, and the live path no store
    from core.agents.stubs import StubOutcome
    from core.retrieval.discovery import Discovery
    from core.store.schema import QueryResult

Namer = Callable[[str], str]  # a metric's JSON name under one set of marks


def _unsuffixed(metric: str) -> str:
    return metric


@dataclass(frozen=True)
class GoldMarks:
    """A block's hits against one gold set: a flag per hit, recall and precision at k, and the plan's pass-rate
    proxy (only the store has it; None where the planner did not run)."""

    flags: tuple[bool, ...]
    recall: float | None
    precision: float | None
    plan_pass: bool | None = None

    @classmethod
    def of(cls, keys: Sequence[ApiKey], gold: Collection[ApiKey], k: int) -> GoldMarks:
        return cls(tuple(metrics.gold_flags(keys, gold)), metrics.recall_at_k(keys, gold, k),
                   metrics.precision_at_k(keys, gold, k))

    @classmethod
    def from_json(cls, block: Mapping[str, Any], name: Namer) -> GoldMarks | None:
        """The marks a block's JSON holds under `name`; None when it holds none."""
        if name("recall") not in block:
            return None
        return cls(tuple(bool(h.get(name("gold"))) for h in block.get("hits") or []), block[name("recall")],
                   block.get(name("precision")), block.get(name("plan_pass")))


@dataclass(frozen=True)
class StubWriting:
    """The stubs an architecture searched and what writing them cost: whether the writer fell back to the raw
    query (and why), the cap that cut its reply, its tokens and seconds (None when nothing stored them)."""

    stubs: tuple[Stub, ...]
    fallback: bool
    error: str | None
    usage: Usage
    latency_s: float | None
    capped: str | None = None
    top1: tuple[Mapping[str, Any] | None, ...] = ()  # stored: each stub's own best API, with its gold marks

    @classmethod
    def of(cls, outcome: StubOutcome) -> StubWriting:
        return cls(outcome.stubs, outcome.fallback, outcome.error, outcome.usage, round(outcome.latency_s, 4),
                   outcome.capped)

    @classmethod
    def from_stubs_json(cls, stubs: Sequence[Mapping[str, Any]], fallback: bool, error: str | None, usage: Usage,
                        latency_s: float | None, capped: str | None = None) -> StubWriting:
        """Stubs as the store and the JSON hold them ({name, reasoning, top1?})."""
        tops = tuple(s.get("top1") for s in stubs)
        return cls(tuple(Stub(s["name"], s.get("reasoning") or "") for s in stubs), bool(fallback), error, usage,
                   latency_s, capped, tops if any(t is not None for t in tops) else ())

    def stubs_json(self) -> list[dict[str, Any]]:
        tops = self.top1 or (None,) * len(self.stubs)
        return [{"name": s.name, "reasoning": s.reasoning, **({"top1": top} if top is not None else {})}
                for s, top in zip(self.stubs, tops)]


@dataclass(frozen=True)
class ArchResult:
    """One architecture's answer to the query: its hits, how they meet the gold, its plan, its stubs."""

    arch: str
    hits: tuple[Hit, ...]
    top1_score: float | None
    search_width: int
    latency_s: float | None = None  # retrieval seconds measured now; None when stored (batched retrieval)
    gold: GoldMarks | None = None  # under the gold set the view uses; None for free text
    other_golds: tuple[tuple[str, GoldMarks], ...] = ()  # stored: under the other definitions, by name
    plan: Plan | None = None  # over these hits, its latency as shown (4 decimals); None when the planner did not run
    writing: StubWriting | None = None  # on the architecture that carries the stubs (core.retrieval.archs)
    backend_label: str | None = None
    rtp_overlap: int | None = None  # stored PtR rows: how its top k relates to RtP's
    same_as_rtp: bool | None = None
    score_name: str = "cosine"  # what top1_score and the hits' scores are (BM25's are sums, not cosines)

    @classmethod
    def of(cls, arch: str, found: Discovery, plan: Plan | None = None, gold: Collection[ApiKey] | None = None,
           written: StubOutcome | None = None) -> ArchResult:
        """The block of `arch`'s Discovery just computed, its scores as shown (6 decimals); `written`: the stubs
        it carries."""
        hits = tuple(replace(h, score=round(h.score, 6)) for h in found.hits)
        return cls(arch, hits, found.top1_score, found.search_width, round(found.latency_s, 4),
                   None if gold is None else GoldMarks.of(found.keys, gold, found.k),
                   plan=None if plan is None else _as_shown(plan),
                   writing=None if written is None else StubWriting.of(written),
                   backend_label=None if written is None else written.label, score_name=found.score_name)

    @classmethod
    def stored(cls, row: QueryResult, run: Mapping[str, Any], hits: Sequence[Mapping[str, Any]]) -> ArchResult:
        """The block of a stored row of `run` (its arch, labels and prompt version), with `hits` (the row's, or
        a prefix of a wider run's)."""
        plan = None if row.plan is None else _stored_plan(row, run, len(hits))
        others = tuple((g.name, _stored_marks(row, hits, g)) for g in GOLD_LIST if g is not DEFAULT_GOLD)
        block = cls(run["arch"], tuple(_hit(h) for h in hits), row.top1_score, row.search_width,
                    gold=_stored_marks(row, hits, DEFAULT_GOLD), other_golds=others, plan=plan,
                    backend_label=run["backend_label"])
        declared = ARCHS_BY_NAME.get(run["arch"])
        if declared is None or not declared.carries_stubs:
            return block
        writing = StubWriting.from_stubs_json(row.stubs or [], row.stub_fallback, row.stub_error, _usage(
            row.stub_prompt_tokens, row.stub_output_tokens, row.stub_thoughts_tokens), row.stub_latency_s)
        return replace(block, writing=writing, rtp_overlap=row.rtp_overlap, same_as_rtp=row.same_as_rtp)

    @classmethod
    def from_json(cls, arch: str, block: Mapping[str, Any]) -> ArchResult:
        writing = None
        if "stubs" in block:
            usage = block.get("usage") or {}
            writing = StubWriting.from_stubs_json(
                block["stubs"], block.get("stub_fallback"), block.get("stub_error"),
                Usage(usage.get("prompt_tokens", 0), usage.get("output_tokens", 0), usage.get("thoughts_tokens", 0)),
                block.get("stub_latency_s"), block.get("stub_capped"))
        others = ((g.name, GoldMarks.from_json(block, g.column)) for g in GOLD_LIST)
        hits = tuple(_hit(h) for h in block.get("hits") or [])
        plan = Plan.from_json(block["plan"], len(hits)) if "plan" in block else None  # planned over these hits
        return cls(arch, hits, block.get("top1_score"),
                   block.get("search_width", 0), block.get("latency_s"), GoldMarks.from_json(block, _unsuffixed),
                   tuple((name, marks) for name, marks in others if marks is not None), plan, writing,
                   block.get("backend_label"), block.get("rtp_overlap"), block.get("same_as_rtp"),
                   block.get("score_name", "cosine"))

    @property
    def keys(self) -> list[ApiKey]:
        return [h.key for h in self.hits]

    def marked_hits(self) -> list[tuple[Hit, bool | None]]:
        """Each hit with its gold flag under the view's gold (None: no gold known)."""
        flags = self.gold.flags if self.gold is not None else (None,) * len(self.hits)
        return list(zip(self.hits, flags))

    def stub_hits(self) -> list[tuple[Stub, list[Hit]]]:
        """Its stubs, each with the final hits it contributed (the stub that scored each hit best)."""
        stubs = self.writing.stubs if self.writing is not None else ()
        return [(stub, [h for h in self.hits if h.stub == stub.name]) for stub in stubs]

    @property
    def total_tokens(self) -> int:
        """LLM tokens spent on this query: stub writing (if it carries the stubs) plus planning."""
        stubs = self.writing.usage.total if self.writing is not None else 0
        return stubs + (self.plan.usage.total if self.plan is not None else 0)

    @property
    def plan_latency_s(self) -> float | None:
        return self.plan.latency_s if self.plan is not None else None

    @property
    def total_latency_s(self) -> float:
        """Seconds it took: stub writing, retrieval and planning, as far as they were measured."""
        stubs = self.writing.latency_s if self.writing is not None else None
        return float(stubs or 0.0) + float(self.latency_s or 0.0) + float(self.plan_latency_s or 0.0)

    def with_plan(self, plan: Plan) -> ArchResult:
        return replace(self, plan=_as_shown(plan))

    def with_gold(self, gold: Collection[ApiKey] | None, k: int) -> ArchResult:
        return replace(self, gold=None if gold is None else GoldMarks.of(self.keys, gold, k))

    def _marks(self) -> list[tuple[Namer, GoldMarks]]:
        view = [(_unsuffixed, self.gold)] if self.gold is not None else []
        return view + [(gold_definition(name).column, marks) for name, marks in self.other_golds]

    def to_json(self) -> dict[str, Any]:
        marks = self._marks()
        hits = [{**hit.to_json(), **{name("gold"): m.flags[i] for name, m in marks}} for i, hit in enumerate(self.hits)]
        out: dict[str, Any] = {"hits": hits, "top1_score": self.top1_score, "search_width": self.search_width}
        if self.score_name != "cosine":
            out["score_name"] = self.score_name
        if self.latency_s is not None:
            out["latency_s"] = self.latency_s
        for name, m in marks:
            out.update({name("recall"): m.recall, name("precision"): m.precision})
        if self.plan is not None:
            out["plan"] = self.plan.to_json()
        out.update({name("plan_pass"): m.plan_pass for name, m in marks if m.plan_pass is not None})
        w = self.writing
        if w is not None:
            out.update(stubs=w.stubs_json(), stub_fallback=w.fallback, stub_error=w.error, stub_capped=w.capped)
        if self.backend_label is not None:
            out["backend_label"] = self.backend_label
        if w is not None:
            out.update(usage=usage_json(w.usage), stub_latency_s=w.latency_s)
        overlap = {"rtp_overlap": self.rtp_overlap, "same_as_rtp": self.same_as_rtp}
        out.update({name: value for name, value in overlap.items() if value is not None})
        return out


@dataclass(frozen=True)
class QueryOutcome:
    """One query through the architectures, their blocks in the declarations' order (core.retrieval.archs)."""

    k: int
    blocks: tuple[ArchResult, ...] = ()
    query: str | None = None  # live; the store never holds query texts, it names the query (subset, query_id)
    subset: str | None = None
    query_id: int | None = None
    llm_error: str | None = None  # the LLM could not run at all (no key, no model): what needs none still ran
    provenance: Mapping[str, Any] | None = None  # stored: the runs behind it

    def get(self, arch: str) -> ArchResult | None:
        return next((b for b in self.blocks if b.arch == arch), None)

    @property
    def writing(self) -> StubWriting | None:
        """The stubs written for the query, from the block that carries them; None when none were written."""
        return next((b.writing for b in self.blocks if b.writing is not None), None)

    def with_block(self, block: ArchResult) -> QueryOutcome:
        """This outcome with `block` added, or replacing its architecture's."""
        order = {a.name: i for i, a in enumerate(declared())}
        blocks = sorted([b for b in self.blocks if b.arch != block.arch] + [block],
                        key=lambda b: order.get(b.arch, len(order)))
        return replace(self, blocks=tuple(blocks))

    def with_gold(self, gold: Collection[ApiKey] | None) -> QueryOutcome:
        """Marks and recall/precision under `gold` on every block (None: no gold, no marks). Stored results carry
        one definition's; re-marking lets the sidebar's choice apply to every view. The store's plan pass is
        under its own definition, so it is dropped rather than shown under another."""
        return replace(self, blocks=tuple(b.with_gold(gold, self.k) for b in self.blocks))

    def to_json(self) -> dict[str, Any]:
        head = {"query": self.query, "k": self.k, "subset": self.subset, "query_id": self.query_id,
                "llm_error": self.llm_error}
        out: dict[str, Any] = {key: value for key, value in head.items() if value is not None}
        out.update({b.arch: b.to_json() for b in self.blocks})
        if self.provenance is not None:
            out["provenance"] = dict(self.provenance)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> QueryOutcome:
        blocks = tuple(ArchResult.from_json(a.name, data[a.name]) for a in declared()
                       if isinstance(data.get(a.name), dict))
        return cls(data["k"], blocks, data.get("query"), data.get("subset"), data.get("query_id"),
                   data.get("llm_error"), data.get("provenance"))


def _hit(h: Mapping[str, Any]) -> Hit:
    return Hit(h["tool_name"], h["api_name"], h.get("category") or "", h["score"], h["rank"], h.get("stub"))


def _as_shown(plan: Plan) -> Plan:
    """The plan with its latency as its JSON shows it, so that a block read back from its JSON equals it."""
    return replace(plan, latency_s=round(plan.latency_s, 4))


def _stored_plan(row: QueryResult, run: Mapping[str, Any], k: int) -> Plan:
    """A stored row's plan, over its `k` hits: its texts from the row's plan column, its selections and cost from
    the others, who planned from `run`. The measures (fidelity, selection rate) follow from these, as they did
    when the row was written (core.study.rows.plan_fields)."""
    texts = row.plan
    return _as_shown(Plan(
        tuple(texts["selected_apis"]), tuple((tool, api) for tool, api in row.plan_matched), tuple(texts["steps"]),
        texts["refusal"], k, run["llm_backend"], run["llm_model"], run["planner_prompt_version"],
        _usage(row.plan_prompt_tokens, row.plan_output_tokens, row.plan_thoughts_tokens), row.plan_latency_s,
        texts["parse_error"], texts["cached"], failure_of(texts["parse_error"])))


def _usage(prompt: int | None, output: int | None, thoughts: int | None) -> Usage:
    return Usage(int(prompt or 0), int(output or 0), int(thoughts or 0))


def _stored_marks(row: QueryResult, hits: Sequence[Mapping[str, Any]], gold: Gold) -> GoldMarks:
    return GoldMarks(tuple(bool(h.get(gold.hit_flag)) for h in hits), getattr(row, gold.column("recall")),
                     getattr(row, gold.column("precision")), getattr(row, gold.column("plan_pass")))
