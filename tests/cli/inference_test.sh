#!/usr/bin/env bash
# The inference commands on the committed tiny model (tests/fixtures/tiny_model, trained on the
# number-words task): fixed input → committed expected output, greedy and beam 4; scores, ids,
# n-best, attention JSON and SVG, average, info, eval, and bad input.
# Usage: inference_test.sh PATH/TO/transformer
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
tr() { "$bin" translate -m "$model" --threads 1 "$@"; }
# Refusals: the command fails, its message naming the problem.
expect_error() {  # expect_error PATTERN COMMAND...: the command fails and stderr matches PATTERN
  local pattern=$1; shift
  "$@" < /dev/null 2>"$work/err" > /dev/null && fail "accepted: $*"
  grep -qE -- "$pattern" "$work/err" || fail "message of '$*': $(cat "$work/err")"
}

tr --beam 1 < "$fix/input.en" > "$work/greedy.de"
diff "$fix/expected.greedy.de" "$work/greedy.de" || fail "greedy output differs from the committed expected output"
# Greedy search computes scores only for --scores (SearchOptions::return_scores): the same text.
tr --beam 1 --scores < "$fix/input.en" | cut -f1 | diff "$work/greedy.de" - || fail "greedy text changed with --scores"
tr --beam 4 --input "$fix/input.en" > "$work/beam.de"
diff "$fix/expected.beam4.de" "$work/beam.de" || fail "beam-4 output differs from the committed expected output"

# Packed weights (the default) and plain float32 translate alike; a model file from a pipe loads.
tr --beam 4 --no-packed-weights --input "$fix/input.en" | diff "$fix/expected.beam4.de" - ||
  fail "--no-packed-weights output differs"
"$bin" translate -m <(cat "$model") --vocab "$fix/vocab.model" --threads 1 --beam 1 < "$fix/input.en" |
  diff "$fix/expected.greedy.de" - || fail "a model file read from a pipe"

# Scores: the normalized score printed with the translation; n-best lists of 3 per line.
tr --beam 4 --scores < "$fix/input.en" > "$work/scored.txt"
awk -F'\t' 'NF != 2 || $2 > 0 { bad = 1 } END { exit bad }' "$work/scored.txt" || fail "--scores format"
tr --beam 4 --n-best 3 < "$fix/input.en" > "$work/nbest.txt"
[ "$(grep -c '^0 |||' "$work/nbest.txt")" -eq 3 ] || fail "n-best: not 3 hypotheses for line 0"

# --ids: translating the ids of the input gives the ids of the output.
printf '5 6 7\n\n9\n' > "$work/ids.txt"
tr --ids < "$work/ids.txt" > "$work/ids.out"
[ "$(wc -l < "$work/ids.out")" -eq 3 ] && [ -z "$(sed -n 2p "$work/ids.out")" ] || fail "--ids"
grep -qE '^[0-9 ]+$' <(sed -n 1p "$work/ids.out") || fail "--ids output is not ids"
echo "5 x" | tr --ids 2>"$work/err" && fail "bad id accepted"
grep -q "is not a token id" "$work/err" || fail "bad id message"
# A flag given twice takes its last value, as a wrapper script that appends an override expects.
tr --beam 4 --n-best 3 --n-best 1 < "$fix/input.en" > "$work/last.txt" || fail "a flag given twice refused"
cmp -s "$fix/expected.beam4.de" "$work/last.txt" || fail "--n-best 3 --n-best 1 is not --n-best 1"

# Attention: JSON per line with [layer][head][target][source]; SVG heatmap.
head -n 2 "$fix/input.en" | tr --attention "$work/att.jsonl" > /dev/null
python3 - "$work/att.jsonl" <<'PY' || fail "attention JSON"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 2
for r in rows:
    a = r["attention"]
    assert len(a[0][0]) == len(r["target"]) and len(a[0][0][0]) == len(r["source"])
    for row in a[0][0]:
        assert abs(sum(row) - 1) < 1e-4
PY
# --attention never destroys an input: the same file as --input is refused with the input intact,
# and a run that fails leaves an earlier file of that name as it was (written only at the end).
head -n 2 "$fix/input.en" > "$work/in2.en"
cp "$work/in2.en" "$work/in2.copy"
tr --input "$work/in2.en" --attention "$work/in2.en" > /dev/null 2>"$work/err" && fail "--attention onto --input accepted"
grep -q "^error: --attention '.*in2.en' is also --input" "$work/err" || fail "--attention onto --input: $(cat "$work/err")"
cmp -s "$work/in2.en" "$work/in2.copy" || fail "--attention onto --input changed the input"
cp "$work/att.jsonl" "$work/att.copy"
printf 'one\ntwo\nthree\n' > "$work/three.en"; printf 'a\n' > "$work/one.prefix"
tr --target-prefix "$work/one.prefix" --attention "$work/att.jsonl" < "$work/three.en" > /dev/null 2>&1 &&
  fail "a prefix count mismatch accepted"
