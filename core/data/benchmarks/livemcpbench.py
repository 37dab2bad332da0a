"""LiveMCPBench (icip-cas, 2025): its annotated tasks as the lab's query set, over its tools.json kept as it is.

LiveMCPBench is real and hard (70 MCP servers, tasks written by people), the near end of the Intent-Registry
Coupling axis from Seal-Tools. Its gold is free text, "1. get-weread-rank\\n2. write_file", parsed by GOLD_RULES.
The names are written as the annotators wrote them: several are held by more than one server (write_file,
search, ...) and a few by none, and the query-set reader scores those as its docstring says (ambiguous: any of
their APIs under `relevant`, none under `api_list`; unmatched: neither), listing each in conversion.json. A task
is single or multi by its distinct tool names, which is how LiveMCPBench counts tools (not by servers).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from core.data import mcp
from core.data.benchmarks import Converted
from core.data.query_sets import MULTI, SINGLE

TOOLS = "tools.json"
TASKS = "all_annotations.json"
GOLD_RULES = ("a name per line, comma or semicolon; leading numbering (1. 1) (1) #1) and bullets (- * •) dropped; "
              "spaces, backticks and quotes around a name and a trailing period dropped; empty items skipped; "
              "a name repeated in one task counted once")
SEPARATORS = re.compile(r"[\n,;]")
ENUMERATOR = re.compile(r"^(?:(?:[-*•]|\(?\d+[.)]|#\d+[.:)]?)\s*)+")
PLAIN = re.compile(r"\d+\. (\S+)")  # how nearly every item is written; the others are listed as cleaned


def gold_names(text: str) -> list[str]:
    """The tool names of an "Annotator Metadata"."Tools" text, by GOLD_RULES, in their order."""
    names = (ENUMERATOR.sub("", item.strip()).strip(" \t`'\"").removesuffix(".").strip(" `")
             for item in SEPARATORS.split(text))
    return list(dict.fromkeys(name for name in names if name))


def _cleaned(task_id: int, text: str) -> list[dict]:
    """The items that needed more than their "N. " dropped, with what was read from each."""
    out = []
    for item in filter(str.strip, SEPARATORS.split(text)):
        read = gold_names(item)
        plain = PLAIN.fullmatch(item)
        if plain is None or [plain.group(1)] != read:
            out.append({"id": task_id, "written": item, "read": read[0] if read else None})
    return out


def convert(raw_dir: Path) -> Converted:
    tasks = json.loads((raw_dir / TASKS).read_text(encoding="utf-8"))
    queries, cleaned, mentions = [], [], 0
    for task_id, task in enumerate(tasks, 1):
        text = task["Annotator Metadata"]["Tools"]
        gold = gold_names(text)
        group = MULTI if len(gold) > 1 else SINGLE
        queries.append({"id": task_id, "query": task["Question"], "gold": gold, "subset": group, "group": group,
                        "task_id": task["task_id"]})
        cleaned += _cleaned(task_id, text)
        mentions += len(gold)
    notes = {"gold_rules": GOLD_RULES, "tasks": len(tasks), "gold_mentions": mentions,
             "tasks_multi": sum(q["group"] == MULTI for q in queries), "cleaned_mentions": cleaned}
    return Converted(TOOLS, (raw_dir / TOOLS).read_bytes(), mcp.read, tuple(queries),
                     (raw_dir / TOOLS, raw_dir / TASKS), notes)
