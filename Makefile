# One command sets up and runs, one tests. Both create .venv and install requirements.txt on first use.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup run test index bench perf clean-cache

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

bench: $(STAMP)
	$(PY) -m core bench all

perf: $(STAMP)
	$(PY) -m core perf --json

clean-cache:
	rm -rf data/cache