cmp -s "$work/att.jsonl" "$work/att.copy" || fail "a failed run changed the earlier --attention file"
"$bin" attention -m "$model" "$(for i in $(seq 1100); do printf 'one '; done)" -o "$work/long.svg" > /dev/null \
  2> "$work/err" || fail "attention on a long sentence: $(cat "$work/err")"
grep -q "^warning: the sentence has more than 1024 tokens; translated and drawn its first 1024" "$work/err" ||
  fail "attention cut a long sentence without a word: $(cat "$work/err")"
"$bin" attention -m "$model" "three hundred forty-two" -o "$work/att.svg" --grid > /dev/null
grep -c "<rect" "$work/att.svg" | awk '$1 < 20 { exit 1 }' || fail "attention SVG has no cells"

# Score: a total and a per-token log-probability, both negative.
printf 'three hundred forty-two\tdreihundertzweiundvierzig\n' | "$bin" score -m "$model" > "$work/score.txt"
awk -F'\t' 'NF != 2 || $1 >= 0 || $2 >= 0 { bad = 1 } END { exit bad }' "$work/score.txt" || fail "score format"

# --bf16: bfloat16 products in translate and score. The tiny model's translations stay the same;
# the scores move by the rounding (a flag wired to float32 would leave them equal), not further.
tr --beam 4 --scores < "$fix/input.en" > "$work/f32.scored"
tr --beam 4 --scores --bf16 < "$fix/input.en" > "$work/bf16.scored"
diff <(cut -f1 "$work/f32.scored") <(cut -f1 "$work/bf16.scored") || fail "--bf16 translations differ"
paste "$work/f32.scored" "$work/bf16.scored" | awk -F'\t' '
  { d = $2 - $4; if (d < 0) d = -d; if (d > 0.05) bad = 1; if (d > 1e-6) moved = 1 }
  END { exit bad || !moved }' || fail "translate --bf16 scores: not rounded, or too far from float32's"
paste "$fix/input.en" "$fix/expected.greedy.de" | grep -v '^\s*$' | grep -v '^\t' > "$work/pairs.tsv"
"$bin" score -m "$model" < "$work/pairs.tsv" > "$work/f32.score"
"$bin" score -m "$model" --bf16 < "$work/pairs.tsv" > "$work/bf16.score"
paste "$work/f32.score" "$work/bf16.score" | awk -F'\t' '
  { d = $1 - $3; if (d < 0) d = -d; if (d > 0.05) bad = 1; if (d > 1e-6) moved = 1 }
  END { exit bad || !moved }' || fail "score --bf16: not rounded, or too far from float32's"
for other in --int8 --no-packed-weights; do
  tr --bf16 $other < /dev/null 2> "$work/err" && fail "--bf16 $other accepted"
  grep -q -- "$other" "$work/err" || fail "--bf16 $other: the message names neither"
done

# Average: two copies of one model average to the same parameters; different configurations refused.
"$bin" average "$model" "$model" -o "$work/avg.safetensors" > /dev/null
"$bin" translate -m "$work/avg.safetensors" --vocab "$fix/vocab.model" --threads 1 < "$fix/input.en" > "$work/avg.de"
diff "$fix/expected.greedy.de" "$work/avg.de" || fail "averaging a model with itself changed it"
"$bin" init --preset tiny --vocab-size 120 --d-model 16 --heads 2 -o "$work/other.safetensors" > /dev/null
"$bin" average "$model" "$work/other.safetensors" -o "$work/bad.safetensors" 2>"$work/err" && fail "mixed average"
grep -q "configurations differ (.*d_model 16 against " "$work/err" || fail "mixed average message: $(cat "$work/err")"

# Eval: exact match of the committed outputs against themselves.
"$bin" eval --ref "$fix/expected.beam4.de" --hyp "$work/beam.de" --metrics exact | grep -q "exact match = 100.00%" ||
  fail "eval exact"

# --min-length: no end of sentence before 8 tokens + EOS, so exactly 8 tokens when max is 9.
echo "5 6 7" | tr --ids --beam 1 --min-length 9 --max-length-a 0 --max-length-b 9 > "$work/min.ids"
[ "$(wc -w < "$work/min.ids")" -eq 8 ] || fail "--min-length 9 gave $(wc -w < "$work/min.ids") tokens"
# --stats: the counts of what was translated, on stderr (stdout unchanged).
tr --beam 1 --stats < "$fix/input.en" 2>"$work/stats" > "$work/stats.de"
diff "$fix/expected.greedy.de" "$work/stats.de" || fail "--stats changed the output"
grep -qE "^translated $(wc -l < "$fix/input.en") sentences, [1-9][0-9]* tokens in [0-9.]+ s" "$work/stats" ||
  fail "--stats line: $(cat "$work/stats")"
