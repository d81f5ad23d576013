#!/usr/bin/env bash
# The CUDA backend's checks on a GPU machine, in two steps: a build machine packs what a
# machine with a GPU but none of Debian's packages needs, and the GPU machine runs it.
#
#   scripts/gpu-check.sh pack [BUILD]   # here: the CUDA-enabled build's test binaries and the shared
#                                       # libraries they need (not glibc, libstdc++ or CUDA's own),
#                                       # into .gpu/pkg.tar.xz (~25 MB)
#   scripts/gpu-check.sh run            # there: unpacks it, runs every GPU test with
#                                       # TFM_REQUIRE_GPU=1 (a skip is a failure), the same tests
#                                       # under compute-sanitizer, and prints one table
#
# On the GPU machine, cuBLAS comes from the CUDA toolkit or PyTorch's Python wheels, whichever is
# found. OUT (if set) gets the logs. docs/gpu.md says how the project's GPU machine is reached.
set -euo pipefail
cd "$(dirname "$0")/.."

pack() {
  local build=${1:-build}
  local stage=.gpu/pkg
  rm -rf "$stage" .gpu/pkg.tar.xz && mkdir -p "$stage/bin" "$stage/lib"
  local bins=("$build/transformer" "$build/tests/cuda_test" "$build/tests/core_test" "$build/bench/tfm_bench")
  for b in "${bins[@]}"; do
    [[ -x $b ]] || { echo "gpu-check: $b is missing: build first (make build; cmake --build $build --target benchmarks)" >&2; exit 1; }
    cp "$b" "$stage/bin/"
  done
  # The shared libraries the binaries load, by their sonames, but the C library, the C++ runtime
  # and CUDA's (the GPU machine has its own).
  ldd "${bins[@]}" | awk '/=> \// {print $1, $3}' | sort -u | while read -r soname path; do
    case $soname in
      libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++*|libgcc_s*|libcuda*|libcublas*|libcudart*) ;;
      *) cp -L "$path" "$stage/lib/$soname" ;;
    esac
  done
  # Open MPI's launcher and its plugins (the GPU machine has no Debian packages), relocated there
  # with OPAL_PREFIX: one rank's training through NCCL.
  if [[ -x /usr/bin/orterun && -d /usr/lib/x86_64-linux-gnu/openmpi ]]; then
    local mpi=$stage/mpi/usr
    mkdir -p "$mpi/bin" "$mpi/lib/x86_64-linux-gnu" "$mpi/share" "$stage/mpi/lib"
    cp /usr/bin/orterun /usr/bin/orted "$mpi/bin/"
    cp -a /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 "$mpi/lib/x86_64-linux-gnu/"
    cp -a /usr/share/openmpi "$mpi/share/"
    [[ -d /usr/share/pmix ]] && cp -a /usr/share/pmix "$mpi/share/"
    ldd /usr/bin/orted /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so \
      2>/dev/null | awk '/=> \// {print $1, $3}' | sort -u | while read -r soname path; do
      case $soname in
        libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++*|libgcc_s*) ;;
        *) [[ -e $stage/lib/$soname ]] || cp -L "$path" "$stage/mpi/lib/$soname" ;;
      esac
    done
  fi
  tar -C "$stage" -cJf .gpu/pkg.tar.xz .
  rm -rf "$stage"
  echo "gpu-check: packed $(du -h .gpu/pkg.tar.xz | cut -f1) into .gpu/pkg.tar.xz"
}

# The folders of libcublas.so.13 and libcublasLt.so.13 on this machine.
cublas_dirs() {
  local found
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib; do
    [[ -e $d/libcublasLt.so.13 ]] && { echo "$d"; return; }
  done
  found=$(find / -xdev -name 'libcublasLt.so.13' -not -path '*/proc/*' 2>/dev/null | head -1 || true)
  [[ -n $found ]] && dirname "$found"
}

# The folder of libnccl.so.2 on this machine (the toolkit's, or PyTorch's wheel's).
nccl_dir() {
  local found
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    [[ -e $d/libnccl.so.2 ]] && { echo "$d"; return; }
  done
  found=$(find / -xdev -name 'libnccl.so.2' -not -path '*/proc/*' 2>/dev/null | head -1 || true)
  [[ -n $found ]] && dirname "$found"
}

