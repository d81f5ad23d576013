#!/usr/bin/env bash
# What training must not lose or mix up: a second training into a run folder that another one is
# using fails at once naming the holder's pid; temporary files left by killed saves go at the next
# start; a non-finite loss or gradient stops the run before any bad state is saved; a metrics record
# that cannot be written (a file-size limit standing in for a full disk) stops the run; a torn
# metrics line and an unreadable newest checkpoint are passed over on resume, saying so; bad options
# and mismatched validation files fail before any file is written.
# Usage: train_guard_test.sh PATH/TO/transformer
set -euo pipefail
bin=$1
source "$(dirname "$0")/level.sh"
skip_unsupported_level "$bin"
work=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin" demo-data --out "$work/data" --train 300 --valid 20 --test 20 --seed 3 > /dev/null
args=(--train-source "$work/data/train.en" --train-target "$work/data/train.de" --preset tiny --d-model 16 --heads 2
      --d-ff 32 --layers 1 --vocab-size 80 --batch-tokens 256 --warmup-steps 10 --threads 1 --seed 5)

# 1. One training per run folder: the second fails at once, naming the first one's pid.
"$bin" train "${args[@]}" --max-steps 1000000 --save-every 1000000 --run-dir "$work/a" > /dev/null 2>&1 &
first=$!
for _ in $(seq 100); do [ -f "$work/a/config.json" ] && break; sleep 0.1; done
[ -f "$work/a/config.json" ] || fail "the first training did not start"
rc=0
"$bin" train "${args[@]}" --max-steps 5 --run-dir "$work/a" --resume > /dev/null 2> "$work/b.err" || rc=$?
[ "$rc" -ne 0 ] || fail "a second training into a folder in use was accepted"
grep -q "another training is using the run folder '$work/a'.*(pid $first)" "$work/b.err" ||
  fail "lock message: $(cat "$work/b.err")"
kill -9 "$first"; wait "$first" 2>/dev/null || true
# The kernel released the killed one's lock: a new run can start (here, a fresh one beside its files).
"$bin" train "${args[@]}" --max-steps 20 --save-every 10 --log-every 1 --run-dir "$work/c" > /dev/null 2>&1 ||
  fail "a training after a killed one"

# 2. Stale temporary files of interrupted saves go at the next start; other files stay.
touch "$work/c/.checkpoint-00000030.safetensors.tmp-Ab12Cd" "$work/c/.model.safetensors.tmp-xyZ789" "$work/c/notes.tmp-1"
"$bin" train "${args[@]}" --max-steps 25 --save-every 10 --log-every 1 --run-dir "$work/c" --resume > /dev/null \
  2> "$work/c.err" || { cat "$work/c.err"; fail "resume after stale files"; }
[ ! -e "$work/c/.checkpoint-00000030.safetensors.tmp-Ab12Cd" ] && [ ! -e "$work/c/.model.safetensors.tmp-xyZ789" ] ||
  fail "stale temporary files were left"
[ -e "$work/c/notes.tmp-1" ] || fail "a file that is not a temporary save was removed"
grep -q "removed '.checkpoint-00000030.safetensors.tmp-Ab12Cd'" "$work/c.err" || fail "no message: $(cat "$work/c.err")"

# 3. A loss or gradient that is not finite stops the run at that step; the checkpoints before it stay.
rc=0
"$bin" train "${args[@]}" --max-steps 100 --save-every 1 --lr-factor 1e9 --run-dir "$work/nan" > /dev/null \
  2> "$work/nan.err" || rc=$?
[ "$rc" -ne 0 ] || fail "training went on with a non-finite loss"
grep -qE "the training (loss|gradient norm) became -?(nan|inf) at step ([0-9]+); stopped before updating the weights; the last checkpoint, of step [0-9]+, is kept" \
  "$work/nan.err" || fail "non-finite message: $(cat "$work/nan.err")"
step=$(grep -oE "at step [0-9]+" "$work/nan.err" | grep -oE "[0-9]+")
last=$(ls "$work/nan"/checkpoint-*.safetensors | tail -n 1)
[ "$(basename "$last")" = "$(printf 'checkpoint-%08d.safetensors' $((step - 1)))" ] ||
  fail "the newest checkpoint is $(basename "$last"), not the step before $step"
[ ! -e "$work/nan/model.safetensors" ] || fail "a final model was written after a non-finite loss"
"$bin" info "$last" > /dev/null || fail "the kept checkpoint does not load"

# 4. A metrics record that cannot be written stops the run (here the file-size limit: EFBIG). The
# checkpoint of that step does not fit the limit either, and the message says which one is kept.
"$bin" train "${args[@]}" --max-steps 20 --save-every 10 --log-every 1 --run-dir "$work/m" > /dev/null 2>&1
rc=0
(ulimit -f 48; trap '' XFSZ; exec "$bin" train "${args[@]}" --max-steps 100000 --save-every 100000 --log-every 1 \
  --run-dir "$work/m" --resume) > /dev/null 2> "$work/m.err" || rc=$?
