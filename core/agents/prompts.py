"""Discovery and planner prompts in two styles, each versioned by a hash of its text and schema.

- "instruction" (Gemini, OpenAI-compatible servers): the paper's zero-shot prompts.
- "chat" (local instruct models, through their chat template): the same zero-shot prompts under a
  grammar with bounded lengths, as in the paper a stub is a name and one short sentence; the planner
  names offered APIs only (each at most once) and either selects with steps or refuses.
- "completion" (a base model such as gemma-3-270m, which does not follow instructions): the same
  tasks as few-shot examples to continue, with bounded schemas that llama.cpp turns into a
  grammar. The examples are this project's own requests, none from the benchmark, over many
  domains so that no one example's function names are copied into unrelated answers.

The version goes into every cache key and stored result, so editing a prompt can never
silently mix old and new answers.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from string import Template
from typing import Any

from core.agents.llm.grammar import GRAMMAR_VERSION

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


def _short(description: str, limit: int = DESCRIPTION_CHARS) -> str:
    text = " ".join(description.split())
    if not text:
        return "(no description)"
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def validate_stubs(obj: dict[str, Any]) -> list[dict[str, str]]:
    """The stubs as [{"name", "reasoning"}], first of each name kept; raises ValueError unless there is at
    least one named stub."""
    stubs = obj.get("stubs") if isinstance(obj, dict) else None
    if not isinstance(stubs, list) or not stubs:
        raise ValueError("'stubs' must be a non-empty list")
    clean: dict[str, dict[str, str]] = {}
    for i, stub in enumerate(stubs):
        if not isinstance(stub, dict):
            raise ValueError(f"stub {i} is not an object")
        name = stub.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"stub {i} has no name")
        reasoning = stub.get("reasoning")
        reasoning = reasoning.strip() if isinstance(reasoning, str) else ""
        clean.setdefault(name.strip(), {"name": name.strip(), "reasoning": reasoning})  # a repeat searches nothing new
    return list(clean.values())


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


# ---------------------------------------------------------------- the completion style (base models)

COMPLETION_DISCOVERY_TEMPLATE = Template("""\
Each request below is broken into the functions an agent would call: one function per distinct need, \
named in snake_case for what it does, each with the words of the request it serves.

Request: I'm visiting Lisbon next month. Find hotels near the old town and tell me the weather forecast there.
Functions: {"stubs": [{"name": "search_hotels", "reasoning": "Find hotels near the old town"}, \
{"name": "get_weather_forecast", "reasoning": "the weather forecast there"}]}

Request: Tell me a random joke about cats.
Functions: {"stubs": [{"name": "get_random_joke", "reasoning": "a random joke about cats"}]}

Request: What is the price of Bitcoin on Binance today, and how much is 0.5 BTC in US dollars?
Functions: {"stubs": [{"name": "get_crypto_price", "reasoning": "the price of Bitcoin on Binance today"}, \
{"name": "convert_currency", "reasoning": "how much is 0.5 BTC in US dollars"}]}

Request: Please check with the MailCheck API whether the e-mail address of my new client is valid.
Functions: {"stubs": [{"name": "validate_email_address", \
"reasoning": "check with the MailCheck API whether the e-mail address is valid"}]}

Request: Show the Premier League table, the latest scores and the top scorers of the season.
Functions: {"stubs": [{"name": "get_league_table", "reasoning": "the Premier League table"}, \
{"name": "get_live_scores", "reasoning": "the latest scores"}, \
{"name": "get_top_scorers", "reasoning": "the top scorers of the season"}]}

Request: Find chicken and rice recipes on Tasty and give me the nutrition facts of the first one.
Functions: {"stubs": [{"name": "search_recipes", "reasoning": "chicken and rice recipes on Tasty"}, \
{"name": "get_nutrition_facts", "reasoning": "the nutrition facts of the first one"}]}

Request: Where is the IP address 8.8.8.8 located? Then list restaurants near that place.
Functions: {"stubs": [{"name": "get_ip_location", "reasoning": "Where is the IP address 8.8.8.8 located"}, \
{"name": "search_nearby_restaurants", "reasoning": "restaurants near that place"}]}

Request: Get the lyrics of 'Yellow' by Coldplay and the band's upcoming concerts from Songkick.
Functions: {"stubs": [{"name": "get_song_lyrics", "reasoning": "the lyrics of 'Yellow' by Coldplay"}, \
{"name": "get_artist_concerts", "reasoning": "the band's upcoming concerts from Songkick"}]}

Request: $query
Functions:""")

COMPLETION_PLANNER_TEMPLATE = Template("""\
For each request, an agent's planner picks the APIs it needs from a numbered list that a search \
returned, by their numbers, and writes the steps. When no API in the list fits, it picks none and says why.

