#!/usr/bin/env bash
# transformer import hf on the committed small random GPT-2, Llama, Qwen2 and Mistral folders
# (tests/fixtures/hf, tools/make_hf_decoder_fixtures.py), then generate --ids: the greedy
# continuations of the prompts must be Hugging Face generate()'s (reference.json beside each).
# Skipped (77) while the folders' tokenizers cannot be imported.
# Usage: hf_decoder_test.sh PATH/TO/transformer
set -euo pipefail
bin=$1
source "$(dirname "$0")/level.sh"
skip_unsupported_level "$bin"
here=$(cd "$(dirname "$0")/.." && pwd)
fix="$here/fixtures/hf"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for name in gpt2 llama qwen2 mistral llama_stops; do
  if ! "$bin" import hf "$fix/$name" -o "$work/$name" > "$work/path" 2> "$work/notes"; then
    if grep -q "tokenizer is not implemented" "$work/notes"; then
      echo "skipped: import hf cannot read these folders' tokenizers yet ($(cat "$work/notes"))"
      exit 77
    fi
    fail "import hf $name failed: $(cat "$work/notes")"
  fi
  [ "$(cat "$work/path")" = "$work/$name/model.safetensors" ] || fail "import hf $name printed $(cat "$work/path")"
  # The prompts' ids, Hugging Face's greedy continuations, and the length limit.
  python3 - "$fix/$name/reference.json" "$work" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
with open(sys.argv[2] + "/prompts.txt", "w") as p, open(sys.argv[2] + "/want.txt", "w") as w:
    for prompt, greedy in zip(r["prompts"], r["greedy"]):
        p.write(" ".join(map(str, prompt)) + "\n"); w.write(" ".join(map(str, greedy)) + "\n")
open(sys.argv[2] + "/max_new", "w").write(str(r["max_new_tokens"]))
PY
  "$bin" generate -m "$work/$name/model.safetensors" --ids --threads 1 --max-new-tokens "$(cat "$work/max_new")" \
    --input "$work/prompts.txt" > "$work/got.txt" || fail "generate with the imported $name failed"
  diff "$work/want.txt" "$work/got.txt" || fail "$name: greedy continuations differ from Hugging Face's"
done
end_of_level_checks
echo "ok"