# One rank through NCCL under mpirun against one process without it: the same model file.
nccl_one_rank() {
  local bin=$1 mpirun=$2 work=/tmp/tfm-gpu-nccl
  rm -rf "$work" && "$bin" demo-data --out "$work/data" --train 300 --valid 20 --test 20 --seed 3 >/dev/null
  local args=(train --train-source "$work/data/train.en" --train-target "$work/data/train.de" --preset tiny
              --d-model 64 --heads 4 --d-ff 128 --layers 2 --vocab-size 120 --batch-tokens 512 --warmup-steps 10
              --max-steps 40 --save-every 20 --log-every 10 --seed 5 --device cuda)
  "$bin" "${args[@]}" --run-dir "$work/plain"
  "$mpirun" --allow-run-as-root -np 1 "$bin" "${args[@]}" --run-dir "$work/nccl" 2>&1 | tee "$work/nccl.log"
  grep -q "gradients summed over the ranks' GPUs by NCCL" "$work/nccl.log"
  cmp "$work/plain/model.safetensors" "$work/nccl/model.safetensors"
  echo "one rank through NCCL: the same model file as one process without it"
}

# The command itself on the GPU: the committed tiny model's translations with --device cuda (packed,
# plain and bf16 weights) against the committed CPU outputs, and its scores against the CPU's.
cli_translate_cuda() (  # a subshell: its stderr goes to a file of its own
  local bin=$1 fix=$PWD/tests/fixtures/tiny_model work=/tmp/tfm-gpu-cli bad=0
  rm -rf "$work" && mkdir -p "$work"
  exec 2>>"$work/stderr"  # the tiny model's notes (no checksum, no vocabulary fingerprint), once per command
  # (step runs this under ||, where set -e does not apply: each check records its own failure)
  check() {  # check WHAT EXPECTED COMMAND...: the command's output against the file EXPECTED
    local what=$1 expected=$2; shift 2
    if "$@" | diff -q "$expected" - >/dev/null; then echo "$what: the committed output"
    else echo "$what: DIFFERS from the committed output"; bad=1; fi
  }
  local tr=("$bin" translate -m "$fix/model.safetensors" --device cuda --input "$fix/input.en")
  check "greedy on cuda" "$fix/expected.greedy.de" "${tr[@]}" --beam 1
  check "beam 4 on cuda" "$fix/expected.beam4.de" "${tr[@]}" --beam 4
  check "beam 4 on cuda, plain weights" "$fix/expected.beam4.de" "${tr[@]}" --beam 4 --no-packed-weights
  "${tr[@]}" --beam 4 --bf16 > "$work/bf16.cuda" || bad=1
  "$bin" translate -m "$fix/model.safetensors" --device cpu --input "$fix/input.en" --beam 4 --bf16 > "$work/bf16.cpu" ||
    bad=1
  echo "beam 4 --bf16 on cuda: $(paste -d '\t' "$work/bf16.cuda" "$work/bf16.cpu" | awk -F '\t' '$1 == $2' | wc -l)" \
    "of $(wc -l < "$work/bf16.cpu") lines as the CPU's"
  local sc=("$bin" score -m "$fix/model.safetensors" --source "$fix/input.en" --target "$fix/expected.beam4.de")
  "${sc[@]}" --device cuda > "$work/score.cuda" || bad=1
  "${sc[@]}" --device cpu > "$work/score.cpu" || bad=1
  paste "$work/score.cuda" "$work/score.cpu" |  # each line: the scores on cuda, then the same columns on the cpu
    awk -F '\t' '{ n = NF / 2; for (i = 1; i <= n; ++i) { d = $i - $(i + n); if (d < 0) d = -d; if (d > m) m = d } }
      END { printf "score on cuda against the cpu: largest difference %.2e over %d lines\n", m, NR
            exit !(NR > 0 && m < 1e-4) }' || bad=1
  [[ $bad == 0 ]] || { echo "cli.translate_cuda: see above; stderr:"; tail -5 "$work/stderr"; }
  return $bad
)