[ "$rc" -ne 0 ] || fail "training went on with metrics it could not write"
grep -q "cannot write to the metrics file '$work/m/metrics.jsonl': \(File too large\|only [0-9]* of [0-9]* bytes written\)" \
  "$work/m.err" || fail "metrics message: $(cat "$work/m.err")"
grep -q "saving a checkpoint failed too .*the last checkpoint, of step 20, is kept" "$work/m.err" ||
  fail "checkpoint after a failed metrics write: $(cat "$work/m.err")"
# The torn last line, if the limit cut one, is dropped on resume, saying so; records never interleave.
printf '{"step": 21, "loss": 3.' >> "$work/m/metrics.jsonl"
"$bin" train "${args[@]}" --max-steps 22 --save-every 10 --log-every 1 --run-dir "$work/m" --resume > /dev/null \
  2> "$work/m2.err" || { cat "$work/m2.err"; fail "resume after a torn metrics line"; }
grep -q "warning: dropped [0-9]* unreadable line" "$work/m2.err" || fail "torn line: $(cat "$work/m2.err")"
python3 - "$work/m/metrics.jsonl" <<'PY' || fail "metrics.jsonl is not clean JSON lines with increasing steps"
import json, sys
steps = [json.loads(l)["step"] for l in open(sys.argv[1]) if "loss" in l]
assert steps == sorted(set(steps)) and steps[-1] == 22, steps[-5:]
PY

# 5. An unreadable newest checkpoint: resume passes it over for the one before, saying so.
newest=$(ls "$work/m"/checkpoint-*.safetensors | tail -n 1)
previous=$(ls "$work/m"/checkpoint-*.safetensors | tail -n 2 | head -n 1)
[ "$previous" != "$newest" ] || fail "only one checkpoint to fall back from"
head -c 1000 "$newest" > "$work/cut" && mv "$work/cut" "$newest"
"$bin" train "${args[@]}" --max-steps 24 --save-every 10 --log-every 1 --run-dir "$work/m" --resume > /dev/null \
  2> "$work/m3.err" || { cat "$work/m3.err"; fail "resume with a truncated newest checkpoint"; }
grep -q "warning: cannot resume from $newest .*trying the one before it" "$work/m3.err" ||
  fail "fallback message: $(cat "$work/m3.err")"
grep -q "resumed from $previous at step" "$work/m3.err" || fail "not resumed from $previous: $(cat "$work/m3.err")"

# 6. Checked before any file is written: Adam's settings, max_chars, mismatched validation files.
for bad in "--adam-beta1 1.5:adam_beta1 must be in \[0, 1), got 1.5" "--adam-eps 0:adam_eps must be positive, got 0" \
           "--max-chars -1:max_chars must be >= 0 (0: no limit), got -1" \
           "--device gpu:train: device 'gpu' is not a device: cpu, or cuda (cuda:0)" \
           "--device=cuda@1:only the first CUDA device, cuda:0, is used so far"; do
  flag=${bad%%:*} message=${bad#*:}
  flag=${flag/@/:}  # a colon inside the flag
  rc=0
  "$bin" train "${args[@]}" $flag --max-steps 5 --run-dir "$work/x" > /dev/null 2> "$work/x.err" || rc=$?
  [ "$rc" -eq 1 ] && grep -q "$message" "$work/x.err" || fail "$flag: status $rc, $(cat "$work/x.err")"
  [ ! -e "$work/x" ] || fail "$flag: the run folder was created"
done
# Without a GPU (or a build without CUDA), --device cuda says so, naming the device.
if ! "$bin" info --cpu | grep -q '^cuda .*compute capability'; then
  rc=0
  "$bin" train "${args[@]}" --device cuda --max-steps 5 --run-dir "$work/g" > /dev/null 2> "$work/g.err" || rc=$?
  [ "$rc" -eq 1 ] && grep -q "on device 'cuda': \(no CUDA device found\|this build has no backend for cuda\)" \
    "$work/g.err" || fail "--device cuda without a GPU: status $rc, $(cat "$work/g.err")"
  [ ! -e "$work/g" ] || fail "--device cuda without a GPU: the run folder was created"
  rc=0
  "$bin" translate -m "$work/c/model.safetensors" --device cuda < "$work/data/valid.en" > /dev/null 2> "$work/t.err" ||
    rc=$?
  [ "$rc" -eq 1 ] && grep -q "cuda" "$work/t.err" || fail "translate --device cuda without a GPU: status $rc, $(cat "$work/t.err")"
fi
head -n 5 "$work/data/valid.de" > "$work/short.de"
rc=0
"$bin" train "${args[@]}" --valid-source "$work/data/valid.en" --valid-target "$work/short.de" --max-steps 5 \
  --run-dir "$work/y" > /dev/null 2> "$work/y.err" || rc=$?
[ "$rc" -ne 0 ] || fail "mismatched validation files accepted"
[ ! -e "$work/y/vocab.model" ] || fail "the vocabulary was trained before the validation files were checked"
echo "training guard checks passed"
