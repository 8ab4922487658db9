# drover: `make run` (local suite) and `make test` (all tests) work on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

.PHONY: help venv etcd node run test test-slow test-netfault test-unit lint proto proto-check bench soak smoke image clean

help:
	@echo "make run    - local etcd + state, broker, deployments, proxy (Ctrl-C stops all)"
	@echo "make test   - the inner loop: unit, integration and quick system tests, real etcd"
	@echo "make test-slow     - the long drills (-m slow): kills, failovers, dev walk-throughs"
	@echo "make test-netfault - network faults in namespaces (-m netfault; root, nftables)"
	@echo "make soak   - an hour under a fault a minute, judged (SOAK_MINUTES=N; bench/soak.py)"
	@echo "make lint   - ruff, mypy, buf lint"
	@echo "make proto  - regenerate libs/drover/api from protos/"
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

run: venv etcd
	$(BIN)/drover dev

# The inner loop leaves out the long drills: the slow tests (-m slow: process
# kills, lease expiry, drover dev walk-throughs, chaos) and the network fault
# tests (-m netfault: root and nftables). Each has its own target, and CI
# runs all three as steps of their own. A -m in PYTEST_ARGS wins.
test: venv etcd node
	$(BIN)/pytest -m "not slow and not netfault" $(PYTEST_ARGS)

test-slow: venv etcd node
	$(BIN)/pytest -m "slow and not netfault" $(PYTEST_ARGS)

test-netfault: venv etcd
	$(BIN)/pytest -m netfault $(PYTEST_ARGS)

test-unit: venv
	$(BIN)/pytest tests/unit $(PYTEST_ARGS)

lint: venv node
	$(BIN)/ruff check .
	$(BIN)/mypy libs services bench tests
	npx --no-install buf lint
	# the previous release, 0.1.0 = defa1f3 (in every clone's history)
	npx --no-install buf breaking --against '.git#ref=defa1f352eccd3d3407b6293ec1f91797c63d066'

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