# Shortlist: built from demo-task pairs with the model's vocabulary; a generous one (every target
# token the data has) leaves the translations as they are, a tight one still translates every line;
# a shortlist of another vocabulary, a malformed one and bad options are refused.
"$bin" demo-data --out "$work/demo" --train 2000 --valid 1 --test 1 > /dev/null
sl() { "$bin" shortlist --source "$work/demo/train.en" --target "$work/demo/train.de" --vocab "$fix/vocab.model" "$@"; }
sl -o "$work/wide.sl" --per-source 1000 --frequent 1000 2>"$work/err" || fail "shortlist: $(cat "$work/err")"
grep -q "2000 pairs, 2000 kept" "$work/err" || fail "shortlist summary: $(cat "$work/err")"
head -n 1 "$work/wide.sl" | grep -qx "tfm-shortlist 2" || fail "shortlist header"
tr --beam 4 --shortlist "$work/wide.sl" --input "$fix/input.en" | diff "$fix/expected.beam4.de" - ||
  fail "a shortlist of every target token changed the translations"
sl -o "$work/tight.sl" --per-source 3 --frequent 2 2>/dev/null
tr --beam 4 --shortlist "$work/tight.sl" --input "$fix/input.en" > "$work/tight.de"
[ "$(wc -l < "$work/tight.de")" -eq "$(wc -l < "$fix/input.en")" ] || fail "tight shortlist: lines lost"
cmp -s "$work/tight.de" "$fix/expected.beam4.de" && fail "a 3-per-token shortlist changed nothing: is it used?"
"$bin" shortlist --source "$work/demo/train.en" --target "$work/demo/train.de" --vocab "$work/nonexistent.model" \
  -o "$work/x.sl" 2>/dev/null && fail "shortlist without a vocabulary"
expect_error "per source token must be >= 0, got -2" sl -o "$work/x.sl" --per-source -2
[ ! -e "$work/x.sl" ] || fail "a refused shortlist wrote its file"
# (Files of other sizes, malformed and damaged ones: shortlist_test.cc and integrity_test.sh.)
expect_error "not a shortlist file" tr --shortlist "$fix/input.en"
# Random sampling: the same --seed samples the same with other threads and batches, another seed
# samples otherwise, --sampling-topk 1 is greedy search; sampling needs --beam 1; bad values are named.
sample() { "$bin" translate -m "$model" --beam 1 --sampling-topk -1 "$@" < "$fix/input.en" 2>/dev/null; }
sample --threads 1 --seed 7 > "$work/sample7.de"
[ "$(wc -l < "$work/sample7.de")" -eq "$(wc -l < "$fix/input.en")" ] || fail "sampling lost lines"
sample --threads 2 --batch-size 3 --parallel-batches 2 --seed 7 | diff "$work/sample7.de" - ||
  fail "--seed 7 sampled otherwise with 2 threads and batches of 3"
sample --threads 1 --seed 8 | cmp -s - "$work/sample7.de" && fail "--seed 7 and --seed 8 sampled the same"
tr --beam 1 --sampling-topk 1 --sampling-temperature 3 < "$fix/input.en" | diff "$fix/expected.greedy.de" - ||
  fail "--sampling-topk 1 is not greedy search"
expect_error "sampling-topk 5 draws one translation per sentence: it needs --beam 1, got --beam 4" \
  "$bin" translate -m "$model" --sampling-topk 5
expect_error "sampling-topk must be -1 .*got -2" "$bin" translate -m "$model" --beam 1 --sampling-topk -2
expect_error "sampling-topp must be in \(0, 1\], got 1.5" "$bin" translate -m "$model" --beam 1 --sampling-topk 5 --sampling-topp 1.5
expect_error "sampling-temperature must be finite and > 0, got 0" \
  "$bin" translate -m "$model" --beam 1 --sampling-topk 5 --sampling-temperature 0
expect_error "sampling-topp 0.9 applies only to sampling" "$bin" translate -m "$model" --sampling-topp 0.9
expect_error "seed must be an integer in \[0, 18446744073709551615\], got '-1'" "$bin" translate -m "$model" --seed -1
expect_error "seed 7 applies only to sampling, which is off" "$bin" translate -m "$model" --beam 1 --seed 7
# Target prefixes, one line per input line (an empty line: none): each translation begins with its
# prefix and the others are as without; the counts must agree (file or standard input, either way).
printf 'dreihundert\n\n\nsieben\n\n\n\n\n\n\n' > "$work/prefix.de"
tr --beam 4 --target-prefix "$work/prefix.de" < "$fix/input.en" > "$work/prefixed.de"
case "$(sed -n 1p "$work/prefixed.de")" in dreihundert*) ;; *) fail "line 1 does not begin with its prefix";; esac
case "$(sed -n 4p "$work/prefixed.de")" in sieben*) ;; *) fail "line 4 does not begin with its prefix";; esac
cmp -s <(sed -n 4p "$work/prefixed.de") <(sed -n 4p "$fix/expected.beam4.de") && fail "the prefix of line 4 changed nothing"
diff <(sed '1d;4d' "$work/prefixed.de") <(sed '1d;4d' "$fix/expected.beam4.de") || fail "lines without a prefix changed"
tr --beam 1 --sampling-topk -1 --seed 3 --target-prefix "$work/prefix.de" < "$fix/input.en" | sed -n 4p |
  grep -q "^sieben" || fail "sampling after a prefix"
