"""Why a gold API was found or missed: its rank deep in each architecture's list, its cosines, its document.

The Inspector's miss explanation. A top-k list says only "missed"; the rank in the top `depth` (or
"beyond"), the API's cosine to the query and to the closest stub, and whether ToolBench documents it
at all (19,905 of the 47,038 APIs are known by name only) say why.
"""
from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from core.archs import arch
from core.data.toolbench import ApiKey
from core.retrieval.discovery import QUERY_LABEL, Retriever, Stub, clean_query, merged_search

TRACE_DEPTH = 100
TRACED_ARCHS = ("rtp", "ptr", "hybrid")  # the declared architectures trace_gold ranks (each its own search below)


@dataclass(frozen=True)
class GoldTrace:
    """One gold API under the three architectures; ranks are 1-based within the top `depth`, None beyond."""

    tool_name: str
    api_name: str
    in_registry: bool
    name_only: bool
    rank_rtp: int | None
    rank_ptr: int | None
    rank_hybrid: int | None
    cos_query: float | None
    cos_stub: float | None
    best_stub: str | None

    def rank(self, arch: str) -> int | None:
        return {"rtp": self.rank_rtp, "ptr": self.rank_ptr, "hybrid": self.rank_hybrid}[arch]


@dataclass(frozen=True)
class TopkDiff:
    """Two top-k lists compared as sets, each part in the order of the list it comes from."""

    shared: tuple[ApiKey, ...]
    only_rtp: tuple[ApiKey, ...]
    only_ptr: tuple[ApiKey, ...]


def topk_diff(rtp_keys: Sequence[ApiKey], ptr_keys: Sequence[ApiKey]) -> TopkDiff:
    ptr_set, rtp_set = set(ptr_keys), set(rtp_keys)
    return TopkDiff(tuple(k for k in rtp_keys if k in ptr_set), tuple(k for k in rtp_keys if k not in ptr_set),
                    tuple(k for k in ptr_keys if k not in rtp_set))


def _ranks(keys: Sequence[ApiKey]) -> dict[ApiKey, int]:
    out: dict[ApiKey, int] = {}
    for rank, key in enumerate(keys, 1):
        out.setdefault(key, rank)
    return out


def trace_gold(query: str, stubs: Sequence[Stub], gold: Collection[ApiKey], retriever: Retriever,
               depth: int = TRACE_DEPTH, hybrid_stubs: Sequence[Stub] | None = None,
               stub_text: str = "name_reasoning") -> list[GoldTrace]:
    """A GoldTrace per gold API (sorted by name), searching each architecture `depth` deep.

    `stubs` are PtR's stubs as written (the fallback stub included); `hybrid_stubs` those the hybrid adds to
    the raw query (default: `stubs`; none when stub writing fell back, as the studies do).
    """
    text = clean_query(query)
    hybrid_stubs = stubs if hybrid_stubs is None else hybrid_stubs
    stub_vectors = retriever.encode([s.text(stub_text) for s in stubs]) if stubs else np.zeros((0, 0), np.float32)
    query_vector = retriever.encode([text])[0]
    scores, rows = retriever.index.search(query_vector, depth)
    ranks = {"rtp": _ranks([h.key for h in retriever.hits_for(scores, rows)])}
    if stubs:
        hits, _ = merged_search([s.name for s in stubs], stub_vectors, depth, retriever)
        ranks["ptr"] = _ranks([h.key for h in hits])
    kept = [i for i, s in enumerate(stubs) if s in hybrid_stubs]
    hybrid_vectors = np.vstack([query_vector[None, :], stub_vectors[kept]]) if kept else query_vector[None, :]
    hits, _ = merged_search([QUERY_LABEL, *(stubs[i].name for i in kept)], hybrid_vectors, depth, retriever)
    ranks["hybrid"] = _ranks([h.key for h in hits])
    out = []
    for key in sorted(set(gold)):
        row = retriever.registry.row(key)
        if row is None:
            out.append(GoldTrace(*key, False, False, None, None, None, None, None, None))
            continue
        vector = retriever.corpus_vectors[row].astype(np.float32)
        stub_cos = stub_vectors @ vector if stubs else np.zeros(0)
        best = int(np.argmax(stub_cos)) if len(stub_cos) else None
        out.append(GoldTrace(key[0], key[1], True, retriever.registry.apis[row].doc_source == "name_only",
                             ranks["rtp"].get(key), ranks.get("ptr", {}).get(key), ranks["hybrid"].get(key),
                             float(vector @ query_vector), None if best is None else float(stub_cos[best]),
                             None if best is None else stubs[best].name))
    return out


def verdict(trace: GoldTrace, k: int, depth: int = TRACE_DEPTH) -> str:
    """One line on why this gold API was found or missed at k, from its trace."""
    if not trace.in_registry:
        return "not in this registry: no architecture can find it"
    found = [arch(a).label for a in TRACED_ARCHS if (trace.rank(a) or k + 1) <= k]
    doc = "; name-only (its document is just the tool and API name)" if trace.name_only else ""
    if found:
        return f"found by {', '.join(found)}{doc}"
    ranked = [(trace.rank(a), arch(a).label) for a in TRACED_ARCHS if trace.rank(a) is not None]
    if ranked:
        rank, label = min(ranked)
        return f"near miss: best rank {rank} ({label}), below the top {k}{doc}"
    return f"beyond rank {depth} under every architecture{doc}"
