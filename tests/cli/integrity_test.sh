#!/usr/bin/env bash
# Damaged files are refused, naming the file: a flipped bit in a model's data or header (the
# checksum), NaN and infinite weights (naming the tensor and the index), a truncated or corrupted
# shortlist. A model of an older version (no checksum) loads with a note, --no-verify skips the
# checksum, and a model that records no vocabulary fingerprint gets a warning naming both files.
# Usage: integrity_test.sh PATH/TO/transformer
set -euo pipefail
bin=$1
source "$(dirname "$0")/level.sh"
skip_unsupported_level "$bin"
here=$(cd "$(dirname "$0")/.." && pwd)
fix="$here/fixtures/tiny_model"
old="$fix/model.safetensors"  # written by format version 1: no checksum, no vocabulary fingerprint
vocab="$fix/vocab.model"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_error() {  # expect_error PATTERN COMMAND...: the command fails and stderr matches PATTERN
  local pattern=$1; shift
  "$@" < "$fix/input.en" 2>"$work/err" > /dev/null && fail "accepted: $*"
  grep -qE -- "$pattern" "$work/err" || fail "message of '$*': $(cat "$work/err")"
}
# flip FILE OFFSET BIT: flips one bit of the file in place; a negative offset counts from the end.
flip() {
  python3 - "$@" <<'PY'
import sys
path, offset, bit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
b = bytearray(open(path, "rb").read())
b[offset] ^= 1 << bit
open(path, "wb").write(b)
PY
}
# data_start FILE: the offset of a safetensors file's first tensor byte.
data_start() { python3 -c 'import struct, sys; print(8 + struct.unpack("<Q", open(sys.argv[1], "rb").read(8))[0])' "$1"; }
# set_weight FILE TENSOR INDEX VALUE: writes a float32 value ("nan", "inf", "-inf"...) into a tensor.
set_weight() {
  python3 - "$@" <<'PY'
import json, struct, sys
path, name, index, value = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
b = bytearray(open(path, "rb").read())
n = struct.unpack("<Q", b[:8])[0]
at = 8 + n + json.loads(b[8:8 + n])[name]["data_offsets"][0] + 4 * index
b[at:at + 4] = struct.pack("<f", value)
open(path, "wb").write(b)
PY
}
tr() { "$bin" translate --threads 1 --beam 1 "$@" < "$fix/input.en"; }

# 1. A file of version 1 loads as before, with a one-line note (none with --no-verify); the model
# records no vocabulary fingerprint, which gets a one-line warning naming the model and the vocabulary.
tr -m "$old" --vocab "$vocab" 2>"$work/err" | diff "$fix/expected.greedy.de" - || fail "the version-1 model translates otherwise"
[ "$(grep -c "^note: '$old' records no checksum (model format version 1)" "$work/err")" -eq 1 ] ||
  fail "no note (or not one) for a model without a checksum: $(cat "$work/err")"
[ "$(grep -c "^warning: '$old' records no vocabulary fingerprint, so nothing checks that '$vocab' is the vocabulary" \
  "$work/err")" -eq 1 ] || fail "no warning (or not one) for a model without a fingerprint: $(cat "$work/err")"
[ "$(wc -l < "$work/err")" -eq 2 ] || fail "stderr is not the note and the warning: $(cat "$work/err")"
tr -m "$old" --vocab "$vocab" --no-verify 2>"$work/err" > /dev/null
! grep -q "^note:" "$work/err" || fail "a note with --no-verify: $(cat "$work/err")"
echo "5 6 7" | "$bin" translate -m "$old" --ids 2>"$work/err" > /dev/null
! grep -q "fingerprint" "$work/err" || fail "a fingerprint warning without a vocabulary (--ids): $(cat "$work/err")"

# 2. `average` of it alone (the note's remedy) writes the same weights with a checksum: no note.
"$bin" average "$old" -o "$work/model.safetensors" > /dev/null 2>&1
cp "$vocab" "$work/vocab.model"
model="$work/model.safetensors"
"$bin" info "$model" 2>"$work/err" | grep -qE "^checksum   xxh3-64:[0-9a-f]{16} \(verified\)$" || fail "info: no verified checksum"
tr -m "$model" 2>"$work/err" | diff "$fix/expected.greedy.de" - || fail "the re-saved model translates otherwise"
! grep -q "^note:" "$work/err" || fail "a note for a model with a checksum: $(cat "$work/err")"

