"""OpenAPI 3.0/3.1 and Swagger 2.0 specs (JSON or YAML, a file or a folder of them) read as APIs, one per operation,
so a team can bring its own HTTP API.

tool = the spec's info.title (else the registry's name), api = the operationId (else "METHOD /path"); every
operation also keeps "METHOD /path" as an alias, so a gold list may name it either way. Parameters come from
the path's and the operation's `parameters` (the operation's win by name and `in`) and from the request body's
schema properties (OpenAPI 3 `requestBody`, Swagger 2 `in: body`). Local $refs are followed, cycles cut.
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from core.data.schema_params import (DanglingRef, Refs, listed_param, parse_json, read_text, schema_params, text,
                                     unique, unreadable)
from core.data.toolbench import Api, Param

METHODS = ("get", "put", "post", "delete", "patch", "options", "head", "trace")
SUFFIXES = (".json", ".yaml", ".yml")
SNIFF_BYTES = 64 * 1024
VERSION_KEY = re.compile(rb"""["'](?:openapi|swagger)["']\s*:|^(?:openapi|swagger)\s*:""", re.MULTILINE)


def _specs(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in SUFFIXES) if path.is_dir() else [path]


def _sniff(path: Path) -> bool:
    if path.suffix.lower() not in SUFFIXES:
        return False
    try:
        with path.open("rb") as fh:
            return VERSION_KEY.search(fh.read(SNIFF_BYTES)) is not None
    except OSError:
        return False


def recognises(path: Path) -> bool:
    """A spec file (an `openapi` or `swagger` key near its start), or a folder whose every spec file is one."""
    specs = _specs(path) if path.exists() else []
    return bool(specs) and all(_sniff(p) for p in specs)


def read(path: Path, name: str) -> list[Api]:
    """Every operation of the spec (or of the folder's specs, sorted) as an Api; DataUnreadable for bad input."""
    specs = _specs(path)
    if not specs:
        raise unreadable(path, f"holds no OpenAPI spec ({', '.join(SUFFIXES)} file)")
    return unique((api for spec in specs for api in _read_spec(spec, name)), path, "operationId")


def _load(path: Path) -> Any:
    raw = read_text(path)
    if path.suffix.lower() == ".json":
        return parse_json(path, raw)
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise unreadable(path, f"is not valid YAML ({where}{getattr(exc, 'problem', None) or exc})") from None


def _checked(path: Path, spec: Any) -> Refs:
    if not isinstance(spec, Mapping):
        raise unreadable(path, f"is not an OpenAPI spec (its top level is {type(spec).__name__}, not a mapping)")
    if "openapi" not in spec and "swagger" not in spec:
        raise unreadable(path, "has no `openapi` or `swagger` version key, so it is not an OpenAPI or Swagger spec")
    if not isinstance(spec.get("paths"), Mapping) or not spec["paths"]:
        raise unreadable(path, "has no paths, so no operations to read")
    try:
        return Refs.checked(spec)
    except DanglingRef as exc:
        raise unreadable(path, str(exc)) from None


def _read_spec(path: Path, name: str) -> list[Api]:
    spec = _load(path)
    refs = _checked(path, spec)
    info, _ = refs.resolve(spec.get("info"))
    title = info.get("title")
    tool = str(title) if title is not None and str(title).strip() else name
    apis = [_api(tool, route, method, op, shared, refs) for route, method, op, shared in _operations(spec, refs)]
    if not apis:
        raise unreadable(path, f"has paths but no operations ({', '.join(METHODS)}) under them")
    return apis


def _operations(spec: Mapping, refs: Refs) -> Iterator[tuple[str, str, Mapping, list]]:
    """(path, method, operation, the path's own parameters) for every operation."""
    for route, item in spec["paths"].items():
        item, _ = refs.resolve(item)
        for method in METHODS:
            if isinstance(op := item.get(method), Mapping):
                yield str(route), method, op, _list(item.get("parameters"))


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _api(tool: str, route: str, method: str, op: Mapping, shared: list, refs: Refs) -> Api:
    alias = f"{method.upper()} {route}"
    op_id, tags = op.get("operationId"), _list(op.get("tags"))
    description = " ".join(dict.fromkeys(text(op.get(k)) for k in ("summary", "description") if op.get(k)))
    return Api(tool, str(op_id) if op_id not in (None, "") else alias, str(tags[0]) if tags else "", description,
               "full" if description else "name_only", _parameters(shared, op, refs), "openapi", (alias,))


def _parameters(shared: list, op: Mapping, refs: Refs) -> tuple[Param, ...]:
    """The path's parameters overridden by the operation's (by name and `in`), then the body's properties."""
    declared: dict[tuple[str, str], tuple[Mapping, Refs]] = {}
    for raw in (*shared, *_list(op.get("parameters"))):
        param, inner = refs.resolve(raw)
        if isinstance(param.get("name"), str) and param["name"]:
            declared[(param["name"], str(param.get("in", "")))] = (param, inner)
    plain = [listed_param(p, inner) for (_, where), (p, inner) in declared.items() if where != "body"]
    bodies = [(p.get("schema"), inner) for (_, where), (p, inner) in declared.items() if where == "body"]
    return (*plain, *(q for schema, inner in [*bodies, *_request_body(op, refs)] for q in schema_params(schema, inner)))


def _request_body(op: Mapping, refs: Refs) -> list[tuple[Any, Refs]]:
    """OpenAPI 3's request body schema (application/json first, else the first media type with one)."""
    body, refs = refs.resolve(op.get("requestBody"))
    content = body.get("content")
    media = [(k, v) for k, v in content.items() if isinstance(v, Mapping) and "schema" in v] \
        if isinstance(content, Mapping) else []
    media.sort(key=lambda kv: kv[0] != "application/json")
    return [(media[0][1]["schema"], refs)] if media else []
