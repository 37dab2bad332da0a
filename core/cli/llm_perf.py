"""`python -m core perf --llm`: the local model's throughput, and what the study's runner makes of it.

Measured in one process on a stratified sample of benchmark queries (the first n of every subset):
- prompt and generation tokens/s of one instance from an empty cache (llama-bench's pp and tg), each beside
  llama.cpp's own figure for the same tokens (its perf counters: the time inside its decode calls alone);
- the floor: the machine's memory bandwidth (LOCAL_THREADS threads reading 1 GiB) against the model's bytes, which
  generation reads once per token, and the real decoder's generation tokens/s (grammar, streaming) against
  llama.cpp's own over the same replies;
- prompt-lookup drafts on and off over the same stub prompts: tokens/s, the share of drafted tokens kept, and how
  many replies stay byte-identical (llama.cpp's batched logits are not one token's: benchmarks/batch_invariance.py);
- p50/p95 seconds of a stub list and of a plan, with their token counts, as the Inspector calls them
  (one after the other, LOCAL_INSTANCES copies so that each prompt kind keeps its examples cached);
- a main study of the sample (RtP and PtR, one run, into a throw-away SQLite file), with the
  cores shared out between the instances: its wall time against N·L/C (N LLM calls, L their mean
  model time, C the instances), whose ratio says how much the runner adds (goal: at most 1.25);
- whether two requests at once help on this machine: the same stub prompts through one instance
  with all threads, and through two instances with half the threads each, two calls in flight.
No call cache is used anywhere, so every figure is a real generation.
"""
from __future__ import annotations

import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from pathlib import Path

import numpy as np

from core.retrieval.archs import baseline
from core.retrieval.assemble import build_retriever
from core.data.loaders import queries_for
from core.agents.llm.local_llama import LocalLlamaClient
from core.agents.llm.local_model import resolve_local_model
from core.agents.prompts import STYLES
from core.settings import Settings
from core.data.toolbench import subset_order


def _p(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 3) if values else float("nan")


def sample_queries(settings: Settings, per_subset: int) -> list:
    queries = queries_for(settings)
    return [q for s in subset_order({q.subset for q in queries}) for q in queries_for(settings, s)[:per_subset]]


def parallel_throughput(settings: Settings, prompts: list[str], instances: int, threads: int) -> dict:
    """Calls per second for `prompts` with `instances` model copies of `threads` threads, one call per instance."""
    client = LocalLlamaClient(resolve_local_model(settings.local_model, settings.cache_dir), n_threads=threads,
                              instances=instances, timeout_s=settings.llm_timeout_s).load()
    style = STYLES[client.prompt_style]
    schema = style.discovery_schema()
    client.generate(prompts[0], schema=schema)  # warm: the examples are in every instance's cache after this
    if instances > 1:
        with ThreadPoolExecutor(instances) as pool:
            list(pool.map(lambda p: client.generate(p, schema=schema), prompts[:instances]))
    start = time.perf_counter()
    with ThreadPoolExecutor(instances) as pool:
        replies = list(pool.map(lambda p: client.generate(p, schema=schema), prompts))
    wall = time.perf_counter() - start
    return {"instances": instances, "threads_each": threads, "calls": len(prompts), "wall_s": round(wall, 2),
            "calls_per_s": round(len(prompts) / wall, 3),
            "output_tokens_per_s": round(sum(r.usage.output_tokens for r in replies) / wall, 1)}


def memory_bandwidth(threads: int, gib: float = 1.0, repeats: int = 5) -> float:
    """GB/s read by `threads` threads summing their share of a `gib` GiB array (numpy releases the GIL): the best of
    `repeats`, since generation streams the weights at the best rate the cores reach."""
    data = np.ones(int(gib * 2**30) // 8)
    shares = np.array_split(data, threads)
    best = float("inf")
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeats):
            start = time.perf_counter()
            list(pool.map(np.sum, shares))
            best = min(best, time.perf_counter() - start)
    return round(data.nbytes / best / 1e9, 2)


def floor(model_bytes: int, bandwidth_gb_s: float, generation_tok_s: float) -> dict:
    """The memory-bandwidth ceiling on generation: every weight is read once per token (the KV cache, a few MB at
    these lengths, is left out), so no decoder passes bandwidth / model bytes tokens a second."""
    ceiling = bandwidth_gb_s * 1e9 / model_bytes
    return {"model_bytes": model_bytes, "bandwidth_gb_s": bandwidth_gb_s, "ceiling_tok_s": round(ceiling, 1),
            "generation_share_of_ceiling": round(generation_tok_s / ceiling, 3)}


def decoder_against_llama_cpp(latency_s: float, output_tokens: int, counters: dict[str, float]) -> dict:
    """The real decoder's generation tokens/s (its calls' time less llama.cpp's prompt time) against llama.cpp's own
    over the same single-token evaluations: what the grammar check, streaming and Python cost."""
    generation_s = latency_s - counters["t_p_eval_ms"] / 1000
    own = counters["n_eval"] / (counters["t_eval_ms"] / 1000) if counters["t_eval_ms"] else float("nan")
    ours = output_tokens / generation_s if generation_s > 0 else float("nan")
    return {"output_tokens": output_tokens, "decoder_tok_s": round(ours, 1), "llama_cpp_tok_s": round(own, 1),
            "ratio": round(ours / own, 3)}


