"""Query sets for any registry: the lab's query JSONL format, and its gold names resolved against a registry.

A registry brought from elsewhere (an OpenAPI spec, MCP tool lists, a JSONL of tools) comes with its test
queries in one documented format, so that every registry is scored the way ToolBench is. One query a line:

    {"id": 7, "query": "What is the weather in Paris?", "gold": ["weather/current", "GET /forecast"],
     "subset": "city", "group": "single"}

- `id`: an integer (the query's `query_id`) or a string (then `query_id` is the 1-based line number); unique
  within its subset.
- `query`: the user's words, not empty.
- `gold`: the names of the APIs that answer it, each resolved against the registry by the first rule that
  matches anything: (1) "tool/api" exactly, split at the last "/" that gives a registry key (tool names may
  hold "/"); (2) an api name; (3) an alias, "METHOD /path" (the method in any case); (4) an api name compared
  without case or whitespace. One match resolves the name; several make it ambiguous; none leave it unmatched.
- `subset`, `group` (optional): both default to "single" or "multi" by how many distinct tools (tool_name) the
  query's `relevant` gold spans; `group` is what the cross-registry charts pool on.
Other keys (a source's own task id, say) are ignored.

Scoring. The lab's two gold definitions become: `api_list` (strict, the default) = the names that resolved to
one API; `relevant` (lenient) = those plus every candidate of an ambiguous name. An unmatched name is in neither:
it is counted and listed (`QuerySet.unresolved`, `summary`), never silently dropped. A query whose `relevant`
gold is empty cannot be scored and is dropped, counted in `dropped` with its uid. A file in which no query keeps
a gold API, or any malformed line, is refused with a one-line DataUnreadable (file, line, what).
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.data.json_lines import json_lines
from core.data.toolbench import Api, ApiKey, DataUnreadable, Query

SINGLE, MULTI = "single", "multi"
EXAMPLES = 5  # per kind, in `summary`
SCORING = ("api_list (strict) = the gold names resolved to one API; relevant (lenient) = those plus every "
           "candidate of an ambiguous name; an unmatched name is in neither; a query with no relevant gold is dropped")


@dataclass(frozen=True)
class Unresolved:
    """A gold name of one query that did not resolve to exactly one API: no candidates = it matched nothing,
    several = it is ambiguous."""

    query_uid: str
    name: str
    candidates: tuple[ApiKey, ...]

    @property
    def ambiguous(self) -> bool:
        return len(self.candidates) > 1


@dataclass(frozen=True)
class QuerySet:
    """The queries that can be scored, and what their gold names did."""

    queries: tuple[Query, ...]
    unresolved: tuple[Unresolved, ...]
    names: int                 # gold names read (distinct within a query), dropped queries' too
    dropped: tuple[str, ...]   # uids of the queries whose gold resolved to nothing

    @property
    def ambiguous(self) -> int:
        return sum(u.ambiguous for u in self.unresolved)

    @property
    def unmatched(self) -> int:
        return len(self.unresolved) - self.ambiguous

    @property
    def resolved(self) -> int:
        return self.names - len(self.unresolved)

    @property
    def dropped_queries(self) -> int:
        return len(self.dropped)


def _alias_key(name: str) -> str:
    """"get  /pets/{id}" -> "GET /pets/{id}": the method in upper case, the path as written."""
    method, _, path = name.strip().partition(" ")
    return f"{method.upper()} {path.strip()}"


def _folded(name: str) -> str:
    return "".join(name.split()).casefold()


def _distinct(table: dict[str, list[ApiKey]]) -> dict[str, tuple[ApiKey, ...]]:
    return {name: tuple(dict.fromkeys(keys)) for name, keys in table.items()}


@dataclass(frozen=True)
class Resolver:
    """Gold names -> registry keys, by the module docstring's four rules."""

    keys: frozenset[ApiKey]
    by_api: Mapping[str, tuple[ApiKey, ...]]
    by_alias: Mapping[str, tuple[ApiKey, ...]]
    by_folded: Mapping[str, tuple[ApiKey, ...]]

    @classmethod
    def of(cls, apis: Sequence[Api]) -> Resolver:
        by_api: dict[str, list[ApiKey]] = defaultdict(list)
        by_alias: dict[str, list[ApiKey]] = defaultdict(list)
        by_folded: dict[str, list[ApiKey]] = defaultdict(list)
        for api in apis:
            by_api[api.api_name].append(api.key)
            by_folded[_folded(api.api_name)].append(api.key)
            for alias in api.aliases:
                by_alias[_alias_key(alias)].append(api.key)
        return cls(frozenset(api.key for api in apis), _distinct(by_api), _distinct(by_alias), _distinct(by_folded))

    def candidates(self, name: str) -> tuple[ApiKey, ...]:
        """The APIs `name` may mean: one when it resolves, several when ambiguous, none when unmatched."""
        cut = len(name)
        while (cut := name.rfind("/", 0, cut)) >= 0:
            if (name[:cut], name[cut + 1:]) in self.keys:
                return ((name[:cut], name[cut + 1:]),)
        for found in (self.by_api.get(name), self.by_alias.get(_alias_key(name)), self.by_folded.get(_folded(name))):
            if found:
                return found
        return ()


