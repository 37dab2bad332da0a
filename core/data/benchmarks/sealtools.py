"""Seal-Tools (NLPCC 2024, arXiv:2405.08355): its tool.jsonl and test splits as the lab's tools JSONL and query set.

Seal-Tools is the registry lexically closest to its queries (synthetic, camelCase APIs with parameters), the
far end of the Intent-Registry Coupling axis from LiveMCPBench. Its APIs have no tool of their own, so the tool is
the API's `field` ("Chemical Engineering/Forensic engineering": the gold resolves by the unique api name, and a
"tool/api" name splits at the last "/"), and the category its top-level domain. The gold of a query is the
distinct `calling[].api`; easy queries call one API, difficult ones two or more.
"""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from core.data import jsonl_tools
from core.data.benchmarks import Converted
from core.data.query_sets import MULTI, SINGLE
from core.data.toolbench import DataUnreadable

TOOLS = "tool.jsonl"
SPLITS = ("test_in_domain", "test_out_domain")  # dev.jsonl is not a test split
LEVELS = {"easy": SINGLE, "difficult": MULTI}
SUBSETS = tuple(f"{split.removeprefix('test_')}_{group}" for split in SPLITS for group in (SINGLE, MULTI))


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def tool_row(raw: dict) -> dict:
    """One tools-JSONL line: parameters as a JSON schema, so that `required` travels with them."""
    return {"tool": raw["field"], "api": raw["api_name"], "description": raw["api_description"],
            "category": raw["field"].split("/")[0],
            "parameters": {"type": "object", "properties": raw["parameters"], "required": raw["required"]}}


def query_row(path: Path, split: str, raw: dict) -> dict:
    """One query-set line: id N of "<split>-easy-N" / "<split>-difficult-N", subset e.g. "in_domain_multi"."""
    match = re.fullmatch(rf"{split}-(easy|difficult)-(\d+)", raw["id"])
    if match is None:
        raise DataUnreadable(f"{path}: id {raw['id']!r} is not {split}-easy-N or {split}-difficult-N.")
    group = LEVELS[match.group(1)]
    return {"id": int(match.group(2)), "query": raw["query"],
            "gold": list(dict.fromkeys(call["api"] for call in raw["calling"])),
            "subset": f"{split.removeprefix('test_')}_{group}", "group": group}


def convert(raw_dir: Path) -> Converted:
    lines = "".join(json.dumps(tool_row(row), ensure_ascii=False) + "\n" for row in _rows(raw_dir / TOOLS))
    queries = [query_row(raw_dir / f"{split}.jsonl", split, row)
               for split in SPLITS for row in _rows(raw_dir / f"{split}.jsonl")]
    queries.sort(key=lambda q: (SUBSETS.index(q["subset"]), q["id"]))
    return Converted("tools.jsonl.gz", gzip.compress(lines.encode("utf-8"), compresslevel=9, mtime=0),
                     jsonl_tools.read, tuple(queries),
                     (raw_dir / TOOLS, *(raw_dir / f"{split}.jsonl" for split in SPLITS)))
