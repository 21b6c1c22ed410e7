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

# One BLAS/torch thread per process: pytest, the notebook kernels and chromium
# share the machine's cores, and oversubscribed threads make small forwards crawl.
test: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	OMP_NUM_THREADS=1 $(PY) -m pytest tests notebooks --nbval-lax --nbval-sanitize-with notebooks/sanitize.cfg -p no:cacheprovider
	OMP_NUM_THREADS=1 $(PY) scripts/conformance.py --fast --check --no-report

test-fast: setup
	$(PY) -m pytest tests -m "not slow and not browser" -x -q

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
	rm -rf $(VENV) .pytest_cache .ruff_cache build dist site *.egg-info
