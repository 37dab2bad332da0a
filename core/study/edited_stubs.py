"""Stubs a researcher wrote or edited, searched the way PtR and the hybrid search a model's: "what if the stub had
said X?" answered by stub embedding and search alone, with no LLM call.

An edited result is never a model's output: every block made here is labelled EDITED, and nothing here writes to the
results store. The stubs travel in a URL as compact JSON (`to_param` / `from_param`), so a shared link opens them.
"""
from __future__ import annotations

import json
import unicodedata
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from core.agents.llm.base import Usage
from core.agents.stubs import MAX_STUBS
from core.data.text import normalise
from core.data.toolbench import ApiKey
from core.evaluation import metrics
from core.retrieval.archs import ARCHS_BY_NAME, WrittenStubs, arch
from core.retrieval.discovery import MAX_QUERY_CHARS, Discovery, Retriever, check_k, clean_query, undecodable_at
from core.retrieval.memo import memoised
from core.retrieval.records import Stub
from core.study.query_result import ArchResult, StubWriting

EDITED = "edited stubs (no LLM)"  # the label of every result made from given stubs, wherever it is shown
MAX_PARAM_CHARS = 4_000  # stubs longer than this as JSON are not put into a URL (the page says so)
EDITED_ARCHS = ("ptr", "hybrid")  # the architectures that search stubs


class StubsError(ValueError):
    """Stubs that cannot be searched; the message is one line, shown to the user as is."""


def check_stubs(stubs: Sequence[Stub]) -> tuple[Stub, ...]:
    """The stubs stripped, or StubsError naming the first unusable one: at most MAX_STUBS (a model's are cut there
    too), a name with a letter or digit, every text valid UTF-8 and at most MAX_QUERY_CHARS long."""
    if len(stubs) > MAX_STUBS:
        raise StubsError(f"{len(stubs)} stubs given; PtR searches at most {MAX_STUBS} (a model's are cut there too)")
    out = []
    for number, stub in enumerate(stubs, 1):
        name, reasoning = stub.name.strip(), stub.reasoning.strip()
        for field, text in (("name", name), ("reasoning", reasoning)):
            if len(text) > MAX_QUERY_CHARS:
                raise StubsError(f"stub {number}'s {field} has {len(text):,} characters; the limit is "
                                 f"{MAX_QUERY_CHARS:,}")
            if undecodable_at(text) is not None:
                raise StubsError(f"stub {number}'s {field} is not valid UTF-8 text; retype it")
        if not any(unicodedata.category(char)[0] in "LN" for char in normalise(name)):
            raise StubsError(f"stub {number} has no name with a letter or digit; name the tool it hypothesises")
        out.append(Stub(name, reasoning))
    return tuple(out)


def stubs_from_json(data: object) -> tuple[Stub, ...]:
    """Stubs from decoded JSON: a list of {"name", "reasoning"} objects or [name, reasoning] pairs (a bare name is
    a stub without reasoning), or an object holding such a list as "stubs"; StubsError for any other shape,
    naming the item. A null reasoning is none, as the store reads it (StubWriting.from_stubs_json)."""
    if isinstance(data, dict) and "stubs" in data:  # a stored or `query --json` block's stubs as they are
        data = data["stubs"]
    if not isinstance(data, list):
        got = "an object without \"stubs\"" if isinstance(data, dict) else type(data).__name__
        raise StubsError(f"stubs are a list of {{\"name\", \"reasoning\"}} objects, got {got}")
    stubs = []
    for number, item in enumerate(data, 1):
        if isinstance(item, str):
            stubs.append(Stub(item))
        elif isinstance(item, dict) and isinstance(item.get("name"), str) \
                and isinstance(item.get("reasoning") or "", str):
            stubs.append(Stub(item["name"], item.get("reasoning") or ""))
        elif isinstance(item, list) and 1 <= len(item) <= 2 and all(isinstance(x, str) for x in item):
            stubs.append(Stub(*item))
        else:
            raise StubsError(f"stub {number} is not an object with a text `name` (and `reasoning`): "
                             f"{json.dumps(item, ensure_ascii=False)[:80]}")
    return check_stubs(stubs)


