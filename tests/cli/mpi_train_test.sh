#!/usr/bin/env bash
# Data-parallel training through mpirun, 1 thread per rank on loopback:
#  1. the same global batch gives the same bits: 1 process accumulating 4 batches, 2 ranks of 2 and
#     4 ranks of 1 write byte-identical models and identical loss records after 50 steps;
#  2. a run of 4 ranks resumed by 1 process (and one of 1 resumed by 2 ranks) ends where the
#     uninterrupted run does;
#  3. a rank killed mid-run ends the whole job (no hang), mpirun names it, and the last checkpoint
#     resumes; SIGUSR1 stops every rank with a checkpoint; a rank that cannot read its data, or
#     whose data or options differ from rank 0's, ends the job with an error naming the rank; the
#     validation files are rank 0's alone;
#  4. two ranks with --device cuda on a machine without a GPU are refused at once, saying why.
# Usage: mpi_train_test.sh PATH/TO/transformer PATH/TO/mpiexec
set -euo pipefail
bin=$1
mpiexec=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
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
# The gradients summed in buckets of 1 KB (a layer each) during the backward pass, and in one piece after it.
mpi 2 "$bin" train "${common[@]}" --max-steps 50 --accumulate 2 --allreduce-bucket-mb 0.001 --run-dir "$work/small" \
  >/dev/null 2>"$work/small.log" || { cat "$work/small.log"; fail "2 ranks, small buckets"; }
grep -qE "gradients summed over the ranks in [0-9]+ buckets of up to 0.001 MB" "$work/small.log" ||
  fail "no line about small buckets: $(grep gradients "$work/small.log")"
mpi 2 "$bin" train "${common[@]}" --max-steps 50 --accumulate 2 --allreduce-bucket-mb 0 --run-dir "$work/after" \
  >/dev/null 2>"$work/after.log" || { cat "$work/after.log"; fail "2 ranks, one piece"; }
grep -q "gradients summed over the ranks after the backward pass" "$work/after.log" || fail "bucket 0"
cmp "$work/one/model.safetensors" "$work/small/model.safetensors" || fail "small buckets differ from 1 process"
cmp "$work/one/model.safetensors" "$work/after/model.safetensors" || fail "one piece differs from 1 process"
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

# The jobs below run in the background in their own process group (setsid), so that a failing
# check ends them all, mpirun and ranks, rather than leave them busy for minutes.
jobs_to_kill=()
trap 'for g in "${jobs_to_kill[@]}"; do kill -9 -- "-$g" 2>/dev/null || true; done; rm -rf "$work"' EXIT
start_job() {  # start_job LOG ARGS...: mpirun -np 2 ARGS in the background; sets $job
  local log=$1; shift
  setsid timeout 300 "$mpiexec" --allow-run-as-root --oversubscribe -np 2 "$@" >/dev/null 2>"$log" &
  job=$!
  jobs_to_kill+=("$job")
}
# The pid of rank R of the job whose run folder is DIR, once its checkpoint of step 6 or later exists.
rank_pid() {  # rank_pid DIR R
  local pid=
  for _ in $(seq 1 1500); do
    if ls "$1" 2>/dev/null | grep -qE '^checkpoint-0*([6-9]|[1-9][0-9]+)\.safetensors$'; then
      for p in $(pgrep -f "run-dir $1" || true); do
        grep -qx "OMPI_COMM_WORLD_RANK=$2" < <(tr '\0' '\n' < /proc/$p/environ 2>/dev/null) && pid=$p
      done
      break
    fi
    kill -0 $job 2>/dev/null || break
    sleep 0.02
  done
  echo "$pid"
}

# 3a. Rank 1 killed once a few checkpoints exist: the job ends, naming it.
start_job "$work/k.log" "$bin" train "${common[@]:2}" --save-every 2 --keep-last 1000 --max-steps 100000 --run-dir "$work/k"
rank1=$(rank_pid "$work/k" 1)
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

