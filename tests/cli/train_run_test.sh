#!/usr/bin/env bash
# A training run as a user sees it: the ETA counts down to the first limit that ends the run (here
# --max-seconds, not the default 100,000 steps); a run stopped by its time limit validates at its
# last step; a run's config.json, after a resume, starts a new run; a training started with SIGINT
# ignored (a script's background job) says so at the start, and how to stop it.
# Usage: train_run_test.sh PATH/TO/transformer
set -euo pipefail
bin=$1
source "$(dirname "$0")/level.sh"
skip_unsupported_level "$bin"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin" demo-data -o "$work/data" --train 300 --valid 10 --test 1 --seed 3 > /dev/null
args=(--train-source "$work/data/train.en" --train-target "$work/data/train.de" --preset tiny --d-model 16 --heads 2
      --d-ff 32 --layers 1 --vocab-size 80 --batch-tokens 256 --warmup-steps 10 --threads 1 --seed 5)

# 1. --max-seconds 2: every ETA on the progress lines is at most 2 s; the last step is validated.
"$bin" train "${args[@]}" --valid-source "$work/data/valid.en" --valid-target "$work/data/valid.de" \
  --max-seconds 2 --valid-every 1000000 --log-every 1 --run-dir "$work/timed" > /dev/null 2> "$work/timed.log" ||
  { cat "$work/timed.log"; fail "timed run"; }
grep -q "ETA " "$work/timed.log" || fail "no ETA on the progress lines: $(head -n 5 "$work/timed.log")"
worst=$(grep -o "ETA [0-9]*:[0-9]*:[0-9]*" "$work/timed.log" | awk -F'[ :]' '{ s = $2 * 3600 + $3 * 60 + $4; if (s > m) m = s } END { print m + 0 }')
[ "$worst" -le 2 ] || fail "an ETA of $worst s with --max-seconds 2: $(grep -m 1 ETA "$work/timed.log")"
last=$(sed -n 's/^stopped at step \([0-9]*\): reached max_seconds.*/\1/p' "$work/timed.log")
[ -n "$last" ] || fail "the timed run did not stop by its time limit: $(tail -n 2 "$work/timed.log")"
grep -q "^validation at step $last:" "$work/timed.log" || fail "no validation at the last step $last"
[ -f "$work/timed/model-best.safetensors" ] || fail "no model-best after the final validation"

# 2. Train, resume, then start a new run from the first run's config.json: it does not say resume.
"$bin" train "${args[@]}" --max-steps 2 --run-dir "$work/a" > /dev/null 2> "$work/a.log" || { cat "$work/a.log"; fail "run a"; }
"$bin" train --config "$work/a/config.json" --resume --max-steps 4 > /dev/null 2>> "$work/a.log" ||
  { cat "$work/a.log"; fail "resume of run a"; }
! grep -q '"resume"' "$work/a/config.json" || fail "config.json records resume: $(grep resume "$work/a/config.json")"
# 3. ... started with SIGINT ignored, as a script's background job is: a note says how to stop it.
( trap '' INT; exec "$bin" train --config "$work/a/config.json" --run-dir "$work/b" ) > /dev/null 2> "$work/b.log" ||
  { cat "$work/b.log"; fail "a new run from run a's config.json"; }
[ -f "$work/b/model.safetensors" ] || fail "the new run wrote no model"
grep -q "^note: SIGINT is ignored.*SIGTERM" "$work/b.log" || fail "no note on the ignored SIGINT: $(head -n 3 "$work/b.log")"
! grep -q "SIGINT is ignored" "$work/a.log" || fail "a note on SIGINT where it was not ignored"
# An earlier version's config.json with "resume": true: the error names the way to a new run.
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["resume"]=True; json.dump(c,open(sys.argv[2],"w"))' \
  "$work/a/config.json" "$work/old.json"
rc=0; "$bin" train --config "$work/old.json" --run-dir "$work/c" 2> "$work/c.err" || rc=$?
[ "$rc" = 1 ] && grep -q "no checkpoint in '$work/c'.*--resume=false" "$work/c.err" || fail "old config: $(cat "$work/c.err")"
"$bin" train --config "$work/old.json" --run-dir "$work/c" --resume=false > /dev/null 2>&1 || fail "--resume=false"
echo "ok"
