"""`python -m core index-scale`: exact vs approximate search from the real registry to a million APIs.

Sizes above the real registry (47,038) are its real vectors plus SYNTHETIC distractor vectors
(core.retrieval.synthetic); every output says so. Per size and index (flat: the exact VectorIndex;
hnsw, ivf: core.retrieval.ann with the configured parameters): build seconds, memory (the process's
resident growth during the build, in a fresh process per index so nothing freed earlier is reused),
single-query latency p50/p95 over the 1,100 test queries (one search each, after 20 warm-up searches),
batch throughput (the queries in chunks of BATCH, best of two passes) and recall@5 against exact search.
The ANN indexes are also swept over their search-time parameter (HNSW_EF_SEARCH, IVF_NPROBE), so the
defaults can be chosen from measurements. The machine's load average is recorded beside every time.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from core.cli.common import add_common
from core.files import write_atomic
from core.settings import PROJECT_ROOT, Settings
from core.study.catalog import parse_sizes

K = 5
BATCH = 256  # queries per batch_search call
WARM_UP = 20
SWEEPS = {"hnsw": ("hnsw_ef_search", (16, 32, 64, 128, 256, 512, 1024)),
          "ivf": ("ivf_nprobe", (8, 16, 32, 64, 128, 256, 512, 1024))}
DEFAULT_OUT = PROJECT_ROOT / "data" / "index_scale.json"
LABEL = ("distractor scale: sizes above the real registry hold its real APIs plus SYNTHETIC distractor vectors "
         "(core.retrieval.synthetic), not real APIs")


def resident_mb() -> float:
    """This process's resident memory (VmRSS), MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def load() -> dict[str, float]:
    one, five, fifteen = os.getloadavg()
    return {"1m": round(one, 2), "5m": round(five, 2), "15m": round(fifteen, 2)}


def latencies_ms(index: Any, queries: np.ndarray) -> np.ndarray:
    for q in queries[:WARM_UP]:
        index.search(q, K)
    out = np.empty(len(queries))
    for i, q in enumerate(queries):
        start = time.perf_counter()
        index.search(q, K)
        out[i] = (time.perf_counter() - start) * 1000
    return out


def batch_qps(index: Any, queries: np.ndarray) -> float:
    best = np.inf
    for _ in range(2):
        start = time.perf_counter()
        for chunk in range(0, len(queries), BATCH):
            index.batch_search(queries[chunk:chunk + BATCH], K)
        best = min(best, time.perf_counter() - start)
    return len(queries) / best


def top_rows(index: Any, queries: np.ndarray) -> np.ndarray:
    return np.vstack([index.batch_search(queries[c:c + BATCH], K)[1] for c in range(0, len(queries), BATCH)])


def measure(kind: str, spec_json: dict[str, Any], vectors_path: str, queries_path: str) -> dict[str, Any]:
    """One index on one registry, in its own process: build, memory, latency, throughput, its top-5 rows, and
    for an ANN index the same over its search-time parameter."""
    from core.retrieval.ann import AnnIndex, IndexSpec
    from core.retrieval.index import VectorIndex

    vectors, queries = np.load(vectors_path), np.load(queries_path)
    before, load_before = resident_mb(), load()
    start = time.perf_counter()
    spec = IndexSpec(**spec_json)
    index = VectorIndex(vectors) if kind == "flat" else AnnIndex(spec, vectors)
    build_s = time.perf_counter() - start
    memory_mb = resident_mb() - before
    lat = latencies_ms(index, queries)
    out = {"index": kind, "params": index.spec.params() if kind != "flat" else {}, "build_s": round(build_s, 2),
           "memory_mb": round(memory_mb, 1), "p50_ms": round(float(np.median(lat)), 3),
           "p95_ms": round(float(np.percentile(lat, 95)), 3), "batch_qps": round(batch_qps(index, queries), 1),
           "top": top_rows(index, queries).tolist(), "load_before": load_before, "load_after": load()}
    if kind in SWEEPS:
        name, values = SWEEPS[kind]
        out["sweep"] = []
        limit = index.spec.ivf_nlist if kind == "ivf" else None  # nprobe cannot exceed the lists
        for value in sorted(v for v in {*values, getattr(index.spec, name)} if limit is None or v <= limit):
            variant = index.with_search(**{name: value})
            lat = latencies_ms(variant, queries)
            out["sweep"].append({name: value, "p50_ms": round(float(np.median(lat)), 3),
                                 "p95_ms": round(float(np.percentile(lat, 95)), 3),
                                 "top": top_rows(variant, queries).tolist(), "load": load()})
    return out


def recall_at_k(found: list[list[int]], exact: list[list[int]]) -> float:
    return round(float(np.mean([len(set(f) & set(e)) / len(e) for f, e in zip(found, exact)])), 4)


def in_fresh_process(kind: str, spec_json: dict[str, Any], vectors_path: str, queries_path: str) -> dict[str, Any]:
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(measure, (kind, spec_json, vectors_path, queries_path))


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return f"load average {os.getloadavg()}"


def changed_files() -> list[str]:
    """Files under core/ that differ from the recorded commit (what the measured code had on top of it)."""
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--", "core"], cwd=PROJECT_ROOT, capture_output=True,
                             text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ["unknown"]
    return [line[3:] for line in out.splitlines() if line.strip()]


