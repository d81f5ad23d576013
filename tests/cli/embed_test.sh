#!/usr/bin/env bash
# transformer embed: a tiny encoder-only model (BERT-like) and the encoder of the committed tiny
# translation model; shapes, pooling modes, unit norms, padding that changes nothing, --ids, and
# bad input (invalid UTF-8, empty and enormous lines, /dev/full).
# Usage: embed_test.sh PATH/TO/transformer
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
  "$@" < /dev/null 2>"$work/err" > /dev/null && fail "accepted: $*"
  grep -qE -- "$pattern" "$work/err" || fail "message of '$*': $(cat "$work/err")"
}

vocab_size=$("$bin" info "$fix/model.safetensors" | sed -n 's/.*vocab_size[^0-9]*\([0-9]*\).*/\1/p' | head -1)
[ -n "$vocab_size" ] || fail "no vocab_size in info"
bert="$work/bert.safetensors"
"$bin" init --preset tiny --architecture encoder-only --vocab-size "$vocab_size" --d-model 16 --heads 2 --d-ff 32 \
  --encoder-layers 2 --positions learned --max-positions 64 --token-types 2 --embedding-norm=true \
  --scale-embeddings=false -o "$bert" > /dev/null
emx() { "$bin" embed -m "$bert" --vocab "$fix/vocab.model" --threads 1 "$@"; }
em() { emx "$@" 2>> "$work/log"; }

printf 'three hundred and five\nseven\n\nforty two thousand one hundred\n' > "$work/in.txt"
# check.py FILE ROWS DIM [nested|unit]: one JSON array per line, each of DIM numbers (nested: arrays of them).
cat > "$work/check.py" <<'PY'
import json, math, sys
path, rows, dim, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
lines = open(path).read().splitlines()
assert len(lines) == rows, (len(lines), rows)
for line in lines:
    v = json.loads(line)
    vectors = v if mode == "nested" else [v]
    assert all(len(x) == dim for x in vectors), [len(x) for x in vectors]
    if mode == "unit":
        assert abs(math.sqrt(sum(a * a for a in v)) - 1) < 1e-6, v
PY
for pooling in mean cls last max; do
  em --pooling "$pooling" < "$work/in.txt" > "$work/$pooling.json" || fail "--pooling $pooling: $(cat "$work/log")"
  python3 "$work/check.py" "$work/$pooling.json" 4 16 flat || fail "--pooling $pooling shape"
done
cmp -s "$work/mean.json" "$work/cls.json" && fail "mean and cls pooling agree"
em --pooling none --input "$work/in.txt" > "$work/none.json"
python3 "$work/check.py" "$work/none.json" 4 16 nested || fail "--pooling none shape"
em --normalize < "$work/in.txt" > "$work/unit.json"
python3 "$work/check.py" "$work/unit.json" 4 16 unit || fail "--normalize: not unit norms"
# Deterministic, and the same with plain weights to float32 rounding.
em < "$work/in.txt" | cmp -s - "$work/mean.json" || fail "two runs differ"

# Mean pooling ignores padding: a sentence alone and batched with a longer one.
printf 'seven\n' | em > "$work/alone.json"
printf 'seven\nforty two thousand one hundred and ninety nine\n' | em --batch-size 2 | head -1 > "$work/batched.json"
python3 - "$work/alone.json" "$work/batched.json" <<'PY' || fail "padding changed the embedding"
import json, sys
a, b = (json.loads(open(p).read()) for p in sys.argv[1:])
assert max(abs(x - y) for x, y in zip(a, b)) <= 1e-6, (a, b)
PY

# --pooling none: one vector per token, bos + tokens + eos; --ids takes ids exactly as given.
ids=$(python3 -c 'import json,sys; print(len(json.loads(open(sys.argv[1]).readline())))' "$work/none.json")
[ "$ids" -ge 3 ] || fail "--pooling none gave $ids vectors for 'three hundred and five'"
printf '2 5 6 3\n2 3\n' | em --ids --pooling none > "$work/ids.json"
python3 - "$work/ids.json" <<'PY' || fail "--ids shapes"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [len(r) for r in rows] == [4, 2], [len(r) for r in rows]
PY

# The encoder of the committed translation model embeds (tokens + end of sentence).
"$bin" embed -m "$fix/model.safetensors" --threads 1 < "$work/in.txt" > "$work/tiny.json"
python3 "$work/check.py" "$work/tiny.json" 4 "$("$bin" info "$fix/model.safetensors" |
  sed -n 's/.*d_model[^0-9]*\([0-9]*\).*/\1/p' | head -1)" flat || fail "encoder-decoder model's encoder"

# Bad input: invalid UTF-8 is warned of and replaced; a line with no tokens warned of.
printf 'seven \xff\n' | em > /dev/null
grep -q "line 1" "$work/log" && grep -qi "utf-8" "$work/log" || fail "no warning of invalid UTF-8: $(cat "$work/log")"
: > "$work/log"
printf '\xe2\x80\x8b\n' | em > /dev/null
grep -q "line 1 has no tokens" "$work/log" || fail "no warning of a line without tokens: $(cat "$work/log")"
head -c 200000 /dev/zero | tr '\0' 'a' > "$work/huge.txt"
printf 'seven\n' >> "$work/huge.txt"
expect_error "line 1: .*more than the input token limit of 1024" emx --input "$work/huge.txt"
printf 'seven\nseven seven seven seven seven\n' > "$work/two.txt"
expect_error "line 2: it has [0-9]+ tokens .*more than the input token limit of 4" emx --max-input-tokens 4 \
  --input "$work/two.txt"
expect_error "line 2: there are no tokens to embed" sh -c "printf '2 3\n\n' | $bin embed -m $bert --ids --threads 1"
expect_error "line 1: token id 0 is the padding id" sh -c "printf '2 0 3\n' | $bin embed -m $bert --ids --threads 1"
expect_error "pooling" emx --pooling sum
expect_error "/dev/full" sh -c "$bin embed -m $bert --vocab $fix/vocab.model --threads 1 --input $work/in.txt > /dev/full"
"$bin" init --preset tiny --architecture decoder-only --vocab-size 50 -o "$work/gpt.safetensors" > /dev/null
expect_error "decoder-only model, which has no encoder" "$bin" embed -m "$work/gpt.safetensors" --ids
echo "embed_test: ok"
