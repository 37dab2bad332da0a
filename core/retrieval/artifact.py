"""The shipped corpus vectors: float16 embeddings committed under data/index/, so no clone embeds.

Why: embedding the 47k-API registry takes 10-15 minutes on two cores. The artifact holds the
default model's vectors for each registry, keyed by the same content hash as the embedding cache
(model id + every document text), so it is used only for exactly the documents it was made from.

File layout: one line b"TDLVEC1", one line of JSON (the header), then the payload: the float16
matrix split into its two byte planes (low bytes of every value, then high bytes) and
zlib-compressed. Splitting the planes lets zlib find the redundancy of the high bytes, which hold
sign and exponent: the file is smaller than a raw float16 .npy and decodes bit-exactly. Nothing in
the file depends on when it was written, so the same vectors always give the same bytes.
"""
from __future__ import annotations

import hashlib
import json
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.files import ensure_folder, writing

MAGIC = b"TDLVEC1\n"
FORMAT = 1
CODEC = "zlib-byteplanes"
ZLIB_LEVEL = 9
MAX_HEADER_BYTES = 64 * 1024


class ArtifactError(ValueError):
    """A damaged or unreadable artifact; the message says which file and what is wrong."""


@dataclass(frozen=True)
class ArtifactHeader:
    model_id: str
    registry: str
    n: int
    dim: int
    key: str
    registry_hash: str
    payload_bytes: int
    payload_sha256: str

    def to_json(self) -> dict:
        return {"format": FORMAT, "codec": CODEC, "dtype": "float16", "model_id": self.model_id,
                "registry": self.registry, "n": self.n, "dim": self.dim, "key": self.key,
                "registry_hash": self.registry_hash, "payload_bytes": self.payload_bytes,
                "payload_sha256": self.payload_sha256}


def artifact_name(model_id: str, registry: str) -> str:
    """e.g. sentence-transformers__all-MiniLM-L6-v2--full.vec"""
    return f"{model_id.replace('/', '__')}--{registry}.vec"


def encode_payload(vectors: np.ndarray) -> bytes:
    half = np.ascontiguousarray(vectors, dtype="<f2")
    planes = half.view(np.uint8).reshape(-1, 2).T  # row 0: low bytes, row 1: high bytes
    return zlib.compress(np.ascontiguousarray(planes).tobytes(), ZLIB_LEVEL)


def decode_payload(payload: bytes, n: int, dim: int) -> np.ndarray:
    """float32 rows, L2-normalised again: rounding to float16 moves norms by up to ~1e-3."""
    raw = zlib.decompress(payload)
    if len(raw) != n * dim * 2:
        raise ArtifactError(f"payload holds {len(raw)} bytes, expected {n * dim * 2}")
    low, high = np.frombuffer(raw, dtype=np.uint8).reshape(2, n * dim)
    bits = high.astype("<u2")  # the planes joined by shifts: faster than copying their transpose (docs/benchmarks.md)
    bits <<= 8
    bits |= low
    vectors = bits.view("<f2").reshape(n, dim).astype(np.float32)
    norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))
    if n and (not np.all(np.isfinite(norms)) or norms.min() < 0.9 or norms.max() > 1.1):
        raise ArtifactError("vectors are not unit length")
    vectors /= norms[:, None]
    return vectors


def write_artifact(path: Path, vectors: np.ndarray, *, model_id: str, registry: str, key: str,
                   registry_hash: str) -> ArtifactHeader:
    """Write atomically (core.files: CannotWrite naming the folder when it cannot); returns the header written."""
    payload = encode_payload(vectors)
    header = ArtifactHeader(model_id, registry, int(vectors.shape[0]), int(vectors.shape[1]), key, registry_hash,
                            len(payload), hashlib.sha256(payload).hexdigest())
    ensure_folder(path.parent)
    with writing(path) as fh:
        fh.write(MAGIC)
        fh.write(json.dumps(header.to_json(), sort_keys=True).encode() + b"\n")
        fh.write(payload)
    return header


def read_header(path: Path) -> ArtifactHeader:
    """The header alone (cheap: the payload is not read). Raises ArtifactError when it is not one."""
    try:
        with path.open("rb") as fh:
            if fh.read(len(MAGIC)) != MAGIC:
                raise ArtifactError(f"{path.name} is not a vector artifact (bad magic)")
            line = fh.readline(MAX_HEADER_BYTES)
        raw = json.loads(line)
        if raw.get("format") != FORMAT or raw.get("codec") != CODEC:
            raise ArtifactError(f"{path.name} has format {raw.get('format')}/{raw.get('codec')}, "
                                f"this version reads {FORMAT}/{CODEC}")
        return ArtifactHeader(str(raw["model_id"]), str(raw["registry"]), int(raw["n"]), int(raw["dim"]),
                              str(raw["key"]), str(raw["registry_hash"]), int(raw["payload_bytes"]),
                              str(raw["payload_sha256"]))
    except OSError as exc:
        raise ArtifactError(f"{path.name} cannot be read: {exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        if isinstance(exc, ArtifactError):
            raise
        raise ArtifactError(f"{path.name} has an unreadable header ({type(exc).__name__})") from None


def read_artifact(path: Path, header: ArtifactHeader | None = None) -> np.ndarray:
    """The artifact's vectors as float32, checked against the header's size and checksum."""
    header = header or read_header(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ArtifactError(f"{path.name} cannot be read: {exc.strerror or exc}") from None
    payload = data[data.index(b"\n", len(MAGIC)) + 1:]
    if len(payload) != header.payload_bytes:
        raise ArtifactError(f"{path.name} is truncated or padded: payload of {len(payload):,} bytes, "
                            f"expected {header.payload_bytes:,}")
    if hashlib.sha256(payload).hexdigest() != header.payload_sha256:
        raise ArtifactError(f"{path.name} is corrupt: its checksum does not match")
    try:
        return decode_payload(payload, header.n, header.dim)
    except zlib.error as exc:
        raise ArtifactError(f"{path.name} is corrupt: {exc}") from None