head -n 3 "$work/prefix.de" > "$work/short.de"
expect_error "target-prefix '.*short.de' has 3 lines but the input has 10" \
  tr --target-prefix "$work/short.de" --input "$fix/input.en"
tr --target-prefix "$work/short.de" < "$fix/input.en" > "$work/short.out" 2> "$work/err" && fail "3 prefixes for 10 lines"
grep -q "has 3 lines but the input has 10" "$work/err" || fail "prefix count message: $(cat "$work/err")"
[ ! -s "$work/short.out" ] || fail "translated lines before refusing the prefix count"
head -n 2 "$fix/input.en" | tr --target-prefix "$work/prefix.de" 2> "$work/err" > /dev/null && fail "10 prefixes for 2 lines"
grep -q "has 10 lines but the input has 2" "$work/err" || fail "prefix count message: $(cat "$work/err")"
expect_error "cannot read --target-prefix" tr --target-prefix "$work"
# A sentence's error names its line of the input, in later chunks too (the library counts from 0).
{ echo; printf 'drei %.0s' $(seq 1100); echo; } > "$work/long.prefix"
printf 'one\ntwo\n' | tr --target-prefix "$work/long.prefix" --chunk-lines 1 2> "$work/err" > /dev/null &&
  fail "a prefix of over 1024 tokens accepted"
grep -qE "^error: line 2: the target prefix has [0-9]+ tokens, more than the input token limit of 1024$" "$work/err" ||
  fail "a long prefix's message: $(cat "$work/err")"
# With --ids, prefixes are ids too, checked as input ids are.
echo "9 10" > "$work/prefix.ids"
echo "5 6 7" | tr --ids --target-prefix "$work/prefix.ids" | grep -q "^9 10\( \|$\)" || fail "--ids prefix"
echo "9 3" > "$work/bad.ids"
echo "5 6 7" | tr --ids --target-prefix "$work/bad.ids" 2> "$work/err" > /dev/null && fail "EOS in a prefix accepted"
grep -q "target-prefix '.*bad.ids', line 1: token id 3 is the end-of-sentence id" "$work/err" ||
  fail "--ids prefix message: $(cat "$work/err")"

end_of_level_checks

# Bad input: a malformed model file, a missing vocabulary, a wrong option.
head -c 1000 "$model" > "$work/broken.safetensors"
"$bin" info "$work/broken.safetensors" 2>"$work/err" && fail "broken model accepted"
grep -q "truncated" "$work/err" || fail "broken model message: $(cat "$work/err")"
# info on the vocabulary instead of the model says what it is; on a .model that is neither, the
# safetensors error.
"$bin" info "$fix/vocab.model" > "$work/vocab_info" || fail "info on a vocabulary failed"
grep -q "a SentencePiece model" "$work/vocab_info" && grep -q "this is a vocabulary, not a model" "$work/vocab_info" ||
  fail "info on a vocabulary: $(cat "$work/vocab_info")"
grep -Eq "^fingerprint [0-9a-f]{16} " "$work/vocab_info" || fail "info on a vocabulary: no fingerprint"
echo garbage > "$work/garbage.model"
"$bin" info "$work/garbage.model" 2>"$work/err" && fail "a garbage .model accepted"
grep -q "not a safetensors file" "$work/err" || fail "garbage .model message: $(cat "$work/err")"
cp "$model" "$work/lonely.safetensors"
echo one | "$bin" translate -m "$work/lonely.safetensors" 2>"$work/err" && fail "missing vocabulary accepted"
grep -q "vocab.model' does not exist" "$work/err" || fail "missing vocabulary message"
"$bin" translate -m "$model" --beam 0 < /dev/null 2>"$work/err" && fail "beam 0 accepted"
"$bin" translate -m "$model" --input "$work" < /dev/null 2>"$work/err" && fail "a folder accepted as --input"
grep -q "cannot read --input" "$work/err" || fail "folder input message"
"$bin" init --preset tiny --vocab-size 50 --tie-source-target=false -o "$work/untied.safetensors" > /dev/null
"$bin" info "$work/untied.safetensors" | grep -q "tie_source_target  false" || fail "--tie-source-target=false ignored"
# Decoder-only and encoder-only models from the model flags; info counts no layers for a stack the
# architecture lacks, and the learned positions with the embeddings.
"$bin" init --preset tiny --vocab-size 50 --architecture decoder-only --positions learned --max-positions 64 \
  --attention-bias=false -o "$work/lm.safetensors" > /dev/null
