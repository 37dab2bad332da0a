"""GBNF from reply schemas: the exact layout, the bounds, and what is refused. Checked by a tiny GBNF
matcher written here (a reference, not llama.cpp), so these tests need no model."""
from __future__ import annotations

import json
import re
from functools import cache

import pytest

from core.agents.llm.grammar import SchemaError, gbnf
from core.agents.prompts import COMPLETION_REFUSAL, STYLES, completion_discovery_schema, completion_planner_schema


def to_regex(grammar: str) -> re.Pattern[str]:
    """Turn a non-recursive GBNF grammar (what gbnf() writes) into one anchored regular expression."""
    rules = {}
    for line in grammar.strip().splitlines():
        name, body = line.split(" ::= ", 1)
        rules[name] = body

    token = re.compile(r'\s*("(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]|[()|?*+]|\{\d+,\d+\}|[a-zA-Z0-9-]+)')

    @cache
    def expand(name: str) -> str:
        out, body, pos = [], rules[name], 0
        while pos < len(body):
            match = token.match(body, pos)
            if match is None:
                break
            pos, tok = match.end(), match.group(1)
            if tok.startswith('"'):
                out.append(re.escape(json.loads(tok)))
            elif tok.startswith("["):
                out.append(tok.encode().decode("unicode_escape"))
            elif tok in "()|?*+" or tok.startswith("{"):
                out.append({"(": "(?:"}.get(tok, tok))
            else:
                out.append(f"(?:{expand(tok)})")
        return "".join(out)

    return re.compile(expand("root"), re.DOTALL)


STUBS = completion_discovery_schema()


def test_the_stub_grammar_accepts_the_examples_layout_only() -> None:
    rx = to_regex(gbnf(STUBS))
    ok = ('{"stubs": [{"name": "search_hotels", "reasoning": "hotels in Rome"}, '
          '{"name": "get_weather", "reasoning": "rain"}]}')
    assert rx.fullmatch(ok)
    assert rx.fullmatch(" " + ok) is None and rx.fullmatch(ok.replace(", ", ",")) is None  # the examples' layout only
    assert rx.fullmatch('{"stubs": []}') is None  # at least one stub
    four = '{"stubs": [' + ", ".join(['{"name": "abc", "reasoning": "xyz"}'] * 4) + "]}"
    assert rx.fullmatch(four) is None  # at most three
    assert rx.fullmatch('{"stubs": [{"name": "ab", "reasoning": "xyz"}]}') is None  # names of 3+ characters
    assert rx.fullmatch('{"stubs": [{"name": "' + "x" * 41 + '", "reasoning": "xyz"}]}') is None
    assert rx.fullmatch('{"stubs": [{"name": "a\\"b", "reasoning": "xyz"}]}')  # escapes are JSON's


def test_the_planner_grammar_selects_each_offered_number_once_in_order_or_refuses() -> None:
    rx = to_regex(gbnf(completion_planner_schema(4)))
    assert rx.fullmatch('{"selected": [1, 3], "steps": ["1: do it"], "refusal": null}')
    assert rx.fullmatch('{"selected": [1, 2, 3, 4], "steps": ["a b", "c d"], "refusal": null}')
    assert rx.fullmatch('{"selected": [3, 1], "steps": ["abc"], "refusal": null}') is None  # list order
    assert rx.fullmatch('{"selected": [2, 2], "steps": ["abc"], "refusal": null}') is None  # no repeats
    assert rx.fullmatch('{"selected": [5], "steps": ["abc"], "refusal": null}') is None  # only offered numbers
    refusal = f'{{"selected": [], "steps": [], "refusal": "{COMPLETION_REFUSAL}"}}'
    assert rx.fullmatch(refusal)
    assert rx.fullmatch('{"selected": [], "steps": [], "refusal": "none of these APIs tells the time"}') is None
    assert rx.fullmatch(f'{{"selected": [1], "steps": ["abc"], "refusal": "{COMPLETION_REFUSAL}"}}') is None
    assert rx.fullmatch('{"selected": [], "steps": [], "refusal": null}') is None
    none = to_regex(gbnf(completion_planner_schema(0)))
    assert none.fullmatch(refusal)  # the declared marker is the only refusal a base model can write


def test_every_reply_the_grammar_allows_is_json_the_style_can_read() -> None:
    style = STYLES["completion"]
    reply = json.loads('{"selected": [2], "steps": ["2: forecast"], "refusal": null}')
    assert style.plan_from_reply(reply, ["A/a", "B/b"]) == {"selected_apis": ["B/b"], "steps": ["2: forecast"],
                                                           "refusal": None}
    with pytest.raises(ValueError):
        style.plan_from_reply({"selected": [3]}, ["A/a", "B/b"])


def test_unsupported_schemas_are_refused() -> None:
    with pytest.raises(SchemaError):
        gbnf({"type": "NUMBER"})
    with pytest.raises(SchemaError):
        gbnf({"type": "OBJECT", "properties": {}})
    with pytest.raises(SchemaError):
        gbnf({"type": "ARRAY", "items": {"type": "STRING"}, "minItems": 3, "maxItems": 2})