Request: What time is it in Tokyo?
APIs:
1. Movie DB/search_movies: Search movies by title.
2. Lyrics Finder/get_lyrics: Lyrics of a song.
Plan: {"selected": [], "steps": [], "refusal": "$refusal"}

Request: Find vegetarian lasagna recipes and convert 200 grams to ounces.
APIs:
1. Recipe Hub/search_recipes: Search recipes by keyword and diet.
2. Crypto Ticker/get_price: Current price of a cryptocurrency.
3. Unit Converter/convert_weight: Convert between units of weight.
Plan: {"selected": [1, 3], "steps": ["1: Find vegetarian lasagna recipes", "3: convert 200 grams to ounces"], \
"refusal": null}

Request: Give me the five-day forecast for Oslo.
APIs:
1. Weather Now/current_weather: Current weather of a city.
2. Open Forecast/daily_forecast: Daily weather forecast for up to 16 days.
3. News Wire/top_headlines: The top news headlines of today.
Plan: {"selected": [2], "steps": ["2: Give me the five-day forecast for Oslo"], "refusal": null}

Request: $query
APIs:
$apis
Plan:""")

COMPLETION_DESCRIPTION_CHARS = 150
# A base model cannot say why nothing fits: given room for a reason it copied the example's ("none of these APIs
# tells the time") into unrelated plans. Its refusal is this one declared marker, which no answer can vary.
COMPLETION_REFUSAL = "none of the listed APIs fits this request"
COMPLETION_PLANNER_TEMPLATE = Template(COMPLETION_PLANNER_TEMPLATE.safe_substitute(refusal=COMPLETION_REFUSAL))


def completion_discovery_schema() -> dict[str, Any]:
    """Bounded like the examples: 1-3 stubs, short names and reasons (see core.agents.llm.grammar). A small
    model fills whatever room a list leaves, so the bound is the examples' own maximum."""
    stub = {"type": "OBJECT", "properties": {"name": {"type": "STRING", "minLength": 3, "maxLength": 40},
                                             "reasoning": {"type": "STRING", "minLength": 3, "maxLength": 70}}}
    return {"type": "OBJECT", "properties": {"stubs": {"type": "ARRAY", "items": stub, "minItems": 1,
                                                       "maxItems": 3}}}


def completion_planner_schema(n_apis: int) -> dict[str, Any]:
    """APIs are picked by number (one token each, where a name costs ten), each at most once and in list
    order, which stops a small model repeating a pick until the list is full. A plan either selects with
    steps and no refusal, or refuses with nothing selected and the declared marker (COMPLETION_REFUSAL) as its
    only possible text. A number can only name an offered API, so fidelity is 1 by construction."""
    chosen = {"type": "ARRAY", "items": {"type": "INTEGER", "enum": list(range(1, n_apis + 1))},
              "uniqueItems": True, "minItems": 1, "maxItems": n_apis}
    steps = {"type": "ARRAY", "items": {"type": "STRING", "minLength": 3, "maxLength": 60}, "minItems": 1,
             "maxItems": 3}
    select = {"type": "OBJECT", "properties": {"selected": chosen, "steps": steps, "refusal": {"type": "NULL"}}}
    refuse = {"type": "OBJECT", "properties": {"selected": {"type": "ARRAY", "maxItems": 0},
                                               "steps": {"type": "ARRAY", "maxItems": 0},
                                               "refusal": {"type": "STRING", "enum": [COMPLETION_REFUSAL]}}}
    return {"anyOf": [select, refuse] if n_apis else [refuse]}


def chat_discovery_schema() -> dict[str, Any]:
    """The paper's stub shape, bounded: 1-5 stubs (its Gemini wrote 2.4-2.5 a query), a snake_case name,
    one short sentence of reasoning. A reply can neither ramble nor be cut off mid-JSON."""
    stub = {"type": "OBJECT", "properties": {"name": {"type": "STRING", "minLength": 3, "maxLength": 48},
                                             "reasoning": {"type": "STRING", "minLength": 3, "maxLength": 140,
                                                           "format": "sentence"}}}
    return {"type": "OBJECT", "properties": {"stubs": {"type": "ARRAY", "items": stub, "minItems": 1,
                                                       "maxItems": 5}}}


