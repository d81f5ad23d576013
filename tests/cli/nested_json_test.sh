#!/usr/bin/env bash
# JSON nested 100,000 deep in each kind of file the commands read (a safetensors header's shape and
# data_offsets, the model configuration in its metadata, import hf's config.json, vocab.json and
# tokenizer_config.json, a piece vocabulary, train --config, metrics.jsonl for plot): an error
# naming the file and the limit (status 1), never a crash by stack overflow (status 139).
# Usage: nested_json_test.sh PATH/TO/transformer
set -euo pipefail
bin=$1
# Nothing here depends on the instruction-set level: the unforced run alone.
if [ -n "${TFM_CPU_ISA:-}" ]; then echo "skipped: not level-dependent"; exit 77; fi
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_refused WHAT FILE COMMAND...: status 1 and a message naming FILE and the limit.
expect_refused() {
  local what=$1 file=$2 rc=0
  shift 2
  "$@" > /dev/null 2> "$work/err" || rc=$?
  [ "$rc" -eq 1 ] || fail "$what: status $rc (139 is a crash): $(head -c 300 "$work/err")"
  grep -qF "$file" "$work/err" || fail "$what: the error does not name $file: $(head -c 300 "$work/err")"
  grep -q "nested deeper than 64 levels" "$work/err" || fail "$what: the error does not give the limit: $(head -c 300 "$work/err")"
}

python3 - "$work" <<'PY'
import json, struct, sys
work = sys.argv[1]
deep = "[" * 100000 + "]" * 100000

def safetensors(path, header):
    h = json.dumps(header, separators=(",", ":")).replace('"DEEP"', deep).encode()
    h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h)

safetensors(f"{work}/shape.safetensors", {"a": {"dtype": "F32", "shape": ["DEEP"], "data_offsets": [0, 0]}})
safetensors(f"{work}/offsets.safetensors", {"a": {"dtype": "F32", "shape": [0], "data_offsets": ["DEEP", 0]}})
safetensors(f"{work}/config.safetensors",
            {"__metadata__": {"format": "tfm-transformer", "format_version": "1", "config": deep}})
open(f"{work}/vocabulary.json", "w").write('{"format":' + deep + "}")
open(f"{work}/train.json", "w").write('{"max_steps":' + deep + "}")
import os
os.makedirs(f"{work}/run")
open(f"{work}/run/metrics.jsonl", "w").write('{"step":1,"loss":2}\n{"step":' + deep + "}\n")
PY

expect_refused "info, nested shape" shape.safetensors "$bin" info "$work/shape.safetensors"
expect_refused "info, nested data_offsets" offsets.safetensors "$bin" info "$work/offsets.safetensors"
expect_refused "info, nested config metadata" "config.safetensors: metadata 'config'" "$bin" info "$work/config.safetensors"
expect_refused "translate, nested config metadata" config.safetensors "$bin" translate -m "$work/config.safetensors" \
  --vocab "$here/fixtures/tiny_model/vocab.model" <<< "one"
expect_refused "average, nested config metadata" config.safetensors "$bin" average "$work/config.safetensors" \
  -o "$work/avg.safetensors"
expect_refused "translate, nested vocabulary.json" vocabulary.json "$bin" translate \
  -m "$here/fixtures/tiny_model/model.safetensors" --vocab "$work/vocabulary.json" <<< "one"
expect_refused "train --config" train.json "$bin" train --config "$work/train.json"
expect_refused "plot, nested metrics.jsonl" "metrics.jsonl line 2" "$bin" plot "$work/run"

# import hf: each JSON file of the folder in turn, the others valid.
for name in config.json vocab.json tokenizer_config.json; do
  rm -rf "$work/hf" && cp -r "$here/fixtures/import/hf" "$work/hf"
  python3 -c "import sys; open(sys.argv[1], 'w').write('{\"model_type\":' + '[' * 100000 + ']' * 100000 + '}')" \
    "$work/hf/$name"
  expect_refused "import hf, nested $name" "$name" "$bin" import hf "$work/hf" -o "$work/out"
  [ ! -e "$work/out" ] || fail "a refused import wrote its output folder"
done
echo "nested_json_test: ok"
