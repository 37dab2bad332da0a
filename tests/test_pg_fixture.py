"""The PostgreSQL fixture's rule: under CI (CI=true) a server that cannot start fails the tests that need it,
loudly; elsewhere they are skipped with the reason. Checked by running one such test in a fresh pytest with
PG_BIN pointing where there is no PostgreSQL."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.settings import PROJECT_ROOT

pytestmark = pytest.mark.subprocess  # a fresh pytest per case

NEEDS_SERVER = "tests/test_store.py::test_run_lifecycle_and_find_by_spec[postgresql]"


@pytest.mark.parametrize(("ci", "outcome"), [("true", "1 error"), ("", "1 skipped")])
def test_a_server_that_cannot_start_fails_under_ci_and_skips_elsewhere(ci: str, outcome: str, tmp_path: Path) -> None:
    env = {**os.environ, "CI": ci, "PG_BIN": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "pytest", NEEDS_SERVER, "-q", "-rs", "-p", "no:cacheprovider"],
                         cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert outcome in out.stdout, out.stdout[-2000:]
    assert f"initdb and pg_ctl were not found in {tmp_path}" in out.stdout
    assert (out.returncode != 0) == bool(ci)
    assert ("PostgreSQL did not start under CI" in out.stdout) == bool(ci)