"$bin" info "$work/lm.safetensors" > "$work/info"
grep -qE "encoder +0  \(0 layers\)" "$work/info" || fail "decoder-only info: $(cat "$work/info")"
grep -qE "embeddings +3,648 " "$work/info" || fail "decoder-only embeddings: $(cat "$work/info")"
"$bin" init --preset tiny --vocab-size 50 --architecture encoder-only --token-types 2 --mlm-head -o "$work/mlm.safetensors" > /dev/null
"$bin" info "$work/mlm.safetensors" | grep -qE "decoder +0  \(0 layers\)" || fail "encoder-only info"
expect_error "architecture must be one of encoder-decoder, decoder-only, encoder-only, got 'gpt'" "$bin" init --preset tiny \
  --vocab-size 50 --architecture gpt -o "$work/x.safetensors"
expect_error "token_types \(2\) needs architecture 'encoder-only'" "$bin" init --preset tiny --vocab-size 50 --token-types 2 \
  -o "$work/x.safetensors"
# The same for the other commands that write a file: never over one they read.
cp "$model" "$work/m.safetensors"
expect_error "^error: average: the output '.*m.safetensors' is also a checkpoint to average" "$bin" average "$work/m.safetensors" "$model" \
  -o "$work/m.safetensors"
expect_error "^error: -o '.*m.safetensors' is also --model" "$bin" attention -m "$work/m.safetensors" --vocab \
  "$fix/vocab.model" one -o "$work/m.safetensors"
cmp -s "$work/m.safetensors" "$model" || fail "average or attention wrote over their input"
expect_error "threads: must be an integer in \\[0, 1024\\] \\(0: all cores\\), got -1" "$bin" translate -m "$model" --threads -1
# Thread counts libgomp cannot start (100000 crashed it) or that do not fit an int are refused.
expect_error "threads: must be an integer in \\[0, 1024\\].*got 100000" "$bin" translate -m "$model" --threads 100000
expect_error "threads: must be an integer in \\[0, 1024\\].*got 4294967297" "$bin" score -m "$model" --threads 4294967297
OMP_NUM_THREADS=100000 expect_error "default thread count is 100000 \\(OMP_NUM_THREADS=100000\\), over the limit of 1024" \
  "$bin" translate -m "$model"
expect_error "model.npz: a zip archive, not a safetensors file: .*transformer import marian" "$bin" translate \
  -m "$here/fixtures/import/marian/model.npz"
expect_error "parallel batches must be >= 0.*-1" "$bin" translate -m "$model" --parallel-batches -1
expect_error "head.*-5" "$bin" attention -m "$model" "one" -o "$work/x.svg" --head -5
expect_error "grid draws every head of the layer: give it or --head 1, not both" "$bin" attention -m "$model" "one" \
  -o "$work/x.svg" --head 1 --grid
expect_error "attention '-': standard output carries the translations" tr --attention -
[ ! -e ./- ] || fail "--attention - wrote a file named '-'"
expect_error "unknown command 'translat' \\(the commands: .*translate" "$bin" translat -m "$model"
"$bin" --version | grep -q "^transformer [0-9]" || fail "--version"
expect_error "the output file's name is empty: give a path" "$bin" init --preset tiny --vocab-size 50 -o ""
expect_error "the output folder's name is empty: give a path" "$bin" demo-data --out ""
expect_error "cannot read --input '/nonexistent.en': No such file" tr --input /nonexistent.en
expect_error "layer.*-1" "$bin" attention -m "$model" "one" -o "$work/x.svg" --layer -1
echo "0 5" | tr --ids 2>"$work/err" > /dev/null && fail "--ids accepted the padding id"
grep -q "token id 0 is the padding id" "$work/err" || fail "--ids padding message: $(cat "$work/err")"
printf 'one\ttwo\tthree\n' | "$bin" score -m "$model" 2>"$work/err" > /dev/null && fail "score accepted two tabs"
grep -q "more than one tab" "$work/err" || fail "score two-tab message"
expect_error "is a folder" "$bin" info "$work"
# A folder as standard input reads as empty: refused, not "translated" into nothing with status 0.
for cmd in "translate -m $model" "score -m $model" "eval --ref $fix/expected.beam4.de"; do
  $bin $cmd < "$work" > /dev/null 2> "$work/err" && fail "$cmd accepted a folder as standard input"
  grep -q "standard input is a folder" "$work/err" || fail "$cmd, folder on stdin: $(cat "$work/err")"
done
# An id beyond 64 bits is named as written, not as the clamped 9223372036854775807.
echo "18446744073709551617 5" | "$bin" translate -m "$model" --ids 2> "$work/err" > /dev/null && fail "huge id accepted"
grep -q "token id 18446744073709551617 is outside the vocabulary" "$work/err" || fail "huge id: $(cat "$work/err")"
# The CPU report names the level in use and each library's choice; a level name this build does
# not know, or one above this CPU's, is refused naming it.
"$bin" info --cpu > "$work/cpu.txt"
for field in cpu features level kernels oneDNN OpenBLAS int8 bf16 packed; do
  grep -q "^$field " "$work/cpu.txt" || fail "info --cpu has no '$field' line: $(cat "$work/cpu.txt")"
