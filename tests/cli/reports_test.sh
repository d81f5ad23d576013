#!/usr/bin/env bash
# What info and eval report for scripts: `info --json` states the facts of the text output as one
# JSON object (a checkpoint's training state as an object, the CPU's under "cpu"; a vocabulary's
# too), and eval's score lines carry sacreBLEU's signature as sacreBLEU's text format does, the
# signature --json gives.
# Usage: reports_test.sh PATH/TO/transformer
set -euo pipefail
bin=$1
source "$(dirname "$0")/level.sh"
skip_unsupported_level "$bin"
here=$(cd "$(dirname "$0")/.." && pwd)
fix="$here/fixtures/tiny_model"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# Debian's python3 where there is one (a version manager's shim starts slowly), else the PATH's.
py=$(command -v /usr/bin/python3 || command -v python3)
# json FILE EXPRESSION...: each EXPRESSION of the JSON object `j` in FILE, one line each.
json() {
  "$py" -c 'import json, sys
j = json.load(open(sys.argv[1]))
for e in sys.argv[2:]:
    v = eval(e)
    print(json.dumps(v) if isinstance(v, (bool, type(None))) else v)' "$@"
}

# A model: the JSON's configuration and parameter counts are the text's.
"$bin" info "$fix/model.safetensors" > "$work/info.txt" 2> /dev/null
"$bin" info --json "$fix/model.safetensors" > "$work/info.json" 2> /dev/null || fail "info --json failed"
fields=(d_model heads encoder_layers tie_source_target activation head_dim)
for field in "${fields[@]}"; do awk -v f="$field" '$1 == f { print $2 }' "$work/info.txt" | tr -d '"'; done > "$work/want"
awk '$1 == "total" { gsub(",", "", $2); print $2 }' "$work/info.txt" >> "$work/want"
stat -c %s "$fix/model.safetensors" >> "$work/want"
expressions=()
for field in "${fields[@]}"; do expressions+=("j['config'].get('$field', j.get('$field'))"); done
json "$work/info.json" "${expressions[@]}" 'j["parameters"]["total"]' 'j["file_bytes"]' > "$work/got" ||
  fail "info --json is not the JSON object expected: $(cat "$work/info.json")"
[ "$(wc -l < "$work/want")" = 8 ] && diff "$work/want" "$work/got" > "$work/diff" ||
  fail "info --json differs from the text (${fields[*]} total file_bytes): $(cat "$work/diff")"

# A checkpoint: its training state is an object, not a string to grep.
"$bin" demo-data --out "$work/demo" --train 200 --valid 10 --test 10 --seed 3 > /dev/null
"$bin" train --train-source "$work/demo/train.en" --train-target "$work/demo/train.de" --preset tiny --d-model 16 \
  --heads 2 --d-ff 32 --layers 1 --vocab-size 80 --batch-tokens 256 --max-steps 2 --save-every 2 --threads 1 \
  --run-dir "$work/run" > /dev/null 2>&1 || fail "train failed"
ckpt=$(ls "$work"/run/checkpoint-*.safetensors | head -n 1)
"$bin" info --json "$ckpt" > "$work/ckpt.json" 2> /dev/null || fail "info --json on a checkpoint failed"
[ "$(json "$work/ckpt.json" 'j["metadata"]["train_state"]["step"]')" = 2 ] ||
  fail "info --json: no train_state.step 2: $(cat "$work/ckpt.json")"

# --cpu: the same names as the text's lines.
"$bin" info --cpu --json > "$work/cpu.json" || fail "info --cpu --json failed"
"$bin" info --cpu | awk '/^[^ ]/ { print $1 }' > "$work/want"
json "$work/cpu.json" 'chr(10).join(j["cpu"])' > "$work/got"
diff "$work/want" "$work/got" > "$work/diff" || fail "info --cpu --json's names differ from the text's: $(cat "$work/diff")"
# A vocabulary given for a model.
"$bin" info --json "$fix/vocab.model" > "$work/vocab.json" || fail "info --json on a vocabulary failed"
[ "$(json "$work/vocab.json" 'j["size"]')" -gt 0 ] || fail "info --json on a vocabulary: $(cat "$work/vocab.json")"

# eval: the text's lines carry the signatures of --json, and the score stays the third field.
"$bin" eval --ref "$fix/expected.beam4.de" --hyp "$fix/expected.greedy.de" > "$work/eval.txt"
"$bin" eval --ref "$fix/expected.beam4.de" --hyp "$fix/expected.greedy.de" --json > "$work/eval.json"
json "$work/eval.json" 'j["bleu"]["signature"]' 'j["bleu"]["score"]' 'j["chrf"]["signature"]' 'j["chrf"]["score"]' \
  > "$work/eval.want"
for metric in 1 3; do
  sig=$(sed -n "${metric}p" "$work/eval.want")
  want=$(sed -n "$((metric + 1))p" "$work/eval.want")
  line=$(grep -F "|$sig = " "$work/eval.txt") || fail "eval: no line with the signature '$sig': $(cat "$work/eval.txt")"
  awk -v w="$want" '{ d = $3 - w; exit (d < -0.01 || d > 0.01) }' <<< "$line" || fail "eval: '$line' has not the score $want"
done
grep -q "^BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp = " "$work/eval.txt" || fail "eval: $(cat "$work/eval.txt")"
echo "reports test: OK"
