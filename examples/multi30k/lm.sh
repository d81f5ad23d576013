#!/usr/bin/env bash
# A German language model on the Multi30k training text (a decoder-only Transformer, GPT-style),
# trained in at most 15 minutes on 2 cores, and its validation perplexity against a unigram model's
# on the same vocabulary. The data are not shipped; pass the folder that holds Multi30k's task-1
# files (tok/ as in ../shared/data/multi30k). They are read where they are.
#
#   examples/multi30k/lm.sh DATA_DIR [RUN_DIR]
#
# The unigram perplexity is the one `transformer train` logs for a language model with validation
# text ("unigram baseline: validation perplexity ..."): each token's frequency in the training text
# under the run's vocabulary, add-one smoothed, over the same validation tokens the model's
# perplexity counts (each sentence's tokens and its end of sentence). docs/results.md holds the
# figures of the reference run.
# Environment: BIN (default build/transformer), THREADS (default 2), MAX_SECONDS (default 780: with
# the vocabulary and the validations, the run stays under 15 minutes), and any extra `transformer
# train` flags in TRAIN_FLAGS.
set -euo pipefail
data=${1:?usage: lm.sh DATA_DIR [RUN_DIR]}
run=${2:-runs/multi30k-lm-de}
bin=${BIN:-build/transformer}
threads=${THREADS:-2}
train="$data/tok/train.lc.norm.tok.de"
valid="$data/tok/val.lc.norm.tok.de"
for f in "$train" "$valid"; do [ -f "$f" ] || { echo "missing $f" >&2; exit 1; }; done
mkdir -p "$run"

# The model: 3 pre-norm decoder layers of width 128 (4 heads, FFN 512), learned positions (their
# table sized by max_tokens), tied output, a BPE vocabulary of 4000; dropout 0.1; the paper's
# schedule with lr factor 2 and 1000 warm-up steps; batches of 4096 tokens.
start=$(date +%s)
# shellcheck disable=SC2086
"$bin" train --architecture decoder-only --train-text "$train" --valid-text "$valid" --run-dir "$run" \
  --preset small --d-model 128 --heads 4 --d-ff 512 --layers 3 --pre-norm --positions learned \
  --dropout 0.1 --attention-dropout 0.1 --embedding-dropout 0.1 --vocab-size 4000 --max-tokens 100 \
  --batch-tokens 4096 --lr-factor 2 --warmup-steps 1000 --max-steps 0 --max-seconds "${MAX_SECONDS:-780}" \
  --valid-every 500 --save-every 500 --log-every 100 --threads "$threads" ${TRAIN_FLAGS:-} 2> "$run/train.log" ||
  { tail -n 20 "$run/train.log" >&2; exit 1; }
end=$(date +%s)

unigram=$(grep -o 'unigram baseline: validation perplexity [0-9.]*' "$run/train.log" | awk '{ print $NF }')
last=$(grep '^validation at step' "$run/train.log" | tail -n 1)
best=$(grep '^validation at step.*(best)' "$run/train.log" | tail -n 1)
echo "data:       $train ($(wc -l < "$train") lines), validation $valid ($(wc -l < "$valid") lines)"
echo "time:       $((end - start)) s in all, $threads threads ($(lscpu | sed -n 's/^Model name: *//p'))"
echo "last:       $last"
echo "best:       $best (model-best.safetensors)"
echo "unigram:    validation perplexity $unigram (same vocabulary)"