done
[ -z "${TFM_CPU_ISA:-}" ] || grep -q "^level      $TFM_CPU_ISA " "$work/cpu.txt" || fail "info --cpu ignores TFM_CPU_ISA"
TFM_CPU_ISA=avx3 expect_error "TFM_CPU_ISA='avx3' is not a level this build knows \\(native, generic" "$bin" info --cpu
TFM_CPU_ISA=avx3 expect_error "TFM_CPU_ISA='avx3'" "$bin" eval --ref "$fix/expected.beam4.de" --hyp "$fix/expected.beam4.de"
# A level this build knows (the avx3 error lists them) but this CPU lacks. The binary is asked, not
# /proc/cpuinfo, which under an emulator (make test-arm64) describes the host.
detected=$(env -u TFM_CPU_ISA "$bin" info --cpu | awk '$1 == "level" { print $2 }')
known=$(TFM_CPU_ISA=avx3 "$bin" info --cpu 2>&1 >/dev/null || true)
if [ "$detected" != amx ] && [[ "$known" == *", amx)"* ]]; then
  TFM_CPU_ISA=amx expect_error "TFM_CPU_ISA=amx: this CPU \\(.*\\) does not have it; its highest level is $detected" \
    "$bin" info --cpu
fi
# One input policy (transformer/text.h): NUL bytes are read as spaces and invalid UTF-8 as U+FFFD,
# each with a warning naming the line, by translate, score and attention alike.
printf 'three\0hundred\n' | tr --beam 1 2>"$work/err" > "$work/nul.de"
grep -q "line 1 contains NUL bytes" "$work/err" || fail "no warning for a NUL byte: $(cat "$work/err")"
printf 'three hundred\n' | tr --beam 1 2>/dev/null | diff - "$work/nul.de" || fail "NUL not read as a space"
printf 'three\0hundred\tdrei\377hundert\n' | "$bin" score -m "$model" 2>"$work/err" > "$work/nul.score" ||
  fail "score refused a NUL byte: $(cat "$work/err")"
grep -q "line 1, source side contains NUL bytes; replaced by spaces" "$work/err" || fail "score NUL: $(cat "$work/err")"
grep -q "line 1, target side is not valid UTF-8" "$work/err" || fail "score UTF-8: $(cat "$work/err")"
printf 'three hundred\tdrei\357\277\275hundert\n' | "$bin" score -m "$model" 2>/dev/null | diff - "$work/nul.score" ||
  fail "score did not read NUL as a space and the bad byte as U+FFFD"
"$bin" attention -m "$model" $'three\377hundred' -o "$work/repaired.svg" 2>"$work/err" > /dev/null ||
  fail "attention refused invalid UTF-8: $(cat "$work/err")"
grep -q "the sentence is not valid UTF-8; invalid bytes replaced by U+FFFD" "$work/err" ||
  fail "attention UTF-8 warning: $(cat "$work/err")"
# A line with no tokens once normalized (invalid bytes alone, U+FFFD, control characters) gets an
# empty translation, as an empty line does, with a warning; attention says there is nothing to draw.
printf 'three\n\377\376\n\001\n\n' | tr 2>"$work/err" > "$work/notokens.de"
[ "$(wc -l < "$work/notokens.de")" = 4 ] && [ -z "$(sed -n 2,4p "$work/notokens.de" | command tr -d '\n')" ] ||
  fail "lines without tokens: $(cat "$work/notokens.de")"
for n in 2 3; do
  grep -q "^warning: line $n has no tokens (the vocabulary's normalization removes U+FFFD" "$work/err" ||
    fail "no warning for line $n without tokens: $(cat "$work/err")"
done
! grep -q "line 4 has no tokens" "$work/err" || fail "an empty line warned of having no tokens"
expect_error "the sentence '.*' has no tokens" "$bin" attention -m "$model" $'\377' -o "$work/none.svg"
expect_error "batch-size.*0" "$bin" score -m "$model" --batch-size 0
expect_error "max-input-tokens.*-3" "$bin" score -m "$model" --max-input-tokens -3
expect_error "min.*length" "$bin" translate -m "$model" --min-length -2
# Documented maxima, and a translation estimated to need more memory than --max-memory is refused
# before it starts (beam search holds sentences · beam · 2 · beam top-k entries), naming the estimate.
expect_error "beam size must be in \\[1, 1024\\], got 10000" "$bin" translate -m "$model" --beam 10000
expect_error "batch size must be in \\[1, 4096\\] sentences, got 5000" "$bin" translate -m "$model" --batch-size 5000
expect_error "max-input-tokens must be in \\[1, 16384\\], got 20000" "$bin" score -m "$model" --max-input-tokens 20000
expect_error "max-memory must be a number of GiB" "$bin" translate -m "$model" --max-memory -3
# An infinite maximum length is refused by name (it used to overflow into a limit of one token: empty output).
expect_error "needs finite a, b >= 0.*b = inf" "$bin" translate -m "$model" --max-length-b inf --max-memory 0
rc=0
"$bin" translate -m "$model" --vocab "$fix/vocab.model" --beam 1000 --max-memory 0.05 --input "$fix/input.en" \
  > "$work/mem.out" 2> "$work/err" || rc=$?
