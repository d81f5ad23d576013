#!/usr/bin/env bash
# The main job on bundled data (make demo): the project writes a small translation task that needs
# reordering (English number words → German: "three hundred forty-two" → "dreihundertzweiundvierzig",
# units before tens), trains a small Transformer on it, scores the held-out test split, translates
# a few inputs and leaves the loss plot in the run folder.
set -euo pipefail
bin=${BIN:-build/transformer}
run=${RUN:-runs/demo}
threads=${THREADS:-$(nproc)}  # on a machine busy with another job, THREADS=1 is much faster

echo "== 1. the task: English number words → German number words"
"$bin" demo-data --out "$run/data" --seed 1

echo "== 2. training (a 2+2-layer Transformer, d_model 128; a few minutes on 2 cores)"
start=$(date +%s)
"$bin" train --train-source "$run/data/train.en" --train-target "$run/data/train.de" \
  --valid-source "$run/data/valid.en" --valid-target "$run/data/valid.de" --run-dir "$run" \
  --preset small --d-model 128 --heads 4 --d-ff 512 --layers 2 --vocab-size 400 \
  --batch-tokens 2048 --warmup-steps 200 --lr-factor 0.5 --max-steps 1000 \
  --valid-every 250 --valid-max-sentences 300 --best-metric loss --log-every 50 --threads "$threads" >/dev/null
echo "training took $(( $(date +%s) - start )) s"

echo "== 3. the test split (1000 held-out numbers), beam 4"
"$bin" translate -m "$run/model.safetensors" --beam 4 --threads "$threads" \
  --input "$run/data/test.en" > "$run/test.hyp"
# Every German number is one word, so BLEU (word 1- to 4-grams) says nothing here: exact match and
# chrF (character n-grams) do.
"$bin" eval --ref "$run/data/test.de" --hyp "$run/test.hyp" --metrics exact,chrf

echo "== 4. a few held-out inputs"
head -n 6 "$run/data/test.en" > "$run/examples.en"
"$bin" translate -m "$run/model.safetensors" --beam 4 --threads "$threads" --input "$run/examples.en" > "$run/examples.hyp"
paste -d '\t' "$run/examples.en" "$run/examples.hyp" <(head -n 6 "$run/data/test.de") |
  awk -F'\t' '{ printf "  %-55s → %s%s\n", $1, $2, ($2 == $3 ? "" : "   (reference: " $3 ")") }'

"$bin" plot "$run" >/dev/null
echo "== the run folder: $run (model.safetensors, vocab.model, metrics.jsonl, training.svg)"
echo "== serve it: $bin serve -m $run/model.safetensors   (then open http://127.0.0.1:8080/; docs/serve.md)"
