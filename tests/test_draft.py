"""Prompt-lookup drafts (core.agents.llm.draft): what comes after the latest earlier occurrence of the suffix."""
from __future__ import annotations

from core.agents.llm.draft import MAX_DRAFT, PromptLookup


def test_the_longest_suffix_that_occurred_before_drafts_what_followed_it() -> None:
    lookup = PromptLookup([1, 2, 3, 4, 5, 9, 2, 3, 7, 8])
    lookup.add(2)
    assert lookup.draft() == [3, 7, 8, 2]  # "2" last occurred before 3, 7, 8 (then the 2 just added)
    lookup.add(3)
    assert lookup.draft() == [7, 8, 2, 3]  # "2 3": its latest occurrence, not the first
    lookup = PromptLookup([5, 6, 7, 1, 6, 7, 2, 9])
    lookup.add(6)
    lookup.add(7)
    assert lookup.draft(2) == [2, 9]  # "6 7" latest, cut at the limit


def test_a_suffix_never_seen_drafts_nothing_and_a_draft_stops_at_the_end() -> None:
    assert PromptLookup([1, 2, 3]).draft() == []
    lookup = PromptLookup([4, 4])
    assert lookup.draft() == [4]  # "4" was followed by the last 4: only what exists
    assert PromptLookup(list(range(5)) * 10).draft() == [0, 1, 2, 3, 4]  # up to the suffix itself, no further
    assert PromptLookup(list(range(20)) * 2).draft() == list(range(MAX_DRAFT))


def test_instances_generating_at_once_share_the_cores_and_a_drafting_client_caches_apart(tmp_path) -> None:
    """Two calls at once on two cores with two threads each ran both plans 2.5x slower than one after the other
    (benchmarks/inspector_stream.py): each instance asks before every evaluation how many threads it has now."""
    from core.agents.llm.local_llama import LocalLlamaClient
    from core.agents.llm.local_model import LocalModel

    model = LocalModel(tmp_path / "m.gguf", "m", "ab" * 32, "Q4_K_M", "0")
    client = LocalLlamaClient(model, n_threads=4, instances=2)
    shares = []
    for busy in (0, 1, 2, 3):
        client._generating = busy
        shares.append(client._threads_now())
    assert shares == [4, 4, 2, 1]
    identities = {LocalLlamaClient(model, draft=d, flash=f).identity for d in (0, 2) for f in (False, True)}
    assert len(identities) == 4  # drafted or flash-attention replies never serve plain ones (nor each other)
    assert client.identity == model.sha256  # the stored decoder's identity is the file's alone: the cache stays valid
