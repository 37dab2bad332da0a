"""Parameters as an API's Params (JSON-schema properties or a list), with local $refs followed and cycles cut, for
every registry reader. Also what they share besides: the size limit, JSON parsing, the one-line errors.

Only local refs ("#/a/b", JSON pointers with ~0/~1 unescaped) are followed; an external one is left as it is
(never fetched). A ref already on the current resolution stack resolves to an empty schema, so a cycle ends.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from core.data.toolbench import Api, ApiKey, DataUnreadable, Param

MAX_BYTES = 50 * 1024 * 1024  # a registry file larger than this is refused before it is read
EMPTY: Mapping[str, Any] = {}
NEWLINE = re.compile(r"\s*\n\s*")
SCHEMA_WORDS = frozenset({"type", "properties", "required", "title", "description", "$schema", "$defs",
                          "definitions", "additionalProperties", "allOf"})


def unreadable(path: Path, what: str) -> DataUnreadable:
    """The one-line error for bad input: the file, then what is wrong (newlines in `what` become spaces)."""
    return DataUnreadable(f"{path}: {NEWLINE.sub(' ', what)}")


def checked_size(path: Path) -> None:
    """Refuses a file over MAX_BYTES (or one that is not there) before anything reads it."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise unreadable(path, f"cannot be read ({exc.strerror or exc})") from None
    if size > MAX_BYTES:
        raise unreadable(path, f"is {size:,} bytes, over the {MAX_BYTES // 2**20} MB ({MAX_BYTES:,}-byte) limit")


