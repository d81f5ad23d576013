#!/usr/bin/env bash
# bfloat16 training against float32 on the CPU (docs/training.md, "bfloat16 training: the
# loss curve against float32"). The demo's model (scripts/demo.sh) trains 300 steps on the demo's
# task twice, in float32 and with --bf16, from the same seed on the same threads, and
# tools/compare_loss_curves.py checks that the bf16 curve follows the float32 one. Not part of
# make test: about 2 minutes on 2 idle cores.
#
#   scripts/bf16-curve.sh
#
# The check, on a loss record every 10 steps (docs/training.md gives the measurements behind it):
#   - up to step EARLY_UNTIL (100, half the warmup), each record within EARLY_TOLERANCE (0.5%):
#     there the curves differ only by rounding (bf16 against float32: at most 0.05% in 7 runs),
#     where a wrong product, learning rate or loss shows at once (5–14% in the failures tried);
#   - every record, smoothed over WINDOW (5) records, within TOLERANCE (12%), and the last one
#     within FINAL_TOLERANCE (6%): later, training amplifies any difference, float32's own summation
#     order included (another thread count: up to 4.5% smoothed); bf16 at most 6.2% and 3.0%.
#
# Environment: BIN (build/transformer), WORK (runs/bf16-curve: the data, both run folders and their
# logs), THREADS (all cores), SEED (1), the limits above, FLAGS (the checked run's flags, --bf16;
# FLAGS="--bf16 --lr-factor 0.35" shows the check failing), and COMPARE_ONLY=1 to compare the runs
# already in WORK again (other limits) without training. Exit status: the comparison's (0 passed,
# 1 the curves differ), or 2 when a run fails or a file is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-build/transformer}
work=${WORK:-runs/bf16-curve}
threads=${THREADS:-$(nproc)}
seed=${SEED:-1}
read -r -a flags <<< "${FLAGS:---bf16}"
[[ -x $bin ]] || { echo "bf16-curve: $bin is missing: build it first (make build), or set BIN" >&2; exit 2; }

# train NAME FLAGS...: the demo's model and schedule (scripts/demo.sh), 300 steps, a loss record
# every 10, no validation, into WORK/NAME.
train() {
  local name=$1 start=$SECONDS; shift
  rm -rf "${work:?}/$name"
  "$bin" train --train-source "$work/data/train.en" --train-target "$work/data/train.de" --run-dir "$work/$name" \
    --preset small --d-model 128 --heads 4 --d-ff 512 --layers 2 --vocab-size 400 \
    --batch-tokens 2048 --warmup-steps 200 --lr-factor 0.5 --max-steps 300 \
    --log-every 10 --save-every 1000000 --seed "$seed" --threads "$threads" "$@" > "$work/$name.log" 2>&1 ||
    { echo "bf16-curve: the $name run failed ($work/$name.log):" >&2; tail -5 "$work/$name.log" >&2; exit 2; }
  echo "$name: 300 steps in $((SECONDS - start)) s; $(grep -m1 '^bf16: ' "$work/$name.log" || echo 'float32 products')"
}

label=${flags[*]//--/}  # e.g. "bf16 lr-factor 0.35": no leading dash, which would read as an option
if [[ ${COMPARE_ONLY:-0} != 1 ]]; then
  echo "== the demo's model, 300 steps, seed $seed, $threads threads: float32, then ${flags[*]}"
  "$bin" demo-data --out "$work/data" --seed 1 >/dev/null
  train float32
  train bf16 "${flags[@]}"
fi
python3 tools/compare_loss_curves.py "$work/bf16/metrics.jsonl" "$work/float32/metrics.jsonl" \
  --labels "$label" float32 --steps all --window "${WINDOW:-5}" \
  --tolerance "${TOLERANCE:-0.12}" --final-tolerance "${FINAL_TOLERANCE:-0.06}" \
  --early-until "${EARLY_UNTIL:-100}" --early-tolerance "${EARLY_TOLERANCE:-0.005}"