def chat_planner_schema(names: list[str]) -> dict[str, Any]:
    """PLANNER_SCHEMA's shape, bounded: the selection names offered APIs only, in list order, each once,
    so fidelity is 1 by construction (and labelled so); a plan selects with steps or refuses."""
    chosen = {"type": "ARRAY", "items": {"type": "STRING", "enum": list(names)}, "uniqueItems": True,
              "minItems": 1, "maxItems": len(names)}
    steps = {"type": "ARRAY", "items": {"type": "STRING", "minLength": 3, "maxLength": 140, "format": "sentence"},
             "minItems": 1, "maxItems": 5}
    select = {"type": "OBJECT", "properties": {"selected_apis": chosen, "steps": steps, "refusal": {"type": "NULL"}}}
    refuse = {"type": "OBJECT", "properties": {"selected_apis": {"type": "ARRAY", "maxItems": 0},
                                               "steps": {"type": "ARRAY", "maxItems": 0},
                                               "refusal": {"type": "STRING", "minLength": 3, "maxLength": 140,
                                                           "format": "sentence"}}}
    return {"anyOf": [select, refuse] if names else [refuse]}


def _numbers_to_names(obj: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """A completion-style plan (APIs picked by number) as a plan object of PLANNER_SCHEMA's shape."""
    picks = obj.get("selected") if isinstance(obj, dict) else None
    if not isinstance(picks, list) or not all(isinstance(i, int) and 1 <= i <= len(names) for i in picks):
        raise ValueError("'selected' must list numbers of offered APIs")
    return {"selected_apis": [names[i - 1] for i in picks], "steps": obj.get("steps", []),
            "refusal": obj.get("refusal")}


@dataclass(frozen=True)
class PromptStyle:
    """The prompts, schemas and versions one kind of model is asked with."""

    name: str
    discovery_template: Template
    planner_template: Template
    description_chars: int
    discovery_schema: Callable[[], dict[str, Any]]
    planner_schema: Callable[[list[str]], dict[str, Any]]  # from the offered names, in list order
    plan_from_reply: Callable[[dict[str, Any], list[str]], dict[str, Any]]  # reply -> PLANNER_SCHEMA's shape
    discovery_version: str = ""
    planner_version: str = ""

    def discovery(self, query: str) -> str:
        return self.discovery_template.substitute(query=query.strip())

    def planner(self, query: str, apis: list[tuple[str, str]]) -> str:
        """`apis` holds (display name "tool/api", description) in retrieval order."""
        lines = [f"{i}. {name.strip()}: {_short(desc, self.description_chars)}"
                 for i, (name, desc) in enumerate(apis, 1)]
        listing = "\n".join(lines) or "(no APIs were found)"
        return self.planner_template.substitute(apis=listing, query=query.strip())


def _style(name: str, discovery: Template, planner: Template, chars: int,
           discovery_schema: Callable[[], dict[str, Any]], planner_schema: Callable[[list[str]], dict[str, Any]],
           plan_from_reply: Callable[[dict[str, Any], list[str]], dict[str, Any]], prefix: str = "") -> PromptStyle:
    """A style with its versions: a hash of its templates and schemas (a grammar-bound style's also names the
    grammar's version), so any edit is a new version."""
    return PromptStyle(name, discovery, planner, chars, discovery_schema, planner_schema, plan_from_reply,
                       prefix + _version(discovery, discovery_schema()),
                       prefix + _version(planner, planner_schema(["a/b", "c/d", "e/f", "g/h", "i/j"])))


def _as_is(obj: dict[str, Any], names: list[str]) -> dict[str, Any]:
    return obj


STYLES = {
    "instruction": _style("instruction", DISCOVERY_TEMPLATE, PLANNER_TEMPLATE, DESCRIPTION_CHARS,
                          lambda: DISCOVERY_SCHEMA, lambda names: PLANNER_SCHEMA, _as_is),
    "chat": _style("chat", DISCOVERY_TEMPLATE, PLANNER_TEMPLATE, DESCRIPTION_CHARS, chat_discovery_schema,
                   chat_planner_schema, _as_is, f"chat-g{GRAMMAR_VERSION}-"),
    "completion": _style("completion", COMPLETION_DISCOVERY_TEMPLATE, COMPLETION_PLANNER_TEMPLATE,
                         COMPLETION_DESCRIPTION_CHARS, completion_discovery_schema,
                         lambda names: completion_planner_schema(len(names)), _numbers_to_names,
                         f"fewshot-g{GRAMMAR_VERSION}-"),
}


def style_of_version(version: str) -> str | None:
    """The style a stored prompt version was written in (by its prefix, so an older version of a style is
    still that style), or None for a version of no prompt (the offline heuristic's)."""
    for style in STYLES.values():
        if version in (style.discovery_version, style.planner_version):
            return style.name
    for prefix, name in (("chat-g", "chat"), ("fewshot-g", "completion")):
        if version.startswith(prefix):
            return name
    return None