# 3b. SIGUSR1 to mpirun (which forwards it to every rank): the job stops after the step in
# progress, with a checkpoint of that step and the final model, like Ctrl-C in one process.
start_job "$work/u.log" "$bin" train "${common[@]:2}" --save-every 1000 --max-steps 100000 --run-dir "$work/u"
for _ in $(seq 1 1500); do grep -q "^step 10 " "$work/u.log" && break; sleep 0.02; done
kill -USR1 "$(pgrep -f "^$mpiexec .*run-dir $work/u" | head -1)"
status=0
wait $job || status=$?
[ "$status" -eq 130 ] || { cat "$work/u.log"; fail "SIGUSR1: status $status, not 130 (interrupted)"; }
grep -q "^stopped at step [0-9]*: interrupted" "$work/u.log" || fail "no stop line: $(tail -3 "$work/u.log")"
[ -f "$work/u/model.safetensors" ] && ls "$work/u" | grep -q '^checkpoint-' || fail "SIGUSR1: no checkpoint or model"

# 3c. One rank cannot read its data (MPMD: rank 1 gets another file name): an error naming rank 1
# and the file, and the job ends instead of waiting for it. Rank 1 with other training data than
# rank 0's: an error naming it. The validation files and --vocab are rank 0's alone: rank 1 may
# lack them.
mpmd() {  # mpmd LOG RUN-DIR ARGS-OF-RANK-1...: rank 0 with ${common[@]}, rank 1 with the rest
  local log=$1 dir=$2; shift 2
  status=0
  timeout 300 "$mpiexec" --allow-run-as-root --oversubscribe -np 1 "$bin" train "${common[@]}" "${valid[@]}" \
    --max-steps 20 --valid-every 10 --run-dir "$dir" : -np 1 "$bin" train "$@" --max-steps 20 --valid-every 10 \
    --run-dir "$dir" >/dev/null 2>"$log" || status=$?
}
valid=(--valid-source "$work/data/valid.en" --valid-target "$work/data/valid.de")
mpmd "$work/m.log" "$work/m" "${common[@]/train.en/missing.en}" "${valid[@]}"
[ "$status" -ne 0 ] && [ "$status" -ne 124 ] || fail "a rank without its data: status $status"
grep -q "error: rank 1 of 2: .*missing.en" "$work/m.log" || fail "no error naming rank 1 and the file: $(cat "$work/m.log")"
head -150 "$work/data/train.en" > "$work/data/half.en"
head -150 "$work/data/train.de" > "$work/data/half.de"
mpmd "$work/d.log" "$work/d" "${common[@]/train./half.}" "${valid[@]}"
[ "$status" -ne 0 ] && [ "$status" -ne 124 ] || fail "ranks with different data: status $status"
grep -q "error: rank 1 of 2: the training data .* differ from rank 0's" "$work/d.log" ||
  fail "no error naming rank 1's different data: $(cat "$work/d.log")"
mpmd "$work/o.log" "$work/o" "${common[@]}" "${valid[@]}" --label-smoothing 0.2
[ "$status" -ne 0 ] && [ "$status" -ne 124 ] || fail "ranks with different options: status $status"
grep -q "error: rank 1 of 2: the training options of this rank differ from rank 0's: label_smoothing 0.2 here, 0.1 on rank 0" \
  "$work/o.log" || fail "no error naming rank 1's different option: $(cat "$work/o.log")"
mpmd "$work/v.log" "$work/v" "${common[@]}" --valid-source "$work/data/none.en" --valid-target "$work/data/none.de"
[ "$status" -eq 0 ] || { cat "$work/v.log"; fail "rank 1 without the validation files: status $status"; }
grep -q "validation at step 20" "$work/v.log" || fail "no validation by rank 0: $(grep -v '^step' "$work/v.log")"

# 4. On GPUs (NCCL): each rank takes a GPU. On a machine without one (or a build without CUDA),
# two ranks with --device cuda end at once with an error that says why; where NCCL and a GPU are,
# scripts/gpu-check.sh runs one rank through NCCL.
if ! "$bin" info --cpu | grep -q '^cuda  *NVIDIA'; then
  status=0
  mpi 2 "$bin" train "${common[@]}" --max-steps 5 --device cuda --run-dir "$work/g" >/dev/null 2>"$work/g.log" ||
    status=$?
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ] || fail "2 ranks, --device cuda, no GPU: status $status"
  grep -qE "error: rank [01] of 2: train: device \(--device\) cuda under 2 processes: (no CUDA device found|this build has no backend for cuda)" \
    "$work/g.log" || fail "no error about the missing GPU: $(cat "$work/g.log")"
fi
echo "ok"
