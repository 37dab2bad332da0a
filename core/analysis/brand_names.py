"""Whether a PtR loss is the paper's brand-name erasure: the request names a gold API's tool (a product such as
"Spotify") and the stubs drop that name. Computed per query, so the Stubs page counts what it claims instead of
calling every "PtR finds none, RtP finds all" query one."""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import pandas as pd

from core.data.toolbench import Query

MIN_NAME_CHARS = 3  # a shorter tool name ("X", "AI") matches too much text to say anything


def _words(text: str) -> str:
    """Lower-case words joined by single spaces, padded, so that a phrase is found only as whole words."""
    return " " + " ".join(re.findall(r"[a-z0-9]+", text.lower())) + " "


def tools_named(text: str, tools: Iterable[str]) -> list[str]:
    """The tool names that `text` holds word for word (case, punctuation and underscores ignored)."""
    haystack = _words(text)
    return sorted({tool for tool in tools
                   if len(needle := _words(tool).strip()) >= MIN_NAME_CHARS and f" {needle} " in haystack})


def brand_name_marks(losses: pd.DataFrame, queries: Mapping[tuple[str, int], Query],
                     gold: str = "relevant") -> pd.DataFrame:
    """`losses` (rows with subset, query_id and PtR's stub_names) with two columns: tool_in_request, the gold APIs'
    tool names the request holds ("" when none, or when the query text is unknown), and stubs_keep_it, whether any
    stub name holds one of them (None where the request holds none)."""
    named, kept = [], []
    for subset, query_id, stub_names in zip(losses["subset"], losses["query_id"], losses["stub_names"]):
        query = queries.get((subset, int(query_id)))
        found = tools_named(query.query, {tool for tool, _ in query.gold(gold)}) if query else []
        named.append(", ".join(found))
        kept.append(bool(tools_named(str(stub_names or "").replace("_", " "), found)) if found else None)
    return losses.assign(tool_in_request=named, stubs_keep_it=pd.Series(kept, index=losses.index, dtype=object))


def erasure_counts(marked: pd.DataFrame) -> tuple[int, int, int]:
    """(queries, requests that name a gold tool, of those the ones whose stubs dropped every such name)."""
    named = marked[marked["tool_in_request"] != ""]
    return len(marked), len(named), int((named["stubs_keep_it"] == False).sum())  # noqa: E712 - object column
