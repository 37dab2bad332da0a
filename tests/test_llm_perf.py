"""`perf --llm`'s floor: llama.cpp's own counters, the memory-bandwidth ceiling, the decoder against llama.cpp."""
from __future__ import annotations

import os

from core.cli.llm_perf import decoder_against_llama_cpp, floor, memory_bandwidth
from core.local_models import GEMMA_270M
from tests.helpers import MODEL_CACHE, llama_built, needs_llama

needs_model = needs_llama(not llama_built() and not os.environ.get("CI"),
                          reason="llama.cpp is not built here: run `make llm`")


def test_the_ceiling_is_bandwidth_over_the_bytes_read_per_token() -> None:
    row = floor(model_bytes=1_000_000_000, bandwidth_gb_s=20.0, generation_tok_s=15.0)
    assert row["ceiling_tok_s"] == 20.0 and row["generation_share_of_ceiling"] == 0.75


def test_the_decoder_is_timed_without_the_prompt_that_llama_cpp_evaluated() -> None:
    counters = {"n_p_eval": 600, "t_p_eval_ms": 2000.0, "n_eval": 90, "t_eval_ms": 3000.0}
    row = decoder_against_llama_cpp(latency_s=6.0, output_tokens=100, counters=counters)
    assert row["decoder_tok_s"] == 25.0 and row["llama_cpp_tok_s"] == 30.0 and row["ratio"] == 0.833


def test_memory_bandwidth_is_measured_not_assumed() -> None:
    first, second = memory_bandwidth(1, gib=0.0625, repeats=2), memory_bandwidth(2, gib=0.0625, repeats=2)
    assert first > 0.5 and second > 0.5  # any machine reads 64 MiB at more than 0.5 GB/s


@needs_model
def test_llama_cpp_counts_each_generated_token_once_and_starts_again_on_reset() -> None:
    """The ratio against llama.cpp's own tokens/s means something only if its counters cover exactly our decoder's
    single-token evaluations: one per output token (the end-of-generation token is chosen, never evaluated)."""
    from core.agents.llm.local_llama import LocalLlamaClient
    from core.agents.llm.local_model import resolve_local_model

    client = LocalLlamaClient(resolve_local_model(GEMMA_270M.name, MODEL_CACHE), timeout_s=600, n_threads=1,
                              max_tokens=12).load()
    client.generate("Name three colours:")
    client.llama_cpp_counters(reset=True)
    assert client.llama_cpp_counters()["n_eval"] == 0
    reply = client.generate("Name three animals:")
    counters = client.llama_cpp_counters()
    assert counters["n_eval"] == reply.usage.output_tokens > 0
    assert 0 < counters["n_p_eval"] <= reply.usage.prompt_tokens and counters["t_eval_ms"] > 0
    speed = client.speed(prompt_tokens=32, generated=8)
    # Its time is inside ours, token for token (each figure is rounded to 0.1 tokens/s).
    assert speed["llama_cpp_generation_tok_s"] >= speed["generation_tok_s"] - 0.1 > 0
    assert speed["llama_cpp_prompt_tok_s"] >= speed["prompt_tok_s"] - 0.1
