#!/usr/bin/env bash
# make bench: the micro-benchmarks and the whole-model benchmarks (2 threads), then the peers in the
# same run, and a table of the ratios. Only ratios measured in one run count: machines are shared.
#   BENCH_FILTER=regex   run only the matching benchmarks (Google Benchmark's --benchmark_filter)
#   BENCH_PEERS=0        skip the peers
#   TFM_CPU_ISA=level    run ours at a lower instruction-set level (src/ops/cpu/isa.h), and cap the
#                        peers the same way (CTranslate2, PyTorch, OpenBLAS, oneDNN, MKL), so that one
#                        machine stands in for a CPU family it includes (an AVX2 one on an AVX-512 CPU)
set -euo pipefail
bin=${BIN:-build/bench/tfm_bench}
threads=${THREADS:-2}
out=${OUT:-$(dirname "$bin")/../bench-results.json}
filter=${BENCH_FILTER:-.}
root=$(cd "$(dirname "$0")/.." && pwd)
peers_dir=$(cd "$root/.." && pwd)/shared/peers

# A forced level applies to every engine of the run: the same limit for all (unset: each its own).
# Per level: the OpenBLAS core (as src/ops/cpu/isa.cc's kLevels and tests/CMakeLists.txt), oneDNN's
# cap (CTranslate2 bundles its own oneDNN), CTranslate2's own kernels, PyTorch's ATen kernels and
# MKL's (CTranslate2 uses MKL on Intel CPUs). amx caps nothing: no CPU has more.
cap() {
  export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-$1} DNNL_MAX_CPU_ISA=$2 CT2_FORCE_CPU_ISA=$3 \
    ATEN_CPU_CAPABILITY=$4 MKL_ENABLE_INSTRUCTIONS=$5
}
case "${TFM_CPU_ISA:-}" in
  generic) cap Prescott SSE41 GENERIC default SSE4_2 ;;
  avx2) cap Haswell AVX2 AVX2 avx2 AVX2 ;;
  avx512) cap SkylakeX AVX512_CORE AVX512 avx512 AVX512 ;;
  avx512_vnni) cap SkylakeX AVX512_CORE_VNNI AVX512 avx512 AVX512_E1 ;;
  avx512_bf16) cap Cooperlake AVX512_CORE_BF16 AVX512 avx512 AVX512_E1 ;;
  *) ;;
esac
echo "== machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; threads $threads"
echo "   flags: $(grep -o -w 'avx2\|fma\|avx512f\|avx512_vnni\|avx512_bf16\|amx_tile\|asimd\|sve' /proc/cpuinfo | sort -u | tr '\n' ' ')"
tfm=${TFM:-$(dirname "$bin")/../transformer}
"$tfm" info --cpu | sed 's/^/   /'
[ -z "${CT2_FORCE_CPU_ISA:-}" ] || echo "   peers capped: CT2_FORCE_CPU_ISA=$CT2_FORCE_CPU_ISA DNNL_MAX_CPU_ISA=$DNNL_MAX_CPU_ISA" \
  "ATEN_CPU_CAPABILITY=$ATEN_CPU_CAPABILITY MKL_ENABLE_INSTRUCTIONS=$MKL_ENABLE_INSTRUCTIONS OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE"
peer=$(mktemp)
opus=$(mktemp -d)
trap 'rm -rf "$peer" "$peer.d" "$opus"' EXIT
# An OPUS-MT-shaped model: tools/marian_files.py writes random weights in Marian's files
# (numpy only), `transformer import marian` imports them, BM_TranslateOpusMt translates with the result
# (registered only when TFM_BENCH_OPUS_MT names it), and CTranslate2's OPUS-MT converter converts the
# same .npz below. About 900 MB in a temporary folder; OPUS_MT=0 skips it.
if [ "${OPUS_MT:-1}" = 1 ] && echo "BM_TranslateOpusMt/greedy" | grep -qE -- "$filter"; then
  if ! python3 -c 'import numpy' 2>/dev/null; then
    echo "   OPUS-MT-shaped runs skipped: python3 cannot import numpy"
  else
    python3 "$root/tools/marian_files.py" opus-mt-base "$opus/marian"
    # Positions at CTranslate2's rates (its converter's), so that the greedy outputs can be compared.
    "$tfm" import marian "$opus/marian/model.npz" --vocab "$opus/marian/opus.spm-spm.vocab.yml" \
      --source-spm "$opus/marian/source.spm" --target-spm "$opus/marian/target.spm" -o "$opus/ours" \
      --position-frequencies paper > /dev/null
    export TFM_BENCH_OPUS_MT=$opus/ours/model.safetensors
  fi
