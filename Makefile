# One target per action. `make run` and `make test` do all set-up on a fresh machine.
PY      ?= python3.11
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
HOST    ?= 127.0.0.1
PORT    ?= 8000
# The MCP Inspector's CLI, for tests/mcp/test_inspector.py (1.x runs on node 20; 2.x needs 22).
INSPECTOR_VERSION := 1.0.3
INSPECTOR := .npm-tools/.inspector-$(INSPECTOR_VERSION)
# Real MCP servers from npm for tests/sources (run with the machine's node 20).
MCP_SERVERS := @modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-memory@2026.8.31 \
  @modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/server-github@2025.4.8
NPM_SERVERS := .npm-tools/.servers-2026.8.31-github-2025.4.8

.PHONY: install system-packages run test lint format typecheck unit migrate eval bench docker-check clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# torch first, alone: the local CPU build. Letting another package pull torch fetches CUDA.
$(STAMP): pyproject.toml clients/python/pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/pip install --quiet -e './clients/python[langgraph,openai,anthropic]'
	$(BIN)/toolreach build-model
	touch $(STAMP)

install: system-packages $(STAMP) $(BIN)/helm $(INSPECTOR) $(NPM_SERVERS)  ## the virtual environment, the models, the Debian packages, helm, the MCP Inspector and the MCP servers the tests need

$(INSPECTOR):  # the MCP Inspector for tests/mcp/test_inspector.py, local to the project
	@if command -v npm >/dev/null 2>&1; then \
	  npm install --prefix .npm-tools --no-audit --no-fund --save-exact @modelcontextprotocol/inspector@$(INSPECTOR_VERSION) && touch $@; \
	else echo "npm is missing: no MCP Inspector (its test is skipped only where node is missing too)"; fi
$(NPM_SERVERS):  # MCP servers nobody here wrote, for tests/sources (skipped only without node)
	@if command -v npm >/dev/null 2>&1; then \
	  npm install --prefix .npm-tools --no-audit --no-fund --save-exact $(MCP_SERVERS) && touch $@; \
	else echo "npm is missing: no MCP servers (their tests are skipped only where node is missing too)"; fi

system-packages:  ## Chromium, CJK fonts and HAProxy for the tests: installed if missing (as root or with sudo)
	@bash scripts/system-packages.sh

run: $(STAMP)  ## serve on http://$(HOST):$(PORT) with a SQLite file and the demo catalog
	$(BIN)/toolreach init-local
	$(BIN)/toolreach serve --host $(HOST) --port $(PORT)

test: install lint typecheck  ## ruff, mypy and the whole pytest suite (needs Postgres on 127.0.0.1:5432)
	HF_HUB_OFFLINE=1 $(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)  ## the fast tests only
	$(BIN)/pytest tests/unit -m "not model"

migrate: $(STAMP)  ## upgrade the database in TOOLREACH_DATABASE_URL to head
	$(BIN)/toolreach migrate

DATA ?=
eval: $(STAMP)  ## routing quality on a labelled dataset: make eval DATA=dir/with/tools.jsonl+queries.jsonl
	@test -n "$(DATA)" || { echo "make eval needs DATA=<directory holding tools.jsonl and queries.jsonl>" >&2; exit 2; }
	$(BIN)/toolreach eval --data $(DATA)

bench: $(STAMP)  ## latency, throughput and memory at 1k/10k/100k tools
	$(BIN)/python -m bench.perf.route_bench

# helm renders the chart in tests/deploy; deploy/install-helm.sh pins the binary's sha256.
$(BIN)/helm: deploy/install-helm.sh | $(BIN)/python
	PYTHON=$(BIN)/python bash deploy/install-helm.sh $(BIN)
	@touch $@

docker-check: $(STAMP) $(BIN)/helm  ## validate the compose file, the Dockerfile and the Helm chart without Docker or a cluster
	# The two required variables get placeholders if unset: this checks the file, not a deployment.
	TOOLREACH_ADMIN_KEYS="$${TOOLREACH_ADMIN_KEYS:-placeholder-admin-key-for-the-check}" \
	TORCH_INDEX_URL="$${TORCH_INDEX_URL:-file:///wheels}" $(BIN)/docker-compose config -q
	$(BIN)/hadolint Dockerfile
	$(BIN)/helm lint --strict deploy/helm/toolreach
	$(BIN)/pytest tests/deploy

clean:
	rm -rf $(VENV) .npm-tools .pytest_cache .mypy_cache .ruff_cache toolreach.db*
