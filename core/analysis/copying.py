"""How often a model copies its prompt's own text into an answer: a small model that cannot follow the
task continues the examples instead ("none of these APIs tells the time" in a plan for ZIP codes).

A reply copies when one of its free-text fields (a stub's name or reasoning, a plan's steps or refusal)
holds a run of COPY_WORDS words that the prompt's fixed text holds and the query does not, or when a stub
is named exactly as an example's stub though no word of that name (4+ letters) is in the query. A field
the grammar fixes (the completion style's refusal marker) is no choice of the model's and is not read.
Pure functions over one reply; copy_rates aggregates.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from string import Template
from typing import Any

from core.agents.prompts import COMPLETION_REFUSAL, STYLES

COPY_WORDS = 4
WORD = re.compile(r"[a-z0-9']+")
FIXED_TEXTS = frozenset({COMPLETION_REFUSAL})


def words(text: str) -> list[str]:
    return WORD.findall(text.lower().replace("_", " "))


def ngrams(tokens: Sequence[str], n: int = COPY_WORDS) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def _fixed_text(template: Template) -> str:
    """A template's own words: the placeholders ($query, $apis, $refusal) removed."""
    return template.safe_substitute({key: " " for key in ("query", "apis", "refusal")})


@dataclass(frozen=True)
class PromptText:
    """What an answer could copy from one prompt style: its word runs and its examples' stub names."""

    runs: frozenset[tuple[str, ...]]
    example_names: frozenset[str]


@cache
def prompt_text(style: str, kind: str) -> PromptText:
    """kind is "stubs" or "plan"."""
    declared = STYLES[style]
    template = declared.discovery_template if kind == "stubs" else declared.planner_template
    text = _fixed_text(template)
    names = frozenset(re.findall(r'"name": "([a-z_]+)"', text)) if kind == "stubs" else frozenset()
    return PromptText(frozenset(ngrams(words(text))), names)


def copied_phrase(fields: Iterable[str], query: str, prompt: PromptText,
                  stub_names: Iterable[str] = ()) -> str | None:
    """The first copied phrase of one reply (see the module's docstring), or None."""
    query_words = words(query)
    in_query = ngrams(query_words)
    for name in stub_names:
        if name in prompt.example_names and not any(w in query_words for w in name.split("_") if len(w) >= 4):
            return name
    for field in fields:
        if field in FIXED_TEXTS:
            continue
        for run in sorted(ngrams(words(field)) & prompt.runs - in_query):
            return " ".join(run)
    return None


def stub_reply_copy(names: Sequence[str], reasonings: Sequence[str], query: str, style: str) -> str | None:
    """One stub reply's first copied phrase (names and reasonings in stub order), or None."""
    return copied_phrase([*names, *reasonings], query, prompt_text(style, "stubs"), names)


def plan_reply_copy(plan: dict[str, Any], query: str, style: str) -> str | None:
    """One plan reply's first copied phrase (its steps, then its refusal), or None."""
    fields = [*plan.get("steps", []), plan.get("refusal") or ""]
    return copied_phrase([f for f in fields if isinstance(f, str)], query, prompt_text(style, "plan"))


@dataclass(frozen=True)
class CopyRate:
    """Copying replies among replies, with a few of the phrases copied (most frequent first)."""

    replies: int
    copying: int
    examples: tuple[str, ...]

    @property
    def rate(self) -> float | None:
        return self.copying / self.replies if self.replies else None


def copy_rate(phrases: Iterable[str | None], n_examples: int = 3) -> CopyRate:
    phrases = list(phrases)
    copied = [p for p in phrases if p]
    counts: dict[str, int] = {}
    for p in copied:
        counts[p] = counts.get(p, 0) + 1
    top = sorted(counts, key=lambda p: (-counts[p], p))[:n_examples]
    return CopyRate(len(phrases), len(copied), tuple(top))
