"""The local backend: a GGUF model run in process by llama.cpp (llama-cpp-python), no key, no network.

Replies are JSON constrained by a GBNF grammar (core.agents.llm.grammar), decoded greedily (temperature 0)
by our own loop: each step takes the best token and checks it alone against the grammar, and only
when it does not fit are all 262k vocabulary entries filtered. That is exactly grammar-constrained
greedy decoding, at about the speed of unconstrained decoding: llama-cpp-python's own grammar
sampler filters the whole vocabulary at every step, which ran 2.8x slower here (15 vs 42 tok/s).

A base model (gemma-3-270m) is prompted completion-style with few-shot examples (prompt style
"completion"); an instruct model (the Qwen2.5-Coder models, or a LOCAL_MODEL=path file with a chat
template) gets the paper's zero-shot prompts through its chat template under a bounded grammar
(style "chat"); the declaration of a model (core.local_models) says which. One model instance answers
one call at a time (a lock); `instances` > 1 loads more copies for parallel calls. The text of a reply
streams to the sink of core.agents.llm.stream as it is generated, and generation stops at the call's
timeout or the query's budget, whichever comes first.
"""
from __future__ import annotations

import ctypes
import logging
import threading
import time
from collections import OrderedDict, deque
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from collections.abc import Callable
from typing import Any

import numpy as np

from core.agents.llm.base import LLMError, LLMResponse, Usage
from core.agents.llm.budget import budget_s, remaining_s
from core.agents.llm.draft import PromptLookup
from core.agents.llm.grammar import gbnf
from core.agents.llm.stream import TextSink, current_sink
from core.agents.llm.local_model import (LocalModel, LocalModelError, llama_cpp_module, quantisation_of,
                                         resolve_local_model)
from core.settings import Settings

N_CTX = 4096
MAX_TOKENS = 512
# Prompts are evaluated in aligned chunks of this many tokens, and a chunk shared with the previous
# prompt (the few-shot examples) is reused from the KV cache. A chunk is always computed from the same
# tokens on top of the same chunks, so reuse never changes a reply; 64 costs 12% of prompt speed
# against one batch (547 vs 620 tok/s here) and saves the examples' ~0.6 s on every call.
CHUNK = 64
# The KV cache holds one prompt, so a stub prompt after a plan was evaluated whole again (the Inspector alternates
# them: the 1.5B's first stub took 17 s). Each instance also keeps the KV of up to this many template prefixes (the
# whole chunks a prompt shares with a recent different one: the instructions before the query) and loads the longest
# that a new prompt starts with. A kept prefix is a copy of chunks computed as any other, so replies stay the same.
KEPT_PREFIXES = 4


_llama_log = logging.getLogger("llama.cpp")
_log_sink: list[Any] = []  # the ctypes callback, kept alive for as long as llama.cpp may call it


def _route_llama_logs(C: Any) -> None:
    """llama.cpp's own messages go to the `llama.cpp` logger at DEBUG, not raw to stderr (llama-cpp-python prints
    its ERROR-level lines there even when not verbose, and a deadline's abort logs one): our errors say what failed."""
    if _log_sink:
        return
    _log_sink.append(C.llama_log_callback(lambda level, text, _: _llama_log.debug(
        "%s", text.decode("utf-8", "replace").rstrip())))
    C.llama_log_set(_log_sink[0], ctypes.c_void_p(0))


def _shared(a: list[int], b: list[int]) -> int:
    """How many leading tokens two prompts share."""
    shared = 0
    for x, y in zip(a, b):
        if x != y:
            break
        shared += 1
    return shared


def _whole_chunks(shared: int, length: int) -> int:
    """The reusable part of `shared` leading tokens of a prompt of `length`: whole chunks, at least one token short
    of the prompt (the last chunk is evaluated: its logits are needed)."""
    return min(shared, length - 1) // CHUNK * CHUNK


