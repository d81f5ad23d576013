#!/usr/bin/env bash
# What every command's flags share: a flag given twice takes its last value; --help shows groups,
# choices and defaults in plain words (no CLI11 internals such as "ENUM:" or "{false}") and says that
# the last value wins; an unknown flag gets the nearest one suggested; demo-data takes -o/--output
# as every other command does, and its earlier --out.
# Usage: flags_test.sh PATH/TO/transformer
set -euo pipefail
bin=$1
# Parsing and help do not depend on the instruction-set level: the unforced run covers them.
if [ -n "${TFM_CPU_ISA:-}" ]; then echo "skipped: flags do not depend on TFM_CPU_ISA"; exit 77; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. Every command's help: no CLI11 internals, and the rule for repeated flags.
commands=$("$bin" --help | awk '/^Subcommands:/ { on = 1; next } on && NF { print $1 }')
[ "$(echo "$commands" | wc -w)" -ge 10 ] || fail "too few commands in --help: $commands"
for c in $commands; do
  "$bin" "$c" --help > "$work/help" || fail "$c --help failed"
  ! grep -nE 'ENUM|\{(false|true)\}|->[0-9]' "$work/help" || fail "$c --help shows CLI11 internals"
  grep -q "takes its last value" "$work/help" || fail "$c --help does not say that the last value wins"
done
"$bin" translate --help > "$work/help"
grep -q -- "--length-normalization {gnmt, power}" "$work/help" || fail "translate: choices not shown plainly"
grep -q -- "--packed-weights, --no-packed-weights" "$work/help" || fail "translate: the negation flag's names"
grep -q "(default: gnmt)" "$work/help" || fail "translate: default not shown plainly"
"$bin" train --help > "$work/help"
for group in "Data:" "Model:" "Optimization:" "Validation and checkpoints:" "Output:"; do
  grep -qx "$group" "$work/help" || fail "train --help has no group '$group'"
done
grep -q -- "--best-metric {bleu, loss} .*(default: bleu)" "$work/help" || fail "train: choices or default of --best-metric"

# 2. A typo: the nearest flag is suggested, for train and for translate.
rc=0; "$bin" train --max-step 3 2> "$work/err" || rc=$?
[ "$rc" = 1 ] || fail "an unknown flag: status $rc"
grep -q "^error: unknown flag --max-step for train; did you mean --max-steps?" "$work/err" || fail "typo: $(cat "$work/err")"
rc=0; "$bin" translate -m model.safetensors --beem 3 2> "$work/err" || rc=$?
grep -q "did you mean --beam?" "$work/err" || fail "translate typo: $(cat "$work/err")"
rc=0; "$bin" train --zzzzzzzzzz 3 2> "$work/err" || rc=$?
grep -q "unknown flag --zzzzzzzzzz for train (train --help lists them)" "$work/err" || fail "far typo: $(cat "$work/err")"

# 3. demo-data: -o, --output, and the earlier --out.
for flag in -o --output --out; do
  "$bin" demo-data "$flag" "$work/d$flag" --train 3 --valid 1 --test 1 > /dev/null || fail "demo-data $flag"
  [ -s "$work/d$flag/train.en" ] || fail "demo-data $flag wrote nothing"
done

# 4. A flag given twice: the last value wins (a wrapper script appends an override).
"$bin" demo-data -o "$work/data" --train 300 --valid 1 --test 1 --train 200 > /dev/null
[ "$(wc -l < "$work/data/train.en")" = 200 ] || fail "--train 300 --train 200 wrote $(wc -l < "$work/data/train.en") pairs"
"$bin" train --train-source "$work/data/train.en" --train-target "$work/data/train.de" --preset tiny --d-model 16 \
  --heads 2 --d-ff 32 --layers 1 --vocab-size 80 --batch-tokens 256 --threads 1 --run-dir "$work/run" \
  --max-steps 50 --max-steps 2 --log-every 1 > /dev/null 2> "$work/train.log" || { cat "$work/train.log"; fail "train"; }
grep -q "stopped at step 2: reached max_steps 2" "$work/train.log" || fail "--max-steps 50 --max-steps 2: $(tail -n 2 "$work/train.log")"
echo "ok"
