"""The one place a value is made storable, so that SQLite and PostgreSQL hold and give back the same strings.

PostgreSQL refuses a NUL character and a string longer than its VARCHAR(n) column where SQLite keeps both; every
write (and every lookup, so a cut spec still finds its run) cleans its values here first.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import String

from core.store.schema import QueryResult, Run

TRUNCATED = "…"  # ends a stored string that was cut to its column's length
# table -> {column: n} for every VARCHAR(n) column
STRING_LENGTHS = {table.name: {c.name: c.type.length for c in table.columns
                               if isinstance(c.type, String) and c.type.length}
                  for table in (Run.__table__, QueryResult.__table__)}


def without_nul(value: Any) -> Any:
    """Every string in a value, JSON included (keys too), without NUL characters: the store's rule, also
    applied to what `query --json` prints, so the CLI shows the text a stored row holds."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {without_nul(k): without_nul(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_nul(v) for v in value]
    return value


def clean(table: str, values: dict[str, Any]) -> dict[str, Any]:
    """`values` for `table` ("runs" or "query_results") as every store keeps them: NUL characters dropped from
    every string, and a string longer than its VARCHAR(n) column cut to n characters ending in TRUNCATED."""
    lengths = STRING_LENGTHS[table]
    out: dict[str, Any] = {}
    for name, value in values.items():
        value = without_nul(value)
        limit = lengths.get(name)
        if limit is not None and isinstance(value, str) and len(value) > limit:
            value = value[:limit - len(TRUNCATED)] + TRUNCATED
        out[name] = value
    return out
