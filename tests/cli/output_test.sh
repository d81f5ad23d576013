#!/usr/bin/env bash
# No output lost silently: every command that writes to standard output fails, naming it and the
# reason, when the writes fail (/dev/full: "No space left on device"), instead of exiting 0; so
# does translate --attention into a full file. A reader that goes away (EPIPE, with SIGPIPE ignored
# as some parents do) ends translate quietly with status 141.
# Usage: output_test.sh PATH/TO/transformer
set -euo pipefail
bin=$1
source "$(dirname "$0")/level.sh"
skip_unsupported_level "$bin"
here=$(cd "$(dirname "$0")/.." && pwd)
fix="$here/fixtures/tiny_model"
model="$fix/model.safetensors"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# full NAME COMMAND...: the command, its standard output on /dev/full, must fail saying why.
full() {
  local name=$1; shift
  local rc=0
  "$@" > /dev/full 2> "$work/err" || rc=$?
  [ "$rc" -ne 0 ] || fail "$name: exit status 0 with its output lost on /dev/full"
  grep -q "cannot write standard output ('/dev/full'): No space left on device" "$work/err" ||
    fail "$name: message: $(cat "$work/err")"
}

"$bin" demo-data --out "$work/demo" --train 300 --valid 20 --test 20 --seed 3 > /dev/null
full translate "$bin" translate -m "$model" --vocab "$fix/vocab.model" --threads 1 --input "$fix/input.en"
printf 'one\teins\n' > "$work/pairs.tsv"
full score "$bin" score -m "$model" --vocab "$fix/vocab.model" --threads 1 --input "$work/pairs.tsv"
full eval "$bin" eval --ref "$fix/expected.beam4.de" --hyp "$fix/expected.beam4.de"
full info "$bin" info "$model"
full "info --cpu" "$bin" info --cpu
full attention "$bin" attention -m "$model" --vocab "$fix/vocab.model" "one" -o "$work/a.svg"
full demo-data "$bin" demo-data --out "$work/demo2" --train 10 --valid 1 --test 1
full init "$bin" init --preset tiny --vocab-size 16 --d-model 8 --heads 2 --d-ff 8 --layers 1 -o "$work/i.safetensors"
full average "$bin" average "$model" "$model" -o "$work/avg.safetensors"
"$bin" train --train-source "$work/demo/train.en" --train-target "$work/demo/train.de" --preset tiny --d-model 16 \
  --heads 2 --d-ff 32 --layers 1 --vocab-size 80 --batch-tokens 256 --max-steps 2 --log-every 1 --threads 1 \
  --run-dir "$work/run" \
  > /dev/full 2> "$work/err" && fail "train: exit status 0 with its output lost on /dev/full"
grep -q "cannot write standard output" "$work/err" || fail "train: message: $(cat "$work/err")"
full plot "$bin" plot "$work/run"

# A file translate streams into.
rc=0
"$bin" translate -m "$model" --vocab "$fix/vocab.model" --threads 1 --input "$fix/input.en" --attention /dev/full \
  > /dev/null 2> "$work/err" || rc=$?
[ "$rc" -ne 0 ] && grep -q "cannot write --attention '/dev/full': No space left on device" "$work/err" ||
  fail "--attention on a full file: status $rc, $(cat "$work/err")"

# A reader that goes away: quietly, status 141 (SIGPIPE ignored). The output, about 500 KB, is far
# more than a pipe holds plus what head reads at once, so that writes are still due when it exits.
for i in $(seq 2000); do cat "$fix/input.en"; done > "$work/big.en"
status=$( (trap '' PIPE; "$bin" translate -m "$model" --vocab "$fix/vocab.model" --threads 1 --beam 1 \
  --input "$work/big.en" 2> "$work/err" | head -n 1 > /dev/null; echo "${PIPESTATUS[0]}") )
[ "$status" = 141 ] || fail "EPIPE: status $status, expected 141"
# Quiet: nothing but the fixture's own note (no checksum) and warning (no vocabulary fingerprint).
grep -v "^note: '.*' records no checksum\|^warning: '.*' records no vocabulary fingerprint" "$work/err" > "$work/rest" || true
[ ! -s "$work/rest" ] || fail "EPIPE: not quiet: $(cat "$work/rest")"
echo "output checks passed"
