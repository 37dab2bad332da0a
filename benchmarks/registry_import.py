"""What bringing your own tools costs: `registry add` end to end, and RtP's speed on an imported registry.

    .venv/bin/python benchmarks/registry_import.py [--ops 80] [--queries 100] [--json]

1. `python -m core registry add` in a fresh interpreter (what a user waits for: start-up, reading, checking,
   embedding, the atomic commit), each into an empty CACHE_DIR that holds only the query encoder's ONNX graph
   (built once per clone, not per import):
   - an OpenAPI 3.0 spec of `--ops` operations, written from Seal-Tools' first APIs (their real names,
     descriptions and parameters, one `POST /<api>` each);
   - all of Seal-Tools (4,076 APIs, as JSONL) with its 1,354 queries.
2. RtP p50 in this process on the imported spec, the imported Seal-Tools and ToolBench's full registry (the
   shipped vectors), the same ToolBench query texts on each, in interleaved rounds so that the machine's noise
   falls on all three alike, with one BLAS thread as the CLI and the dashboard run (core.threads); the figure is
   each registry's p50 as a ratio of ToolBench's.
The imported registries are removed afterwards. Say the machine's load beside every figure.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.retrieval.archs import baseline  # noqa: E402
from core.retrieval.assemble import build_retriever  # noqa: E402
from core.data.loaders import queries_for  # noqa: E402
from core.settings import Settings  # noqa: E402
from core.threads import one_blas_thread  # noqa: E402

SEAL = ROOT / "data" / "registries" / "sealtools"


def openapi_spec(n_ops: int) -> dict:
    """An OpenAPI 3.0 document of Seal-Tools' first `n_ops` APIs, one operation each."""
    paths: dict[str, dict] = {}
    with gzip.open(SEAL / "tools.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            api = json.loads(line)
            if len(paths) == n_ops:
                break
            props = (api.get("parameters") or {}).get("properties") or {}
            params = [{"name": name, "in": "query", "description": p.get("description", ""),
                       "schema": {"type": "string"}} for name, p in props.items()]
            paths[f"/{api['api']}"] = {"post": {"operationId": api["api"], "summary": api["description"],
                                                "parameters": params}}
    return {"openapi": "3.0.3", "info": {"title": "Seal-Tools sample", "version": "1"}, "paths": paths}


def timed_add(name: str, args: list[str], cache: Path) -> dict:
    env = {**os.environ, "CACHE_DIR": str(cache), "LLM_BACKEND": "offline"}
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "core", "registry", "add", name, *args, "--json"], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    added = json.loads(out.stdout.strip().splitlines()[-1])
    return {"apis": added["apis"], "queries": added["queries_count"], "unresolved": len(added["unresolved"]),
            "wall_s": round(wall, 2), "embedding_s": added["embedding_s"], "load": round(os.getloadavg()[0], 2)}


def rtp_p50_ms(names: list[str], cache: Path, n_queries: int, rounds: int = 5) -> dict[str, float]:
    texts = [q.query for q in queries_for(Settings.from_env())][:n_queries]
    retrievers = {}
    for name in names:
        settings = Settings.from_env({"REGISTRY": name, "CACHE_DIR": str(cache)})
        retrievers[name], _ = build_retriever(settings)
    times: dict[str, list[float]] = {name: [] for name in names}
    for retriever in retrievers.values():  # warm-up
        for text in texts[:5]:
            baseline().retrieve(text, None, 5, retriever)
    for _ in range(rounds):
        for name, retriever in retrievers.items():
            for text in texts:
                start = time.perf_counter()
                baseline().retrieve(text, None, 5, retriever)
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) * 1000 for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=80)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    one_blas_thread()
    tag = f"bench-{os.getpid()}"
    spec_name, seal_name = f"{tag}-spec", f"{tag}-seal"
    graph = Settings.from_env().cache_dir / "onnx"
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        spec = tmp_path / "spec.json"
        spec.write_text(json.dumps(openapi_spec(args.ops)), encoding="utf-8")
        caches = {}
        for which in ("spec", "seal", "query"):
            caches[which] = tmp_path / f"cache-{which}"
            if graph.is_dir():
                shutil.copytree(graph, caches[which] / "onnx")
        added = []
        try:
            spec_add = timed_add(spec_name, ["openapi", str(spec)], caches["spec"])
            added.append(spec_name)
            seal_add = timed_add(seal_name, ["jsonl", str(SEAL / "tools.jsonl.gz"), "--queries",
                                             str(SEAL / "queries.jsonl")], caches["seal"])
            added.append(seal_name)
            for which in ("spec", "seal"):  # their vectors, so that the p50 run embeds nothing
                for f in caches[which].glob("emb-*"):
                    shutil.copy(f, caches["query"] / f.name)
            p50 = rtp_p50_ms(["full", spec_name, seal_name], caches["query"], args.queries)
        finally:
            for name in added:
                subprocess.run([sys.executable, "-m", "core", "registry", "remove", name], cwd=ROOT,
                               capture_output=True, check=False)
    result = {"spec_import": {"ops": args.ops, **spec_add}, "sealtools_import": seal_add,
              "rtp_p50_ms": {"toolbench_full": round(p50["full"], 2), "imported_spec": round(p50[spec_name], 2),
                             "imported_sealtools": round(p50[seal_name], 2)},
              "rtp_p50_ratio_to_toolbench": {"imported_spec": round(p50[spec_name] / p50["full"], 3),
                                             "imported_sealtools": round(p50[seal_name] / p50["full"], 3)},
              "load_after": round(os.getloadavg()[0], 2), "cpus": os.cpu_count()}
    if args.json:
        print(json.dumps(result, indent=1))
        return
    s, t = result["spec_import"], result["sealtools_import"]
    print(f"registry add, a {s['ops']}-operation OpenAPI spec: {s['wall_s']:.1f} s wall ({s['embedding_s']:.1f} s "
          f"embedding), load {s['load']}")
    print(f"registry add, Seal-Tools ({t['apis']:,} APIs, {t['queries']:,} queries, {t['unresolved']} unresolved): "
          f"{t['wall_s']:.1f} s wall ({t['embedding_s']:.1f} s embedding), load {t['load']}")
    r, q = result["rtp_p50_ms"], result["rtp_p50_ratio_to_toolbench"]
    print(f"RtP p50: ToolBench full {r['toolbench_full']:.2f} ms, imported spec {r['imported_spec']:.2f} ms "
          f"({q['imported_spec']:.2f}x), imported Seal-Tools {r['imported_sealtools']:.2f} ms "
          f"({q['imported_sealtools']:.2f}x); load {result['load_after']}")


if __name__ == "__main__":
    main()
