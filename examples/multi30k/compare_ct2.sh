#!/usr/bin/env bash
# The realistic translation case of docs/performance.md: a trained model (the Multi30k recipe's
# averaged model) translating real sentences with normal stopping, ours beside CTranslate2 (the
# optional peer: pip install ctranslate2 sentencepiece) on the same weights and the same token ids,
# float32 and int8, beam 4; the time of the translation alone (loading and tokenization excluded),
# BLEU of each output and how many lines the two engines translate identically.
#
#   examples/multi30k/compare_ct2.sh RUN_DIR SOURCE REFERENCE [BLEU flags, e.g. --tokenize none]
set -euo pipefail
run=${1:?usage: compare_ct2.sh RUN_DIR SOURCE REFERENCE [eval flags]}
src=${2:?source file}; ref=${3:?reference file}; shift 3
bin=${BIN:-build/transformer}
py=${PEER_PYTHON:-python3}
threads=${THREADS:-$(nproc)}
beam=${BEAM:-4}
here=$(cd "$(dirname "$0")/../.." && pwd)
peer=("$py" "$here/tools/ct2_peer.py")
model="$run/averaged.safetensors"
work="$run/compare"
mkdir -p "$work"
"${peer[@]}" encode "$run/vocab.model" < "$src" > "$work/src.ids"
"${peer[@]}" convert "$model" "$work/ct2" > /dev/null
echo "$(wc -l < "$src") sentences, beam $beam, length penalty 1.0, $threads threads"
printf '%-22s %9s %8s %7s\n' engine tokens/s seconds BLEU
for type in float32 int8; do
  flag=$([ $type = int8 ] && echo --int8 || true)
  # One batch at a time on every thread, as CTranslate2 runs here (inter_threads 1).
  # shellcheck disable=SC2086
  "$bin" translate -m "$model" --ids --beam "$beam" --length-penalty 1.0 --threads "$threads" --stats $flag \
    --parallel-batches 1 \
    < "$work/src.ids" > "$work/ours.$type.ids" 2> "$work/ours.$type.log"
  "${peer[@]}" translate "$work/ct2" --ids-in "$work/src.ids" --beam "$beam" --length-penalty 1.0 \
    --compute-type "$type" --threads "$threads" --stats > "$work/ct2.$type.ids" 2> "$work/ct2.$type.log"
  for engine in ours ct2; do
    "${peer[@]}" decode "$run/vocab.model" < "$work/$engine.$type.ids" > "$work/$engine.$type.txt"
    bleu=$("$bin" eval --ref "$ref" --hyp "$work/$engine.$type.txt" --metrics bleu "$@" | awk '{ print $3 }')
    # "translated N sentences, M tokens in S s: R tokens/s"
    read -r seconds rate < <(sed -n 's/.* in \([0-9.]*\) s: \([0-9]*\) tokens\/s/\1 \2/p' "$work/$engine.$type.log")
    printf '%-22s %9s %8s %7s\n' "$([ $engine = ours ] && echo ours || echo CTranslate2) $type" "$rate" "$seconds" "$bleu"
  done
  same=$(paste -d '\t' "$work/ours.$type.ids" "$work/ct2.$type.ids" | awk -F '\t' '$1 == $2' | wc -l)
  echo "  identical lines ($type): $same of $(wc -l < "$src")"
done