[ "$rc" -eq 1 ] && [ ! -s "$work/mem.out" ] || fail "--max-memory 0.05 with beam 1000: status $rc, output $(wc -c < "$work/mem.out")"
grep -qE "translating would need about [0-9.]+ GiB, more than the limit of 51.2 MiB \(max_memory, --max-memory\): a batch of [0-9]+ sentences of up to [0-9]+ tokens, outputs of up to [0-9]+ tokens \(max length a 1, b 50\) with beam 1000" \
  "$work/err" || fail "memory estimate message: $(cat "$work/err")"
tr --beam 4 --max-memory 0.05 < "$fix/input.en" | diff "$fix/expected.beam4.de" - || fail "a small beam under the limit"

# Standard input is translated as it comes: a line written to a pipe that stays open is answered
# before the input ends (it once waited for 10,000 lines or the end).
mkfifo "$work/in.fifo"
tr < "$work/in.fifo" > "$work/live.out" 2> "$work/live.err" &
live=$!
exec 3> "$work/in.fifo"
echo "three hundred forty-two" >&3
for _ in $(seq 200); do [ -s "$work/live.out" ] && break; sleep 0.1; done
answered=$(cat "$work/live.out")
exec 3>&-
wait $live || fail "translate from a pipe failed: $(cat "$work/live.err")"
[ -n "$answered" ] || fail "a line written to an open pipe was not translated within 20 s"
[ "$answered" = "$(echo "three hundred forty-two" | tr)" ] || fail "a line from an open pipe: '$answered'"

# Ctrl-C (SIGINT) while a chunk is being translated: the chunk is finished and written in order,
# no more is read, the message names the line to go on from, and the run ends by the signal
# (status 130). It once killed the run at once, losing the chunk in progress. The signal is sent
# once the first chunk is out whole, so one is in progress. (The binary itself in the background,
# not the function tr, so that the signal goes to $!; with SIGINT's default action, which a script's
# background jobs otherwise inherit as ignored.)
for _ in $(seq 400); do cat "$fix/input.en"; done > "$work/many.en"  # 4,000 lines
tr --beam 8 --input "$work/many.en" --chunk-lines 1000 > "$work/many.all" 2> /dev/null
stop_after_first_chunk() {  # SIGNAL...: sends each, in turn, once 1,000 lines are out; sets status
  env --default-signal=INT "$bin" translate -m "$model" --threads 1 --beam 8 --input "$work/many.en" \
    --chunk-lines 1000 > "$work/stop.out" 2> "$work/stop.err" &
  local run=$! s
  for _ in $(seq 1200); do [ "$(wc -l < "$work/stop.out")" -ge 1000 ] && break; sleep 0.05; done
  for s in "$@"; do kill -"$s" $run; done
  status=0; wait $run || status=$?
}
stop_after_first_chunk INT
written=$(wc -l < "$work/stop.out")
if [ "$status" = 0 ]; then
  echo "note: the translation ended before the signal; the interruption was not tested" >&2
else
  [ "$status" = 130 ] || fail "interrupted translate exited with $status: $(cat "$work/stop.err")"
  [ "$written" -ge 1000 ] && [ $((written % 1000)) = 0 ] ||
    fail "interrupted, translate wrote $written lines, not whole chunks: $(cat "$work/stop.err")"
  head -n "$written" "$work/many.all" | cmp -s - "$work/stop.out" || fail "the lines written before the stop differ"
  grep -q "^stopped by SIGINT: lines 1 to $written were translated and written; to go on, translate the input from line $((written + 1)) (tail -n +$((written + 1)) '$work/many.en')$" "$work/stop.err" ||
    fail "the stop message: $(cat "$work/stop.err")"
fi
# A second signal, of either kind, ends the run at once (no stop message).
stop_after_first_chunk INT TERM
[ "$status" != 0 ] || echo "note: the translation ended before the signals" >&2
[ "$status" = 0 ] || ! grep -q "^stopped by" "$work/stop.err" || fail "SIGTERM after SIGINT did not stop at once"
# The same while standard input waits: what was read is written, and a line the signal cut short
# is left for the next run.
mkfifo "$work/stop.fifo"
env --default-signal=INT "$bin" translate -m "$model" --threads 1 < "$work/stop.fifo" > "$work/stop.out" 2> "$work/stop.err" &
run=$!
exec 3> "$work/stop.fifo"
printf 'three hundred forty-two\nfive hun' >&3
for _ in $(seq 200); do [ -s "$work/stop.out" ] && break; sleep 0.1; done
kill -INT $run
status=0; wait $run || status=$?
exec 3>&-
[ "$status" = 130 ] || fail "translate interrupted while reading exited with $status: $(cat "$work/stop.err")"
[ "$(cat "$work/stop.out")" = "$answered" ] || fail "interrupted while reading: '$(cat "$work/stop.out")'"
grep -q "^stopped by SIGINT: lines 1 to 1 were translated and written; to go on, translate the input from line 2$" \
  "$work/stop.err" || fail "the stop message while reading: $(cat "$work/stop.err")"
