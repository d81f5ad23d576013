#!/usr/bin/env bash
# transformer generate on a tiny decoder-only model of random weights (structure, not quality):
# --ids exactness, lengths, --include-prompt, streaming against non-streaming output, sampling
# reproducible from its seed, transformer score of lines, and bad input (a translation model, huge
# prompts, invalid UTF-8, /dev/full).
# Usage: generate_test.sh PATH/TO/transformer
set -euo pipefail
bin=$1
source "$(dirname "$0")/level.sh"
skip_unsupported_level "$bin"
here=$(cd "$(dirname "$0")/.." && pwd)
fix="$here/fixtures/tiny_model"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_error() {  # expect_error PATTERN COMMAND...: the command fails and stderr matches PATTERN
  local pattern=$1; shift
  "$@" < "$work/in" 2>"$work/err" > /dev/null && fail "accepted: $*"
  grep -qE -- "$pattern" "$work/err" || fail "message of '$*': $(cat "$work/err")"
}

vocab_size=$("$bin" info "$fix/model.safetensors" 2>/dev/null | awk '$1 == "vocab_size" { print $2 }')
"$bin" init --preset tiny --vocab-size "$vocab_size" --architecture decoder-only --encoder-layers 0 --d-model 16 \
  --heads 2 --d-ff 32 --positions learned --max-positions 128 -o "$work/lm.safetensors" > /dev/null
model="$work/lm.safetensors"
bos=$("$bin" info "$model" | awk '$1 == "bos_id" { print $2 }')
gen() { "$bin" generate -m "$model" --vocab "$fix/vocab.model" --threads 1 "$@" 2>/dev/null; }

# --ids: exactly --max-new-tokens ids when --min-new-tokens forces them; the prompt kept as given.
printf '1 5 6\n\n1 7 8 9 10\n' > "$work/ids.txt"
gen --ids --max-new-tokens 6 --min-new-tokens 6 < "$work/ids.txt" > "$work/out"
[ "$(wc -l < "$work/out")" = 3 ] || fail "--ids: $(cat "$work/out")"
awk 'NF != 6 { bad = 1 } END { exit bad }' "$work/out" || fail "--ids lengths: $(cat "$work/out")"
gen --ids --max-new-tokens 6 --min-new-tokens 6 --include-prompt < "$work/ids.txt" > "$work/with"
head -1 "$work/with" | grep -q '^1 5 6 ' || fail "--include-prompt --ids: $(head -1 "$work/with")"
paste -d' ' <(printf '1 5 6\n%s\n1 7 8 9 10\n' "$bos") "$work/out" | diff - "$work/with" || fail "--include-prompt adds the prompt"
gen --ids --max-new-tokens 0 < "$work/ids.txt" | awk 'NF { bad = 1 } END { exit bad }' || fail "--max-new-tokens 0"

# Streaming prints what the whole run prints, ids and text, greedy and sampling.
printf 'three hundred\n\nfive\n' > "$work/text.txt"
for mode in "--ids" ""; do
  input="$work/ids.txt"; [ -z "$mode" ] && input="$work/text.txt"
  for search in "" "--sampling-topk 5 --seed 3"; do
    # shellcheck disable=SC2086
    gen $mode $search --max-new-tokens 8 < "$input" > "$work/whole"
    # shellcheck disable=SC2086
    gen $mode $search --max-new-tokens 8 --stream < "$input" > "$work/streamed"
    diff "$work/whole" "$work/streamed" || fail "--stream differs ($mode $search)"
  done
done
[ "$(wc -l < "$work/whole")" = 3 ] || fail "text lines: $(cat "$work/whole")"

# Sampling: the same seed gives the same output, another seed another.
samples() { gen --ids --sampling-topk -1 --sampling-temperature 3 --max-new-tokens 12 --min-new-tokens 12 --seed "$1" < "$work/ids.txt"; }
[ "$(samples 1)" = "$(samples 1)" ] || fail "sampling with one seed differs"
[ "$(samples 1)" != "$(samples 2)" ] || fail "two seeds drew the same samples"
gen --ids --beam 4 --max-new-tokens 5 < "$work/ids.txt" | wc -l | grep -qx 3 || fail "beam 4 lines"

# transformer score on a decoder-only model: one log-probability per line, no tab; a line longer
# than the learned positions hold is cut to them, with a warning.
score() { "$bin" score -m "$model" --vocab "$fix/vocab.model" --threads 1 "$@"; }
score < "$work/text.txt" > "$work/scores" 2>/dev/null || fail "score: $(cat "$work/scores")"
[ "$(wc -l < "$work/scores")" = 3 ] || fail "score lines: $(cat "$work/scores")"
grep -qvE '^-[0-9]+\.[0-9]{6}$' "$work/scores" && fail "score format: $(cat "$work/scores")"
score --ids < "$work/ids.txt" 2>/dev/null | grep -cE '^-[0-9]+\.[0-9]{6}$' | grep -qx 3 || fail "score --ids"
for _ in $(seq 100); do printf 'three hundred '; done > "$work/long.txt"; echo >> "$work/long.txt"
score < "$work/long.txt" 2>"$work/err" > /dev/null || fail "a long line: $(cat "$work/err")"
grep -q "line 1 has more tokens than .* allow; scored its first 127" "$work/err" || fail "long line: $(cat "$work/err")"

end_of_level_checks

# Bad input.
: > "$work/in"
expect_error "is an encoder-decoder model; generation needs a decoder-only one" \
  "$bin" generate -m "$fix/model.safetensors" --threads 1
expect_error "is a decoder-only model: it scores lines" "$bin" score -m "$model" --source a --target b
expect_error "--stream .* needs --beam 1, got --beam 3" "$bin" generate -m "$model" --vocab "$fix/vocab.model" --stream -b 3
expect_error "min_new_tokens must be in \[0, max_new_tokens 2\], got 5" "$bin" generate -m "$model" \
  --vocab "$fix/vocab.model" --max-new-tokens 2 --min-new-tokens 5
printf '1 5 %d\n' "$vocab_size" > "$work/in"
expect_error "line 1: token id $vocab_size is outside the vocabulary" "$bin" generate -m "$model" --ids --threads 1
head -c 200000 /dev/zero | tr '\0' 'a' > "$work/in"
expect_error "line 1: the prompt has 200000 bytes, more than the input token limit of 1024 allows" \
  "$bin" generate -m "$model" --vocab "$fix/vocab.model" --threads 1
printf 'five \xff hundred\n' > "$work/in"
"$bin" generate -m "$model" --vocab "$fix/vocab.model" --threads 1 --max-new-tokens 3 < "$work/in" 2>"$work/err" >/dev/null ||
  fail "invalid UTF-8: $(cat "$work/err")"
grep -q "warning: line 1" "$work/err" || fail "invalid UTF-8 not warned: $(cat "$work/err")"
if [ -w /dev/full ]; then
  "$bin" generate -m "$model" --vocab "$fix/vocab.model" --threads 1 < "$work/text.txt" > /dev/full 2>"$work/err" &&
    fail "/dev/full accepted"
  grep -qi "standard output" "$work/err" || fail "/dev/full message: $(cat "$work/err")"
fi
echo "generate_test: ok"