fi
# Three repetitions of each benchmark; the tables report their median (the machines are shared).
OMP_NUM_THREADS=$threads "$bin" --benchmark_filter="$filter" --benchmark_counters_tabular=true \
  --benchmark_repetitions="${REPETITIONS:-3}" --benchmark_display_aggregates_only=true \
  --benchmark_out="$out" --benchmark_out_format=json

[ "${BENCH_PEERS:-1}" = 1 ] || exit 0
echo
echo "== peers (same machine, same run)"
# Training: PyTorch's torch.nn.Transformer (Debian's python3-torch), the issue's peer script.
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "PyTorch peer skipped: python3-torch is not installed (scripts/install-deps.sh --fixtures installs it)"
elif [ ! -f "$peers_dir/torch_train_step.py" ]; then
  echo "PyTorch peer skipped: $peers_dir/torch_train_step.py not found"
else
  for config in small base; do
    grep -q "BM_TrainStep/$config" "$out" || continue
    /usr/bin/python3 "$peers_dir/torch_train_step.py" --config "$config" --batch 64 --len 32 --threads "$threads" \
      --steps "$([ $config = base ] && echo 2 || echo 5)" | tee -a "$peer"
  done
fi
# Translation: CTranslate2 (optional: `pip install ctranslate2`; the project never depends on it), on
# a base-shaped model with our random weights converted by tools/ct2_peer.py, the same conditions as
# BM_Translate: 64 sentences of 25 tokens, output forced to 25 tokens. Ours then takes a 26th step,
# the forced EOS's; --end-step gives CTranslate2 that step too (26 tokens decoded, 25 counted), as a
# real translation costs both engines one step per token and one for the EOS.
py=${PEER_PYTHON:-python3}
# Same weights, same input: the two engines' greedy outputs must agree token for token.
# same_greedy OUR-MODEL CT2-DIR VOCAB-SIZE WORK-DIR LABEL
same_greedy() {
  "$py" "$root/tools/ct2_peer.py" random-ids --lines 64 --len 25 --vocab "$3" --seed 7 > "$4/src.ids"
  OMP_NUM_THREADS=$threads "$tfm" translate -m "$1" --ids --beam 1 --threads "$threads" \
    --max-length-a 0 --max-length-b 26 --min-length 26 < "$4/src.ids" > "$4/ours.ids"
  "$py" "$root/tools/ct2_peer.py" translate "$2" --ids-in "$4/src.ids" --beam 1 --max-length 25 \
    --min-length 25 --threads "$threads" > "$4/ct2.ids"
  local same
  same=$(paste -d '\t' "$4/ours.ids" "$4/ct2.ids" | awk -F '\t' '$1 == $2' | wc -l)
  echo "$5 identical to CTranslate2's: $same of $(wc -l < "$4/src.ids") sentences"
}
if ! grep -q '"BM_Translate\(/\|OpusMt/\)' "$out"; then
  :
elif ! "$py" -c 'import ctranslate2' 2>/dev/null; then
  echo "CTranslate2 peer skipped: $py cannot import ctranslate2 (pip install ctranslate2)"
