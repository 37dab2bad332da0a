"""What every export and chart says about where its numbers come from: backend, models, registry, gold, k, commit.

One function, so a CSV, a JSON download, a chart's subtitle and the leaderboard name the same fields.
"""
from __future__ import annotations

from typing import Any

PROVENANCE_FIELDS = ("backend_label", "llm_backend", "llm_model", "embedding_model", "registry", "gold", "k", "runs",
                     "plans", "commit")


def provenance(setup: dict[str, Any] | None, gold: str | None = None, k: int | None = None) -> dict[str, Any]:
    """PROVENANCE_FIELDS from a ResultsReader.setup record; `k` overrides the setup's (a k-sweep row's own k)."""
    setup = setup or {}
    size = setup.get("registry_size")
    registry = setup.get("registry_name")
    return {"backend_label": setup.get("backend_label"), "llm_backend": setup.get("llm_backend"),
            "llm_model": setup.get("llm_model"), "embedding_model": setup.get("embedding_model"),
            "registry": f"{registry} ({int(size):,} APIs)" if registry and size else registry,
            "gold": gold, "k": setup.get("k") if k is None else k, "runs": setup.get("runs"),
            "plans": plans_text(setup.get("planner_sample")) if setup else None,
            "commit": str(setup.get("git_commit") or "")[:10] or None}


def plans_text(sample: dict[str, Any] | None) -> str:
    """Which queries the planners ran on: every one, or a named sample (pass rates and plan measures are its)."""
    if not sample:
        return "all queries"
    return f"sample of {sample.get('per_subset')} per subset (stratified, seed {sample.get('seed')})"


def provenance_line(fields: dict[str, Any]) -> str:
    """One line for a chart's subtitle or a caption: the fields that are known, in order."""
    parts = [str(fields.get("backend_label") or fields.get("llm_backend") or "")]
    if fields.get("llm_model") and fields.get("llm_backend") not in (None, "offline"):
        parts.append(str(fields["llm_model"]))
    parts += [str(fields[f]) for f in ("embedding_model", "registry") if fields.get(f)]
    parts += [f"{f} {fields[f]}" for f in ("gold", "k", "commit") if fields.get(f) is not None]
    if fields.get("plans") and fields["plans"] != "all queries":
        parts.append(f"plans: {fields['plans']}")
    return " · ".join(p for p in parts if p)