run() {
  [[ -f .gpu/pkg.tar.xz ]] || { echo "gpu-check: .gpu/pkg.tar.xz is missing: run 'scripts/gpu-check.sh pack' on the build machine" >&2; exit 1; }
  local root=/tmp/tfm-gpu out=${OUT:-/tmp/tfm-gpu-out}
  rm -rf "$root" && mkdir -p "$root" "$out"
  tar -C "$root" -xJf .gpu/pkg.tar.xz
  local blas
  blas=$(cublas_dirs)
  export LD_LIBRARY_PATH="$root/lib${blas:+:$blas}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export TFM_REQUIRE_GPU=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-8} TFM_FIXTURE_DIR=$PWD/tests/fixtures
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
  echo "cuBLAS from: ${blas:-not found}"
  local nccl
  nccl=$(nccl_dir)
  echo "NCCL from: ${nccl:-not found}"
  [[ -n $nccl ]] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$nccl"
  if [[ -d $root/mpi ]]; then  # the packed Open MPI, relocated
    export OPAL_PREFIX=$root/mpi/usr PMIX_INSTALL_PREFIX=$root/mpi/usr/lib/x86_64-linux-gnu/pmix2
    export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$root/mpi/lib:$root/mpi/usr/lib/x86_64-linux-gnu/openmpi/lib"
    export PATH="$root/mpi/usr/bin:$PATH" OMPI_MCA_plm_rsh_agent= OMPI_MCA_btl_vader_single_copy_mechanism=none
  fi
  "$root/bin/transformer" info --cpu || true
  local rows=() status=0
  step() {  # step NAME COMMAND...: runs it, logs it, records a row
    local name=$1; shift
    local t0=$SECONDS rc=0
    "$@" >"$out/$name.log" 2>&1 || rc=$?
    rows+=("$(printf '%-28s %-6s %4ds' "$name" "$([[ $rc == 0 ]] && echo pass || echo FAIL)" $((SECONDS - t0)))")
    [[ $rc == 0 ]] || { status=1; tail -40 "$out/$name.log"; }
  }
  [[ ${GPU_CHECK_TESTS:-1} == 1 ]] && step cuda_test "$root/bin/cuda_test"
  [[ ${GPU_CHECK_TESTS:-1} == 1 ]] && step core_test.cuda_memory "$root/bin/core_test" --gtest_filter='Tensor.Cuda*:Tensor.Device*'
  if [[ ${GPU_CHECK_TESTS:-1} == 1 ]] && command -v compute-sanitizer >/dev/null; then
    step sanitizer.memcheck compute-sanitizer --tool memcheck --error-exitcode 1 "$root/bin/cuda_test" \
      --gtest_filter='-Cuda.Nccl*'
    # NCCL's start asks the driver about kernels it has no image for (errors it expects and
    # handles): its memory accesses checked, its API calls' errors not reported.
    step sanitizer.memcheck.nccl compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 1 \
      "$root/bin/cuda_test" --gtest_filter='Cuda.Nccl*'
    step sanitizer.racecheck compute-sanitizer --tool racecheck --error-exitcode 1 "$root/bin/cuda_test" \
      --gtest_filter='Cuda.Attention*:Cuda.LayerNorm*:Cuda.LabelSmoothed*'
  fi
  [[ ${GPU_CHECK_TESTS:-1} == 1 ]] && step cli.translate_cuda cli_translate_cuda "$root/bin/transformer"
  [[ ${GPU_CHECK_TESTS:-1} == 1 && -x $root/mpi/usr/bin/orterun ]] &&
    step mpi.nccl_one_rank nccl_one_rank "$root/bin/transformer" "$root/mpi/usr/bin/orterun"
  if [[ ${GPU_CHECK_BENCH:-1} == 1 ]]; then
    # The training step and translation against PyTorch on this GPU (docs/performance.md);
    # GPU_CHECK_BENCH_FILTER narrows ours (e.g. TranslateCuda), and then leaves out the peer and the demo.
    # GPU_CHECK_BENCH_ARGS: more flags (e.g. --benchmark_repetitions=4 --benchmark_enable_random_interleaving=true).
    # shellcheck disable=SC2086
    step bench.ours "$root/bin/tfm_bench" --benchmark_filter="${GPU_CHECK_BENCH_FILTER:-Cuda}" \
      --benchmark_counters_tabular=true ${GPU_CHECK_BENCH_ARGS:-}
    # Where a step's time goes, per op (TFM_PROFILE: each op timed alone, so slower than above).
    local peer=1
    [[ -n ${GPU_CHECK_BENCH_FILTER:-} ]] && peer=0
    [[ $peer == 1 ]] && step profile.base_bf16 env TFM_PROFILE=1 "$root/bin/tfm_bench" --benchmark_filter='TrainStepCuda/base_bf16'
    # The same for greedy decoding in bf16: the ops' own time against the benchmark's wall time
    # above shows how much of a decoding step is the host's (launches, bookkeeping, waits).
    step profile.greedy_bf16 env TFM_PROFILE=1 "$root/bin/tfm_bench" --benchmark_filter='TranslateCuda/greedy_bf16'
    # Translation's peer: PyTorch's incremental decoding with a key/value cache, the same shape.
    for dtype in bf16 fp32; do
      step "bench.torch_translate_$dtype" python3 bench/torch_gpu_translate.py --dtype $dtype
    done
    [[ $peer == 1 ]] && for config in base big; do
      step "bench.torch_$config" python3 bench/torch_gpu_train_step.py --config $config
      [[ ${GPU_CHECK_COMPILE:-0} == 1 ]] && step "bench.torch_${config}_compiled" python3 bench/torch_gpu_train_step.py --config $config --compile
    done
    # The demo's task, 300 steps on the GPU and on this machine's CPU: the two loss curves.
    local demo=/tmp/tfm-gpu-demo
    rm -rf "$demo" && "$root/bin/transformer" demo-data --out "$demo/data" --seed 1 >/dev/null
    [[ $peer == 1 ]] && for device in cuda cpu; do
      step "demo300.$device" "$root/bin/transformer" train --train-source "$demo/data/train.en" \
        --train-target "$demo/data/train.de" --run-dir "$demo/$device" --preset small --d-model 128 --heads 4 \
        --d-ff 512 --layers 2 --vocab-size 400 --batch-tokens 2048 --warmup-steps 200 --lr-factor 0.5 \
        --max-steps 300 --log-every 10 --save-every 1000 --device $device
      cp "$demo/$device/metrics.jsonl" "$out/demo300.$device.jsonl" 2>/dev/null || true
    done
    [[ $peer == 1 ]] &&
      { python3 tools/compare_loss_curves.py "$out/demo300.cuda.jsonl" "$out/demo300.cpu.jsonl" --labels cuda cpu \
          --title "demo, 300 steps: loss on cuda against the cpu, relative difference" \
          > "$out/demo300.compare.txt" 2>&1 || true; }
  fi
  echo
  echo "check                        result  time"
  printf '%s\n' "${rows[@]}"
  grep -h -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out"/*.log | sort | uniq -c || true
  [[ -f $out/bench.ours.log ]] && grep -E '^BM_|Benchmark' "$out/bench.ours.log"
  cat "$out"/bench.torch_*.log 2>/dev/null | grep '^{' || true
  [[ -f $out/profile.base_bf16.log ]] && sed -n '/TFM_PROFILE/,$p' "$out/profile.base_bf16.log"
  [[ -f $out/profile.greedy_bf16.log ]] && sed -n '/TFM_PROFILE/,$p' "$out/profile.greedy_bf16.log" | head -25
  [[ -f $out/cli.translate_cuda.log ]] && cat "$out/cli.translate_cuda.log"
  [[ -f $out/demo300.compare.txt ]] && cat "$out/demo300.compare.txt"
  return $status
}

case ${1:-} in
  pack) shift; pack "$@" ;;
  run) run ;;
  *) echo "usage: scripts/gpu-check.sh pack [BUILD] | run" >&2; exit 2 ;;
esac