else
  if grep -q '"BM_Translate/' "$out"; then
    mkdir -p "$peer.d"
    "$tfm" init --preset base --vocab-size 32000 --pre-norm --seed 1 -o "$peer.d/base.safetensors" > /dev/null
    "$py" "$root/tools/ct2_peer.py" convert "$peer.d/base.safetensors" "$peer.d/ct2" > /dev/null
    for mode in "float32 1" "float32 4" "int8 1" "int8 4" "float32 1 3200" "float32 4 3200" "int8 1 3200" \
      "int8 4 3200"; do
      set -- $mode
      ours=BM_Translate/$([ "$2" = 1 ] && echo greedy || echo beam4)
      [ "$1" != int8 ] || ours+=_int8
      [ -z "${3:-}" ] || ours+=_shortlist$3
      ours+=/
      grep -q "$ours" "$out" || continue
      "$py" "$root/tools/ct2_peer.py" bench "$peer.d/ct2" --batch 64 --src-len 25 --tgt-len 25 --end-step \
        --beam "$2" --compute-type "$1" --threads "$threads" --shortlist "${3:-0}" | tee -a "$peer"
    done
    same_greedy "$peer.d/base.safetensors" "$peer.d/ct2" 32000 "$peer.d" "greedy outputs"
  fi
  # The imported OPUS-MT-shaped model against the same .npz through CTranslate2's OPUS-MT converter.
  if grep -q '"BM_TranslateOpusMt/' "$out"; then
    "$py" "$root/tools/ct2_peer.py" convert-opus-mt "$opus/marian" "$opus/ct2" > /dev/null
    for mode in "float32 1" "float32 4" "int8 1" "int8 4"; do
      set -- $mode
      "$py" "$root/tools/ct2_peer.py" bench "$opus/ct2" --batch 64 --src-len 25 --tgt-len 25 --end-step \
        --beam "$2" --compute-type "$1" --threads "$threads" --label opus-mt | tee -a "$peer"
    done
    same_greedy "$TFM_BENCH_OPUS_MT" "$opus/ct2" 58101 "$opus" "OPUS-MT-shaped model, greedy outputs"
  fi
fi

# The table (none when the filter chose no benchmark: Google Benchmark then leaves the file empty).
if [ -s "$out" ]; then
/usr/bin/python3 - "$out" "$peer" <<'PY'
import json, sys
# The medians of the repetitions (plain runs when there was one repetition).
runs = json.load(open(sys.argv[1]))["benchmarks"]
medians = [b for b in runs if b.get("aggregate_name") == "median"]
ours = {b["run_name"]: b for b in medians} if medians else {b["name"]: b for b in runs}
peers = [json.loads(l) for l in open(sys.argv[2]) if l.strip().startswith("{")]
def find(prefix):
    return next((b for n, b in ours.items() if n.startswith(prefix)), None)
peak = find("BM_MatmulSquare/2048")
peak = peak["GFLOP/s"] if peak else None
print()
print("model FLOP utilization = achieved FLOP/s / the float32 matrix-product peak of this run "
      + (f"(ops::matmul 2048^3: {peak:.0f} GFLOP/s)" if peak else "(not measured: BM_MatmulSquare/2048 was filtered out)"))
memory = find("BM_MemoryRead")
if memory:  # decoding streams the weights from memory; the shared machines' bandwidth varies
    print(f"memory read bandwidth of this run (BM_MemoryRead, 256 MB): {memory['GB/s']:.1f} GB/s")
