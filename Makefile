# drover: `make run` (local suite) and `make test` (all tests) work on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=
# The scheduler worker `make conformance` judges (docs/worker-protocol.md).
WORKER ?= $(BIN)/drover worker

.PHONY: help venv etcd node browser ts-client ts-worker py-client clients run test test-slow test-netfault test-unit test-upgrade conformance conformance-ts lint proto proto-check bench soak smoke image clean

help:
	@echo "make run    - local etcd + state, broker, deployments, proxy, web UI on :4646 (Ctrl-C stops all)"
	@echo "make test   - the inner loop: unit, integration and quick system tests, real etcd"
	@echo "make test-slow     - the long drills (-m slow): kills, failovers, dev walk-throughs"
	@echo "make test-netfault - network faults in namespaces (-m netfault; root, nftables)"
	@echo "make browser - Debian chromium for the web UI's browser tests (part of test-slow)"
	@echo "make conformance WORKER=\"cmd\" - a scheduler worker against Nomad's scenarios (default: drover worker)"
	@echo "make soak   - an hour under a fault a minute, judged (SOAK_MINUTES=N; bench/soak.py)"
	@echo "make test-upgrade - a rolling upgrade from the previous release (releases.toml), and back"
	@echo "make lint   - ruff, mypy, buf lint, buf breaking against the previous release"
	@echo "make proto  - regenerate libs/drover/api from protos/"
	@echo "make clients - the typed API clients: clients/typescript (npm) and clients/python (wheel)"
	@echo "make ts-worker - build the TypeScript worker (workers/typescript) and run its unit tests"
	@echo "make image  - the OCI image (deploy/Dockerfile) with buildah, on a debootstrap base"

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[dev]'
	@touch $@

venv: $(STAMP)

etcd:
	@bash scripts/ensure-etcd.sh

node_modules/.package-lock.json: package.json package-lock.json
	npm install --no-audit --no-fund --loglevel=error
	@touch $@

node: node_modules/.package-lock.json

# The web UI's browser tests drive Debian's chromium (headless, by Playwright;
# no browser download): installed here when missing (apt, as root).
browser:
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; }

# The TypeScript API client (@drover/api: buf + ts-proto from protos/, then
# tsc) and the TypeScript scheduler worker built on it, with its unit tests
# (node's test runner). `npm install <path>/clients/typescript` after this.
TS_CLIENT := clients/typescript/dist/.built
TS_WORKER := workers/typescript/dist/.built

$(TS_CLIENT): node_modules/.package-lock.json buf.gen.ts.yaml clients/typescript/package.json \
		clients/typescript/tsconfig.json $(shell find protos -name '*.proto')
	npm run build --silent -w clients/typescript
	@touch $@

$(TS_WORKER): $(TS_CLIENT) workers/typescript/package.json workers/typescript/tsconfig.json \
		$(shell find workers/typescript/src workers/typescript/test workers/typescript/test_helpers -name '*.ts')
	npm run build --silent -w workers/typescript
	@touch $@

ts-client: $(TS_CLIENT)

ts-worker: $(TS_WORKER)
	npm test --silent -w workers/typescript

# drover-api: the Python stubs (libs/drover/api) as a wheel of their own.
py-client: venv
	$(BIN)/python -m pip wheel -q --no-deps -w clients/python/dist clients/python

clients: ts-client py-client

run: venv etcd
	$(BIN)/drover dev

# The inner loop leaves out the long drills: the slow tests (-m slow: process
# kills, lease expiry, drover dev walk-throughs, chaos) and the network fault
# tests (-m netfault: root and nftables) and the worker conformance suite
# (-m conformance). Each has its own target, and CI runs them as steps of
# their own. A -m in PYTEST_ARGS wins.
test: venv etcd node ts-worker
	$(BIN)/pytest -m "not slow and not netfault and not conformance and not upgrade" $(PYTEST_ARGS)

test-slow: venv etcd node browser ts-worker
	$(BIN)/pytest -m "slow and not netfault and not conformance and not upgrade" $(PYTEST_ARGS)

# A rolling upgrade from the previous release (tests/upgrade/, -m upgrade):
# its own checkout and venv in a temp dir, a workload running, one process at
# a time replaced by this tree's code, then back (docs/upgrade.md).
test-upgrade: venv etcd
	$(BIN)/pytest -m upgrade tests/upgrade $(PYTEST_ARGS)

test-netfault: venv etcd
	$(BIN)/pytest -m netfault $(PYTEST_ARGS)

# Nomad's scheduler scenarios judged on a real `drover dev --nodes 0` with the
# WORKER command (started by the suite with --address HOST:PORT appended).
conformance: venv etcd
	DROVER_CONFORMANCE_WORKER="$(WORKER)" $(BIN)/pytest -m conformance tests/conformance $(PYTEST_ARGS)

# The same scenarios with the TypeScript worker.
conformance-ts: ts-worker
	$(MAKE) conformance WORKER="node $(CURDIR)/workers/typescript/dist/src/main.js"

test-unit: venv ts-worker
	$(BIN)/pytest tests/unit $(PYTEST_ARGS)

lint: venv node
	$(BIN)/ruff check .
	$(BIN)/mypy libs services bench tests
	npx --no-install buf lint
	$(BIN)/python scripts/releases.py check
	# the API against the previous release (releases.toml: its tag, else its commit)
	ref=$$($(BIN)/python scripts/releases.py ref) && \
	  echo "buf breaking against $$ref" && \
	  npx --no-install buf breaking --against ".git#ref=$$ref"

smoke: venv node
	bash scripts/smoke.sh

image:
	bash scripts/build-image.sh

proto: venv
	$(BIN)/python scripts/genproto.py

proto-check: venv
	$(BIN)/python scripts/genproto.py --check

bench: venv etcd
	@for b in bench/*.py; do case $$b in bench/_*|bench/soak.py) continue;; esac; echo "== $$b"; $(BIN)/python $$b; done

# An hour under faults (bench/soak.py; SOAK_MINUTES=10 for CI's short run).
SOAK_MINUTES ?= 60
soak: venv etcd
	$(BIN)/python bench/soak.py --minutes $(SOAK_MINUTES) $(SOAK_ARGS)

clean:
	rm -rf $(VENV) node_modules .pytest_cache .mypy_cache .ruff_cache
