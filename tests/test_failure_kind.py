"""Whether a row failed is the outcome's typed FailureKind, never its message's wording.

The agents carry the kind as a field (JsonReply, StubOutcome, Plan) and the study marks the row failed from it;
the stored texts only say why. So rewording every failure message cannot turn an outage into a measured
fallback, and a reply the model itself got wrong stays a labelled fallback that counts.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.agents.factory import Agents
from core.agents.llm import ERROR_KINDS, FailureKind, LLMError, LLMResponse, Usage, failure_of
from core.agents.llm.jsonparse import MAX_REPLY_CHARS, failure_reason
from core.agents.planner import LLMPlanner
from core.agents.stubs import LLMStubWriter, StubOutcome
from core.retrieval.memo import memoised
from core.study.main_study import run_main
from core.study.rows import llm_failure
from core.store.store import Store
from tests.helpers import bench_context, make_queries, make_retriever


class ScriptedClient:
    """An LLM client whose every call does the same thing: raise, or answer `text`."""

    backend = "fake"
    model = "fake-llm-1"

    def __init__(self, answer: Callable[[], str]) -> None:
        self.answer = answer

    def generate(self, prompt: str, *, schema: dict[str, Any] | None = None,
                 temperature: float = 0.0) -> LLMResponse:
        return LLMResponse(self.answer(), Usage(), 0.0, self.backend, self.model)


def raising(exc: Exception) -> Callable[[], str]:
    def answer() -> str:
        raise exc
    return answer


FAILURES = {
    **{kind.value: (raising(LLMError(kind, "the sky is a pleasant blue")), kind) for kind in ERROR_KINDS},
    "client": (raising(RuntimeError("an SDK choked")), FailureKind.CLIENT),
    "reply_too_large": (lambda: "{" + " " * MAX_REPLY_CHARS + "}", FailureKind.REPLY_TOO_LARGE),
}


def study_rows(tmp_path: Path, answer: Callable[[], str]) -> list[dict[str, Any]]:
    """The stored rows of a one-run main study whose stub writer and planner ask `answer`."""
    store = Store(f"sqlite:///{tmp_path / 'results.sqlite'}")
    client = ScriptedClient(answer)
    run_main(bench_context(store, memoised(make_retriever()), make_queries(1), commit="x"), runs=1, concurrency=1,
             agents_for=lambda r: Agents(LLMStubWriter(client), LLMPlanner(client, lambda key: None)))
    return [row for run in store.runs(kind="main")
            for row in store.results(run.id, ("error", "stub_fallback", "stub_error"))]


@pytest.mark.parametrize("name", list(FAILURES))
def test_a_reworded_failure_still_fails_the_row(name: str, tmp_path: Path, monkeypatch) -> None:
    answer, kind = FAILURES[name]
    client = ScriptedClient(answer)
    assert LLMStubWriter(client).write("find hotels").failure is kind
    # every failure now reads like the model's own malformed answer, the text the study used to trust
    monkeypatch.setattr("core.agents.llm.jsonparse.failure_reason", lambda kind, detail: "malformed_json: fine")
    rows = study_rows(tmp_path, answer)
    assert len(rows) == 4 and all(row["error"] and "malformed_json: fine" in row["error"] for row in rows)


def test_the_models_own_bad_answer_stays_a_counted_fallback(tmp_path: Path) -> None:
    rows = study_rows(tmp_path, lambda: "no JSON here, sorry")
    assert len(rows) == 4 and not any(row["error"] for row in rows)
    assert [row["stub_error"][:15] for row in rows if row["stub_fallback"]] == ["malformed_json:"] * 2


def test_a_text_that_reads_like_a_failure_is_not_one_without_its_kind() -> None:
    outcome = StubOutcome((), "fake", "m", "v", fallback=True, error="llm_error[timeout]: reworded")
    assert llm_failure(outcome) is None


def test_stored_texts_are_read_back_as_their_kind() -> None:
    for kind in FailureKind:
        assert failure_of(failure_reason(kind, "anything: at all")) is kind
    # as the committed database stores them: a timeout, and one during the repair of a malformed reply
    assert failure_of("llm_error[timeout]: generation passed the 60 s limit after 12 tokens") is FailureKind.TIMEOUT
    assert failure_of("llm_error[rate_limit]: slow down: (repairing malformed_json: x)") is FailureKind.RATE_LIMIT
    assert failure_of("reply_too_large: 40,000 characters, over the cap of 32,000") is FailureKind.REPLY_TOO_LARGE
    assert [failure_of(t) for t in (None, "", "malformed_json: x", "validation: y", "llm_error[nonsense]: z")] == [
        None] * 5
