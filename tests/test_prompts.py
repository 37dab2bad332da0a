"""Prompt text, hash versions, schemas accepted by google-genai, and reply validation."""
from __future__ import annotations

import hashlib
import json
import re

import pytest
from google.genai import types

from core.agents import prompts
from core.agents.prompts import (DISCOVERY_SCHEMA, DISCOVERY_VERSION, PLANNER_SCHEMA, PLANNER_VERSION, STYLES,
                                 validate_plan, validate_stubs)
from core.data.toolbench import display_name


def test_discovery_prompt_holds_the_query_and_the_stub_shape_only() -> None:
    text = STYLES["instruction"].discovery("  What's the weather in Paris and a cheap hotel there? $5 ")
    assert "What's the weather in Paris and a cheap hotel there? $5" in text
    assert '{"stubs": [{"name": "snake_case_function_name", "reasoning": "..."}]}' in text
    assert "tool/api" not in text


def test_planner_prompt_numbers_strips_and_truncates() -> None:
    long = "word " * 200
    text = STYLES["instruction"].planner("book it", [(" Skyscanner/search_flights", "Find flights."),
                                      ("Hotels/list", long), ("Bare/api", "")])
    assert "1. Skyscanner/search_flights: Find flights." in text
    assert "3. Bare/api: (no description)" in text
    line2 = next(line for line in text.splitlines() if line.startswith("2. "))
    description = line2.removeprefix("2. Hotels/list: ")
    assert len(description) <= prompts.DESCRIPTION_CHARS and description.endswith("…")
    assert text.rstrip().endswith("book it")
    assert '"refusal": null' in text


def test_planner_prompt_with_no_apis_says_so() -> None:
    assert "(no APIs were found)" in STYLES["instruction"].planner("q", [])


def test_display_name_strips_for_display_only() -> None:
    assert display_name(" Weather ", "get_forecast") == "Weather/get_forecast"


def test_versions_hash_template_and_schema() -> None:
    for version, template, schema in [
        (DISCOVERY_VERSION, prompts.DISCOVERY_TEMPLATE, DISCOVERY_SCHEMA),
        (PLANNER_VERSION, prompts.PLANNER_TEMPLATE, PLANNER_SCHEMA),
    ]:
        assert re.fullmatch(r"[0-9a-f]{12}", version)
        expected = hashlib.sha256((template.template + json.dumps(schema, sort_keys=True)).encode()).hexdigest()
        assert version == expected[:12]
    assert DISCOVERY_VERSION != PLANNER_VERSION


@pytest.mark.parametrize("schema", [DISCOVERY_SCHEMA, PLANNER_SCHEMA])
def test_schemas_are_accepted_by_google_genai(schema: dict) -> None:
    config = types.GenerateContentConfig(response_mime_type="application/json", response_schema=schema)
    assert config.response_schema == schema
    assert types.Schema.model_validate(schema).type == types.Type.OBJECT


def test_validate_stubs_normalises() -> None:
    obj = {"stubs": [{"name": " get_weather ", "reasoning": " for the forecast "}, {"name": "find_hotel"}]}
    assert validate_stubs(obj) == [
        {"name": "get_weather", "reasoning": "for the forecast"}, {"name": "find_hotel", "reasoning": ""}]


@pytest.mark.parametrize("obj", [
    {}, {"stubs": []}, {"stubs": "get_weather"}, {"stubs": ["get_weather"]},
    {"stubs": [{"reasoning": "x"}]}, {"stubs": [{"name": "  "}]}, {"stubs": [{"name": 3}]},
])
def test_validate_stubs_rejects(obj: dict) -> None:
    with pytest.raises(ValueError):
        validate_stubs(obj)


def test_validate_plan_normalises() -> None:
    assert validate_plan({"selected_apis": ["A/x", " "], "steps": ["call A/x"], "refusal": ""}) == {
        "selected_apis": ["A/x"], "steps": ["call A/x"], "refusal": None}
    assert validate_plan({"refusal": "nothing fits"}) == {
        "selected_apis": [], "steps": [], "refusal": "nothing fits"}
    # APIs outside the offered list are kept: the planner measures that as fidelity
    assert validate_plan({"selected_apis": ["Made/up"], "refusal": None})["selected_apis"] == ["Made/up"]


@pytest.mark.parametrize("obj", [
    {}, {"selected_apis": "A/x"}, {"selected_apis": [1]}, {"selected_apis": [], "refusal": 3},
    {"selected_apis": [], "steps": "do it"},
])
def test_validate_plan_rejects(obj: dict) -> None:
    with pytest.raises(ValueError):
        validate_plan(obj)