print(f"{'':36} {'ours':>8} {'peer':>8} {'ratio':>6} {'MFU':>5} {'target':>7}")
rows = [("training step small, tok/s", "BM_TrainStep/small/", ("pytorch", "small"), 5400),
        ("training step base, tok/s", "BM_TrainStep/base/", ("pytorch", "base"), 1100),
        # --bf16 against the bf16 targets (1.5x Marian); the peer is PyTorch in float32.
        ("  small, bf16 products", "BM_TrainStep/small_bf16/", ("pytorch", "small"), 8100),
        ("  base, bf16 products", "BM_TrainStep/base_bf16/", ("pytorch", "base"), 1650),
        ("translate float32 greedy, tok/s", "BM_Translate/greedy/", ("ctranslate2", "float32 greedy"), 1300),
        ("translate float32 beam 4, tok/s", "BM_Translate/beam4/", ("ctranslate2", "float32 beam 4"), 530),
        ("translate int8 greedy, tok/s", "BM_Translate/greedy_int8/", ("ctranslate2", "int8 greedy"), 2650),
        ("translate int8 beam 4, tok/s", "BM_Translate/beam4_int8/", ("ctranslate2", "int8 beam 4"), 1100),
        # translate --bf16 (packed in bfloat16 with AVX-512 BF16 or AMX): CTranslate2 has no bfloat16
        # on CPUs, so its float32 beside it; no target.
        ("  bf16 greedy (peer: float32)", "BM_Translate/greedy_bf16/", ("ctranslate2", "float32 greedy"), False),
        ("  bf16 beam 4 (peer: float32)", "BM_Translate/beam4_bf16/", ("ctranslate2", "float32 beam 4"), False),
        # Both engines restricted to the same 3,200 output ids (ours: a shortlist; CTranslate2: a
        # vocabulary map), against the same targets: the issue's peers ran the full vocabulary.
        ("  float32 greedy, shortlist 3200", "BM_Translate/greedy_shortlist3200/",
         ("ctranslate2", "float32 greedy shortlist 3200"), 1300),
        ("  float32 beam 4, shortlist 3200", "BM_Translate/beam4_shortlist3200/",
         ("ctranslate2", "float32 beam 4 shortlist 3200"), 530),
        ("  int8 greedy, shortlist 3200", "BM_Translate/greedy_int8_shortlist3200/",
         ("ctranslate2", "int8 greedy shortlist 3200"), 2650),
        ("  int8 beam 4, shortlist 3200", "BM_Translate/beam4_int8_shortlist3200/",
         ("ctranslate2", "int8 beam 4 shortlist 3200"), 1100),
        # The imported OPUS-MT-shaped model (target >= 1.2x CTranslate2, no absolute target).
        ("OPUS-MT float32 greedy, tok/s", "BM_TranslateOpusMt/greedy/", ("ctranslate2", "opus-mt float32 greedy"), None),
        ("OPUS-MT float32 beam 4, tok/s", "BM_TranslateOpusMt/beam4/", ("ctranslate2", "opus-mt float32 beam 4"), None),
        ("OPUS-MT int8 greedy, tok/s", "BM_TranslateOpusMt/greedy_int8/", ("ctranslate2", "opus-mt int8 greedy"), None),
        ("OPUS-MT int8 beam 4, tok/s", "BM_TranslateOpusMt/beam4_int8/", ("ctranslate2", "opus-mt int8 beam 4"), None)]
for label, name, (kind, key), target in rows:
    mine = find(name)
    if not mine:
        continue
    field = "config" if kind == "pytorch" else "mode"
    p = next((p for p in peers if p.get("peer") == kind and p.get(field) == key), None)
    theirs = p["tokens_per_s"] if p else None
    t = mine["tokens/s"]
    mfu = f"{100 * mine['GFLOP/s'] / peak:4.0f}%" if peak and "GFLOP/s" in mine else "  n/a"
    if target is False:  # shown, not judged
        verdict, target = "", ""
    elif target is None:  # judged by the ratio alone: 1.2x the peer
        verdict = "" if theirs is None else ("met" if t >= 1.2 * theirs else "MISSED")
        target = "1.2x"
    else:
        verdict = "met" if t >= target else "MISSED"
    print(f"{label:36} {t:8.0f} {'-' if theirs is None else round(theirs):>8} "
          f"{'' if theirs is None else f'{t / theirs:.2f}':>6} {mfu:>5} {target:>7} {verdict}")
print("peers: training PyTorch (torch.nn.Transformer, float32), translation CTranslate2; int8 and bf16 MFU "
      "count their products against the float32 peak")
PY
fi

# Data-parallel training: the base shape on Multi30k (../shared/data), 2 ranks of 1 thread
# against 1 process of 1 thread accumulating the same 2 batches per step: the same work and the same
# result, so the ratio of the times of steps 3-6 is the speed-up; the ranks with the gradients summed
# during the backward pass (the default) and after it. DATA_PARALLEL=0 skips it.
multi30k=$root/../shared/data/multi30k/raw
if [ "${DATA_PARALLEL:-1}" = 1 ] && echo "DataParallel" | grep -qE -- "$filter"; then
  echo
  echo "== data-parallel training, base shape, Multi30k en-de, batches of 2048 tokens, 1 thread per process"
  if ! command -v mpirun > /dev/null || ! "$tfm" info --cpu 2>&1 | grep -q "over MPI"; then
    echo "skipped: no mpirun, or this build has no MPI"
  elif [ ! -f "$multi30k/train.en" ]; then
    echo "skipped: $multi30k/train.en not found"
  else
    dp=$(mktemp -d)
    data=(--train-source "$multi30k/train.en" --train-target "$multi30k/train.de" --preset base --batch-tokens 2048
          --log-every 1 --save-every 100000 --threads 1)
    OMP_NUM_THREADS=1 "$tfm" train "${data[@]}" --vocab-size 8000 --max-steps 1 --run-dir "$dp/vocab" > /dev/null 2>&1
    OMP_NUM_THREADS=1 "$tfm" train "${data[@]}" --vocab "$dp/vocab/vocab.model" --accumulate 2 --max-steps 6 \
      --run-dir "$dp/one" > /dev/null 2>&1
    for mb in 25 0; do  # buckets summed during the backward pass (the default), and after it
      OMP_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe -np 2 "$tfm" train "${data[@]}" \
        --vocab "$dp/vocab/vocab.model" --max-steps 6 --allreduce-bucket-mb $mb --run-dir "$dp/two$mb" > /dev/null 2>&1
    done
    /usr/bin/python3 - "$dp/one/metrics.jsonl" "$dp/two25/metrics.jsonl" "$dp/two0/metrics.jsonl" <<'PY'