# And while --input, a FIFO whose writer stays, waits (it is read line by line as it comes): the
# stop does not wait for the writer to close.
env --default-signal=INT "$bin" translate -m "$model" --threads 1 --input "$work/stop.fifo" > "$work/stop.out" \
  2> "$work/stop.err" &
run=$!
exec 3> "$work/stop.fifo"
echo "three hundred forty-two" >&3
for _ in $(seq 200); do [ -s "$work/stop.out" ] && break; sleep 0.1; done
kill -INT $run
for _ in $(seq 200); do kill -0 $run 2> /dev/null || break; sleep 0.1; done
kill -0 $run 2> /dev/null && { exec 3>&-; fail "translate --input FIFO went on waiting for input after SIGINT"; }
status=0; wait $run || status=$?
exec 3>&-
[ "$status" = 130 ] && [ "$(cat "$work/stop.out")" = "$answered" ] ||
  fail "--input FIFO interrupted: status $status, '$(cat "$work/stop.out")': $(cat "$work/stop.err")"
grep -q "to go on, translate the input from line 2$" "$work/stop.err" || fail "the --input FIFO hint: $(cat "$work/stop.err")"
# SIGINT ignored on entry (a script's background job) stays ignored: the run goes on to the end.
# The signal is sent once the first chunk is out, when the handlers would be in place.
head -n 2000 "$work/many.en" > "$work/half.en"
"$bin" translate -m "$model" --threads 1 --beam 8 --chunk-lines 500 --input "$work/half.en" > "$work/ignored.out" \
  2> /dev/null &
run=$!
for _ in $(seq 1200); do [ -s "$work/ignored.out" ] && break; sleep 0.05; done
kill -INT $run 2> /dev/null || true
wait $run || fail "translate stopped by a SIGINT it was started ignoring"
head -n 2000 "$work/many.all" | cmp -s - "$work/ignored.out" || fail "an ignored SIGINT changed the output"

# An enormous line is cut before it is tokenized (64 bytes per allowed token): 20 MB once took
# 4.8 GB, and more was killed by the kernel with the lines before it lost. Under a 3 GB limit of
# address space, the lines around it are translated and the line is cut with a warning. (No limit
# for a sanitized binary, whose shadow memory needs terabytes of address space, nor for the
# emulator's wrapper script.)
vm=3000000
case "$(head -c 4 "$bin")" in *ELF*) ;; *) vm=unlimited ;; esac  # no pipes into grep -q: pipefail
case "$(ldd "$bin" 2>/dev/null)" in *libasan*) vm=unlimited ;; esac
head -c 20000000 /dev/zero | command tr '\0' 'x' > "$work/huge.line"  # tr: the system's, not translate
{ echo "one"; cat "$work/huge.line"; echo; echo "two"; } > "$work/huge.en"
(ulimit -v $vm; tr --input "$work/huge.en" > "$work/huge.out" 2> "$work/err") ||
  fail "a 20 MB line: $(cat "$work/err")"
[ "$(wc -l < "$work/huge.out")" = 3 ] && [ "$(sed -n 1p "$work/huge.out")" = "$(echo one | tr)" ] &&
  [ "$(sed -n 3p "$work/huge.out")" = "$(echo two | tr)" ] || fail "the lines around a 20 MB line"
grep -q "^warning: line 2 has more than 1024 tokens; translated its first 1024" "$work/err" ||
  fail "a 20 MB line cut without a word: $(cat "$work/err")"
# A short sentence padded with 70 kB of spaces (which the tokenizer drops) is not cut: the cut grows
# until it holds more tokens than allowed.
printf 'three%70000shundred forty-two\n' ' ' | tr > "$work/padded.out" 2> "$work/err"
[ "$(cat "$work/padded.out")" = "$(echo "three hundred forty-two" | tr 2>/dev/null)" ] ||
  fail "a sentence padded with spaces was cut: $(cat "$work/padded.out")"
! grep -q "more than 1024 tokens" "$work/err" || fail "a padded sentence warned of a cut"
printf 'one\t%s\n' "$(cat "$work/huge.line")" > "$work/huge.tsv"
(ulimit -v $vm; "$bin" score -m "$model" --threads 1 --input "$work/huge.tsv" > "$work/huge.score" 2> "$work/err") ||
  fail "score with a 20 MB target: $(cat "$work/err")"
echo "inference CLI checks passed"
