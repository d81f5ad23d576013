#!/usr/bin/env bash
# make bench: the micro-benchmarks and the whole-model benchmarks (2 threads), then the peers in the
# same run, and a table of the ratios. Only ratios measured in one run count: machines are shared.
#   BENCH_FILTER=regex   run only the matching benchmarks (Google Benchmark's --benchmark_filter)
#   BENCH_PEERS=0        skip the peers
set -euo pipefail
bin=${BIN:-build/bench/tfm_bench}
threads=${THREADS:-2}
out=${OUT:-$(dirname "$bin")/../bench-results.json}
filter=${BENCH_FILTER:-.}
peers_dir=$(cd "$(dirname "$0")/../.." && pwd)/shared/peers

echo "== machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; threads $threads"
# Three repetitions of each benchmark; the tables report their median (the machines are shared).
OMP_NUM_THREADS=$threads "$bin" --benchmark_filter="$filter" --benchmark_counters_tabular=true \
  --benchmark_repetitions="${REPETITIONS:-3}" --benchmark_display_aggregates_only=true \
  --benchmark_out="$out" --benchmark_out_format=json

[ "${BENCH_PEERS:-1}" = 1 ] || exit 0
echo
echo "== peers (same machine, same run)"
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "PyTorch peer skipped: python3-torch is not installed (scripts/install-deps.sh --fixtures installs it)"
  exit 0
fi
[ -f "$peers_dir/torch_train_step.py" ] || { echo "PyTorch peer skipped: $peers_dir/torch_train_step.py not found"; exit 0; }
peer=$(mktemp)
for config in small base; do
  grep -q "BM_TrainStep/$config" "$out" || continue
  /usr/bin/python3 "$peers_dir/torch_train_step.py" --config "$config" --batch 64 --len 32 --threads "$threads" \
    --steps "$([ $config = base ] && echo 2 || echo 5)" | tee -a "$peer"
done
/usr/bin/python3 - "$out" "$peer" <<'PY'
import json, sys
# The medians of the repetitions (plain runs when there was one repetition).
runs = json.load(open(sys.argv[1]))["benchmarks"]
medians = [b for b in runs if b.get("aggregate_name") == "median"]
ours = {b["run_name"]: b for b in medians} if medians else {b["name"]: b for b in runs}
peers = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
print()
print(f"{'training step, 64 x 32 tokens per side':44} {'ours tok/s':>11} {'PyTorch tok/s':>14} {'ratio':>7}")
for p in peers:
    mine = next((b for n, b in ours.items() if n.startswith(f"BM_TrainStep/{p['config']}")), None)
    if mine:
        t = mine["tokens/s"]
        print(f"{p['config']:44} {t:11.0f} {p['tokens_per_s']:14.0f} {t / p['tokens_per_s']:7.2f}")
PY
rm -f "$peer"
