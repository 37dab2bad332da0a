"""A plain list of tools, one API a JSON line, read as APIs: the simplest way to bring a registry that is in no
standard format.

A line is {"tool"?, "api", "description"?, "category"?, "parameters"?, "required"?}: `tool` defaults to the
registry's name; `parameters` is a JSON-schema object, a list of {name, description?, type?, required?}, or a
mapping name -> {type, description} (Seal-Tools' shape, whose required names are the line's `required`).
The file is .jsonl or .jsonl.gz.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.data.json_lines import text_lines
from core.data.schema_params import checked_size, params_of, parse_json, text, unique, unreadable
from core.data.toolbench import Api, DataUnreadable

SUFFIXES = (".jsonl", ".jsonl.gz")


def recognises(path: Path) -> bool:
    """A .jsonl(.gz) file whose first line is a JSON object with an "api"."""
    if not path.is_file() or not path.name.endswith(SUFFIXES):
        return False
    try:
        first = json.loads(next(text_lines(path), (0, "null"))[1])
    except (ValueError, DataUnreadable):
        return False
    return isinstance(first, Mapping) and "api" in first


def read(path: Path, name: str) -> list[Api]:
    """Every line's API; a bad line is a DataUnreadable naming its number. A (tool, api) pair given twice is kept
    once if both lines say the same, else refused."""
    if not path.name.endswith(SUFFIXES):
        raise unreadable(path, f"is not a JSONL file ({' or '.join(SUFFIXES)})")
    checked_size(path)
    apis = unique((_api(path, number, parse_json(path, line, number), name) for number, line in text_lines(path)),
                  path, "api")
    if not apis:
        raise unreadable(path, "holds no APIs (no lines)")
    return apis


def _field(row: Mapping, key: str, default: str | None = None) -> str:
    value = row.get(key, default)
    if not isinstance(value, str) or not value:
        raise ValueError(f"`{key}` must be a non-empty string" if key in row else f"no `{key}`")
    return value


def _api(path: Path, number: int, row: Any, name: str) -> Api:
    try:
        if not isinstance(row, Mapping):
            raise ValueError(f"a JSON {type(row).__name__}, not an object")
        params = params_of(row.get("parameters"), row.get("required"))
        description, category = text(row.get("description")), text(row.get("category"))
        return Api(_field(row, "tool", name), _field(row, "api"), category, description,
                   "full" if description else "name_only", params, "jsonl")
    except ValueError as exc:  # DanglingRef too
        raise unreadable(path, f"line {number}: {exc}") from None
