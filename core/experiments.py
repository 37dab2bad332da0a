"""The study's runs: main comparison, k sweep and scaling, written query by query into the store.

- `run_main`: RtP and PtR at k=5 for R runs. RtP's retrieval is deterministic, so it is computed
  once per subset and reused; the planner still runs in every run. PtR writes new stubs every run.
- `run_ksweep`: both architectures at several k, reusing the stubs of the latest complete main
  runs (no discovery calls), retrieval only (no planner).
- `run_scaling`: both architectures on stratified sub-registries (every gold API of the subset,
  both definitions, plus category-proportional distractors), several seeds, stubs of main run 0
  reused, retrieval only.

Every function takes the retriever, the agents and the queries as arguments, so tests run them on
tiny data. Rows hold identifiers, scores, stubs, plans and metrics, never a query text: a fallback
stub (the raw query) is stored as FALLBACK_STUB and rebuilt from the query when reused. LLM calls run on a thread pool; rows are committed as they arrive (whatever finished
since the last commit goes in one transaction), so a run killed at any point resumes with
`resume=True` and ends with every (run, query) row exactly once.

Repeated runs and the LLM call cache: with the cache keyed on the prompt alone, runs 1..R-1 would
replay run 0's answers and the spread over runs would be a fake zero. `agents_factory` therefore
keys run r > 0's calls by run index (prompt version + "+run{r}"), so each run gets its own answers
and a rerun or resume of any run replays them for free. Run 0 shares its cache with the
Inspector. The offline backend is deterministic: all its runs are identical, so its spread over
runs is zero and t-tests on it report "no variance across runs".
"""
from __future__ import annotations

import logging
import queue
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from core import metrics
from core.discovery import Discovery, Hit, Retriever, Stub
from core.evaluate import GOLD_DEFINITIONS, hybrid_batch, ptr_batch, rtp_batch, score_query, truncate
from core.offline_split import OFFLINE_LABEL
from core.registry import stratified_rows
from core.store import RunRecord, RunSpec, Store, git_commit
from core.toolbench import ApiKey, Query

if TYPE_CHECKING:
    from core.planner import Plan
    from core.settings import Settings
    from core.stubs import StubOutcome

log = logging.getLogger(__name__)

MAIN_K = 5
DEFAULT_RUNS = 4
KSWEEP_KS = (1, 3, 5, 10, 20)
SCALING_SIZES: tuple[int | None, ...] = (1000, 2000, 5000, 10000, 20000, None)  # None: the whole registry
SCALING_SEEDS = 5
INSERT_CHUNK = 1000
FALLBACK_STUB = "(the raw query: the stub writer failed)"


class StubWriterLike(Protocol):
    backend: str
    model: str
    prompt_version: str

    def write(self, query: str) -> StubOutcome: ...


class PlannerLike(Protocol):
    prompt_version: str

    def plan(self, query: str, hits: Sequence[Hit]) -> Plan: ...


class AgentsLike(Protocol):
    stub_writer: StubWriterLike
    planner: PlannerLike


AgentsFactory = Callable[[int], AgentsLike]


