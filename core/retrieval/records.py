"""What a search gives and what PtR searches with: a ranked Hit and an abstract tool Stub.

Apart from core.retrieval.discovery (which finds them) so that reading stored results (core.study.query_result)
needs neither the encoder nor the index.
"""
from __future__ import annotations

from dataclasses import dataclass

from core.data.toolbench import NamedApi

STUB_TEXT_MODES = ("name_reasoning", "name")


@dataclass(frozen=True)
class Hit(NamedApi):
    tool_name: str
    api_name: str
    category: str
    score: float
    rank: int
    stub: str | None = None

    def to_json(self) -> dict:
        out = {"rank": self.rank, "tool_name": self.tool_name, "api_name": self.api_name,
               "category": self.category, "score": round(self.score, 6)}
        if self.stub is not None:
            out["stub"] = self.stub
        return out


@dataclass(frozen=True)
class Stub:
    """A hypothesised tool: the function name an LLM (or the offline heuristic) expects to exist."""

    name: str
    reasoning: str = ""

    def text(self, mode: str = "name_reasoning") -> str:
        if mode not in STUB_TEXT_MODES:
            raise ValueError(f"stub text mode must be one of {STUB_TEXT_MODES}")
        return self.name if mode == "name" or not self.reasoning else f"{self.name}: {self.reasoning}"
