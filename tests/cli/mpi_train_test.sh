#!/usr/bin/env bash
# Data-parallel training through mpirun (issue 25), 1 thread per rank on loopback:
#  1. the same global batch gives the same bits: 1 process accumulating 4 batches, 2 ranks of 2 and
#     4 ranks of 1 write byte-identical models and identical loss records after 50 steps;
#  2. a run of 4 ranks resumed by 1 process (and one of 1 resumed by 2 ranks) ends where the
#     uninterrupted run does;
#  3. a rank killed mid-run ends the whole job (no hang), mpirun names it, and the last checkpoint
#     resumes; a rank that cannot read its data ends the job with an error naming the rank and file.
# Usage: mpi_train_test.sh PATH/TO/transformer PATH/TO/mpiexec
set -euo pipefail
bin=$1
mpiexec=$2
work=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# Open MPI run as root in a container: no hwloc binding, shared memory without CMA (ptrace is often
# refused there), loopback TCP only.
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_hwloc_base_binding_policy=none
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_rmaps_base_oversubscribe=1
mpi() { local n=$1; shift; timeout 300 "$mpiexec" --allow-run-as-root --oversubscribe -np "$n" "$@"; }

"$bin" demo-data --out "$work/data" --train 300 --valid 20 --test 20 --seed 3 >/dev/null
common=(--save-every 5 --train-source "$work/data/train.en" --train-target "$work/data/train.de"
        --preset tiny --d-model 16 --heads 2 --d-ff 32 --layers 1 --vocab-size 80 --batch-tokens 256
        --warmup-steps 10 --log-every 5 --threads 1 --seed 5)
losses() { python3 -c 'import json, sys; print([(r["step"], r["loss"]) for r in map(json.loads, open(sys.argv[1])) if "loss" in r])' "$1"; }

# 1. One global batch of 4, three ways. 21 batches an epoch: every 6th step is an epoch's last,
# with 1 batch (on rank 0 only).
"$bin" train "${common[@]}" --max-steps 50 --accumulate 4 --run-dir "$work/one" >/dev/null 2>"$work/one.log" ||
  { cat "$work/one.log"; fail "1 process"; }
mpi 2 "$bin" train "${common[@]}" --max-steps 50 --accumulate 2 --run-dir "$work/two" >/dev/null 2>"$work/two.log" ||
  { cat "$work/two.log"; fail "2 ranks"; }
mpi 4 "$bin" train "${common[@]}" --max-steps 50 --run-dir "$work/four" >/dev/null 2>"$work/four.log" ||
  { cat "$work/four.log"; fail "4 ranks"; }
grep -q "data-parallel training: 2 ranks over MPI" "$work/two.log" || fail "no data-parallel line: $(head -3 "$work/two.log")"
[ "$(grep -c "^step 50 " "$work/four.log")" -eq 1 ] || fail "the progress line is not rank 0's alone"
cmp "$work/one/model.safetensors" "$work/two/model.safetensors" || fail "2 ranks of 2 batches differ from 1 process of 4"
cmp "$work/one/model.safetensors" "$work/four/model.safetensors" || fail "4 ranks differ from 1 process of 4 batches"
[ "$(losses "$work/one/metrics.jsonl")" = "$(losses "$work/two/metrics.jsonl")" ] || fail "loss records differ (2 ranks)"
[ "$(losses "$work/one/metrics.jsonl")" = "$(losses "$work/four/metrics.jsonl")" ] || fail "loss records differ (4 ranks)"
[ "$(ls "$work/four" | grep -c '^checkpoint-')" -eq "$(ls "$work/one" | grep -c '^checkpoint-')" ] || fail "checkpoints"

# 2. Resumed with another number of ranks (the global batch kept at 4).
mpi 4 "$bin" train "${common[@]}" --max-steps 23 --run-dir "$work/r" >/dev/null 2>"$work/r.log" || { cat "$work/r.log"; fail "4 ranks to step 23"; }
"$bin" train "${common[@]}" --max-steps 50 --accumulate 4 --run-dir "$work/r" --resume >/dev/null 2>>"$work/r.log" ||
  { cat "$work/r.log"; fail "resumed by 1 process"; }
cmp "$work/one/model.safetensors" "$work/r/model.safetensors" || fail "4 ranks resumed by 1 process differ"
"$bin" train "${common[@]}" --max-steps 17 --accumulate 4 --run-dir "$work/s" >/dev/null 2>"$work/s.log" || fail "1 process to step 17"
mpi 2 "$bin" train "${common[@]}" --max-steps 50 --accumulate 2 --run-dir "$work/s" --resume >/dev/null 2>>"$work/s.log" ||
  { cat "$work/s.log"; fail "resumed by 2 ranks"; }
grep -q "resumed from" "$work/s.log" || fail "did not resume"
cmp "$work/one/model.safetensors" "$work/s/model.safetensors" || fail "1 process resumed by 2 ranks differs"

# 3a. Rank 1 killed once a few checkpoints exist: the job ends, naming it.
mpi 2 "$bin" train "${common[@]:2}" --save-every 2 --max-steps 100000 --run-dir "$work/k" >/dev/null 2>"$work/k.log" &
job=$!
rank1=
for _ in $(seq 1 1000); do
  if [ -f "$work/k/checkpoint-00000006.safetensors" ]; then
    for p in $(pgrep -f "run-dir $work/k" || true); do
      tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && rank1=$p
    done
    break
  fi
  kill -0 $job 2>/dev/null || break
  sleep 0.02
done
[ -n "$rank1" ] || { cat "$work/k.log"; fail "did not find rank 1 of the running job"; }
kill -9 "$rank1"
status=0
wait $job || status=$?
[ "$status" -ne 0 ] || fail "the job ended with status 0 after a rank was killed"
[ "$status" -ne 124 ] || fail "the job hung after a rank was killed"
grep -qiE "rank 1 .*(signal 9|killed)" "$work/k.log" || fail "mpirun did not name the killed rank: $(tail -5 "$work/k.log")"
[ ! -f "$work/k/model.safetensors" ] || fail "a killed job wrote a final model"
"$bin" train "${common[@]}" --max-steps 50 --accumulate 2 --run-dir "$work/k" --resume >/dev/null 2>"$work/k2.log" ||
  { cat "$work/k2.log"; fail "the last checkpoint of the killed job does not resume"; }
grep -q "resumed from" "$work/k2.log" || fail "did not resume the killed job"

# 3b. One rank cannot read its data (MPMD: rank 1 gets another file name): an error naming rank 1
# and the file, and the job ends instead of waiting for it.
missing=("${common[@]/train.en/missing.en}")
status=0
timeout 300 "$mpiexec" --allow-run-as-root --oversubscribe \
  -np 1 "$bin" train "${common[@]}" --max-steps 50 --run-dir "$work/m" : \
  -np 1 "$bin" train "${missing[@]}" --max-steps 50 --run-dir "$work/m" \
  >/dev/null 2>"$work/m.log" || status=$?
[ "$status" -ne 0 ] && [ "$status" -ne 124 ] || fail "a rank without its data: status $status"
grep -q "error: rank 1 of 2: .*missing.en" "$work/m.log" || fail "no error naming rank 1 and the file: $(cat "$work/m.log")"
echo "ok"
