"""Draft tokens by prompt lookup, for speculative decoding in the local decoding loop.

A planner's reply mostly copies API names and numbers from its own prompt, and a stub writer's copies the query's
words: the tokens that followed the last earlier occurrence of the reply's final n-gram (in the prompt or the reply
so far) are a good guess at what comes next. The guess costs no model: the decoder verifies it in one batch and
keeps only the prefix that greedy decoding picks from that batch's logits (core.agents.llm.local_llama). Those
logits are not bit-equal to one token's under any setting this llama.cpp offers but micro-batches of one token
(benchmarks/batch_invariance.py), so a drafted reply can part from the plain one at a near-tie
(benchmarks/draft_identity.py): drafting is another decoder, never the stored one.
"""
from __future__ import annotations

from collections.abc import Sequence

MAX_NGRAM = 3   # the longest suffix looked up; a longer match is tried first
MIN_NGRAM = 1
MAX_DRAFT = 8   # tokens drafted at a time: a batch of 9 costs little more than one token on a CPU


class PromptLookup:
    """An index of the n-grams of the tokens seen so far (the prompt, then each token of the reply), from each
    n-gram to the position after its latest occurrence."""

    def __init__(self, tokens: Sequence[int], max_ngram: int = MAX_NGRAM) -> None:
        self.tokens: list[int] = []
        self.max_ngram = max_ngram
        self._after: dict[tuple[int, ...], int] = {}
        for token in tokens:
            self.add(token)

    def add(self, token: int) -> None:
        """One more token: the n-grams ending just before it now point at it."""
        end = len(self.tokens)
        for n in range(MIN_NGRAM, self.max_ngram + 1):
            if end >= n:
                self._after[tuple(self.tokens[end - n:end])] = end
        self.tokens.append(token)

    def draft(self, limit: int = MAX_DRAFT) -> list[int]:
        """Up to `limit` tokens that followed the longest earlier occurrence of the current suffix; [] if none."""
        end = len(self.tokens)
        for n in range(min(self.max_ngram, end), MIN_NGRAM - 1, -1):
            start = self._after.get(tuple(self.tokens[end - n:end]))
            if start is not None and start < end:
                return self.tokens[start:min(start + limit, end)]
        return []