def draft_speed(settings: Settings, pairs: list[tuple[str, Any]], draft: int = 2) -> dict:
    """The same prompts through a plain and a drafting client of one instance each: tokens/s of both, the share of
    drafted tokens kept, and the replies that stayed byte-identical."""
    model = resolve_local_model(settings.local_model, settings.cache_dir)
    clients = {name: LocalLlamaClient(model, n_threads=settings.local_threads, timeout_s=settings.llm_timeout_s,
                                      draft=n).load() for name, n in (("off", 0), ("on", draft))}
    seconds, tokens, replies = dict.fromkeys(clients, 0.0), dict.fromkeys(clients, 0), {name: [] for name in clients}
    for prompt, schema in pairs:
        for name, client in clients.items():
            reply = client.generate(prompt, schema=schema)
            seconds[name] += reply.latency_s
            tokens[name] += reply.usage.output_tokens
            replies[name].append(reply.text)
    instance = clients["on"]._ensure_loaded()[0]
    return {"draft_tokens": draft, "prompts": len(pairs),
            **{f"tok_s_{name}": round(tokens[name] / seconds[name], 1) for name in clients},
            "accepted_share": round(instance.accepted / instance.drafted, 3) if instance.drafted else None,
            "identical_replies": sum(a == b for a, b in zip(replies["off"], replies["on"]))}


def study_overhead(settings: Settings, queries: list, retriever, concurrency: int) -> dict:
    """Wall time of a one-run main study of `queries` against N·L/C from the latencies its rows store."""
    from sqlalchemy import select

    from core.study.catalog import BenchContext
    from core.study.main_study import run_main
    from core.store.schema import QueryResult
    from core.store.store import Store

    with tempfile.TemporaryDirectory() as folder:
        store = Store(f"sqlite:///{Path(folder) / 'perf.sqlite'}")
        context = BenchContext(store, retriever, queries, settings, "perf", use_cache=False)
        start = time.perf_counter()
        run_main(context, runs=1, concurrency=concurrency)
        wall = time.perf_counter() - start
        with store.engine.connect() as conn:
            rows = conn.execute(select(QueryResult.stub_latency_s, QueryResult.plan_latency_s)).all()
        store.close()
    latencies = [v for row in rows for v in row if v is not None]
    capacity = min(concurrency, settings.local_instances)
    ideal = len(latencies) * statistics.fmean(latencies) / capacity
    return {"queries": len(queries), "llm_calls": len(latencies), "mean_call_s": round(statistics.fmean(latencies), 3),
            "in_flight": capacity, "wall_s": round(wall, 2), "ideal_s": round(ideal, 2),
            "wall_over_ideal": round(wall / ideal, 3)}


def run_llm_perf(settings: Settings, per_subset: int = 4) -> dict:
    """Every figure of the module docstring; `settings` must select the local backend."""
    if settings.llm_backend != "local":
        raise ValueError("perf --llm measures the local backend (LLM_BACKEND=local)")
    retriever, _ = build_retriever(settings)
    queries = sample_queries(settings, per_subset)
    client = LocalLlamaClient(resolve_local_model(settings.local_model, settings.cache_dir),
                              n_threads=settings.local_threads, instances=settings.local_instances,
                              timeout_s=settings.llm_timeout_s).load()
    style = STYLES[client.prompt_style]
    report: dict = {"model": client.provenance(), "cpus": os.cpu_count(), "sample": len(queries),
                    "speed": client.speed()}
    stub_s, stub_tokens, plan_s, plan_tokens = [], [], [], []
    client.llama_cpp_counters(reset=True)
    for query in queries:
        reply = client.generate(style.discovery(query.query), schema=style.discovery_schema())
        stub_s.append(reply.latency_s)
        stub_tokens.append(reply.usage.output_tokens)
        hits = baseline().retrieve(query.query, None, 5, retriever).hits
        apis = [(h.display_name, getattr(retriever.registry.get(h.key), "description", "")) for h in hits]
        plan = client.generate(style.planner(query.query, apis), schema=style.planner_schema([a for a, _ in apis]))
        plan_s.append(plan.latency_s)
        plan_tokens.append(plan.usage.output_tokens)
    report["stub_writing"] = {"p50_s": _p(stub_s, 50), "p95_s": _p(stub_s, 95),
                              "mean_output_tokens": round(statistics.fmean(stub_tokens), 1)}
    report["planning"] = {"p50_s": _p(plan_s, 50), "p95_s": _p(plan_s, 95),
                          "mean_output_tokens": round(statistics.fmean(plan_tokens), 1)}
    report["decoder"] = decoder_against_llama_cpp(sum(stub_s) + sum(plan_s), sum(stub_tokens) + sum(plan_tokens),
                                                  client.llama_cpp_counters())
    report["floor"] = floor(client.local.path.stat().st_size, memory_bandwidth(settings.local_threads),
                            report["speed"]["llama_cpp_generation_tok_s"] or report["speed"]["generation_tok_s"])
    report["drafts"] = draft_speed(settings, [(style.discovery(q.query), style.discovery_schema()) for q in queries])
    cores = os.cpu_count() or 2
    shared = settings.with_(local_threads=max(1, cores // settings.local_instances))
    report["study"] = {"threads_each": shared.local_threads,
                       **study_overhead(shared, queries, retriever, concurrency=2 * settings.local_instances)}
    prompts = [style.discovery(q.query) for q in queries]
    report["parallel"] = [parallel_throughput(settings, prompts, 1, cores),
                          parallel_throughput(settings, prompts, 2, max(1, cores // 2))]
    one, two = report["parallel"]
    report["two_in_flight_speedup"] = round(two["calls_per_s"] / one["calls_per_s"], 3)
    return report
