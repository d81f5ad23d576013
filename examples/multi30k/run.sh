#!/usr/bin/env bash
# Multi30k English→German: train, average the last checkpoints, translate test2016 with beam
# search and score it. The data are not shipped; pass the folder that holds Multi30k's task-1 files
# (raw/ and tok/ as in ../shared/data/multi30k).
#
#   examples/multi30k/run.sh DATA_DIR [tok|raw] [RUN_DIR]
#
# It prints a table of BLEU and chrF (validation and test2016, beam 4 and 5, the averaged model and
# the best one); docs/results.md holds the figures of the reference run.
# tok: the authors' lowercased, normalized, tokenized files, scored with tokenization none against
#      the tokenized references: how published Multi30k figures are computed.
# raw: the original files, scored with sacreBLEU's defaults (cased, 13a): the stricter figure.
# Environment: BIN (default build/transformer), THREADS (default: all cores), MAX_STEPS (default
# 8000), MAX_SECONDS (default 7200: the issue's 2 hours of training), LENGTH_PENALTY (default 1.5),
# SAVE_EVERY (default 500 steps) and KEEP_LAST (default 5: the checkpoints kept, all of them
# averaged), and any extra `transformer train` flags in TRAIN_FLAGS. An interrupted run
# (checkpoints, no train.seconds) resumes from its newest checkpoint when run again.
# On an NVIDIA GPU: TRAIN_FLAGS=--device cuda (8,000 steps in 98 s on an H100; docs/results.md).
set -euo pipefail
data=${1:?usage: run.sh DATA_DIR [tok|raw] [RUN_DIR]}
variant=${2:-tok}
run=${3:-runs/multi30k-$variant}
bin=${BIN:-build/transformer}
threads=${THREADS:-$(nproc)}
alpha=${LENGTH_PENALTY:-1.5}
case "$variant" in
  tok) d="$data/tok"; train="$d/train.lc.norm.tok"; valid="$d/val.lc.norm.tok"; test="$d/test_2016_flickr.lc.norm.tok"
       score=(--tokenize none) ;;
  raw) d="$data/raw"; train="$d/train"; valid="$d/val"; test="$d/test_2016_flickr"; score=() ;;
  *) echo "variant must be tok or raw, got '$variant'" >&2; exit 2 ;;
esac
for f in "$train.en" "$train.de" "$valid.en" "$valid.de" "$test.en" "$test.de"; do
  [ -f "$f" ] || { echo "missing $f" >&2; exit 1; }
done
mkdir -p "$run"

# The model and schedule (docs/results.md records what was tried and why): the 4+4-layer
# d_model-128 Transformer the issue cites (Wu et al., ACL 2021), FFN 256, 4 heads, pre-LN, dropout
# 0.3, label smoothing 0.1, joint BPE of 8000, batches of 4096 tokens per side; the paper's schedule
# with lr factor 2.5 and 2000 warm-up steps (peak 0.0049: with post-LN it stalled, with pre-LN it
# learns fastest); 8000 steps or the 2-hour cap (MAX_SECONDS), whichever comes first. The reference
# run (run d: both cores, the defaults) reached step 8000 after 6,748 s; training is deterministic
# for a seed and thread count, so on a slower machine MAX_SECONDS=0 THREADS=2 retraces it (on the
# same CPU type and libraries: the matrix-product kernels are chosen per CPU).
# Training is skipped when RUN_DIR/train.seconds exists (a finished run): scoring can be redone.
# train.seconds holds the trainer's own training time, summed over resumed runs.
if [ ! -f "$run/train.seconds" ]; then
  resume=()
  compgen -G "$run/checkpoint-*.safetensors" > /dev/null && resume=(--resume)
  # shellcheck disable=SC2086
  "$bin" train --train-source "$train.en" --train-target "$train.de" \
    --valid-source "$valid.en" --valid-target "$valid.de" --run-dir "$run" \
    --preset small --d-model 128 --heads 4 --d-ff 256 --layers 4 --dropout 0.3 \
    --attention-dropout 0.1 --embedding-dropout 0.3 --vocab-size 8000 --batch-tokens 4096 \
    --pre-norm --lr-factor 2.5 --warmup-steps 2000 --max-steps "${MAX_STEPS:-8000}" \
    --max-seconds "${MAX_SECONDS:-7200}" --valid-every 500 --save-every "${SAVE_EVERY:-500}" --keep-last "${KEEP_LAST:-5}" \
    --valid-max-sentences 0 --log-every 100 --threads "$threads" "${resume[@]}" ${TRAIN_FLAGS:-}
  last=$(compgen -G "$run/checkpoint-*.safetensors" | sort | tail -n 1)
  # The checkpoint's training state (`info` prints it as JSON) records the seconds trained.
  "$bin" info "$last" | grep -o '"elapsed_s":[0-9.]*' | head -n 1 | awk -F: '{ printf "%d\n", $2 }' > "$run/train.seconds"
fi
train_s=$(cat "$run/train.seconds")

# The last KEEP_LAST checkpoints (all that training kept) averaged; model-best (the best
# validation BLEU, greedy) beside it.
# Length penalty (GNMT's, LENGTH_PENALTY): 1.5, chosen on validation BLEU of run d's averaged
# model among 0.6, 0.8, 1.0, 1.2, 1.5, 2.0 (docs/results.md).
"$bin" average "$run"/checkpoint-*.safetensors -o "$run/averaged.safetensors"
models=(averaged)
[ -f "$run/model-best.safetensors" ] && models+=(model-best)  # none before the first validation
# Beam 4 (this recipe's figure) and beam 5 (the published setting).
for name in "${models[@]}"; do
  for beam in 4 5; do
    for split in valid test; do
      src=$([ $split = valid ] && echo "$valid.en" || echo "$test.en")
      "$bin" translate -m "$run/$name.safetensors" --beam $beam --length-penalty "$alpha" --threads "$threads" \
        --input "$src" --stats > "$run/$split.$name.beam$beam.hyp" 2> "$run/$split.$name.beam$beam.log" ||
        { cat "$run/$split.$name.beam$beam.log" >&2; exit 1; }
    done
  done
done
"$bin" plot "$run" > /dev/null
echo "training: $train_s s; variant $variant; run folder $run; length penalty $alpha"
case "$variant" in
  tok) echo "scores: BLEU with tokenization none against the tokenized lowercased references, chrF" ;;
  raw) echo "scores: sacreBLEU's defaults (BLEU 13a, cased; chrF)" ;;
esac
printf '%-11s %-5s %-5s %7s %7s\n' model beam split BLEU chrF
for name in "${models[@]}"; do
  for beam in 4 5; do
    for split in valid test; do
      ref=$([ $split = valid ] && echo "$valid.de" || echo "$test.de")
      "$bin" eval --ref "$ref" --hyp "$run/$split.$name.beam$beam.hyp" "${score[@]}" --metrics bleu,chrf \
        > "$run/$split.$name.beam$beam.scores"
      printf '%-11s %-5s %-5s %7s %7s\n' "$name" "$beam" "$split" \
        "$(awk '/^BLEU/ { print $3 }' "$run/$split.$name.beam$beam.scores")" \
        "$(awk '/^chrF/ { print $3 }' "$run/$split.$name.beam$beam.scores")"
    done
  done
done
