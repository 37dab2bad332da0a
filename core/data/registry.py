"""The registry: document texts, lookup by (tool, api), and stratified sub-registries."""
from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from core.data.toolbench import Api, ApiKey

UNKNOWN_CATEGORY = "(unknown)"


@dataclass(frozen=True)
class Registry:
    """An ordered list of APIs; row i of the embedding matrix is apis[i]."""

    name: str
    apis: tuple[Api, ...]
    _rows: dict[ApiKey, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_rows", {api.key: i for i, api in enumerate(self.apis)})

    def __len__(self) -> int:
        return len(self.apis)

    @cached_property
    def documents(self) -> list[str]:
        return [api.document for api in self.apis]

    @cached_property
    def content_hash(self) -> str:
        """sha256 over every document text, in order: identifies exactly what gets embedded."""
        digest = hashlib.sha256()
        for doc in self.documents:
            digest.update(doc.encode("utf-8"))
            digest.update(b"\x00")
        return digest.hexdigest()

    def row(self, key: ApiKey) -> int | None:
        return self._rows.get(key)

    def get(self, key: ApiKey) -> Api | None:
        row = self._rows.get(key)
        return None if row is None else self.apis[row]

    def rows_of(self, keys: Iterable[ApiKey]) -> list[int]:
        return sorted({r for k in keys if (r := self._rows.get(k)) is not None})

    def category_counts(self) -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        for api in self.apis:
            counts[api.category or UNKNOWN_CATEGORY] += 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def stratified_rows(registry: Registry, size: int, must_include: Sequence[int], seed: int) -> np.ndarray:
    """Rows of a sub-registry of `size`: every row in must_include, plus distractors drawn per category.

    Distractors are allocated to categories in proportion to their share of the registry (largest
    remainder), APIs with no category forming one stratum, then drawn uniformly within each.
    Returns sorted row indices so sub-index row order follows the registry.
    """
    must = np.unique(np.asarray(must_include, dtype=np.int64))
    if size >= len(registry):
        return np.arange(len(registry), dtype=np.int64)
    if size < len(must):
        raise ValueError(f"sub-registry size {size} is smaller than the {len(must)} APIs it must include")
    rng = np.random.default_rng(seed)
    taken = np.zeros(len(registry), dtype=bool)
    taken[must] = True
    strata: dict[str, list[int]] = defaultdict(list)
    for i, api in enumerate(registry.apis):
        if not taken[i]:
            strata[api.category or UNKNOWN_CATEGORY].append(i)
    names = sorted(strata)
    pool = np.array([len(strata[n]) for n in names], dtype=np.float64)
    need = size - len(must)
    exact = pool / pool.sum() * need
    quota = np.floor(exact).astype(np.int64)
    for j in np.argsort(-(exact - quota), kind="stable")[: need - int(quota.sum())]:
        quota[j] += 1
    chosen = [must]
    for name, q in zip(names, quota):
        if q:
            chosen.append(rng.choice(np.asarray(strata[name], dtype=np.int64), size=int(q), replace=False))
    return np.sort(np.concatenate(chosen))
