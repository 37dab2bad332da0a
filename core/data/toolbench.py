"""Loaders for ToolBench data (the compact JSONL files and the official download layout), and the gold definitions.

Names are kept byte-for-byte (some tool names start with a space): gold matching depends on it.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.data.errors import DataUnreadable  # noqa: F401 - every reader's error, imported from here too
from core.data.json_lines import json_lines
from core.settings import DataNotFoundError

ApiKey = tuple[str, str]
SUBSETS = ("G1_instruction", "G1_category", "G1_tool", "G2_instruction", "G2_category", "G3_instruction")
PAPER_SUBSETS = ("G1_instruction", "G2_instruction", "G3_instruction")


@dataclass(frozen=True)
class Gold:
    """A gold definition: which of a query's API lists counts as right. Scoring, the stored columns, the CLI's
    `--gold` choices, the sidebar and the report read these declarations, so another one is one more entry in
    GOLD_LIST (and its columns in the store)."""

    name: str      # in every stored column (recall_api_list), URL (?gold=) and export
    field: str     # the Query field holding its APIs
    caption: str   # the sidebar's caption
    note: str      # how the report states what its numbers use

    def of(self, query: Query) -> frozenset[ApiKey]:
        return frozenset(getattr(query, self.field))

    def column(self, metric: str) -> str:
        """The stored per-query column of `metric` (recall, precision, hit, plan_pass) under this gold."""
        return f"{metric}_{self.name}"

    @property
    def hit_flag(self) -> str:
        """The key marking a stored hit (or a stub's top-1) as gold under it: plain "gold" for the default gold,
        which every hit list reads."""
        return "gold" if self is DEFAULT_GOLD else self.column("gold")


GOLD_LIST = (
    Gold("api_list", "api_list", "paper-comparable",
         "gold = api_list (the APIs each query was generated from, ~5-7 per query; closest to the paper's)"),
    Gold("relevant", "relevant_apis", "ToolBench's",
         "gold = relevant (ToolBench's relevant APIs, ~2-3 per query; not the paper's definition)"),
)
GOLDS_BY_NAME = {g.name: g for g in GOLD_LIST}
GOLD_DEFINITIONS = tuple(GOLDS_BY_NAME)
DEFAULT_GOLD = GOLD_LIST[0]  # the paper's: every default, and a stored result's unsuffixed marks


def gold_definition(name: str) -> Gold:
    """The declaration of `name`; ValueError naming the known ones otherwise."""
    try:
        return GOLDS_BY_NAME[name]
    except KeyError:
        raise ValueError(f"gold definition must be one of {', '.join(GOLDS_BY_NAME)}, not {name!r}") from None


def subset_order(subsets: object) -> list[str]:
    """Known subsets in the study's order (G1 → G3), then any others alphabetically, each single before multi."""
    present = set(subsets)  # type: ignore[arg-type]
    return [s for s in SUBSETS if s in present] + sorted(present - set(SUBSETS), key=_single_first)


def _single_first(subset: str) -> tuple[str, int]:
    stem = subset.removesuffix("single").removesuffix("multi")
    return stem, 0 if subset.endswith("single") else 1 if subset.endswith("multi") else 2


def display_name(tool: str, api: str) -> str:
    """The name shown in prompts and screens; raw names (leading spaces and all) are kept elsewhere."""
    return f"{tool.strip()}/{api.strip()}"


class NamedApi:
    """What names an API, registry entry or search hit alike: its key as stored and matched, its display name."""

    tool_name: str
    api_name: str

    @property
    def key(self) -> ApiKey:
        return (self.tool_name, self.api_name)

    @property
    def display_name(self) -> str:
        return display_name(self.tool_name, self.api_name)


@dataclass(frozen=True)
class Param:
    """One input of an API, as its registry declares it (an OpenAPI parameter, a JSON-schema property)."""

    name: str
    description: str = ""
    type: str = ""
    required: bool = False


@dataclass(frozen=True)
class Api(NamedApi):
    tool_name: str
    api_name: str
    category: str = ""
    description: str = ""
    doc_source: str = "full"
    parameters: tuple[Param, ...] = ()  # ToolBench's compact files keep none
    source: str = "toolbench"           # the registry source that read it (core.data.sources)
    aliases: tuple[str, ...] = ()       # other names a gold list may use: an OpenAPI operation's "METHOD /path"

    @property
    def document(self) -> str:
        """The exact text that is embedded: "{tool_name}/{api_name}: {description}", then its parameters' names and
        descriptions when it has any (so every ToolBench document is unchanged)."""
        head = f"{self.tool_name}/{self.api_name}: {self.description}"
        if not self.parameters:
            return head
        params = "; ".join(f"{p.name}: {p.description}" if p.description else p.name for p in self.parameters)
        return f"{head} Parameters: {params}"


@dataclass(frozen=True)
class Query:
    subset: str
    group: str
    query_id: int
    query: str
    relevant_apis: tuple[ApiKey, ...]
    api_list: tuple[ApiKey, ...]
    solvable: bool = False

    def gold(self, definition: str) -> frozenset[ApiKey]:
        return gold_definition(definition).of(self)

    @property
    def uid(self) -> str:
        return f"{self.subset}:{self.query_id}"


FIX_DATA = "restore it (git checkout data/toolbench) or point TOOLBENCH_DATA at intact data"


def _rows(path: Path, make: Callable[[dict], object]) -> list:
    """make(row) for every row of a JSONL file; a row without a field it needs is a DataUnreadable naming it."""
    out = []
    for line_no, row in json_lines(path, FIX_DATA):
        try:
            out.append(make(row))
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise DataUnreadable(f"{path} line {line_no} lacks a usable field ({type(exc).__name__}: {exc}); "
                                 f"{FIX_DATA}.") from None
    return out


def _first_existing(data_dir: Path, names: tuple[str, ...]) -> Path | None:
    return next((data_dir / n for n in names if (data_dir / n).is_file()), None)


REGISTRY_FILES = {  # no fallback: "full" read from the documented file would be 4,940 APIs under the 47k's name
    "full": ("registry_full.jsonl.gz", "registry_full.jsonl"),
    "documented": ("registry.jsonl.gz", "registry.jsonl"),
}


def is_official_layout(data_dir: Path) -> bool:
    return (data_dir / "toolenv").is_dir() or (data_dir / "tools").is_dir()


def registry_path(data_dir: Path, which: str = "full") -> Path:
    """The compact registry file for `which`; DataNotFoundError when there is none, saying when only the
    documented registry is there (so that "full" is never the 4,940 APIs under another name)."""
    names = REGISTRY_FILES[which]
    path = _first_existing(data_dir, names)
    if path is not None:
        return path
    documented = _first_existing(data_dir, REGISTRY_FILES["documented"])
    if which == "full" and documented is not None:
        raise DataNotFoundError(f"No full registry ({names[0]}) in {data_dir}, only the documented one "
                                f"({documented.name}); set REGISTRY=documented to search that, or restore "
                                f"{names[0]} (git checkout data/toolbench) or point TOOLBENCH_DATA at data holding it.")
    raise DataNotFoundError(f"No registry file ({names[0]}) in {data_dir}; set TOOLBENCH_DATA.")


def load_registry(data_dir: Path, which: str = "full") -> list[Api]:
    """The API registry: `full` (~47k, registry_full.jsonl.gz) or `documented` (4,940)."""
    apis: list[Api] = []
    if is_official_layout(data_dir):
        apis, source = load_official_registry(data_dir), data_dir
    else:
        source = registry_path(data_dir, which)
        seen: set[ApiKey] = set()
        for api in _rows(source, _api_of):
            if api.key not in seen:
                seen.add(api.key)
                apis.append(api)
    if not apis:
        raise DataUnreadable(f"{source} holds no APIs; {FIX_DATA}.")
    return apis


def _api_of(row: dict) -> Api:
    api = Api(row["tool_name"], row["api_name"], row.get("category") or "", row.get("description") or "",
              row.get("doc_source", "full"))
    if not all(isinstance(value, str) for value in (api.tool_name, api.api_name, api.category, api.description,
                                                     api.doc_source)):
        raise TypeError("a name, category, description or doc_source that is not text")
    return api


def _pairs(raw: object, field: str) -> tuple[ApiKey, ...]:
    """The API keys of a gold list: [tool, api] pairs or objects with tool_name and api_name (the official files'
    api_list); ValueError saying which item is neither."""
    if not isinstance(raw, list):
        raise ValueError(f"`{field}` is a list of APIs, got {_kind(raw)}")
    out: list[ApiKey] = []
    for number, item in enumerate(raw, 1):
        key = (item.get("tool_name"), item.get("api_name")) if isinstance(item, dict) else item
        if not (isinstance(key, (list, tuple)) and len(key) == 2 and all(isinstance(name, str) for name in key)):
            raise ValueError(f"`{field}` item {number} is a [tool, api] pair or an object with `tool_name` and "
                             f"`api_name`, got {_kind(item)}")
        out.append((key[0], key[1]))
    return tuple(out)


def _kind(value: object) -> str:
    """How a message names a JSON value's type (an object by its first keys, escaped: the message stays one line)."""
    if isinstance(value, dict):
        return "an object" + (f" with {', '.join(json.dumps(k)[:40] for k in list(value)[:4])}" if value else
                              " with no keys")
    return {list: "a list", str: "text", bool: "true/false", int: "a number", float: "a number",
            type(None): "null"}.get(type(value), type(value).__name__)


def load_queries(data_dir: Path) -> list[Query]:
    """All test queries: compact queries.jsonl.gz, else official test_instruction/*.json."""
    path = _first_existing(data_dir, ("queries.jsonl.gz", "queries.jsonl"))
    if path is not None:
        return _rows(path, lambda r: Query(r["subset"], r["group"], int(r["query_id"]), r["query"],
                                           _pairs(r["relevant_apis"], "relevant_apis"),
                                           _pairs(r["api_list"], "api_list"),
                                           bool(r.get("stabletoolbench_solvable", False))))
    folder = next((p for p in (data_dir / "test_instruction", data_dir / "data" / "test_instruction") if p.is_dir()),
                  None)
    if folder is None:
        raise DataNotFoundError(f"No queries (queries.jsonl.gz or test_instruction/) in {data_dir}; set TOOLBENCH_DATA.")
    return load_official_queries(folder)


FIX_DOWNLOAD = "point TOOLBENCH_DATA at an intact ToolBench download"
FIX_OFFICIAL = f"fix or remove it, or {FIX_DOWNLOAD}"


def _official_json(path: Path) -> object:
    """The JSON in one file of an official download; DataUnreadable naming it when it cannot be read, is not
    UTF-8 or is not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise DataUnreadable(f"{path} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); "
                             f"{FIX_OFFICIAL}.") from None
    except json.JSONDecodeError as exc:
        raise DataUnreadable(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
                             f"{FIX_OFFICIAL}.") from None
    except OSError as exc:
        raise DataUnreadable(f"{path} cannot be read ({exc.strerror or exc}); {FIX_OFFICIAL}.") from None


def _wrong_shape(path: Path, what: str) -> DataUnreadable:
    return DataUnreadable(f"{path}: {what}; {FIX_OFFICIAL}.")


def load_official_queries(folder: Path) -> list[Query]:
    """Official ToolBench `test_instruction/<subset>.json` files (keys query, query_id, api_list, relevant APIs),
    each checked for the fields read here: a file that is not a list of such queries is named with what is wrong."""
    queries: list[Query] = []
    for path in sorted(folder.glob("*.json")):
        items = _official_json(path)
        if not isinstance(items, list):
            raise _wrong_shape(path, f"a test file is a list of queries, got {_kind(items)}")
        queries += [_official_query(path, number, item) for number, item in enumerate(items, 1)]
    return queries


def _official_query(path: Path, number: int, item: object) -> Query:
    subset = path.stem
    if not isinstance(item, dict):
        raise _wrong_shape(path, f"a query is an object with `query_id` and `query`, got {_kind(item)} "
                                 f"(query {number})")
    missing = [field for field in ("query_id", "query") if field not in item]
    if missing:
        raise _wrong_shape(path, f"query {number} has no `{missing[0]}`, got {_kind(item)}")
    query_id, text = _whole_number(item["query_id"]), item["query"]
    if query_id is None:
        raise _wrong_shape(path, f"query {number}'s `query_id` is a whole number, got {_kind(item['query_id'])}")
    if not isinstance(text, str):
        raise _wrong_shape(path, f"query {number}'s `query` is text, got {_kind(text)}")
    try:
        relevant = _pairs(item.get("relevant APIs", []), "relevant APIs")
        api_list = _pairs(item.get("api_list", []), "api_list")
    except ValueError as exc:
        raise _wrong_shape(path, f"query {number}'s {exc}") from None
    return Query(subset, subset.split("_")[0], query_id, text, relevant, api_list)


def _whole_number(value: object) -> int | None:
    """A query id as the official files write it (a number, sometimes as text); None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    try:
        return int(value)
    except ValueError:
        return None


def load_official_registry(data_dir: Path) -> list[Api]:
    """Official ToolBench `toolenv/tools/<Category>/<tool>.json` documents. A file that is not JSON is skipped
    (ToolBench ships a few; skipping one loses only that tool); valid JSON that is not a tool is not ToolBench's,
    and is named with what is wrong."""
    tools_dir = next((p for p in (data_dir / "toolenv" / "tools", data_dir / "tools") if p.is_dir()), None)
    if tools_dir is None:
        raise DataUnreadable(f"{data_dir / 'toolenv'} has no tools/ folder (an official download keeps its tools in "
                             f"toolenv/tools/<Category>/<tool>.json); {FIX_DOWNLOAD}.")
    paths = sorted(tools_dir.glob("*/*.json"))
    if not paths:
        raise DataUnreadable(f"{tools_dir} holds no APIs: no tool files (<Category>/<tool>.json) in it; "
                             f"{FIX_DOWNLOAD}.")
    apis: list[Api] = []
    seen: set[ApiKey] = set()
    for path in paths:
        try:
            doc = _official_json(path)
        except DataUnreadable:
            continue
        for api in _tool_apis(path, doc):
            if api.api_name and api.key not in seen:
                seen.add(api.key)
                apis.append(api)
    return apis


def _tool_apis(path: Path, doc: object) -> list[Api]:
    """The APIs of one official tool file, checked for the fields read here (the caller skips an API without a
    name)."""
    if not isinstance(doc, dict):
        raise _wrong_shape(path, f"a tool is an object with `tool_name` and `api_list`, got {_kind(doc)}")
    tool = doc.get("tool_name") or doc.get("name") or path.stem
    items = doc.get("api_list", [])
    if not isinstance(tool, str):
        raise _wrong_shape(path, f"`tool_name` is text, got {_kind(tool)}")
    if not isinstance(items, list):
        raise _wrong_shape(path, f"`api_list` is a list of APIs, got {_kind(items)}")
    apis = []
    for number, item in enumerate(items, 1):
        if not isinstance(item, dict):
            raise _wrong_shape(path, f"an `api_list` item is an object with `name` and `description`, got "
                                     f"{_kind(item)} (item {number})")
        name, description = item.get("name") or "", item.get("description") or ""
        for field, value in (("name", name), ("description", description)):
            if not isinstance(value, str):
                raise _wrong_shape(path, f"`api_list` item {number}'s `{field}` is text, got {_kind(value)}")
        apis.append(Api(tool, name, path.parent.name, description, "full"))
    return apis