def to_param(stubs: Sequence[Stub]) -> str:
    """The stubs as one URL parameter's value: compact JSON pairs, `[]` for none."""
    return json.dumps([[s.name, s.reasoning] if s.reasoning else [s.name] for s in stubs], ensure_ascii=False,
                      separators=(",", ":"))


def from_param(text: str) -> tuple[Stub, ...]:
    """to_param's inverse; StubsError (one line) for text that is not such JSON."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise StubsError(f"the link's stubs are not JSON ({exc.args[0][:80]})") from None
    except RecursionError:  # [[[[… nested past Python's stack: a hostile link, not stubs
        raise StubsError("the link's stubs are not JSON (nested too deep)") from None
    return stubs_from_json(data)


@dataclass(frozen=True)
class EditedSearch:
    """PtR's and the hybrid's retrieval from given stubs. `ptr` is None with no stubs (PtR has nothing to search);
    the hybrid then searches the raw query alone."""

    stubs: tuple[Stub, ...]
    ptr: Discovery | None
    hybrid: Discovery

    def get(self, name: str) -> Discovery | None:
        return {"ptr": self.ptr, "hybrid": self.hybrid}[name]

    def block(self, name: str, gold: Collection[ApiKey] | None = None) -> ArchResult | None:
        """`name`'s block as `query --json` and the Inspector show a model's, labelled EDITED (its backend_label)
        so that it never passes for a model's output; the stubs ride on the architecture that carries them (PtR),
        with no fallback, no tokens and no writing time. None where `get` is None."""
        found = self.get(name)
        if found is None:
            return None
        writing = StubWriting(self.stubs, False, None, Usage(), None) if ARCHS_BY_NAME[name].carries_stubs else None
        return replace(ArchResult.of(name, found, None, gold), writing=writing, backend_label=EDITED)


def search_edited(query: str, stubs: Sequence[Stub], k: int, retriever: Retriever) -> EditedSearch:
    """The stubs searched as PtR and the hybrid search a model's (core.retrieval.archs): stub embedding and search,
    no LLM. The query is cleaned and k checked as run_query does them (QueryError), so that the stubs a run wrote
    give that run's hits; each text is embedded once for both architectures (a memoised retriever)."""
    query, k, written = clean_query(query), check_k(k), WrittenStubs(check_stubs(stubs))
    retriever = memoised(retriever)
    ptr = arch("ptr").retrieve(query, written, k, retriever) if written.stubs else None
    return EditedSearch(written.stubs, ptr, arch("hybrid").retrieve(query, written, k, retriever))


@dataclass(frozen=True)
class EditDiff:
    """What an edit changed in one architecture's top k: APIs gained and lost, gold newly found and no longer
    found, and recall before and after (None without gold)."""

    gained: tuple[ApiKey, ...]
    lost: tuple[ApiKey, ...]
    gold_found: tuple[ApiKey, ...]
    gold_missed: tuple[ApiKey, ...]
    recall_before: float | None
    recall_after: float | None

    @property
    def recall_change(self) -> float | None:
        if self.recall_before is None or self.recall_after is None:
            return None
        return self.recall_after - self.recall_before


def edit_diff(before: Sequence[ApiKey], after: Sequence[ApiKey], gold: Collection[ApiKey] | None,
              k: int) -> EditDiff:
    """The difference between the top k of the unedited stubs (`before`) and of the edited ones (`after`)."""
    was, now = list(before)[:k], list(after)[:k]
    gold_set = frozenset(gold or ())
    return EditDiff(tuple(key for key in now if key not in was), tuple(key for key in was if key not in now),
                    tuple(key for key in now if key in gold_set and key not in was),
                    tuple(key for key in was if key in gold_set and key not in now),
                    metrics.recall_at_k(was, gold_set, k) if gold_set else None,
                    metrics.recall_at_k(now, gold_set, k) if gold_set else None)
