"""Does llama.cpp give a token the same logits in a batch as alone? The premise of exact speculative decoding
(issue 34).

    nice -n 10 .venv/bin/python benchmarks/batch_invariance.py [--model NAME|all] [--json]

For each installed local model, each context length (a short prompt and one as long as a stub prompt's few-shot
examples) and each llama.cpp configuration this runtime offers (standard or flash attention; repacked weights or
not; micro-batches of one token), the prompt is evaluated as the decoder does (64-token chunks), then ten greedy
tokens one at a time (the reference), then, from the same prompt, the first n of those tokens in one batch of n.
Prints the largest |logit difference| at each batch position: 0.0 everywhere is what a verification batch needs
to keep greedy decoding's bytes. Every configuration but the standard one is another decoder's arithmetic: its
plain replies differ from the stored ones (benchmarks/draft_identity.py counts how many).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import llama_cpp

from core.agents.llm import local_llama
from core.agents.llm.local_model import installed_models, resolve_local_model
from core.settings import Settings

CONFIGS = {"standard": {}, "flash": {"flash_attn": True}, "standard, no repack": {"repack": False},
           "flash, no repack": {"flash_attn": True, "repack": False}, "micro-batches of 1": {"n_ubatch": 1}}
BATCHES = (2, 3, 4, 8)
TEXT = "List the APIs to find hotels in London and convert GBP to EUR. Reply in JSON: "


def _load(path: Path, config: dict) -> local_llama._Instance:
    """An instance whose llama.cpp is built with `config` (the decoder's own settings otherwise)."""
    config = dict(config)
    repack = config.pop("repack", True)
    default_params = llama_cpp.llama_cpp.llama_model_default_params
    real_llama = llama_cpp.Llama

    def params():
        made = default_params()
        made.use_extra_bufts = repack
        return made

    class Configured(real_llama):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, **config})

    llama_cpp.llama_cpp.llama_model_default_params, llama_cpp.Llama = params, Configured
    try:
        return local_llama._Instance(path, 2)
    finally:
        llama_cpp.llama_cpp.llama_model_default_params, llama_cpp.Llama = default_params, real_llama


def differences(instance: local_llama._Instance, repeats: int) -> dict[int, list[float]]:
    """Per batch size, the largest |logit difference| at each of its positions against one token at a time."""
    prompt = instance.tokenize(TEXT * repeats, special=False)
    llm = instance.llm

    def fresh() -> None:
        llm.n_tokens, instance._last_prompt, instance._prefixes = 0, [], {}
        instance._evaluate(prompt)

    fresh()
    tokens, reference = [], []
    for _ in range(max(BATCHES) + 1):
        logits = instance._logits(-1).copy()
        reference.append(logits)
        tokens.append(int(np.argmax(logits)))
        llm.eval([tokens[-1]])
    result = {}
    for n in BATCHES:
        fresh()
        instance._decode(tokens[:n])
        result[n] = [round(float(np.abs(instance._logits(i) - reference[i + 1]).max()), 3) for i in range(n)]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--model", default="all")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    settings = Settings.from_env()
    names = [s.name for s in installed_models(settings.cache_dir)] if args.model == "all" else [args.model]
    report: dict = {"cpu_kernels": llama_cpp.llama_cpp.llama_print_system_info().decode().strip(" |"),
                    "runtime": f"llama-cpp-python {llama_cpp.__version__}", "models": {}}
    for name in names:
        path = resolve_local_model(name, settings.cache_dir).path
        rows = report["models"][name] = {}
        for label, config in CONFIGS.items():
            instance = _load(path, config)
            for repeats in (3, 40):
                length = len(instance.tokenize(TEXT * repeats, special=False))
                rows[f"{label}, {length} prompt tokens"] = instance._thread.submit(
                    differences, instance, repeats).result()
            del instance
    report["load"] = round(os.getloadavg()[0], 2)
    if args.json:
        print(json.dumps(report))
        return 0
    print(report["runtime"], "|", report["cpu_kernels"][:120], "| load", report["load"])
    for name, rows in report["models"].items():
        print(f"\n{name}: largest |logit difference| at each batch position, against one token at a time")
        for label, by_n in rows.items():
            cells = "  ".join(f"n={n}: " + " ".join(f"{d:.2f}" for d in diffs) for n, diffs in by_n.items())
            print(f"  {label:<40} {cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
