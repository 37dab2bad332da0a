"""Synthetic distractors: deterministic, nested, unit-norm, as close to real vectors as real vectors are to
each other (neither duplicates nor far away), and never gold when retrieved."""
from __future__ import annotations

import numpy as np
import pytest

from core.data.registry import Registry
from core.data.toolbench import Api
from core.retrieval.discovery import Retriever
from core.retrieval.index import VectorIndex
from core.retrieval.synthetic import BLOCK, SYNTHETIC_TOOL, DistractorModel, DistractorRetriever, top_cosines
from tests.helpers import FakeEncoder

pytestmark = pytest.mark.slow  # the distractor model's fit: seconds of numpy


def clustered(rng: np.random.Generator, n: int, dim: int = 32, clusters: int = 30) -> np.ndarray:
    centres = rng.standard_normal((clusters, dim))
    x = centres[rng.integers(0, clusters, n)] + 0.5 * rng.standard_normal((n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def real() -> np.ndarray:
    return clustered(np.random.default_rng(0), 3000)


@pytest.fixture(scope="module")
def model(real: np.ndarray) -> DistractorModel:
    return DistractorModel.fit(real, seed=0)


def test_draws_are_deterministic_unit_vectors_and_differ_by_seed(model: DistractorModel, real: np.ndarray) -> None:
    first, again, other = model.sample(500, 1), model.sample(500, 1), model.sample(500, 2)
    np.testing.assert_array_equal(first.vectors, again.vectors)
    np.testing.assert_array_equal(first.parents, again.parents)
    assert not np.allclose(first.vectors, other.vectors)
    np.testing.assert_allclose(np.linalg.norm(first.vectors, axis=1), 1.0, atol=1e-5)
    assert first.parents.min() >= 0 and first.parents.max() < len(real)
    refit = DistractorModel.fit(real, seed=0)
    assert refit.scale == model.scale
    np.testing.assert_array_equal(refit.sample(50, 1).vectors, first.vectors[:50])


def test_larger_registries_contain_the_smaller_ones(model: DistractorModel, real: np.ndarray) -> None:
    big = model.sample(BLOCK + 300, 4)  # crosses a block boundary
    small = model.sample(BLOCK + 10, 4)
    np.testing.assert_array_equal(big.vectors[: BLOCK + 10], small.vectors)
    np.testing.assert_array_equal(model.sample(7, 4).vectors, big.vectors[:7])
    vectors, parents = model.extended(len(real) + 100, 4)
    np.testing.assert_array_equal(vectors[: len(real)], real)
    np.testing.assert_array_equal(vectors[len(real):], big.vectors[:100])
    np.testing.assert_array_equal(parents, big.parents[:100])
    with pytest.raises(ValueError, match="at least the 3,000 real APIs"):
        model.extended(10, 0)


def test_distractors_sit_as_close_to_real_vectors_as_real_vectors_to_each_other(model, real) -> None:
    drawn = model.sample(2000, 5)
    nearest = top_cosines(drawn.vectors, real, 1)[0][:, 0]
    # Calibrated on the median: it matches to within the bisection's and the sample's noise.
    assert abs(np.median(nearest) - np.median(model.real_nn)) < 0.01
    # Neither duplicates nor far away: the spread of the real distribution, no copies.
    assert np.quantile(nearest, 0.05) > np.quantile(model.real_nn, 0.01)
    assert np.quantile(nearest, 0.95) < 0.999 and (nearest > 0.9999).mean() == 0
    # The parent's neighbourhood is where a distractor lands: its nearest real vector is one of them.
    nearest_row = top_cosines(drawn.vectors, real, 1)[1][:, 0]
    assert np.mean([r in model.neighbours[p] for r, p in zip(nearest_row, drawn.parents)]) > 0.9


def test_the_scale_matters_so_the_calibration_is_not_vacuous(model, real) -> None:
    tight = top_cosines(model.with_scale(0.1).sample(500, 5).vectors, real, 1)[0][:, 0]
    loose = top_cosines(model.with_scale(5.0).sample(500, 5).vectors, real, 1)[0][:, 0]
    target = np.median(model.real_nn)
    assert np.median(tight) > target + 0.02 and np.median(loose) < target - 0.02


def test_check_reports_the_evidence(model, real) -> None:
    rng = np.random.default_rng(9)
    rows = rng.integers(0, len(real), 60)
    near = real[rows] + 0.3 * rng.standard_normal((60, real.shape[1]))
    queries = (near / np.linalg.norm(near, axis=1, keepdims=True)).astype(np.float32)
    report = model.check(queries, [{int(r)} for r in rows], seed=3)
    assert report["queries"] == 60 and report["nn_cosine"]["n_synthetic"] == 3000
    assert report["nn_cosine"]["ks"] < 0.25
    assert 0.2 < report["synthetic_share_of_top5_at_1_to_1"] < 0.8
    assert set(report["query_top1"]["synthetic"]) == {"p05", "p25", "p50", "p75", "p95"}


def test_a_distractor_hit_is_named_synthetic_and_is_never_gold() -> None:
    apis = (Api("Hotels", "search hotels", "Travel", "find hotels in a city"),
            Api("Currency", "exchange rate", "Finance", "currency exchange rate"),
            Api("Jokes", "random joke", "Fun", "a random joke"))
    encoder = FakeEncoder()
    base = Retriever(Registry("tiny", apis), encoder, VectorIndex(encoder.encode([a.document for a in apis])))
    copy = base.index.vectors[[1]]  # a distractor identical to the exchange-rate API, its parent
    index = VectorIndex(np.vstack([base.index.vectors, copy]))
    view = DistractorRetriever(base, index, np.array([1]))
    hits = view.hits_for(*index.search(copy[0], 2))
    assert [(h.tool_name, h.api_name, h.category) for h in hits] == [
        ("Currency", "exchange rate", "Finance"), (SYNTHETIC_TOOL, "distractor 0", "Finance")]
    assert view.corpus_vectors.shape == (4, encoder.dim) and view.registry is base.registry