# 3. A flipped bit in the data (first byte, middle, last byte) or the header is refused by every
# command that loads the model, naming the file and both checksums; --no-verify loads it.
start=$(data_start "$model")
size=$(stat -c %s "$model")
for offset in "$start" $(((start + size) / 2)) -1; do
  cp "$model" "$work/flipped.safetensors"
  flip "$work/flipped.safetensors" "$offset" 0
  mismatch="flipped.safetensors: checksum mismatch: the file records xxh3-64:[0-9a-f]{16} but its contents hash to xxh3-64:[0-9a-f]{16}"
  expect_error "$mismatch" "$bin" translate -m "$work/flipped.safetensors" --vocab "$vocab"
  expect_error "$mismatch" "$bin" score -m "$work/flipped.safetensors" --vocab "$vocab"
  expect_error "$mismatch" "$bin" attention -m "$work/flipped.safetensors" --vocab "$vocab" "one" -o "$work/a.svg"
  expect_error "$mismatch" "$bin" info "$work/flipped.safetensors"
  expect_error "$mismatch" "$bin" average "$model" "$work/flipped.safetensors" -o "$work/avg.safetensors"
  [ ! -e "$work/avg.safetensors" ] || fail "average wrote its output from a damaged input"
  tr -m "$work/flipped.safetensors" --vocab "$vocab" --no-verify > "$work/out.de" 2>/dev/null || fail "--no-verify refused the file"
  [ "$(wc -l < "$work/out.de")" -eq "$(wc -l < "$fix/input.en")" ] || fail "--no-verify: lines lost"
  "$bin" info --no-verify "$work/flipped.safetensors" | grep -q "(not verified: --no-verify)" || fail "info --no-verify"
done
# In the header: the metadata "averaged_from": "1 checkpoints" becomes "0 checkpoints".
cp "$model" "$work/flipped.safetensors"
flip "$work/flipped.safetensors" "$(grep -boa '"averaged_from":"1' "$model" | cut -d: -f1 | awk '{ print $1 + 17 }')" 0
expect_error "flipped.safetensors: checksum mismatch" "$bin" info "$work/flipped.safetensors"

# 4. NaN and infinite weights are refused by every command, naming the file, the tensor and the
# index: in a file without a checksum, and in one with it when --no-verify skips it.
cp "$old" "$work/nan.safetensors"
set_weight "$work/nan.safetensors" encoder.layers.0.ffn.fc1.weight 5 nan
holds="nan.safetensors: tensor 'encoder.layers.0.ffn.fc1.weight' holds NaN at index 5 \(\[0, 5\]\)"
expect_error "$holds" "$bin" translate -m "$work/nan.safetensors" --vocab "$vocab"
expect_error "$holds" "$bin" score -m "$work/nan.safetensors" --vocab "$vocab"
expect_error "$holds" "$bin" attention -m "$work/nan.safetensors" --vocab "$vocab" "one" -o "$work/a.svg"
expect_error "$holds" "$bin" info "$work/nan.safetensors"
expect_error "$holds" "$bin" average "$old" "$work/nan.safetensors" -o "$work/avg.safetensors"
[ ! -e "$work/avg.safetensors" ] || fail "average wrote its output from an input with NaN"
cp "$model" "$work/inf.safetensors"
set_weight "$work/inf.safetensors" decoder.layers.0.self_attn.out_proj.bias 3 -inf
expect_error "inf.safetensors: checksum mismatch" "$bin" translate -m "$work/inf.safetensors" --vocab "$vocab"
expect_error "inf.safetensors: tensor 'decoder.layers.0.self_attn.out_proj.bias' holds -Inf at index 3 of its" \
  "$bin" translate -m "$work/inf.safetensors" --vocab "$vocab" --no-verify

# 5. Shortlists: one cut anywhere (inside a line or at a line's end) or with a changed byte is
# refused naming the file; one of format version 1 is refused with the remedy.
"$bin" demo-data --out "$work/demo" --train 500 --valid 1 --test 1 > /dev/null
"$bin" shortlist --source "$work/demo/train.en" --target "$work/demo/train.de" --vocab "$vocab" -o "$work/sl" 2>/dev/null
head -n 1 "$work/sl" | grep -qx "tfm-shortlist 2" || fail "shortlist header: $(head -n 1 "$work/sl")"
tr -m "$model" --shortlist "$work/sl" > /dev/null 2>&1 || fail "a whole shortlist refused"
head -c -7 "$work/sl" > "$work/cut.sl"
expect_error "cut.sl: truncated: its last line \([0-9]+\) has no end" tr -m "$model" --shortlist "$work/cut.sl"
head -n -2 "$work/sl" > "$work/cut.sl"
expect_error "cut.sl: truncated: ([0-9]+) of the ([0-9]+) lines after the header are there" tr -m "$model" --shortlist "$work/cut.sl"
cp "$work/sl" "$work/flipped.sl"
flip "$work/flipped.sl" -3 0
expect_error "flipped.sl: checksum mismatch: the header records xxh3-64:[0-9a-f]{16} but the file hashes to" \
  tr -m "$model" --shortlist "$work/flipped.sl"
printf 'tfm-shortlist 1\nvocab_size 120\nvocab_fingerprint -\nfrequent 5\n' > "$work/v1.sl"
expect_error "v1.sl: a shortlist of format version 1.*rebuild it with \`transformer shortlist\`" \
  tr -m "$model" --shortlist "$work/v1.sl"
echo "integrity CLI checks passed"
