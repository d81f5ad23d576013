#!/usr/bin/env bash
# Language models through the command line (train --architecture decoder-only | encoder-only
# --train-text): the loss falls, validation logs perplexity (and the unigram baseline), a run
# killed with SIGKILL and resumed ends byte-identical to an uninterrupted one, checkpoints average,
# and bad input is named: an empty or missing file, parallel and monolingual data mixed, a given
# vocabulary without <mask> for a masked LM.
# Usage: lm_train_test.sh PATH/TO/transformer
set -euo pipefail
bin=$1
work=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin" demo-data --out "$work/data" --train 300 --valid 20 --test 20 --seed 3 >/dev/null
text=(--train-text "$work/data/train.de" --valid-text "$work/data/valid.de")
common=(--preset tiny --d-model 16 --heads 2 --d-ff 32 --layers 1 --vocab-size 80 --batch-tokens 256
        --warmup-steps 10 --save-every 2 --valid-every 50 --log-every 10 --threads 1 --seed 1)
decoder=(--architecture decoder-only --positions learned)
encoder=(--architecture encoder-only --mlm-head)

# check_lm NAME ARCH-FLAGS...: an uninterrupted run, one killed once checkpoints exist and resumed;
# the two models equal, the loss falls, perplexity logged below the unigram baseline's.
check_lm() {
  local name=$1 pid; shift
  local arch=("$@")
  "$bin" train "${text[@]}" "${common[@]}" "${arch[@]}" --max-steps 100 --run-dir "$work/$name" >/dev/null \
    2>"$work/$name.log" || { cat "$work/$name.log"; fail "$name: training"; }
  grep -qE "^validation at step 100: loss [0-9.]+ \| ppl [0-9.]+" "$work/$name.log" ||
    fail "$name: no perplexity in the log: $(grep validation "$work/$name.log")"
  ! grep -q BLEU "$work/$name.log" || fail "$name: a language model's validation reports BLEU"
  python3 - "$work/$name/metrics.jsonl" "$work/$name.log" <<'PY' || fail "$name: loss or perplexity"
import json, math, re, sys
records = [json.loads(l) for l in open(sys.argv[1])]
losses = [r["loss"] for r in records if "loss" in r]
valid = [r for r in records if "valid_ppl" in r]
assert losses[-1] < 0.9 * losses[0], losses
assert valid and "valid_bleu" not in valid[-1], valid
assert abs(valid[-1]["valid_ppl"] - math.exp(valid[-1]["valid_loss"])) < 1e-6 * valid[-1]["valid_ppl"], valid[-1]
unigram = float(re.search(r"unigram baseline: validation perplexity ([0-9.]+)", open(sys.argv[2]).read()).group(1))
assert valid[-1]["valid_ppl"] < unigram, (valid[-1], unigram)
PY
  for attempt in 1 2 3; do
    rm -rf "$work/$name-k"
    "$bin" train "${text[@]}" "${common[@]}" "${arch[@]}" --max-steps 100 --run-dir "$work/$name-k" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1 600); do
      [ -f "$work/$name-k/checkpoint-00000006.safetensors" ] && break
      kill -0 $pid 2>/dev/null || break
      sleep 0.01
    done
    kill -KILL $pid 2>/dev/null || true
    wait $pid 2>/dev/null || true
    [ -f "$work/$name-k/model.safetensors" ] || break
  done
  [ ! -f "$work/$name-k/model.safetensors" ] || fail "$name: the run finished before the kill, 3 times"
  "$bin" train "${text[@]}" "${common[@]}" "${arch[@]}" --max-steps 100 --run-dir "$work/$name-k" --resume >/dev/null \
    2>"$work/$name-k.log" || { cat "$work/$name-k.log"; fail "$name: resume"; }
  grep -q "resumed from" "$work/$name-k.log" || fail "$name: did not resume"
  cmp "$work/$name/model.safetensors" "$work/$name-k/model.safetensors" || fail "$name: resumed model differs"
  "$bin" average "$work/$name"/checkpoint-*.safetensors -o "$work/$name/avg.safetensors" >/dev/null ||
    fail "$name: average"
}
check_lm causal "${decoder[@]}"
check_lm masked "${encoder[@]}"
grep -q '"mask_id": 4' "$work/masked/config.json" || fail "config.json does not record the mask id"
! grep -q '"mask_id"' "$work/causal/config.json" || fail "a causal LM records a mask id"
# The masked LM's run config starts another run as it is.
"$bin" train --config "$work/masked/config.json" --max-steps 2 --run-dir "$work/again" >/dev/null 2>"$work/again.log" ||
  { cat "$work/again.log"; fail "RUN/config.json of a masked LM is not a valid --config"; }

# Bad input, each named.
expect_error() {  # expect_error PATTERN ARGS...: train fails, its message matching PATTERN
  local pattern=$1; shift
  if "$bin" train "$@" >/dev/null 2>"$work/err.log"; then fail "accepted: $*"; fi
  grep -qE "$pattern" "$work/err.log" || fail "message for $*: $(cat "$work/err.log") (expected $pattern)"
}
: > "$work/empty.txt"
expect_error "no usable training lines in '$work/empty.txt'" --train-text "$work/empty.txt" "${common[@]}" \
  "${decoder[@]}" --max-steps 2 --run-dir "$work/x1"
expect_error "'$work/missing.txt' is not a readable file" --train-text "$work/missing.txt" "${common[@]}" \
  "${decoder[@]}" --max-steps 2 --run-dir "$work/x2"
expect_error "train_source \(--train-source\) is parallel text, but a decoder-only model" "${text[@]}" \
  --train-source "$work/data/train.en" "${common[@]}" "${decoder[@]}" --max-steps 2 --run-dir "$work/x3"
expect_error "train_text and valid_text .* are a language model's data, but the model is encoder-decoder" \
  "${text[@]}" "${common[@]}" --max-steps 2 --run-dir "$work/x4"
expect_error "the vocabulary '$work/causal/vocab.model' has no <mask> piece" "${text[@]}" --vocab "$work/causal/vocab.model" \
  "${common[@]}" "${encoder[@]}" --max-steps 2 --run-dir "$work/x5"
expect_error "mask_fraction must be in \(0, 1\], got 1.5" "${text[@]}" "${common[@]}" "${encoder[@]}" --mask-fraction 1.5 \
  --max-steps 2 --run-dir "$work/x6"
echo "language-model training CLI checks passed"