def _checked(path: Path, line_no: int, row: dict) -> tuple[int | str, str, list[str]]:
    """The row's id, query and distinct gold names, or a DataUnreadable saying what is wrong with them."""
    def bad(what: str) -> DataUnreadable:
        return DataUnreadable(f"{path} line {line_no}: {what}.")

    for field in ("id", "query", "gold"):
        if field not in row:
            raise bad(f'missing "{field}"')
    query_id, query, gold = row["id"], row["query"], row["gold"]
    if isinstance(query_id, bool) or not isinstance(query_id, (int, str)):
        raise bad(f'"id" must be an integer or a string, not {json.dumps(query_id)}')
    if not isinstance(query, str) or not query.strip():
        raise bad('"query" is empty' if isinstance(query, str) else '"query" must be a string')
    if not isinstance(gold, list):
        raise bad(f'"gold" must be a list of API names, not {type(gold).__name__}')
    if not all(isinstance(name, str) for name in gold):
        raise bad('"gold" must hold API names (strings)')
    for field in ("subset", "group"):
        if field in row and (not isinstance(row[field], str) or not row[field].strip()):
            raise bad(f'"{field}" must be a non-empty string')
    return query_id, query, list(dict.fromkeys(gold))


def read_query_set(path: Path, apis: Sequence[Api]) -> QuerySet:
    """The query set in `path` (the module docstring's format), its gold resolved against `apis`."""
    resolver = Resolver.of(apis)
    queries: list[Query] = []
    unresolved: list[Unresolved] = []
    dropped: list[str] = []
    names = 0
    ids: dict[tuple[str, int | str], int] = {}
    uids: dict[str, int] = {}
    for line_no, row in json_lines(path):
        query_id, text, gold = _checked(path, line_no, row)
        found = [(name, resolver.candidates(name)) for name in gold]
        strict = tuple(dict.fromkeys(c[0] for _, c in found if len(c) == 1))
        lenient = tuple(dict.fromkeys(key for _, c in found for key in c))
        default = MULTI if len({tool for tool, _ in lenient}) > 1 else SINGLE
        subset, group = row.get("subset", default), row.get("group", default)
        number = query_id if isinstance(query_id, int) else line_no
        uid = f"{subset}:{number}"
        for seen, key in ((ids, (subset, query_id)), (uids, uid)):
            if key in seen:
                raise DataUnreadable(f"{path} line {line_no}: duplicate id {json.dumps(query_id)} (query {uid}, "
                                     f"first on line {seen[key]}).")
            seen[key] = line_no
        names += len(gold)
        unresolved += [Unresolved(uid, name, c) for name, c in found if len(c) != 1]
        if lenient:
            queries.append(Query(subset, group, number, text, relevant_apis=lenient, api_list=strict))
        else:
            dropped.append(uid)
    if not queries:
        what = "holds no queries" if not uids else "names no API of the registry in any query's gold"
        raise DataUnreadable(f"{path}: {what}; nothing to score.")
    return QuerySet(tuple(queries), tuple(unresolved), names, tuple(dropped))


def _shown(items: Sequence[str]) -> str:
    more = f", … ({len(items) - EXAMPLES} more)" if len(items) > EXAMPLES else ""
    return ", ".join(items[:EXAMPLES]) + more


def summary(qs: QuerySet) -> str:
    """What an import prints: the counts, and up to five examples of each kind of unresolved name."""
    ambiguous = [f"{u.name!r} ({u.query_uid}: {len(u.candidates)} APIs, "
                 f"{' | '.join('/'.join(c) for c in u.candidates[:3])}{' | …' if len(u.candidates) > 3 else ''})"
                 for u in qs.unresolved if u.ambiguous]
    unmatched = [f"{u.name!r} ({u.query_uid})" for u in qs.unresolved if not u.ambiguous]
    lines = [f"{len(qs.queries)} queries kept, {qs.dropped_queries} dropped (no gold API in the registry); "
             f"{qs.names} gold names: {qs.resolved} resolved, {qs.ambiguous} ambiguous, {qs.unmatched} unmatched"]
    for label, items in (("ambiguous (scored as any of their APIs under relevant, not under api_list)", ambiguous),
                         ("unmatched (scored under neither)", unmatched), ("dropped", list(qs.dropped))):
        if items:
            lines.append(f"  {label}: {_shown(items)}")
    return "\n".join(lines)
