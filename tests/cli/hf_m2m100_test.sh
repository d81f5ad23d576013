#!/usr/bin/env bash
# transformer import hf on the committed tiny random M2M-100 and NLLB-200 folders
# (tests/fixtures/hf, tools/make_hf_m2m100_fixtures.py), then translate with --source-lang and
# --target-lang: greedy and beam 4 texts equal transformers' generate() (with --limit-without-eos,
# as generate() stops at max_new_tokens), --ids takes the source ids as given, and the language flags are refused where they
# do not fit, naming the value.
# Usage: hf_m2m100_test.sh PATH/TO/transformer
set -euo pipefail
bin=$1
source "$(dirname "$0")/level.sh"
skip_unsupported_level "$bin"
here=$(cd "$(dirname "$0")/.." && pwd)
fix="$here/fixtures/hf"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Per model: its language pair, the sources, and generate()'s texts.
python3 - "$fix/m2m100_reference.json" "$work" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for name in ("nllb", "m2m100"):
    m = r[name]
    open(f"{sys.argv[2]}/{name}.langs", "w").write(f"{m['source_lang']} {m['target_lang']}\n")
    for key in ("greedy", "beam4"):
        with open(f"{sys.argv[2]}/{name}.{key}.src", "w") as s, open(f"{sys.argv[2]}/{name}.{key}.want", "w") as w:
            for src, hyp in zip(m["sources"], m[key]):
                s.write(src + "\n"); w.write(hyp["text_after_language"] + "\n")
    with open(f"{sys.argv[2]}/{name}.ids", "w") as f:  # the tokenizer's ids, </s> left to the model
        f.write("\n".join(" ".join(map(str, ids[:-1])) for ids in m["source_ids"]) + "\n")
    with open(f"{sys.argv[2]}/{name}.ids.want", "w") as f:  # after the decoder's start, without </s>
        f.write("\n".join(" ".join(map(str, h["ids"][1:-1] if h["ids"][-1] == 2 else h["ids"][1:]))
                          for h in m["greedy"]) + "\n")
PY
search=(--threads 1 --length-normalization power --length-penalty 1 --beam-stop no-better-live --max-length-a 0
        --max-length-b 12 --limit-without-eos)
for name in nllb m2m100; do
  "$bin" import hf "$fix/$name" -o "$work/$name" > /dev/null 2> "$work/notes" || fail "import $name: $(cat "$work/notes")"
  read -r src tgt < "$work/$name.langs"
  model="$work/$name/model.safetensors"
  for beam in 1 4; do
    key=$([ "$beam" = 1 ] && echo greedy || echo beam4)
    "$bin" translate -m "$model" "${search[@]}" --beam "$beam" --source-lang "$src" --target-lang "$tgt" \
      --input "$work/$name.$key.src" > "$work/got"
    diff "$work/$name.$key.want" "$work/got" || fail "$name $key translations differ from transformers'"
  done
  # --ids: the source ids as given (the tokenizer's, language token included); the target forced.
  "$bin" translate -m "$model" "${search[@]}" --beam 1 --target-lang "$tgt" --ids --input "$work/$name.ids" > "$work/got"
  diff "$work/$name.ids.want" "$work/got" || fail "$name --ids outputs differ from transformers'"
done

end_of_level_checks

refused() {  # refused WHAT EXPECTED-TEXT INPUT-LINE translate-args...
  local what=$1 expected=$2 line=$3; shift 3
  if echo "$line" | "$bin" translate "$@" > /dev/null 2> "$work/err"; then fail "$what was accepted"; fi
  grep -qF "$expected" "$work/err" || fail "$what: the error does not say '$expected': $(cat "$work/err")"
}
m="$work/nllb/model.safetensors"
refused "an unknown code" "unknown target language 'xx_Yyyy'" "A man." -m "$m" --source-lang eng_Latn --target-lang xx_Yyyy
refused "no --target-lang" "give the target language" "A man." -m "$m" --source-lang eng_Latn
refused "no --source-lang" "give the source language" "A man." -m "$m" --target-lang deu_Latn
refused "--source-lang with --ids" "does not apply to token ids" "25 72" -m "$m" --ids --source-lang eng_Latn --target-lang deu_Latn
"$bin" import hf "$here/fixtures/import/hf" -o "$work/marian" > /dev/null 2>&1 || fail "import of the MarianMT fixture failed"
refused "a model without codes" "no language codes" "a" -m "$work/marian/model.safetensors" --target-lang de
echo "ok"