class _Instance:
    """One loaded model with its grammar-checked greedy decoder, on a thread of its own.

    Every llama.cpp call of an instance runs on the thread that created it: called from any other
    thread (Streamlit's script threads, the bench's pool) two-thread generation ran at 24 instead of
    39 tok/s here; with one thread it made no difference.
    """

    def __init__(self, path: Path, n_threads: int, draft: int = 0,
                 threads_now: Callable[[], int] | None = None, flash: bool = False) -> None:
        self.n_threads = n_threads
        # How many threads to use right now (LocalLlamaClient: its cores shared among the instances generating at
        # once); asked before every evaluation, so a call that starts beside another gives up half its cores.
        self.threads_now = threads_now or (lambda: n_threads)
        self._threads_set = n_threads
        self.draft = draft  # tokens drafted at a time by prompt lookup (_drafted), 0 for none; see LocalLlamaClient
        self.drafted = self.accepted = 0  # draft tokens offered and kept so far: the acceptance rate
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama")
        self._thread.submit(self._load, path, n_threads, flash).result()

    def _load(self, path: Path, n_threads: int, flash: bool) -> None:
        llama_cpp = llama_cpp_module()
        self.C = llama_cpp.llama_cpp
        _route_llama_logs(self.C)
        try:
            self.llm = llama_cpp.Llama(model_path=str(path), n_ctx=N_CTX, n_threads=n_threads, n_batch=512,
                                       flash_attn=flash, verbose=False, seed=0)
        except (ValueError, RuntimeError) as exc:  # llama.cpp could not read the file
            raise LocalModelError(f"llama.cpp could not load {path.name}: {exc}") from None
        self.vocab = self.llm._model.vocab
        self.n_vocab = self.llm.n_vocab()
        self.chat_template = self.llm.metadata.get("tokenizer.chat_template") or ""
        self._candidates = np.zeros(self.n_vocab, dtype=[("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])
        self._candidates["id"] = np.arange(self.n_vocab, dtype=np.int32)
        self._one = (self.C.llama_token_data * 1)()
        self._last_prompt: list[int] = []
        self._prefixes: OrderedDict[tuple[int, ...], bytes] = OrderedDict()  # kept template prefixes' KV, LRU
        self._recent: deque[list[int]] = deque(maxlen=KEPT_PREFIXES)  # recent prompts, to find their shared part
        self.restored_tokens = 0  # prompt tokens loaded from kept prefixes so far (what the tests check)
        # A prompt chunk is one llama_decode call, which on 2 busy cores took 21 s for 64 tokens of the 1.5B: the
        # deadline must stop it inside the call. llama.cpp asks this callback between graph nodes; it is installed
        # only while a prompt is evaluated (one token's decode is short, and each token checks the deadline itself),
        # so generation never pays a Python call per node.
        self._abort_at = float("inf")
        self._abort = self.C.ggml_abort_callback(lambda _: time.perf_counter() > self._abort_at)
        self._set_abort = self.C._lib.llama_set_abort_callback
        self._set_abort.argtypes = [ctypes.c_void_p, self.C.ggml_abort_callback, ctypes.c_void_p]
        self._set_abort.restype = None

    def _share_cores(self) -> None:
        threads = self.threads_now()
        if threads != self._threads_set:
            self.llm._ctx.set_n_threads(threads, threads)
            self._threads_set = threads

    def _fits(self, grammar: Any, token: int, logit: float) -> bool:
        self._one[0].id, self._one[0].logit, self._one[0].p = token, logit, 0.0
        array = self.C.llama_token_data_array(self._one, 1, -1, False)
        self.C.llama_sampler_apply(grammar, ctypes.byref(array))
        return self._one[0].logit != float("-inf")

    def _best_allowed(self, grammar: Any, logits: np.ndarray) -> int:
        self._candidates["logit"] = logits
        pointer = self._candidates.ctypes.data_as(ctypes.POINTER(self.C.llama_token_data))
        array = self.C.llama_token_data_array(pointer, self.n_vocab, -1, False)
        self.C.llama_sampler_apply(grammar, ctypes.byref(array))
        return int(np.argmax(self._candidates["logit"]))

    def tokenize(self, prompt: str, special: bool) -> list[int]:
        return self.llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=special)

    def reusable(self, tokens: list[int]) -> int:
        """How many leading tokens of `tokens` this instance's KV cache already holds, in whole chunks."""
        return _whole_chunks(_shared(tokens, self._last_prompt), len(tokens))

    def _longest_kept(self, tokens: list[int]) -> tuple[int, ...]:
        """The longest kept prefix that `tokens` starts with and goes beyond (its last chunk is evaluated); ()."""
        return max((prefix for prefix in self._prefixes if len(prefix) < len(tokens)
                    and tuple(tokens[:len(prefix)]) == prefix), key=len, default=())

    def reuse(self, tokens: list[int]) -> int:
        """How many leading tokens of `tokens` this instance can skip: held in its KV cache or a kept prefix."""
        return max(self.reusable(tokens), len(self._longest_kept(tokens)))

    def _restore(self, tokens: list[int]) -> int:
        """Load the longest kept prefix of `tokens` into the KV cache when it beats what the cache holds; the
        number of leading tokens held either way."""
        keep = self.reusable(tokens)
        best = self._longest_kept(tokens)
        if len(best) <= keep:
            return keep
        data = self._prefixes[best]
        self._prefixes.move_to_end(best)
        self.llm._ctx.kv_cache_seq_rm(0, 0, -1)
        buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if self.C.llama_state_seq_set_data(self.llm._ctx.ctx, buffer, len(data), 0) != len(data):
            self.llm._ctx.kv_cache_seq_rm(0, 0, -1)  # a failed load leaves nothing half-written: evaluate it all
            self._prefixes.pop(best)
            self._last_prompt = []
            return 0
        self._last_prompt = list(best)
        self.restored_tokens += len(best)
        return len(best)

    def _keep_prefix(self, tokens: list[int]) -> None:
        """After a reply: keep the KV of the whole chunks this prompt shares with a recent different prompt (its
        template's fixed part), unless kept already. The cache is cut back to those chunks to copy them."""
        shared = max((_shared(tokens, other) for other in self._recent if other != tokens), default=0)
        self._recent.append(tokens)
        length = _whole_chunks(shared, len(tokens))
        if length < CHUNK or tuple(tokens[:length]) in self._prefixes:
            return
        ctx = self.llm._ctx
        ctx.kv_cache_seq_rm(0, length, -1)
        self.llm.n_tokens = length
        self._last_prompt = tokens[:length]
        size = self.C.llama_state_seq_get_size(ctx.ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        written = self.C.llama_state_seq_get_data(ctx.ctx, buffer, size, 0)
        if written:
            self._prefixes[tuple(tokens[:length])] = bytes(buffer[:written])
            while len(self._prefixes) > KEPT_PREFIXES:
                self._prefixes.popitem(last=False)

    def _evaluate(self, tokens: list[int], deadline: float = float("inf")) -> bool:
        """Put the prompt into the KV cache chunk by chunk, reusing the whole chunks it shares with the last
        one; False when the deadline passed first (the cache then holds a prefix, which is never reused)."""
        keep = self._restore(tokens)
        self.llm.n_tokens = keep
        self._last_prompt = []
        self._abort_at = deadline
        self._set_abort(self.llm._ctx.ctx, self._abort, None)
        try:
            for start in range(keep, len(tokens), CHUNK):
                if time.perf_counter() > deadline:
                    return False
                try:
                    self._share_cores()
                    self.llm.eval(tokens[start:start + CHUNK])
                except RuntimeError:  # llama_decode aborted by the deadline (any other failure is raised)
                    if time.perf_counter() > deadline:
                        return False
                    raise
        finally:
            self._set_abort(self.llm._ctx.ctx, self.C.ggml_abort_callback(), None)  # a NULL callback: none
            self._abort_at = float("inf")
        self._last_prompt = tokens
        return True

    def speed(self, prompt_tokens: int, generated: int) -> dict[str, float]:
        return self._thread.submit(self._speed, prompt_tokens, generated).result()

    def complete(self, tokens: list[int], grammar_text: str | None, max_tokens: int,
                 deadline: float, sink: TextSink | None = None) -> tuple[str, int, int, bool]:
        """(text, prompt tokens, output tokens, finished): grammar-constrained greedy decoding.

        `finished` is False when the deadline stopped it; `sink` gets the text so far after every token.
        """
        return self._thread.submit(self._complete, tokens, grammar_text, max_tokens, deadline, sink).result()

    def _speed(self, prompt_tokens: int, generated: int) -> dict[str, float]:
        """Our loop's tokens/s beside llama.cpp's own (its perf counters: the time inside its decode calls alone),
        over the same tokens: what our Python loop costs."""
        tokens = self.tokenize("The quick brown fox jumps over the lazy dog. " * (prompt_tokens // 8 + 1),
                               special=False)[:prompt_tokens]
        self._last_prompt = []
        self.llm.reset()
        ctx = self.llm._ctx.ctx
        self.C.llama_perf_context_reset(ctx)
        # llama.cpp books a decode's time when it is waited for (llama_synchronize, or reading its logits): each is
        # waited for inside our timings, so that its counters cover the same tokens as ours and its time is inside.
        start = time.perf_counter()
        self.llm.eval(tokens)
        self.C.llama_synchronize(ctx)
        prompt_s = time.perf_counter() - start
        start = time.perf_counter()
        for _ in range(generated):
            logits = np.ctypeslib.as_array(self.llm._ctx.get_logits_ith(-1), shape=(self.n_vocab,))
            self.llm.eval([int(np.argmax(logits))])
        self.C.llama_synchronize(ctx)
        generation_s = time.perf_counter() - start
        own = self.C.llama_perf_context(ctx)
        return {"prompt_tok_s": round(len(tokens) / prompt_s, 1),
                "generation_tok_s": round(generated / generation_s, 1),
                "llama_cpp_prompt_tok_s": round(own.n_p_eval / own.t_p_eval_ms * 1000, 1) if own.t_p_eval_ms else None,
                "llama_cpp_generation_tok_s": round(own.n_eval / own.t_eval_ms * 1000, 1) if own.t_eval_ms else None}

    def _complete(self, tokens: list[int], grammar_text: str | None, max_tokens: int,
                  deadline: float, sink: TextSink | None) -> tuple[str, int, int, bool]:
        llm = self.llm
        if len(tokens) + max_tokens > N_CTX:
            raise LLMError("bad_request", f"the prompt has {len(tokens):,} tokens; this model's context is {N_CTX:,}")
        grammar = (self.C.llama_sampler_init_grammar(self.vocab, grammar_text.encode("utf-8"), b"root")
                   if grammar_text else None)
        if grammar_text and not grammar:
            raise LLMError("bad_request", "llama.cpp rejected the reply grammar")
        out: list[int] = []
        try:
            if not self._evaluate(tokens, deadline):
                return "", len(tokens), 0, False
            if not (self._drafted(tokens, grammar, max_tokens, deadline, sink, out) if self.draft
                    else self._plain(grammar, max_tokens, deadline, sink, out)):
                return llm.detokenize(out).decode("utf-8", "replace"), len(tokens), len(out), False
            self._keep_prefix(tokens)
        finally:
            if grammar is not None:
                self.C.llama_sampler_free(grammar)
        return llm.detokenize(out).decode("utf-8", "replace"), len(tokens), len(out), True


    def _choose(self, grammar: Any, logits: np.ndarray) -> int:
        """Greedy under the grammar: the best token if it fits, else the best of those that do."""
        token = int(np.argmax(logits))
        if grammar is not None and not self._fits(grammar, token, float(logits[token])):
            token = self._best_allowed(grammar, logits)
        return token

    def _logits(self, index: int) -> np.ndarray:
        return np.ctypeslib.as_array(self.llm._ctx.get_logits_ith(index), shape=(self.n_vocab,))

    def _take(self, grammar: Any, token: int, out: list[int], sink: TextSink | None) -> None:
        if grammar is not None:
            self.C.llama_sampler_accept(grammar, token)
        out.append(token)
        if sink is not None:
            sink(self.llm.detokenize(out).decode("utf-8", "replace"))

    def _plain(self, grammar: Any, max_tokens: int, deadline: float, sink: TextSink | None,
               out: list[int]) -> bool:
        """One token per model evaluation; False when the deadline stopped it."""
        while len(out) < max_tokens:
            if time.perf_counter() > deadline:
                return False
            token = self._choose(grammar, self._logits(-1))
            if self.C.llama_vocab_is_eog(self.vocab, token):
                break
            self._take(grammar, token, out, sink)
            self._share_cores()
            self.llm.eval([token])
        return True

    def _drafted(self, prompt: list[int], grammar: Any, max_tokens: int, deadline: float, sink: TextSink | None,
                 out: list[int]) -> bool:
        """Speculative decoding: after each chosen token, draft the tokens that followed its context before
        (core.agents.llm.draft), evaluate the token and the draft in one batch, and keep each drafted token only
        while it is the one greedy decoding under the grammar picks from the batch's logits; the KV cache is cut
        back past the first refused one. False when the deadline stopped it."""
        llm, lookup = self.llm, PromptLookup(prompt)
        logits = self._logits(-1)
        while len(out) < max_tokens:
            if time.perf_counter() > deadline:
                return False
            token = self._choose(grammar, logits)
            if self.C.llama_vocab_is_eog(self.vocab, token):
                break
            self._take(grammar, token, out, sink)
            lookup.add(token)
            draft = lookup.draft(min(self.draft, max_tokens - len(out)))
            start = llm.n_tokens
            self._share_cores()
            self._decode([token, *draft])
            self.drafted += len(draft)
            logits, kept = self._logits(0), 0
            for i, guess in enumerate(draft):
                choice = self._choose(grammar, logits)
                if choice != guess or self.C.llama_vocab_is_eog(self.vocab, choice):
                    break
                self._take(grammar, guess, out, sink)
                lookup.add(guess)
                kept += 1
                logits = self._logits(i + 1)
            self.accepted += kept
            if kept < len(draft):
                llm._ctx.kv_cache_seq_rm(0, start + 1 + kept, -1)
                llm.n_tokens = start + 1 + kept
        return True

    def _decode(self, tokens: list[int]) -> None:
        """Evaluate `tokens` after the KV cache's, with logits at every position (Llama.eval keeps the last only)."""
        llm = self.llm
        n_past = llm.n_tokens
        llm._ctx.kv_cache_seq_rm(-1, n_past, -1)
        llm._batch.set_batch(batch=tokens, n_past=n_past, logits_all=True)
        llm._ctx.decode(llm._batch)
        llm.input_ids[n_past:n_past + len(tokens)] = tokens
        llm.n_tokens += len(tokens)


class LocalLlamaClient:
    """`LLMClient` over llama.cpp in process. Loads the model on first use (about 0.5 s for 253 MB)."""

    backend = "local"

    def __init__(self, model: LocalModel, *, timeout_s: float = 60.0, n_threads: int = 2, instances: int = 1,
                 max_tokens: int = MAX_TOKENS, draft: int = 0, flash: bool = False) -> None:
        self.local = model
        self.model = model.name
        self.identity = model.sha256  # in the call cache's key: another file of the same name is another model
        self.timeout_s = timeout_s
        self.max_tokens = max_tokens
        self._n_threads = n_threads
        self._instances = instances
        # Drafting evaluates several tokens in one batch, and llama.cpp's batched logits differ from one token's
        # (by 0.2-1.3 at a stub prompt's length, with or without flash attention or repacked weights:
        # benchmarks/batch_invariance.py), so a drafted reply can differ from the plain one; flash attention is
        # other arithmetic again. Either is another decoder, with a call-cache identity and provenance of its own,
        # and no setting turns it on (benchmarks/draft_identity.py).
        self.draft = draft
        self.flash = flash
        self.identity += "+flash-attention" * flash + (f"+lookup-drafts-{draft}" if draft else "")
        self._instances_loaded: list[_Instance] = []
        self._free: list[_Instance] = []
        self._available = threading.Condition()
        self._generating = 0  # instances generating now: they share the n_threads cores (_threads_now)
        self._load_lock = threading.Lock()
        self._chat = model.prompt_style == "chat"

    def __repr__(self) -> str:
        return f"LocalLlamaClient(model={self.model!r}, instances={self._instances})"

    def load(self) -> LocalLlamaClient:
        """Load the model now (LocalModelError says why it cannot be), rather than on the first call."""
        self._ensure_loaded()
        return self

    def _ensure_loaded(self) -> list[_Instance]:
        with self._load_lock:
            if not self._instances_loaded:
                loaded = [_Instance(self.local.path, self._n_threads, self.draft, self._threads_now, self.flash)
                          for _ in range(self._instances)]
                declared = self.local.prompt_style
                if declared == "chat" and not loaded[0].chat_template:
                    raise LocalModelError(f"{self.local.path.name} has no chat template, but {self.model} is "
                                          "declared an instruct model; its prompts need one.")
                self._chat = declared == "chat" if declared else bool(loaded[0].chat_template)
                self._free = list(loaded)
                self._instances_loaded = loaded
            return self._instances_loaded

    def _threads_now(self) -> int:
        """An instance's threads while `_generating` instances run at once: LOCAL_THREADS shared out, at least one.
        Two calls at once with two threads each put four threads on two cores, which ran both plans 2.5x slower
        than one after the other here (benchmarks/inspector_stream.py --schedule all)."""
        return max(1, self._n_threads // max(1, self._generating))

    def _acquire(self, text: str) -> tuple[_Instance, list[int]]:
        """A free instance, preferring the one whose KV cache holds most of this prompt: with two
        instances, stub writing and planning each keep their few-shot examples cached. Waiting for one
        stops when the query's budget runs out."""
        with self._available:
            while not self._free:
                left = remaining_s()
                if left is not None and left <= 0:
                    raise LLMError("timeout", f"the query's time budget of {budget_s():.0f} s ran out while "
                                   "every model instance was busy")
                self._available.wait(left)
            tokens = self._free[0].tokenize(text, special=self._chat)
            best = max(self._free, key=lambda inst: inst.reuse(tokens))
            self._free.remove(best)
            self._generating += 1
            return best, tokens

    def _release(self, instance: _Instance) -> None:
        with self._available:
            self._generating -= 1
            self._free.append(instance)
            self._available.notify()

    def provenance(self) -> dict[str, Any]:
        """What every stored result of this model records: file, sha, quantisation, runtime, the CPU kernels it was
        built with (AVX2 and AVX-512 kernels round differently, so a greedy reply can differ in a near-tie),
        sampling."""
        first = self._ensure_loaded()[0]
        return {"model_file": self.local.path.name, "model_sha256": self.local.sha256,
                "quantisation": self.local.quantisation or quantisation_of(first.llm.metadata),
                "runtime": f"llama-cpp-python {self.local.llama_cpp_version}", "n_ctx": N_CTX,
                "cpu_kernels": first.C.llama_print_system_info().decode("utf-8", "replace").strip(" |"),
                "threads": self._n_threads, "instances": self._instances, "prompt_style": self.prompt_style,
                "sampling": "greedy (temperature 0), constrained by a GBNF grammar"
                            + (f", prompt-lookup drafts of up to {self.draft} tokens verified in batches"
                               if self.draft else ""),
                "attention": "flash" if self.flash else "standard",
                "max_tokens": self.max_tokens}

    def speed(self, prompt_tokens: int = 256, generated: int = 32) -> dict[str, float]:
        """Prompt and generation tokens/s of one instance, from an empty KV cache (llama-bench's pp/tg)."""
        instance = self._ensure_loaded()[0]
        with self._available:
            while instance not in self._free:
                self._available.wait()
            self._free.remove(instance)
            self._generating += 1
        try:
            return instance.speed(prompt_tokens, generated)
        finally:
            self._release(instance)

    def llama_cpp_counters(self, reset: bool = False) -> dict[str, float]:
        """llama.cpp's own perf counters summed over the instances (call between calls): tokens evaluated in batches
        (prompts) and one at a time (generation), and the milliseconds inside its decode calls for each."""
        totals = dict.fromkeys(("n_p_eval", "t_p_eval_ms", "n_eval", "t_eval_ms"), 0.0)
        for instance in self._ensure_loaded():
            ctx = instance.llm._ctx.ctx
            instance.C.llama_synchronize(ctx)  # llama.cpp counts an evaluation when it is waited for
            if reset:
                instance.C.llama_perf_context_reset(ctx)
                continue
            own = instance.C.llama_perf_context(ctx)
            # llama.cpp reports a count of at least 1 (against a division by zero): no time means none counted.
            totals["n_p_eval"] += own.n_p_eval if own.t_p_eval_ms else 0
            totals["n_eval"] += own.n_eval if own.t_eval_ms else 0
            totals["t_p_eval_ms"] += own.t_p_eval_ms
            totals["t_eval_ms"] += own.t_eval_ms
        return totals

    @property
    def prompt_style(self) -> str:
        """"chat" for an instruct model (its template wraps the prompt), "completion" for a base model."""
        self._ensure_loaded()
        return "chat" if self._chat else "completion"

    def generate(self, prompt: str, *, schema: dict[str, Any] | None = None, temperature: float = 0.0) -> LLMResponse:
        if temperature != 0.0:
            raise LLMError("bad_request", "the local backend decodes greedily: temperature must be 0")
        loaded = self._ensure_loaded()
        # The chat template lets the prompt name control tokens (its turn markers); a completion prompt
        # is tokenized without them, so a query cannot inject any.
        text = self._apply_chat_template(loaded[0], prompt) if self._chat else prompt
        instance, tokens = self._acquire(text)
        start = time.perf_counter()  # the call's own time: waiting for a free instance is not part of it
        left = remaining_s()
        limit = self.timeout_s if left is None else max(0.0, min(self.timeout_s, left))
        try:
            reply, n_prompt, n_out, finished = instance.complete(
                tokens, gbnf(schema) if schema is not None else None, self.max_tokens, start + limit, current_sink())
            latency = time.perf_counter() - start
        finally:
            self._release(instance)
        if not finished:
            what = "call's timeout" if limit == self.timeout_s else "query's budget"
            raise LLMError("timeout", f"generation passed the {what} {limit:.3g} s limit after {n_out} tokens")
        return LLMResponse(reply.strip(), Usage(n_prompt, n_out), latency, self.backend, self.model)

    @staticmethod
    def _apply_chat_template(instance: _Instance, prompt: str) -> str:
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        template = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(
            instance.chat_template)
        # The tokenizer adds BOS itself, so the template must not write it a second time.
        return template.render(messages=[{"role": "user", "content": prompt}], add_generation_prompt=True,
                               bos_token="", eos_token="")


@lru_cache(maxsize=4)
def local_client(local_model: str, cache_dir: Path, n_threads: int, instances: int,
                 timeout_s: float) -> LocalLlamaClient:
    """One client (and loaded model) per configuration and process; LocalModelError when it cannot run.
    Failures are not cached, so the next call after `make llm` succeeds without a restart."""
    return LocalLlamaClient(resolve_local_model(local_model, cache_dir), timeout_s=timeout_s, n_threads=n_threads,
                            instances=instances).load()


def client_from_settings(settings: Settings) -> LocalLlamaClient:
    """The local backend's client (core.backends): the model LOCAL_MODEL names, or the one `make llm` assembles."""
    return local_client(settings.local_model, settings.cache_dir, settings.local_threads, settings.local_instances,
                        settings.llm_timeout_s)
