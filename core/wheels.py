"""Hash-pinned wheels that are downloaded, never installed or imported: what the local LLMs and the embedding
models are assembled from (core.agents.llm.model_install, core.retrieval.embed_install).

They are kept in one folder outside the clone (LLM_WHEELS), so that every later clone assembles without a download.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from core.local_models import WheelPart

WHEELS_DIR = Path(os.environ.get("LLM_WHEELS", Path.home() / ".cache" / "tool-discovery-lab" / "wheels"))
_BLOCK = 1 << 22


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def wheel_file(part: WheelPart, folder: Path) -> Path | None:
    """The downloaded wheel of `part` in `folder`, found by its normalised name and version."""
    stem = f"{part.package.replace('-', '_')}-{part.version}-".lower()
    matches = sorted(p for p in folder.glob("*.whl") if p.name.lower().startswith(stem))
    return matches[0] if matches else None


def verified_wheel(part: WheelPart, folder: Path) -> Path | None:
    """The wheel when it is there with its pinned hash; a damaged one is removed (pip fetches it again)."""
    path = wheel_file(part, folder)
    if path is None or sha256_file(path) == part.wheel_sha256:
        return path
    path.unlink()
    return None


def pip_download(requirements: list[str], folder: Path, pip: tuple[str, ...] | None = None) -> str | None:
    """pip downloads the pinned wheels into `folder` (no dependencies: a chunk wheel's requirements are unrelated
    packages): None, or pip's last line when it could not."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as req:
        req.write("".join(line + "\n" for line in requirements))
    command = [*(pip or (sys.executable, "-m", "pip")), "download", "--no-deps", "--only-binary=:all:",
               "--require-hashes", "--disable-pip-version-check", "-q", "-d", str(folder), "-r", req.name]
    try:
        done = subprocess.run(command, capture_output=True, text=True)
    finally:
        os.unlink(req.name)
    lines = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
    return None if done.returncode == 0 else (lines[-1] if lines else "no message")