def run_index_scale(settings: Settings, sizes: list[int | None], seed: int, kinds: tuple[str, ...]) -> dict[str, Any]:
    import faiss

    from core.data.loaders import queries_for
    from core.retrieval.ann import IndexSpec
    from core.retrieval.assemble import build_retriever
    from core.retrieval.synthetic import DistractorModel
    from core.store.commit import git_commit

    started, machine_before = time.strftime("%Y-%m-%dT%H:%M:%S%z"), uptime()
    retriever, info = build_retriever(settings.with_(index="flat"))
    real, n = retriever.index.vectors, len(retriever.registry)
    totals = sorted({n if s is None or s <= n else int(s) for s in sizes})
    queries = queries_for(settings)
    query_vectors = retriever.encode([q.query for q in queries])
    gold = [set(retriever.registry.rows_of(q.gold("api_list") | q.gold("relevant"))) for q in queries]
    model = DistractorModel.fit(real, seed) if totals[-1] > n else None
    configured = IndexSpec.of(settings)
    specs = {kind: replace(configured, kind=kind) for kind in kinds}
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="index-scale-") as folder:
        queries_path = str(Path(folder) / "queries.npy")
        np.save(queries_path, query_vectors)
        for total in totals:
            vectors = real if total == n else model.extended(total, seed)[0]  # type: ignore[union-attr]
            vectors_path = str(Path(folder) / "vectors.npy")
            np.save(vectors_path, vectors)
            del vectors
            measured = {kind: in_fresh_process(kind, asdict(specs[kind]), vectors_path, queries_path)
                        for kind in kinds}
            exact = measured["flat"]["top"] if "flat" in measured else None
            for kind, result in measured.items():
                row = {"size": total, "synthetic_distractors": total - n, **{k: v for k, v in result.items()
                                                                            if k not in ("top", "sweep")}}
                row["recall_at_5_vs_exact"] = recall_at_k(result["top"], exact) if exact is not None else None
                row["sweep"] = [{**{k: v for k, v in point.items() if k != "top"},
                                 "recall_at_5_vs_exact": (recall_at_k(point["top"], exact)
                                                          if exact is not None else None)}
                                for point in result.get("sweep", [])]
                rows.append(row)
                print(f"{total:>9,} {kind:<5} build {row['build_s']:>7.1f} s  mem {row['memory_mb']:>7.0f} MB  "
                      f"p50 {row['p50_ms']:>7.2f} ms  p95 {row['p95_ms']:>7.2f} ms  {row['batch_qps']:>8.0f} q/s  "
                      f"recall@5 {row['recall_at_5_vs_exact']}  (load {result['load_before']['1m']})",
                      file=sys.stderr)
    return {
        "title": "Exact vs approximate search, real registry to 1M APIs",
        "label": LABEL, "synthetic": True, "k": K,
        "rows": rows,
        "distractors": ({**model.provenance(), "draw_seed": seed, "check": model.check(query_vectors, gold, seed)}
                        if model is not None else None),
        "provenance": {
            "commit": git_commit(), "uncommitted_core_files": changed_files(), "started": started,
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "machine": {"cpus": os.cpu_count(), "uptime_before": machine_before, "uptime_after": uptime(),
                        "platform": platform.platform()},
            "seed": seed, "registry": info.registry, "registry_size": n, "registry_hash": info.registry_hash,
            "embedding_model": info.model_id, "query_encoder": info.runtime, "queries": len(queries),
            "index_params": {kind: spec.to_json() for kind, spec in specs.items()},
            "faiss": faiss.__version__, "numpy": np.__version__, "batch": BATCH, "warm_up": WARM_UP,
            "measured": "one fresh process per (size, index); memory = resident growth during the build; latency "
                        "= one search per test query after warm-up; batch = best of two passes in chunks",
        },
    }


def cmd_index_scale(args: argparse.Namespace, settings: Settings) -> int:
    report = run_index_scale(settings, args.sizes, args.seed, tuple(args.kinds.split(",")))
    write_atomic(Path(args.out), json.dumps(report, indent=1) + "\n")
    print(json.dumps(report) if args.json else f"wrote {args.out} ({len(report['rows'])} rows; {LABEL})")
    return 0


def kinds_arg(text: str) -> str:
    chosen = [k.strip() for k in text.split(",") if k.strip()]
    if not chosen or any(k not in ("flat", "hnsw", "ivf") for k in chosen):
        raise argparse.ArgumentTypeError(f"--kinds takes a comma list of flat, hnsw, ivf; not {text!r}")
    return ",".join(dict.fromkeys(chosen))


def register(subparsers: argparse._SubParsersAction, handlers: dict) -> None:
    """Add `index-scale` to the `python -m core` parser."""
    p = subparsers.add_parser(
        "index-scale", help="exact vs HNSW vs IVF search from the real registry to 1M APIs (synthetic distractors)",
        description="Build time, memory, single-query latency, batch throughput and recall@5 against exact search "
                    "for each index at each size; sizes above the real registry add SYNTHETIC distractor vectors. "
                    "Heavy: run one at a time (flock /tmp/heavy.lock ...).")
    p.add_argument("--sizes", type=parse_sizes, default=[None, 200_000, 1_000_000],
                   help="registry sizes: full (the real registry) and above (default full,200000,1000000)")
    p.add_argument("--seed", type=int, default=0, help="distractor seed (default 0)")
    p.add_argument("--kinds", type=kinds_arg, default="flat,hnsw,ivf", help="indexes to measure (default all)")
    p.add_argument("--out", default=str(DEFAULT_OUT), help=f"where the JSON goes (default {DEFAULT_OUT})")
    add_common(p)
    handlers["index-scale"] = cmd_index_scale
