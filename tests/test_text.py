"""One text normalisation for what is searched (core.data.text): a query laced with invisible characters searches
as its plain twin, on the real encoder and, where the data is here, the real registry's top-5."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.data.text import normalise
from core.retrieval.archs import baseline
from core.retrieval.assemble import build_retriever
from core.retrieval.discovery import QueryError, Retriever, clean_query
from core.retrieval.index import VectorIndex
from core.data.registry import Registry
from core.settings import Settings
from tests.helpers import SMALL_APIS

PLAIN = "find hotels in London and the GBP rate"
# ZWSP between words, the rest inside
LACED = "find\u200bhotels\u200c in\u200d Lon\u2060don and the \ufeffGBP rate\u200e"


def test_normalise_folds_compatibility_forms_and_drops_format_characters() -> None:
    assert normalise(LACED) == PLAIN
    assert normalise("ｆｉｎｄ ﬁle  \t hotels") == "find file hotels"  # fullwidth, a ligature, whitespace runs
    assert normalise("\u00e9t\u00e9") == "\u00e9t\u00e9" and normalise("e\u0301") == "\u00e9"  # NFC-composed
    assert normalise(PLAIN) == PLAIN


def test_a_query_of_invisible_characters_only_is_refused() -> None:
    with pytest.raises(QueryError, match="no searchable text"):
        clean_query("\u200b\u200d\u2060\ufeff")


def test_the_laced_twin_embeds_as_the_plain_query(numpy_encoder) -> None:
    registry = Registry("small", SMALL_APIS)
    retriever = Retriever(registry, numpy_encoder, VectorIndex(numpy_encoder.encode(registry.documents)))
    laced, plain = retriever.encode([LACED, PLAIN])
    np.testing.assert_array_equal(laced, plain)
    assert not np.array_equal(numpy_encoder.encode([LACED])[0], plain)  # without it, another point


@pytest.mark.slow
def test_the_laced_twin_has_the_plain_querys_top_5_on_the_full_registry(real_data: Path, tmp_path: Path) -> None:
    settings = Settings.from_env(env={"TOOLBENCH_DATA": str(real_data), "LLM_BACKEND": "offline",
                                      "CACHE_DIR": str(tmp_path), "REGISTRY": "full"})
    retriever, _ = build_retriever(settings)
    plain = baseline().retrieve(clean_query(PLAIN), None, 5, retriever)
    laced = baseline().retrieve(clean_query(LACED), None, 5, retriever)
    assert [h.key for h in laced.hits] == [h.key for h in plain.hits]
    assert any("hotel" in h.tool_name.lower() for h in plain.hits)
