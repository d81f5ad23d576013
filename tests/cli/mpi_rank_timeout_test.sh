#!/usr/bin/env bash
# A rank stopped (SIGSTOP) rather than killed: with --rank-timeout 3 the other rank gives up waiting
# for it after 3 seconds and ends the whole job, the stopped rank included, with an error naming
# rank 1; a negative --rank-timeout is refused, naming it. 1 thread per rank on loopback.
# Usage: mpi_rank_timeout_test.sh PATH/TO/transformer PATH/TO/mpiexec
set -euo pipefail
bin=$1
mpiexec=$2
work=$(mktemp -d)
job=
rank1=
# Whatever happens, nothing is left stopped or running: the job's process group, and rank 1.
cleanup() {
  [ -z "$rank1" ] || { kill -CONT "$rank1" 2>/dev/null; kill -9 "$rank1" 2>/dev/null; } || true
  [ -z "$job" ] || kill -9 -- "-$job" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_hwloc_base_binding_policy=none
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_rmaps_base_oversubscribe=1

"$bin" demo-data --out "$work/data" --train 300 --valid 20 --test 20 --seed 3 >/dev/null
common=(--train-source "$work/data/train.en" --train-target "$work/data/train.de" --preset tiny --d-model 16
        --heads 2 --d-ff 32 --layers 1 --vocab-size 80 --batch-tokens 256 --warmup-steps 10 --log-every 5
        --threads 1 --seed 5)

status=0
"$bin" train "${common[@]}" --max-steps 5 --rank-timeout -1 --run-dir "$work/bad" >/dev/null 2>"$work/bad.log" ||
  status=$?
[ "$status" -ne 0 ] || fail "--rank-timeout -1 was accepted"
grep -q "rank_timeout must be >= 0 (0: no limit), got -1" "$work/bad.log" || fail "no error naming it: $(cat "$work/bad.log")"

setsid timeout 120 "$mpiexec" --allow-run-as-root --oversubscribe -np 2 "$bin" train "${common[@]}" --rank-timeout 3 \
  --save-every 2 --max-steps 1000000 --run-dir "$work/run" >/dev/null 2>"$work/run.log" &
job=$!
# Rank 1's pid, once a checkpoint of step 6 or later exists (the ranks are stepping).
for _ in $(seq 1 1500); do
  if ls "$work/run" 2>/dev/null | grep -qE '^checkpoint-0*([6-9]|[1-9][0-9]+)\.safetensors$'; then
    for p in $(pgrep -f "run-dir $work/run" || true); do
      grep -qx "OMPI_COMM_WORLD_RANK=1" < <(tr '\0' '\n' < /proc/$p/environ 2>/dev/null) && rank1=$p
    done
    break
  fi
  kill -0 $job 2>/dev/null || break
  sleep 0.02
done
[ -n "$rank1" ] || { cat "$work/run.log"; fail "did not find rank 1 of the running job"; }
kill -STOP "$rank1"
stopped=$(date +%s)
status=0
wait $job || status=$?
took=$(( $(date +%s) - stopped ))
[ "$status" -ne 124 ] || fail "the job hung for 120 s after rank 1 was stopped: $(tail -5 "$work/run.log")"
[ "$status" -ne 0 ] || fail "the job ended with status 0 after a rank was stopped"
[ "$took" -le 60 ] || fail "the job took $took s to end after rank 1 was stopped (--rank-timeout 3)"
grep -qE "^error: rank 0 of 2: .* waited more than 3 s \(rank_timeout, --rank-timeout\) for rank 1, which did not answer" \
  "$work/run.log" || fail "no error naming the stopped rank: $(cat "$work/run.log")"
# The stopped rank went with the job.
for _ in $(seq 1 100); do kill -0 "$rank1" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$rank1" 2>/dev/null || [ "$(awk '{print $3}' /proc/$rank1/stat 2>/dev/null)" = Z ] ||
  fail "the stopped rank $rank1 outlived the job"
echo "ok"
