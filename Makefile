# One command sets up and runs, one tests. Both create .venv and install requirements.txt on first use.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup run test index index-artifact bench results perf clean-cache

$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -r requirements.txt
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/streamlit run app.py

test: $(STAMP)
	$(PY) -m pytest

index: $(STAMP)
	$(PY) -m core index

# Regenerate the shipped float16 index (data/index/) from scratch with sentence-transformers: byte-identical
# output for the same model and documents. About 3 min (full) + 30 s (documented) on 2 quiet cores.
index-artifact: $(STAMP)
	$(PY) -m core index --registry full --write-artifact --rebuild
	$(PY) -m core index --registry documented --write-artifact --rebuild

bench: $(STAMP)
	$(PY) -m core bench all

# Regenerate the committed results (offline backend, full registry); see README for timings.
results: $(STAMP)
	rm -f data/results.sqlite data/results.sqlite-wal data/results.sqlite-shm
	$(PY) -m core bench main --subsets all
	$(PY) -m core bench ksweep --subsets all
	$(PY) -m core bench hybrid --subsets all
	$(PY) -m core bench scaling --subsets G1_instruction,G2_instruction
	$(PY) -m core pack

perf: $(STAMP)
	$(PY) -m core perf --json

clean-cache:
	rm -rf data/cache
