"""Zero-shot discovery and planner prompts, each versioned by a hash of its text and schema.

The version goes into every cache key and stored result, so editing a prompt can never
silently mix old and new answers.
"""
from __future__ import annotations

import hashlib
import json
from string import Template
from typing import Any

DESCRIPTION_CHARS = 300

DISCOVERY_TEMPLATE = Template("""\
You are planning how an AI agent could fulfil a user's request with software tools (APIs).
You do not know which tools exist. From the request alone, hypothesise the functions the agent
would need: one function per distinct functional sub-need of the request.

For each function give:
- "name": a descriptive snake_case function name that says what it does (for example
  get_weather_forecast or search_hotels_by_city). Describe the capability; do not guess real
  product, vendor or API names.
- "reasoning": one short sentence on which part of the request it serves.

Reply with JSON only, exactly this shape:
{"stubs": [{"name": "snake_case_function_name", "reasoning": "..."}]}

User request:
$query
""")

PLANNER_TEMPLATE = Template("""\
You are an AI agent's planner. A user made the request below, and a search returned these
candidate APIs (numbered, as "tool/api: description"):

$apis

Choose the APIs needed to fulfil the request, using only APIs from the list above, written
exactly as listed ("tool/api"). Then list the steps to carry out the request with them.
If none of the listed APIs can serve the request, select none and explain why in "refusal";
otherwise "refusal" is null.

Reply with JSON only, exactly this shape:
{"selected_apis": ["tool/api"], "steps": ["..."], "refusal": null}

User request:
$query
""")

DISCOVERY_SCHEMA: dict[str, Any] = {
    "type": "OBJECT",
    "properties": {
        "stubs": {
            "type": "ARRAY",
            "items": {
                "type": "OBJECT",
                "properties": {"name": {"type": "STRING"}, "reasoning": {"type": "STRING"}},
                "required": ["name", "reasoning"],
            },
        },
    },
    "required": ["stubs"],
}

PLANNER_SCHEMA: dict[str, Any] = {
    "type": "OBJECT",
    "properties": {
        "selected_apis": {"type": "ARRAY", "items": {"type": "STRING"}},
        "steps": {"type": "ARRAY", "items": {"type": "STRING"}},
        "refusal": {"type": "STRING", "nullable": True},
    },
    "required": ["selected_apis", "steps", "refusal"],
}


def _version(template: Template, schema: dict[str, Any]) -> str:
    text = template.template + json.dumps(schema, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


DISCOVERY_VERSION = _version(DISCOVERY_TEMPLATE, DISCOVERY_SCHEMA)
PLANNER_VERSION = _version(PLANNER_TEMPLATE, PLANNER_SCHEMA)


def _short(description: str) -> str:
    text = " ".join(description.split())
    if not text:
        return "(no description)"
    return text if len(text) <= DESCRIPTION_CHARS else text[: DESCRIPTION_CHARS - 1].rstrip() + "…"


def discovery_prompt(query: str) -> str:
    return DISCOVERY_TEMPLATE.substitute(query=query.strip())


def planner_prompt(query: str, apis: list[tuple[str, str]]) -> str:
    """`apis` holds (display name "tool/api", description) in retrieval order."""
    lines = [f"{i}. {name.strip()}: {_short(desc)}" for i, (name, desc) in enumerate(apis, 1)]
    listing = "\n".join(lines) or "(no APIs were found)"
    return PLANNER_TEMPLATE.substitute(apis=listing, query=query.strip())


def validate_stubs(obj: dict[str, Any]) -> list[dict[str, str]]:
    """The stubs as [{"name", "reasoning"}]; raises ValueError unless there is at least one named stub."""
    stubs = obj.get("stubs") if isinstance(obj, dict) else None
    if not isinstance(stubs, list) or not stubs:
        raise ValueError("'stubs' must be a non-empty list")
    clean: list[dict[str, str]] = []
    for i, stub in enumerate(stubs):
        if not isinstance(stub, dict):
            raise ValueError(f"stub {i} is not an object")
        name = stub.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"stub {i} has no name")
        reasoning = stub.get("reasoning")
        reasoning = reasoning.strip() if isinstance(reasoning, str) else ""
        clean.append({"name": name.strip(), "reasoning": reasoning})
    return clean


def validate_plan(obj: dict[str, Any]) -> dict[str, Any]:
    """The plan as {"selected_apis": [str], "steps": [str], "refusal": str | None}; raises ValueError.

    Whether the selected APIs were among those offered is not checked here: that is the planner's
    fidelity measure, not a malformed reply.
    """
    if not isinstance(obj, dict):
        raise ValueError("plan is not an object")
    refusal = obj.get("refusal")
    if refusal is not None and not isinstance(refusal, str):
        raise ValueError("'refusal' must be a string or null")
    refusal = (refusal.strip() or None) if isinstance(refusal, str) else None
    selected = obj.get("selected_apis", [] if refusal else None)
    if not isinstance(selected, list) or not all(isinstance(a, str) for a in selected):
        raise ValueError("'selected_apis' must be a list of strings")
    steps = obj.get("steps", [])
    if not isinstance(steps, list):
        raise ValueError("'steps' must be a list")
    return {
        "selected_apis": [a.strip() for a in selected if a.strip()],
        "steps": [str(s) for s in steps],
        "refusal": refusal,
    }