import json, sys
def steps(path):
    records = {r["step"]: r for r in map(json.loads, open(path)) if "loss" in r}
    tokens = sum(r["tokens_per_s"] * (r["elapsed_s"] - records[r["step"] - 1]["elapsed_s"])
                 for s, r in records.items() if s >= 3)
    seconds = records[6]["elapsed_s"] - records[2]["elapsed_s"]
    return seconds, tokens / seconds, [records[s]["loss"] for s in sorted(records)]
one, two, after = steps(sys.argv[1]), steps(sys.argv[2]), steps(sys.argv[3])
print(f"1 process, accumulate 2:              {one[0]:6.1f} s for steps 3-6, {one[1]:6.0f} source tok/s")
print(f"2 ranks, summed during the backward:  {two[0]:6.1f} s for steps 3-6, {two[1]:6.0f} source tok/s")
print(f"2 ranks, summed after the backward:   {after[0]:6.1f} s for steps 3-6, {after[1]:6.0f} source tok/s")
print(f"speed-up {one[0] / two[0]:.2f}x (target 1.8x: {'met' if one[0] / two[0] >= 1.8 else 'MISSED'}), "
      f"{one[0] / after[0]:.2f}x without the overlap; loss records "
      f"{'identical' if one[2] == two[2] == after[2] else 'DIFFER'}")
PY
    rm -rf "$dp"
  fi
fi

# The model family against CTranslate2's Generator and Encoder (tools/bench_family_ct2.py): GPT-2-small-
# and Llama-shaped generation (16 prompts × 32 ids, 64 new tokens, greedy) and a MiniLM-shaped encoder
# (256 × 32 ids), float32 and int8, on the same random weights (written by transformers, converted by
# CTranslate2's converter, imported by `transformer import hf`), at the CPU's own level and capped at
# AVX2. Needs transformers, CPU torch and ctranslate2 in PEER_PYTHON (a virtualenv) and the Python
# module built beside the command. About 5 minutes and 3 GB in FAMILY_WORK (default: a temporary
# folder, removed after; a folder given is kept, and its models are reused). FAMILY=0 skips it;
# FAMILY_SHAPES=tiny runs the same on tiny models, a check of the tool in seconds.
if [ "${FAMILY:-1}" = 1 ] && echo "Family" | grep -qE -- "$filter"; then
  echo
  echo "== the model family against CTranslate2 (tools/bench_family_ct2.py)"
  if ! "$py" -c 'import transformers, torch, ctranslate2' 2>/dev/null; then
    echo "skipped: $py cannot import transformers, torch and ctranslate2 (in a virtualenv: pip install" \
      "transformers torch ctranslate2, then PEER_PYTHON=that virtualenv's python)"
  elif [ ! -d "$(dirname "$tfm")/python/transformer" ]; then
    echo "skipped: the Python module is not built beside $tfm"
  else
    family=${FAMILY_WORK:-}
    [ -n "$family" ] || { family=$(mktemp -d); trap 'rm -rf "$peer" "$peer.d" "$opus" "$family"' EXIT; }
    # A level forced for the whole run (TFM_CPU_ISA, and the peers capped above) is the table's one level.
    isa=()
    [ -n "${TFM_CPU_ISA:-}" ] || isa=(--isa avx2)
    HF_HUB_OFFLINE=1 "$py" "$root/tools/bench_family_ct2.py" "$family" --cli "$tfm" --threads "$threads" \
      --shapes "${FAMILY_SHAPES:-real}" "${isa[@]}"
  fi
fi
