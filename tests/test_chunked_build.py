"""Embedding builds in chunks that survive a kill (core.retrieval.chunked_build): resumed, never mixed up."""
from __future__ import annotations

import errno
from pathlib import Path

import numpy as np
import pytest

from core.retrieval import chunked_build
from core.retrieval.chunked_build import drop_parts, encode_in_chunks, parts_folder
from tests.helpers import FakeEncoder


class Killed(Exception):
    """What a kill mid-build looks like to the code after it: nothing more is written."""


def texts(n: int) -> list[str]:
    return [f"api number {i} " + "word " * (i % 7) for i in range(n)]


def counting(encoder: FakeEncoder, stop_after: int | None = None):
    calls: list[int] = []

    def encode(chunk: list[str], done) -> np.ndarray:
        if stop_after is not None and len(calls) >= stop_after:
            raise Killed
        calls.append(len(chunk))
        return encoder.encode(chunk)

    return encode, calls


def test_a_killed_build_resumes_from_its_finished_chunks_and_gives_the_same_vectors(
        tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(chunked_build, "CHUNK_DOCS", 10)
    docs, encoder = texts(45), FakeEncoder()
    folder = parts_folder(tmp_path, "k")
    first, _ = counting(encoder, stop_after=3)
    with pytest.raises(Killed):
        encode_in_chunks(first, docs, encoder.dim, folder)
    assert len(list(folder.glob("chunk-*.npy"))) == 3  # what was finished before the kill is kept
    second, calls = counting(encoder)
    vectors, resumed = encode_in_chunks(second, docs, encoder.dim, folder)
    assert resumed == 30 and calls == [10, 5]  # only the two chunks not done before
    assert np.array_equal(vectors, encoder.encode(docs))  # in the documents' order, as one pass gives them
    drop_parts(folder)
    assert not folder.exists()


def test_a_chunk_of_other_texts_is_never_taken_and_a_damaged_one_is_encoded_again(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(chunked_build, "CHUNK_DOCS", 10)
    encoder, folder = FakeEncoder(), parts_folder(tmp_path, "k")
    encode, _ = counting(encoder)
    encode_in_chunks(encode, texts(20), encoder.dim, folder)
    changed = texts(20)
    changed[3] = changed[3].replace("number", "numbex")  # the same length: the same chunks, one of them other texts
    again, calls = counting(encoder)
    vectors, resumed = encode_in_chunks(again, changed, encoder.dim, folder)
    assert resumed == 10 and calls == [10]  # the chunk holding the changed text is another chunk
    assert np.array_equal(vectors, encoder.encode(changed))
    order = np.argsort([len(t) for t in changed], kind="stable")
    victim = folder / chunked_build._chunk_name([changed[i] for i in order[:10]])
    data = bytearray(victim.read_bytes())
    data[200] ^= 0xFF  # same size, one byte other: its digest fails
    victim.write_bytes(bytes(data))
    third, calls = counting(encoder)
    _, resumed = encode_in_chunks(third, changed, encoder.dim, folder)
    assert calls == [10] and resumed == 10  # the damaged chunk alone is encoded again


def test_a_cache_that_cannot_take_the_chunks_still_builds_in_memory(tmp_path: Path, monkeypatch) -> None:
    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("core.files.os.fsync", full)
    encoder, folder = FakeEncoder(), parts_folder(tmp_path, "k")
    encode, calls = counting(encoder)
    vectors, resumed = encode_in_chunks(encode, texts(5), encoder.dim, folder)
    assert resumed == 0 and np.array_equal(vectors, encoder.encode(texts(5)))
    assert not list(folder.glob("*"))  # nothing half-written is left
