#!/usr/bin/env bash
# transformer import hf on BERT folders: the sentence-transformers fixture (tests/fixtures/hf/minilm,
# written by tools/make_hf_bert_fixtures.py) imports, and `embed --ids` gives sentence-transformers'
# embeddings, by default with the folder's own pooling and normalization (mean, normalized) and with
# others asked for; an unsupported config.json is refused naming its field, and nothing is written.
# Usage: hf_bert_test.sh PATH/TO/transformer
set -euo pipefail
bin=$1
# Hugging Face comparisons run at the CPU's own level only (as hf_test): their kernels are tested
# at every level elsewhere.
if [ -n "${TFM_CPU_ISA:-}" ]; then echo "skipped: the Hugging Face imports are checked at the CPU's own level"; exit 77; fi
here=$(cd "$(dirname "$0")/.." && pwd)
fix="$here/fixtures/hf"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Refused before anything is written: relative position embeddings.
cp -r "$fix/bert" "$work/relative"
python3 - "$work/relative/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["position_embedding_type"] = "relative_key"; json.dump(c, open(sys.argv[1], "w"))
PY
"$bin" import hf "$work/relative" -o "$work/out-relative" 2> "$work/err" > /dev/null && fail "relative_key accepted"
grep -q "'position_embedding_type' \"relative_key\" is not supported" "$work/err" || fail "message: $(cat "$work/err")"
[ ! -e "$work/out-relative" ] || fail "a refused import wrote its output folder"

if ! "$bin" import hf "$fix/minilm" -o "$work/minilm" > "$work/import.log" 2>&1; then
  if grep -q "tokenizer is not implemented" "$work/import.log"; then
    echo "skipped: this build reads no Hugging Face tokenizer yet ($(tail -1 "$work/import.log"))"
    exit 0
  fi
  fail "import hf minilm: $(cat "$work/import.log")"
fi
model="$work/minilm/model.safetensors"

# The reference's token ids, one line each; embeddings compared within 1e-5.
python3 - "$fix/minilm/reference.json" > "$work/ids.txt" <<'PY'
import json, sys
for ids in json.load(open(sys.argv[1]))["ids"]:
    print(" ".join(map(str, ids)))
PY
cat > "$work/compare.py" <<'PY'
import json, sys
got = [json.loads(line) for line in open(sys.argv[1])]
want = json.load(open(sys.argv[2]))["embeddings"][sys.argv[3]]
assert len(got) == len(want), (len(got), len(want))
worst = max(abs(a - b) for g, w in zip(got, want) for a, b in zip(g, w))
assert all(len(g) == len(w) for g, w in zip(got, want)) and worst < 1e-5, (sys.argv[3], worst)
PY
check() {  # check KEY [embed flags]: embed --ids with the flags gives the reference's KEY
  local key=$1; shift
  "$bin" embed -m "$model" --ids --threads 1 --input "$work/ids.txt" "$@" > "$work/$key.json" 2> "$work/log" ||
    fail "embed $*: $(cat "$work/log")"
  python3 "$work/compare.py" "$work/$key.json" "$fix/minilm/reference.json" "$key" || fail "embed $* differs from $key"
}
check mean_normalized                       # the folder's Pooling (mean) and Normalize modules
check cls --pooling cls --no-normalize
check max_normalized --pooling max
check lasttoken --pooling last --no-normalize

# The masked-LM model imports too; its notes say what was set.
"$bin" import hf "$fix/bert-mlm" -o "$work/mlm" > "$work/mlm.log" 2>&1 || fail "import hf bert-mlm: $(cat "$work/mlm.log")"
echo "ok"