def read_text(path: Path) -> str:
    """The file's text, once it is known to be at most MAX_BYTES and UTF-8."""
    checked_size(path)
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise unreadable(path, f"is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise unreadable(path, f"cannot be read ({exc.strerror or exc})") from None


def parse_json(path: Path, raw: str, line: int = 0) -> Any:
    """raw parsed as JSON (the whole file, or its line `line`); bad JSON is a DataUnreadable saying where."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        where, at = (f"line {line} is", f"column {exc.colno}") if line else ("is", f"line {exc.lineno}")
        raise unreadable(path, f"{where} not valid JSON ({exc.msg} at {at})") from None


def text(value: object) -> str:
    """A description as embedded: whitespace collapsed, None as ""."""
    return " ".join(str(value).split()) if value is not None else ""


class DanglingRef(ValueError):
    """A local $ref that points at nothing."""


def _pointer(root: Any, ref: str) -> Any:
    node = root
    for raw in filter(None, unquote(ref[1:]).split("/")):
        part = raw.replace("~1", "/").replace("~0", "~")
        try:
            node = node[int(part)] if isinstance(node, list) else node[part]
        except (KeyError, IndexError, ValueError, TypeError):
            raise DanglingRef(f"$ref {ref!r} points at nothing") from None
    return node


def _nodes(root: Any) -> Iterator[Any]:
    """Every mapping and list in root, each once (YAML aliases may share or even nest them)."""
    seen: set[int] = set()
    todo = [root]
    while todo:
        node = todo.pop()
        if isinstance(node, (Mapping, list)) and id(node) not in seen:
            seen.add(id(node))
            yield node
            todo.extend(node.values() if isinstance(node, Mapping) else node)


@dataclass(frozen=True)
class Refs:
    """The document local $refs point into, and the refs being resolved (the stack that cuts cycles)."""

    root: Any
    stack: tuple[str, ...] = ()

    @classmethod
    def checked(cls, root: Any) -> Refs:
        """Refs into root, once every local $ref in it is known to resolve (DanglingRef otherwise)."""
        for node in _nodes(root):
            ref = node.get("$ref") if isinstance(node, Mapping) else None
            if isinstance(ref, str) and ref.startswith("#"):
                _pointer(root, ref)
        return cls(root)

    def resolve(self, node: Any) -> tuple[Mapping, Refs]:
        """node with its $ref chain followed (an empty schema when it is not a mapping, or when a ref is
        already on the stack), and the Refs to resolve what is inside it with."""
        refs = self
        while isinstance(node, Mapping) and isinstance(ref := node.get("$ref"), str) and ref.startswith("#"):
            if ref in refs.stack:
                return EMPTY, refs
            refs, node = Refs(self.root, (*refs.stack, ref)), _pointer(self.root, ref)
        return (node if isinstance(node, Mapping) else EMPTY), refs


def _own_type(schema: Mapping) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        return "|".join(map(str, kind))
    return kind if isinstance(kind, str) else ""


def type_name(schema: Any, refs: Refs) -> str:
    """A schema's type as shown: "string", "string|null" for a list or an anyOf/oneOf, "" when it gives none."""
    schema, refs = refs.resolve(schema)
    if kind := _own_type(schema):
        return kind
    branches = schema.get("anyOf") or schema.get("oneOf")
    kinds = (_own_type(refs.resolve(branch)[0]) for branch in (branches if isinstance(branches, list) else ()))
    return "|".join(dict.fromkeys(kind for kind in kinds if kind))


def _listed(schema: Mapping, key: str) -> list:
    value = schema.get(key)
    return value if isinstance(value, list) else []


def _properties(schema: Any, refs: Refs, seen: frozenset[int] = frozenset()) -> Iterator[tuple[str, Any, bool, Refs]]:
    """(name, property schema, required, refs to resolve it with), allOf branches merged in."""
    schema, refs = refs.resolve(schema)
    if id(schema) in seen:  # YAML aliases can nest a schema in its own allOf without any $ref
        return
    required = set(map(str, _listed(schema, "required")))
    properties = schema.get("properties")
    for name, prop in (properties.items() if isinstance(properties, Mapping) else ()):
        yield str(name), prop, str(name) in required, refs
    for branch in _listed(schema, "allOf"):
        yield from _properties(branch, refs, seen | {id(schema)})


def schema_params(schema: Any, refs: Refs) -> tuple[Param, ...]:
    """The Params of an object schema's properties (required from its `required`), in their order."""
    out: dict[str, Param] = {}
    for name, prop, required, inner in _properties(schema, refs):
        resolved, inner = inner.resolve(prop)
        out.setdefault(name, Param(name, text(resolved.get("description")), type_name(resolved, inner), required))
    return tuple(out.values())


def listed_param(item: Any, refs: Refs) -> Param:
    """One entry of a parameter list, {name, description?, type? (or schema), required?}; a bare string is a name."""
    if isinstance(item, str):
        return Param(item)
    item, refs = refs.resolve(item)
    if not isinstance(item.get("name"), str) or not item["name"]:
        raise ValueError("a parameter without a name")
    kind = type_name(item, refs) or type_name(item.get("schema"), refs)
    return Param(item["name"], text(item.get("description")), kind, bool(item.get("required")))


def params_of(value: Any, required: Any = None) -> tuple[Param, ...]:
    """Params given as a JSON-schema object, a list of parameters, or a mapping name -> {type, description}
    (Seal-Tools' shape, with `required` the names it requires); ValueError for anything else."""
    if value is None:
        return ()
    refs = Refs.checked(value)
    if isinstance(value, list):
        return tuple(listed_param(item, refs) for item in value)
    if not isinstance(value, Mapping):
        raise ValueError(f"parameters must be a JSON schema, a list or a mapping, not {type(value).__name__}")
    if value.get("type") == "object" or ("properties" in value and set(value) <= SCHEMA_WORDS):
        return schema_params(value, refs)
    return schema_params({"properties": value, "required": required or []}, refs)


def unique(apis: Iterable[Api], path: Path, what: str) -> list[Api]:
    """apis with exact repeats dropped; one name given to two different APIs is refused, naming it."""
    kept: dict[ApiKey, Api] = {}
    for api in apis:
        if kept.setdefault(api.key, api) != api:
            raise unreadable(path, f"{what} {api.api_name!r} appears twice in {api.tool_name!r} for different APIs; "
                                   "names must be unique within a tool")
    return list(kept.values())
