"""Why a gold API was found or missed: its rank deep in each architecture's list, its cosines, its document.

The Inspector's miss explanation. A top-k list says only "missed"; the rank in the top `depth` (or
"beyond"), the API's cosine to the query and to the closest stub, and whether ToolBench documents it
at all (19,905 of the 47,038 APIs are known by name only) say why.
"""
from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from core.data.toolbench import ApiKey
from core.retrieval.archs import Arch, Written, declared
from core.retrieval.discovery import Retriever, clean_query

TRACE_DEPTH = 100


@dataclass(frozen=True)
class GoldTrace:
    """One gold API under every traced architecture; ranks are 1-based within the top `depth`, None beyond."""

    tool_name: str
    api_name: str
    in_registry: bool
    name_only: bool
    ranks: tuple[tuple[str, int | None], ...]  # (architecture, rank), in the declarations' order
    cos_query: float | None
    cos_stub: float | None
    best_stub: str | None

    def rank(self, arch: str) -> int | None:
        return dict(self.ranks).get(arch)

    @property
    def archs(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.ranks)


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


def traced(written: Written | None) -> tuple[Arch, ...]:
    """The declared architectures a trace ranks: those that need stubs only when stubs were written."""
    return tuple(a for a in declared() if written is not None or not a.needs_stubs)


def trace_gold(query: str, written: Written | None, gold: Collection[ApiKey], retriever: Retriever,
               depth: int = TRACE_DEPTH) -> list[GoldTrace]:
    """A GoldTrace per gold API (sorted by name), each traced architecture's own retrieval `depth` deep.

    `written`: the stubs written for the query (now or stored; the fallback stub included), None when none were.
    """
    text = clean_query(query)
    archs = traced(written)
    ranks = {a.name: _ranks(a.retrieve(text, written, depth, retriever).keys) for a in archs}
    stubs = written.stubs if written is not None else ()
    query_vector = retriever.encode([text])[0]
    stub_vectors = retriever.encode([s.text() for s in stubs]) if stubs else np.zeros((0, len(query_vector)))
    out = []
    for key in sorted(set(gold)):
        row = retriever.registry.row(key)
        if row is None:
            out.append(GoldTrace(*key, False, False, tuple((a.name, None) for a in archs), None, None, None))
            continue
        vector = retriever.corpus_vectors[row].astype(np.float32)
        stub_cos = stub_vectors @ vector
        best = int(np.argmax(stub_cos)) if len(stub_cos) else None
        out.append(GoldTrace(key[0], key[1], True, retriever.registry.apis[row].doc_source == "name_only",
                             tuple((a.name, ranks[a.name].get(key)) for a in archs), float(vector @ query_vector),
                             None if best is None else float(stub_cos[best]),
                             None if best is None else stubs[best].name))
    return out


def verdict(trace: GoldTrace, k: int, depth: int = TRACE_DEPTH) -> str:
    """One line on why this gold API was found or missed at k, from its trace."""
    if not trace.in_registry:
        return "not in this registry: no architecture can find it"
    labels = {a.name: a.label for a in declared()}
    found = [labels.get(a, a) for a, rank in trace.ranks if (rank or k + 1) <= k]
    doc = "; name-only (its document is just the tool and API name)" if trace.name_only else ""
    if found:
        return f"found by {', '.join(found)}{doc}"
    ranked = [(rank, labels.get(a, a)) for a, rank in trace.ranks if rank is not None]
    if ranked:
        rank, label = min(ranked)
        return f"near miss: best rank {rank} ({label}), below the top {k}{doc}"
    return f"beyond rank {depth} under every architecture{doc}"
