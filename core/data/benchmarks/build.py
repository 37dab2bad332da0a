"""Builds data/registries/ from the raw benchmarks: `python -m core.data.benchmarks.build OUT_DIR [--raw DIR]`.

The shipped registries must be remade from their sources by anyone, byte for byte: every file written here is
deterministic (sorted rows, gzip without a timestamp, no dates), so a rebuild is compared with a plain diff.
For each benchmark, OUT_DIR/<name>/ gets its tools file, queries.jsonl, the raw LICENSE and SOURCES.md, and
conversion.json: the input files' sha256, the counts, and every gold name that did not resolve, as the lab's
import reads them back (core.data.query_sets).
"""
from __future__ import annotations

import argparse
import hashlib
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from core.data.benchmarks import Converted, livemcpbench, sealtools
from core.data.query_sets import SCORING, QuerySet, read_query_set, summary
from core.files import CannotWrite, ensure_folder, write_atomic
from core.settings import PROJECT_ROOT

RAW_DIR = PROJECT_ROOT.parent / "shared" / "registries"
BENCHMARKS: dict[str, Callable[[Path], Converted]] = {"sealtools": sealtools.convert,
                                                       "livemcpbench": livemcpbench.convert}
COPIED = ("LICENSE", "SOURCES.md")
QUERIES = "queries.jsonl"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def report(converted: Converted, target: Path, qs: QuerySet, apis: int, tools: int) -> dict:
    """conversion.json: where the files came from, what they hold, and the gold names that did not resolve."""
    return {
        "inputs": [{"file": p.name, "bytes": p.stat().st_size, "sha256": _sha256(p)} for p in converted.inputs],
        "outputs": {name: _sha256(target / name) for name in (converted.tools_file, QUERIES)},
        "counts": {"apis": apis, "tools": tools, "queries": len(converted.queries), "kept": len(qs.queries),
                   "subsets": dict(sorted(Counter(q.subset for q in qs.queries).items())),
                   "gold_names": qs.names, "resolved": qs.resolved, "ambiguous": qs.ambiguous,
                   "unmatched": qs.unmatched, "dropped_queries": qs.dropped_queries},
        "scoring": SCORING,
        **converted.notes,
        "ambiguous": [{"query": u.query_uid, "name": u.name, "candidates": ["/".join(c) for c in u.candidates]}
                      for u in qs.unresolved if u.ambiguous],
        "unmatched": [{"query": u.query_uid, "name": u.name} for u in qs.unresolved if not u.ambiguous],
        "dropped": list(qs.dropped),
    }


def build_one(name: str, raw: Path, target: Path) -> QuerySet:
    """Convert the benchmark in `raw` into `target`, and read it back as an import would."""
    converted = BENCHMARKS[name](raw)
    ensure_folder(target)
    write_atomic(target / converted.tools_file, converted.tools)
    write_atomic(target / QUERIES, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in converted.queries))
    for file in COPIED:
        write_atomic(target / file, (raw / file).read_bytes())
    apis = converted.read_tools(target / converted.tools_file, name)
    qs = read_query_set(target / QUERIES, apis)
    conversion = report(converted, target, qs, len(apis), len({api.tool_name for api in apis}))
    write_atomic(target / "conversion.json", json.dumps(conversion, ensure_ascii=False, indent=1) + "\n")
    return qs


def build(out_dir: Path, raw_dir: Path = RAW_DIR) -> dict[str, QuerySet]:
    return {name: build_one(name, raw_dir / name, out_dir / name) for name in BENCHMARKS}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m core.data.benchmarks.build", description=__doc__.split("\n")[0])
    parser.add_argument("out_dir", type=Path, help="where to write <benchmark>/ (the project's is data/registries)")
    parser.add_argument("--raw", type=Path, default=RAW_DIR, help=f"the raw benchmarks' folder (default {RAW_DIR})")
    args = parser.parse_args(argv)
    try:
        built = build(args.out_dir, args.raw)
    except CannotWrite as exc:
        parser.exit(1, f"error: {exc}\n")
    for name, qs in built.items():
        print(f"{name}: {summary(qs)}")


if __name__ == "__main__":
    main()
