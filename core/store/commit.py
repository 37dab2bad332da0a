"""The commit a run records as its provenance (runs.git_commit): HEAD of the project checkout.

Here, below the studies that start runs, rather than beside core.analysis.provenance, which only reads the
recorded commit back: core.study (layer 5) may not import core.analysis (layer 6).
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from core.settings import PROJECT_ROOT


def git_commit(root: Path = PROJECT_ROOT) -> str:
    """HEAD of the project checkout, or "unknown" outside git (a deployed copy, no git binary)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"