class MemoEncoder:
    """Wraps an encoder: each distinct text is encoded once, one encoder call at a time.

    Threads that ask while another is encoding leave their texts in a shared pending set, and the
    next holder of the lock encodes all of them in one batch, so concurrent callers are batched.
    The lock also keeps a non-thread-safe encoder (HF fast tokenizers) safe under the thread pool.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self._memo: dict[str, np.ndarray] = {}
        self._pending: dict[str, None] = {}
        self._pending_lock = threading.Lock()
        self._encode_lock = threading.Lock()

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: Any = None) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._pending_lock:
            self._pending.update((t, None) for t in texts if t not in self._memo)
        with self._encode_lock:
            with self._pending_lock:
                batch = [t for t in self._pending if t not in self._memo]
                self._pending.clear()
            if batch:
                for text, vec in zip(batch, self.inner.encode(batch, batch_size=batch_size)):
                    self._memo[text] = vec
        return np.stack([self._memo[t] for t in texts])


def memoised(retriever: Retriever) -> Retriever:
    """The same retriever with a MemoEncoder (idempotent)."""
    if isinstance(retriever.encoder, MemoEncoder):
        return retriever
    return Retriever(retriever.registry, MemoEncoder(retriever.encoder), retriever.index, retriever.corpus_vectors)


def agents_factory(settings: Settings, retriever: Retriever, use_cache: bool = True) -> AgentsFactory:
    """Run index -> Agents for the configured backend (see make_agents for how runs are cached apart)."""
    from core.inspect import make_agents

    if settings.llm_backend == "offline":
        agents = make_agents(settings, retriever, use_cache)  # deterministic: one instance serves every run
        return lambda run_index: agents
    return lambda run_index: make_agents(settings, retriever, use_cache, run_index)


def backend_label(backend: str, model: str) -> str:
    return OFFLINE_LABEL if backend == "offline" else f"{backend} {model}"


@dataclass(frozen=True)
class Setup:
    """Provenance shared by every run of one bench invocation."""

    registry: str
    registry_size: int
    registry_hash: str
    embedding_model: str
    llm_backend: str
    llm_model: str
    discovery_prompt_version: str
    planner_prompt_version: str
    git_commit: str

    @classmethod
    def of(cls, retriever: Retriever, agents: AgentsLike, commit: str | None = None) -> Setup:
        writer = agents.stub_writer
        return cls(retriever.registry.name, len(retriever.registry), retriever.registry.content_hash[:16],
                   retriever.encoder.model_id, writer.backend, writer.model, writer.prompt_version,
                   agents.planner.prompt_version, commit or git_commit())

    @classmethod
    def of_run(cls, run: RunRecord, commit: str | None = None) -> Setup:
        s = run.spec
        return cls(s.registry_name, s.registry_size, s.registry_hash, s.embedding_model, s.llm_backend, s.llm_model,
                   s.discovery_prompt_version, s.planner_prompt_version, commit or git_commit())

    def spec(self, kind: str, arch: str, subset: str, k: int, run_index: int, **extra: Any) -> RunSpec:
        return RunSpec(kind, arch, subset, k, run_index, self.registry, self.registry_size, self.registry_hash,
                       self.embedding_model, self.llm_backend, self.llm_model,
                       backend_label(self.llm_backend, self.llm_model), self.discovery_prompt_version,
                       self.planner_prompt_version, **extra)


# ---------------------------------------------------------------- row builders (pure)

def by_subset(queries: Iterable[Query]) -> dict[str, list[Query]]:
    out: dict[str, list[Query]] = defaultdict(list)
    for q in queries:
        out[q.subset].append(q)
    return dict(out)


def score_fields(query: Query, keys: Sequence[ApiKey], k: int) -> dict[str, Any]:
    """recall/precision/hit@k for both gold definitions."""
    out: dict[str, Any] = {}
    for gold in GOLD_DEFINITIONS:
        s = score_query(query, keys, gold, k)
        out.update({f"recall_{gold}": s.recall, f"precision_{gold}": s.precision, f"hit_{gold}": s.hit})
    return out


def hits_json(hits: Sequence[Hit], query: Query, fallback: bool = False) -> list[dict[str, Any]]:
    """Hits with gold flags for both definitions; a fallback stub (the raw query) is named FALLBACK_STUB."""
    keys = [h.key for h in hits]
    flags = metrics.gold_flags(keys, query.gold("api_list"))
    relevant = metrics.gold_flags(keys, query.gold("relevant"))
    out = [{**h.to_json(), "gold": g, "gold_relevant": r} for h, g, r in zip(hits, flags, relevant)]
    if fallback:
        for hit in out:
            hit["stub"] = FALLBACK_STUB
    return out


def base_row(run_id: int, query: Query, discovery: Discovery, with_hits: bool = True,
             fallback: bool = False) -> dict[str, Any]:
    return {"run_id": run_id, "query_uid": query.uid, "subset": query.subset, "query_id": query.query_id,
            "k": discovery.k, **score_fields(query, discovery.keys, discovery.k), "top1_score": discovery.top1_score,
            "search_width": discovery.search_width,
            "hits": hits_json(discovery.hits, query, fallback) if with_hits else None}


def overlap_fields(discovery: Discovery, rtp_keys: Collection[ApiKey]) -> dict[str, Any]:
    """How PtR's top-k relates to RtP's top-k on the same registry: shared count and set identity."""
    mine = set(discovery.keys)
    theirs = set(rtp_keys)
    return {"rtp_overlap": len(mine & theirs), "same_as_rtp": mine == theirs}


def plan_pass(plan: Plan, gold: Collection[ApiKey]) -> bool:
    """The pass-rate proxy: no refusal, no parse error, at least one selected API is gold."""
    return plan.refusal is None and plan.parse_error is None and any(m in gold for m in plan.matched)


def plan_fields(plan: Plan, query: Query) -> dict[str, Any]:
    """The plan's texts as JSON (selected names, steps, refusal and parse-error reasons) and its measures
    as columns (matched, fidelity, selection rate, counts), so aggregation needs no JSON parsing."""
    body = plan.to_json()
    return {"plan": {key: body[key] for key in ("selected_apis", "steps", "refusal", "parse_error", "cached")},
            "plan_refusal": plan.refusal is not None, "plan_parse_error": plan.parse_error is not None,
            "plan_steps": len(plan.steps), "plan_apis_named": plan.apis_named, "plan_fidelity": plan.fidelity,
            "plan_selection_rate": plan.selection_rate, "plan_matched": body["matched"],
            "plan_pass_api_list": plan_pass(plan, query.gold("api_list")),
            "plan_pass_relevant": plan_pass(plan, query.gold("relevant")),
            "plan_prompt_tokens": plan.usage.prompt_tokens, "plan_output_tokens": plan.usage.output_tokens,
            "plan_thoughts_tokens": plan.usage.thoughts_tokens, "plan_latency_s": plan.latency_s}


def stubs_json(stubs: Sequence[Stub], top1: Sequence[tuple[int, float]] | None, query: Query,
               retriever: Retriever | None, fallback: bool = False) -> list[dict[str, Any]]:
    """Stubs as stored. A fallback stub is the raw query, which the store never holds: it is written as
    FALLBACK_STUB and rebuilt from the query when reused (stored_stubs)."""
    out = []
    for i, stub in enumerate(stubs):
        item: dict[str, Any] = ({"name": FALLBACK_STUB, "reasoning": ""} if fallback
                                else {"name": stub.name, "reasoning": stub.reasoning})
        if top1 is not None and retriever is not None:
            row, score = top1[i]
            api = retriever.registry.apis[row]
            item["top1"] = {"tool_name": api.tool_name, "api_name": api.api_name, "score": round(score, 6),
                            "gold": api.key in query.gold("api_list"), "gold_relevant": api.key in query.gold("relevant")}
        out.append(item)
    return out


def stub_fields(outcome: StubOutcome, top1: Sequence[tuple[int, float]], query: Query, retriever: Retriever) -> dict[str, Any]:
    return {"stubs": stubs_json(outcome.stubs, top1, query, retriever, outcome.fallback),
            "stub_fallback": bool(outcome.fallback),
            "stub_error": outcome.error, "stub_prompt_tokens": outcome.usage.prompt_tokens,
            "stub_output_tokens": outcome.usage.output_tokens,
            "stub_thoughts_tokens": outcome.usage.thoughts_tokens, "stub_latency_s": outcome.latency_s}


def error_row(run_id: int, query: Query, k: int, error: BaseException) -> dict[str, Any]:
    return {"run_id": run_id, "query_uid": query.uid, "subset": query.subset, "query_id": query.query_id, "k": k,
            "error": f"{type(error).__name__}: {error}"[:1000]}


# ---------------------------------------------------------------- runs and their execution

@dataclass(frozen=True)
class _Job:
    """How one run computes a query's row: `prepare` (thread pool: the stub LLM call), then `retrieve`
    (this thread, batched over whatever is prepared), then `finish` (thread pool: the planner call).
    A job without `prepare` (RtP, retrieved up front) goes straight to `finish`."""

    run_id: int
    todo: tuple[Query, ...]
    k: int
    finish: Callable[[int, Query, Any], dict[str, Any]]
    prepare: Callable[[Query], Any] | None = None
    retrieve: Callable[[list[tuple[Query, Any]]], list[Any]] | None = None


def open_run(store: Store, spec: RunSpec, queries: Sequence[Query], resume: bool, commit: str,
             config: dict[str, Any] | None = None) -> tuple[int, list[Query]] | None:
    """(run id, queries still to do) for a spec; None when resuming and the run already finished."""
    if resume:
        found = store.find_run(spec)
        if found is not None and found.status in ("complete", "skipped"):
            return None
        if found is not None:
            done = store.reopen(found.id, len(queries))
            return found.id, [q for q in queries if q.uid not in done]
    return store.start_run(spec, len(queries), commit, config), list(queries)


def _progress(total: int, desc: str, enabled: bool, unit: str = "query"):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not enabled, smoothing=0.1)


def execute(store: Store, jobs: Sequence[_Job], concurrency: int, progress: bool = False, desc: str = "") -> None:
    """Run every (run, query) of `jobs` on one thread pool and commit rows as they arrive.

    LLM calls (prepare, finish) run on the pool; retrieval runs here, batched over every query whose
    stubs arrived since the last pass, so FAISS and the encoder see batches, not single queries.
    Whatever rows arrived since the last commit go in one transaction. One pool for all runs keeps
    every worker busy to the end. A step that raises becomes an error row, which a resume redoes.
    A run is marked complete with its last row; on an exception here, unfinished runs are marked failed.
    """
    remaining = {job.run_id: len(job.todo) for job in jobs}
    for run_id, left in remaining.items():
        if left == 0:
            store.finish_run(run_id)
    total = sum(remaining.values())
    if total == 0:
        return
    events: queue.Queue[tuple[str, _Job, Query, Any]] = queue.Queue()

    def guarded(kind: str, job: _Job, query: Query, step: Callable[[], Any]) -> None:
        event: tuple[str, _Job, Query, Any] | None = None
        try:
            event = (kind, job, query, step())
        except Exception as exc:  # one bad query must not stop a benchmark; it is stored and redone on resume
            log.warning("%s failed in run %d: %s", query.uid, job.run_id, exc)
            event = ("row", job, query, error_row(job.run_id, query, job.k, exc))
        finally:
            events.put(event or ("row", job, query, error_row(job.run_id, query, job.k, RuntimeError("interrupted"))))

    def submit_finish(job: _Job, query: Query, payload: Any) -> None:
        pool.submit(guarded, "row", job, query, lambda: job.finish(job.run_id, query, payload))

    bar = _progress(total, desc, progress)
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency))
    try:
        for job in jobs:
            for query in job.todo:
                if job.prepare is None:
                    submit_finish(job, query, None)
                else:
                    pool.submit(guarded, "prepared", job, query, lambda j=job, q=query: j.prepare(q))
        received = 0
        while received < total:
            batch = [events.get()]
            while True:
                try:
                    batch.append(events.get_nowait())
                except queue.Empty:
                    break
            rows = [value for kind, _, _, value in batch if kind == "row"]
            ready: dict[int, tuple[_Job, list[tuple[Query, Any]]]] = {}
            for kind, job, query, value in batch:
                if kind == "prepared":
                    ready.setdefault(job.run_id, (job, []))[1].append((query, value))
            for job, items in ready.values():
                try:
                    payloads = job.retrieve(items)  # a job with `prepare` always has `retrieve`
                except Exception as exc:  # noqa: BLE001 - the batch's queries become error rows
                    rows += [error_row(job.run_id, q, job.k, exc) for q, _ in items]
                    continue
                for (query, _), payload in zip(items, payloads):
                    submit_finish(job, query, payload)
            store.add_results(rows)
            received += len(rows)
            bar.update(len(rows))
            for row in rows:
                remaining[row["run_id"]] -= 1
                if remaining[row["run_id"]] == 0:
                    store.finish_run(row["run_id"])
    except BaseException as exc:
        pool.shutdown(wait=False, cancel_futures=True)
        for run_id, left in remaining.items():
            if left > 0:
                store.finish_run(run_id, "failed", f"{type(exc).__name__}: {exc}"[:1000])
        raise
    finally:
        bar.close()
        pool.shutdown(wait=True)


def run_main(store: Store, retriever: Retriever, agents_for: AgentsFactory, queries: Sequence[Query], *,
             runs: int = DEFAULT_RUNS, k: int = MAIN_K, concurrency: int = 8, resume: bool = False,
             progress: bool = False, commit: str | None = None, config: dict[str, Any] | None = None) -> list[int]:
    """The main comparison: per subset, RtP and PtR at k for `runs` runs. Returns the run ids touched."""
    if runs < 1:
        raise ValueError("runs must be at least 1")
    retriever = memoised(retriever)
    agents = {r: agents_for(r) for r in range(runs)}
    setup = Setup.of(retriever, agents[0], commit)
    jobs: list[_Job] = []
    for subset, qs in by_subset(queries).items():
        rtp_found = dict(zip((q.uid for q in qs), rtp_batch([q.query for q in qs], k, retriever)))
        for r in range(runs):
            for arch in ("rtp", "ptr"):
                opened = open_run(store, setup.spec("main", arch, subset, k, r), qs, resume, setup.git_commit, config)
                if opened is None:
                    continue
                run_id, todo = opened
                if arch == "rtp":
                    jobs.append(_Job(run_id, tuple(todo), k, _rtp_finish(agents[r], rtp_found)))
                else:
                    writer = agents[r].stub_writer
                    jobs.append(_Job(run_id, tuple(todo), k, _ptr_finish(agents[r], retriever, rtp_found),
                                     prepare=lambda q, w=writer: w.write(q.query),
                                     retrieve=_ptr_retrieve(retriever, k)))
    execute(store, jobs, concurrency, progress, "bench main")
    return [job.run_id for job in jobs]


def _rtp_finish(agents: AgentsLike, found: dict[str, Discovery]) -> Callable[[int, Query, Any], dict[str, Any]]:
    def finish(run_id: int, query: Query, _: Any) -> dict[str, Any]:
        discovery = found[query.uid]
        plan = agents.planner.plan(query.query, discovery.hits)
        return {**base_row(run_id, query, discovery), **plan_fields(plan, query)}

    return finish


def _ptr_retrieve(retriever: Retriever, k: int) -> Callable[[list[tuple[Query, Any]]], list[Any]]:
    """Batched PtR retrieval for queries whose stubs are written: (outcome, discovery, stub top-1s, seconds)."""
    def retrieve(items: list[tuple[Query, Any]]) -> list[Any]:
        start = time.perf_counter()
        stub_lists = [outcome.stubs for _, outcome in items]
        found = ptr_batch(stub_lists, [k], retriever)[k]
        seconds = (time.perf_counter() - start) / len(items)
        return [(outcome, d, d.extra["stub_top1"], seconds) for (_, outcome), d in zip(items, found)]

    return retrieve


def _ptr_finish(agents: AgentsLike, retriever: Retriever,
                rtp_found: dict[str, Discovery]) -> Callable[[int, Query, Any], dict[str, Any]]:
    def finish(run_id: int, query: Query, payload: Any) -> dict[str, Any]:
        outcome, discovery, top1, seconds = payload
        plan = agents.planner.plan(query.query, discovery.hits)
        return {**base_row(run_id, query, discovery, fallback=outcome.fallback),
                **stub_fields(outcome, top1, query, retriever),
                **plan_fields(plan, query), **overlap_fields(discovery, rtp_found[query.uid].keys),
                "retrieval_latency_s": seconds}

    return finish


# ---------------------------------------------------------------- studies that reuse stored stubs

@dataclass(frozen=True)
class Sources:
    """The main runs a k sweep or scaling study builds on: RtP run 0 and PtR runs by run index."""

    rtp: RunRecord
    ptr: dict[int, RunRecord]


def main_sources(store: Store, retriever: Retriever, subset: str, llm_backend: str | None = None) -> Sources:
    """The latest complete main study on this registry and embedding model (optionally one backend).

    Its setup is taken from the latest complete PtR main run; runs of other setups are never mixed in.
    """
    match: dict[str, Any] = {"registry_hash": retriever.registry.content_hash[:16],
                             "embedding_model": retriever.encoder.model_id}
    if llm_backend:
        match["llm_backend"] = llm_backend
    ptr_any = store.latest_complete("main", "ptr", subset, **match)
    if not ptr_any:
        raise ValueError(f"no complete main run for {subset} on registry {retriever.registry.name} with "
                         f"{retriever.encoder.model_id}" + (f" and backend {llm_backend}" if llm_backend else "")
                         + ": run `python -m core bench main` first")
    latest = max(ptr_any.values(), key=lambda r: r.id).spec
    match.update(llm_backend=latest.llm_backend, llm_model=latest.llm_model, k=latest.k,
                 discovery_prompt_version=latest.discovery_prompt_version,
                 planner_prompt_version=latest.planner_prompt_version)
    ptr = store.latest_complete("main", "ptr", subset, **match)
    rtp = store.latest_complete("main", "rtp", subset, **match)
    if 0 not in rtp or 0 not in ptr:
        raise ValueError(f"the latest main study for {subset} has no complete run 0: rerun `bench main --resume`")
    return Sources(rtp[0], ptr)


def stored_stubs(store: Store, run_id: int, queries: Sequence[Query]) -> dict[str, tuple[tuple[Stub, ...], bool]]:
    """query uid -> (the stubs a main run wrote, whether they were the fallback: the raw query, rebuilt
    from `queries`); failed rows and queries not given are left out."""
    by_uid = {q.uid: q for q in queries}
    out: dict[str, tuple[tuple[Stub, ...], bool]] = {}
    for row in store.results(run_id, ("query_uid", "stubs", "stub_fallback")):
        query = by_uid.get(row["query_uid"])
        if query is None or not row["stubs"]:
            continue
        if row["stub_fallback"]:
            out[query.uid] = ((Stub(query.query),), True)
        else:
            out[query.uid] = (tuple(Stub(s["name"], s.get("reasoning", "")) for s in row["stubs"]), False)
    return out


def _main_study_subsets(store: Store, retriever: Retriever, queries: Sequence[Query], study: str, progress: bool,
                        llm_backend: str | None, commit: str | None) -> Iterator[tuple[str, list[Query], Sources, Setup]]:
    """Per subset, for studies built on the main runs: its queries, those runs and their setup (progress per subset)."""
    subsets = by_subset(queries)
    bar = _progress(len(subsets), f"bench {study}", progress, unit="subset")
    try:
        for subset, qs in subsets.items():
            src = main_sources(store, retriever, subset, llm_backend)
            yield subset, qs, src, Setup.of_run(src.rtp, commit)
            bar.update(1)
    finally:
        bar.close()


def _insert_run(store: Store, run_id: int, rows: list[dict[str, Any]]) -> None:
    for start in range(0, len(rows), INSERT_CHUNK):
        store.add_results(rows[start:start + INSERT_CHUNK])
    store.finish_run(run_id)


def run_ksweep(store: Store, retriever: Retriever, queries: Sequence[Query], *, ks: Sequence[int] = KSWEEP_KS,
               resume: bool = False, progress: bool = False, llm_backend: str | None = None,
               commit: str | None = None, config: dict[str, Any] | None = None) -> list[int]:
    """Recall/precision at each k, both architectures, from the latest main study's stubs; no LLM calls.

    RtP is deterministic: one run per k. PtR: one run per k and main run index. Hits are stored for
    run index 0 at the largest k only: a smaller k's hits are exactly its prefix (see
    core.evaluate), which is how the read API shows them; this keeps the database small.
    """
    retriever = memoised(retriever)
    ks = sorted(set(ks))
    touched: list[int] = []
    for subset, qs, src, setup in _main_study_subsets(store, retriever, queries, "ksweep", progress, llm_backend,
                                                      commit):
        rtp_base = dict(zip((q.uid for q in qs), rtp_batch([q.query for q in qs], max(ks), retriever)))
        for k in ks:
            opened = open_run(store, setup.spec("ksweep", "rtp", subset, k, 0, source_run_id=src.rtp.id), qs,
                              resume, setup.git_commit, config)
            if opened:
                run_id, todo = opened
                _insert_run(store, run_id, [base_row(run_id, q, truncate(rtp_base[q.uid], k), with_hits=k == ks[-1])
                                            for q in todo])
                touched.append(run_id)
        for r, source in src.ptr.items():
            stubs = stored_stubs(store, source.id, qs)
            with_stubs = [q for q in qs if q.uid in stubs]
            per_k = ptr_batch([stubs[q.uid][0] for q in with_stubs], ks, retriever)
            for k in ks:
                spec = setup.spec("ksweep", "ptr", subset, k, r, source_run_id=source.id)
                opened = open_run(store, spec, with_stubs, resume, setup.git_commit, config)
                if not opened:
                    continue
                run_id, todo = opened
                found = {q.uid: d for q, d in zip(with_stubs, per_k[k])}
                rows = []
                for q in todo:
                    rtp_keys = truncate(rtp_base[q.uid], k).keys
                    written, fallback = stubs[q.uid]
                    row = {**base_row(run_id, q, found[q.uid], with_hits=r == 0 and k == ks[-1], fallback=fallback),
                           **overlap_fields(found[q.uid], rtp_keys)}
                    if r == 0:
                        row.update(stubs=stubs_json(written, None, q, None, fallback), stub_fallback=fallback)
                    rows.append(row)
                _insert_run(store, run_id, rows)
                touched.append(run_id)
    return touched


def run_hybrid(store: Store, retriever: Retriever, queries: Sequence[Query], *, resume: bool = False,
               progress: bool = False, llm_backend: str | None = None, commit: str | None = None,
               config: dict[str, Any] | None = None) -> list[int]:
    """Hybrid discovery (beyond the paper) at the main study's k, one run per PtR main run: that run's
    stored stubs plus the raw query, merged by best similarity. No LLM calls; retrieval only."""
    retriever = memoised(retriever)
    touched: list[int] = []
    for subset, qs, src, setup in _main_study_subsets(store, retriever, queries, "hybrid", progress, llm_backend,
                                                      commit):
        k = src.rtp.spec.k
        rtp_keys = {q.uid: d.keys for q, d in zip(qs, rtp_batch([q.query for q in qs], k, retriever))}
        for r, source in src.ptr.items():
            stubs = stored_stubs(store, source.id, qs)
            with_stubs = [q for q in qs if q.uid in stubs]
            opened = open_run(store, setup.spec("hybrid", "hybrid", subset, k, r, source_run_id=source.id),
                              with_stubs, resume, setup.git_commit, config)
            if not opened:
                continue
            run_id, todo = opened
            # A fallback stub is the raw query itself, which the hybrid searches anyway.
            written = [() if stubs[q.uid][1] else stubs[q.uid][0] for q in todo]
            found = hybrid_batch([q.query for q in todo], written, [k], retriever)[k]
            _insert_run(store, run_id, [{**base_row(run_id, q, d, with_hits=r == 0),
                                         **overlap_fields(d, rtp_keys[q.uid])} for q, d in zip(todo, found)])
            touched.append(run_id)
    return touched


def subset_gold_rows(retriever: Retriever, queries: Sequence[Query]) -> list[int]:
    """Registry rows of every gold API (both definitions) of these queries."""
    keys = {key for q in queries for gold in GOLD_DEFINITIONS for key in q.gold(gold)}
    return retriever.registry.rows_of(keys)


def scaling_sizes(sizes: Sequence[int | None], registry_size: int) -> list[int]:
    """Requested sizes as row counts; None and sizes at or above the registry collapse into the full registry."""
    return sorted({registry_size if s is None or s >= registry_size else int(s) for s in sizes})


def run_scaling(store: Store, retriever: Retriever, queries: Sequence[Query], *,
                sizes: Sequence[int | None] = SCALING_SIZES, seeds: int = SCALING_SEEDS, k: int = MAIN_K,
                resume: bool = False, progress: bool = False, llm_backend: str | None = None,
                commit: str | None = None, config: dict[str, Any] | None = None) -> list[int]:
    """Both architectures on stratified sub-registries x seeds, with stubs of main run 0; retrieval only.

    The full registry needs no sampling, so it is run once (seed 0). A size too small to hold the
    subset's gold APIs is recorded once (seed 0) as a `skipped` run with the reason, never silently
    dropped.
    """
    retriever = memoised(retriever)
    n = len(retriever.registry)
    touched: list[int] = []
    subsets = by_subset(queries)
    gold = {subset: subset_gold_rows(retriever, qs) for subset, qs in subsets.items()}
    cells = [(s, size, seed) for s in subsets for size in scaling_sizes(sizes, n)
             for seed in ([0] if size == n or size < len(gold[s]) else range(seeds))]
    bar = _progress(len(cells), "bench scaling", progress)
    sources: dict[str, tuple[Sources, dict[str, tuple[tuple[Stub, ...], bool]]]] = {}
    for subset, size, seed in cells:
        qs, gold_rows = subsets[subset], gold[subset]
        if subset not in sources:
            src = main_sources(store, retriever, subset, llm_backend)
            sources[subset] = (src, stored_stubs(store, src.ptr[0].id, qs))
        src, stubs = sources[subset]
        setup = Setup.of_run(src.rtp, commit)
        with_stubs = [q for q in qs if q.uid in stubs]
        extra = {"sub_size": size, "sub_seed": seed}
        cell_config = {**(config or {}), "gold_apis": len(gold_rows)}
        specs = {"rtp": setup.spec("scaling", "rtp", subset, k, 0, source_run_id=src.rtp.id, **extra),
                 "ptr": setup.spec("scaling", "ptr", subset, k, 0, source_run_id=src.ptr[0].id, **extra)}
        if size < len(gold_rows):
            note = f"{len(gold_rows):,} gold APIs of {subset} do not fit in a {size:,}-API registry"
            for spec in specs.values():
                if not (resume and store.find_run(spec)):
                    touched.append(store.start_run(spec, 0, setup.git_commit, cell_config, status="skipped",
                                                   note=note))
            bar.update(1)
            continue
        opened = {arch: open_run(store, spec, with_stubs, resume, setup.git_commit, cell_config)
                  for arch, spec in specs.items()}
        if any(opened.values()):
            view = retriever if size == n else retriever.with_index(
                retriever.index.subindex(stratified_rows(retriever.registry, size, gold_rows, seed)))
            rtp_found = rtp_batch([q.query for q in with_stubs], k, view)
            ptr_found = ptr_batch([stubs[q.uid][0] for q in with_stubs], [k], view)[k]
            found = {"rtp": dict(zip((q.uid for q in with_stubs), rtp_found)),
                     "ptr": dict(zip((q.uid for q in with_stubs), ptr_found))}
            for arch, got in opened.items():
                if got is None:
                    continue
                run_id, todo = got
                rows = [{**base_row(run_id, q, found[arch][q.uid], with_hits=False),
                         **(overlap_fields(found["ptr"][q.uid], found["rtp"][q.uid].keys) if arch == "ptr" else {})}
                        for q in todo]
                _insert_run(store, run_id, rows)
                touched.append(run_id)
    return touched
