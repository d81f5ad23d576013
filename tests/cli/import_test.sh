#!/usr/bin/env bash
# transformer import, as a user runs it on the committed small random OPUS-MT model
# (tests/fixtures/import, tools/make_import_fixtures.py): both formats import, then translate
# (greedy, beam, int8, text and ids), score, eval, attention and info work on the result, the
# translations equal Hugging Face generate()'s, and bad input is refused with nothing written.
# Usage: import_test.sh PATH/TO/transformer
set -euo pipefail
bin=$1
source "$(dirname "$0")/level.sh"
skip_unsupported_level "$bin"
here=$(cd "$(dirname "$0")/.." && pwd)
fix="$here/fixtures/import"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin" import marian "$fix/marian/model.npz" --vocab "$fix/marian/opus.spm-spm.vocab.yml" \
  --source-spm "$fix/marian/source.spm" --target-spm "$fix/marian/target.spm" -o "$work/marian" 2> "$work/notes" \
  > "$work/path" || fail "import marian failed: $(cat "$work/notes")"
[ "$(cat "$work/path")" = "$work/marian/model.safetensors" ] || fail "import marian printed $(cat "$work/path")"
grep -q "Marian's rates" "$work/notes" || fail "import marian did not say which position rates it chose"
for f in model.safetensors vocabulary.json source.spm target.spm; do
  [ -s "$work/marian/$f" ] || fail "import marian wrote no $f"
done
"$bin" import hf "$fix/hf" -o "$work/hf" > /dev/null 2>&1 || fail "import hf failed"

# The sources and Hugging Face's greedy texts (those that end before the length limit).
python3 - "$fix/reference.json" "$work" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
with open(sys.argv[2] + "/src.txt", "w") as s, open(sys.argv[2] + "/want.txt", "w") as w:
    for src, hyp in zip(r["sources"], r["hf"]["greedy"]):
        if hyp["ids"][-1] == 0:
            s.write(src + "\n"); w.write(hyp["text"] + "\n")
PY
"$bin" translate -m "$work/hf/model.safetensors" --threads 1 --beam 1 --input "$work/src.txt" > "$work/got.txt"
diff "$work/want.txt" "$work/got.txt" || fail "greedy translations differ from Hugging Face's"
"$bin" translate -m "$work/hf/model.safetensors" --threads 1 --beam 4 --length-normalization power \
  --length-penalty 1 --beam-stop no-better-live --n-best 2 --input "$work/src.txt" > "$work/nbest.txt"
[ "$(wc -l < "$work/nbest.txt")" -eq $((2 * $(wc -l < "$work/src.txt"))) ] || fail "n-best 2 gave $(wc -l < "$work/nbest.txt") lines"
"$bin" translate -m "$work/marian/model.safetensors" --threads 1 --int8 --input "$work/src.txt" > "$work/int8.txt"
[ "$(wc -l < "$work/int8.txt")" -eq "$(wc -l < "$work/src.txt")" ] || fail "int8 translation lost lines"

# score, eval, attention, info.
paste "$work/src.txt" "$work/got.txt" | "$bin" score -m "$work/hf/model.safetensors" > "$work/scores.txt"
awk -F'\t' '$1 >= 0 || $1 !~ /^-?[0-9.]+$/ { bad = 1 } END { exit bad }' "$work/scores.txt" ||
  fail "score printed a non-negative or non-numeric log-probability: $(head -3 "$work/scores.txt")"
"$bin" eval -r "$work/want.txt" --hyp "$work/got.txt" --metrics exact | grep -q "100" ||
  fail "eval of identical texts is not 100% exact"
"$bin" attention -m "$work/marian/model.safetensors" -o "$work/att.svg" "The man sees a book." > /dev/null && grep -q "<svg" "$work/att.svg" ||
  fail "attention failed on an imported model"
"$bin" info "$work/marian/model.safetensors" > "$work/info.txt"
grep -q '"format":"marian"' "$work/info.txt" || fail "info does not say the model came from Marian"
grep -q 'swish' "$work/info.txt" || fail "info does not show the swish activation"

end_of_level_checks

# Bad input: an error naming the problem, and nothing in the output folder.
truncated="$work/cut"; mkdir "$truncated"; cp "$fix/marian/"* "$truncated/"
head -c 100000 "$fix/marian/model.npz" > "$truncated/model.npz"
if "$bin" import marian "$truncated/model.npz" --vocab "$fix/marian/opus.spm-spm.vocab.yml" \
   --source-spm "$fix/marian/source.spm" --target-spm "$fix/marian/target.spm" -o "$work/out-cut" 2> "$work/err"; then
  fail "a truncated .npz imported"
fi
grep -q "model.npz" "$work/err" || fail "the error does not name the file: $(cat "$work/err")"
[ ! -e "$work/out-cut" ] || fail "a failed import wrote its output folder"
if "$bin" import hf "$fix/hf" -o "$fix/hf" 2> "$work/err"; then fail "import hf into its own folder was allowed"; fi
grep -q "is the input folder" "$work/err" || fail "import into the input folder: $(cat "$work/err")"
# A write that fails part way (files capped at 230 KB: the SentencePiece models are larger) leaves
# none of the folders the import made, not a vocabulary without its model.
rc=0
( trap '' XFSZ; ulimit -f 230; "$bin" import hf "$fix/hf" -o "$work/capped/out" ) 2> "$work/err" || rc=$?
[ "$rc" -ne 0 ] && grep -q "File too large" "$work/err" || fail "a capped write: status $rc, $(cat "$work/err")"
[ ! -e "$work/capped" ] || fail "a failed write left $(find "$work/capped")"
echo "import_test: ok"
