#!/usr/bin/env bash
# The CUDA backend's checks on a GPU machine, in two steps: a build machine packs what a
# machine with a GPU but none of Debian's packages needs, and the GPU machine runs it.
#
#   scripts/gpu-check.sh pack [BUILD]   # here: the CUDA-enabled build's test binaries and the shared
#                                       # libraries they need (not glibc, libstdc++ or CUDA's own),
#                                       # into .gpu/pkg.tar.xz (~33 MB)
#   scripts/gpu-check.sh run            # there: unpacks it, runs every GPU test with
#                                       # TFM_REQUIRE_GPU=1 (a skip is a failure), the same tests
#                                       # under compute-sanitizer, and prints one table
#   scripts/gpu-check.sh dry            # here, no GPU needed (30 s): unpacks the package, checks that
#                                       # every packed binary's shared libraries are packed (or CUDA's,
#                                       # from the GPU machine), runs the binaries where no GPU is
#                                       # needed, lists run's steps with their commands and checks the
#                                       # files they read; exit status 1 naming what is missing
#
# On the GPU machine, cuBLAS comes from the CUDA toolkit or PyTorch's Python wheels, whichever is
# found. OUT (if set) gets the logs. docs/gpu.md says how the project's GPU machine is reached.
set -euo pipefail
cd "$(dirname "$0")/.."

# The binaries packed, relative to the build folder (they go to the package's bin/).
packed_bins=(transformer tests/cuda_test tests/core_test bench/tfm_bench)

# Whether the shared library SONAME is one every Linux machine has (the C library, the C++ runtime):
# not packed.
system_lib() {
  case $1 in libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++*|libgcc_s*) return 0 ;; esac
  return 1
}

# Whether SONAME is CUDA's own (driver, runtime, cuBLAS, NCCL): the GPU machine's, not packed.
gpu_machine_lib() {
  case $1 in libcuda.so*|libcudart*|libcublas*|libnccl*) return 0 ;; esac
  return 1
}

pack() {
  local build=${1:-build}
  local stage=.gpu/pkg
  rm -rf "$stage" .gpu/pkg.tar.xz && mkdir -p "$stage/bin" "$stage/lib"
  local bins=("${packed_bins[@]/#/$build/}")
  for b in "${bins[@]}"; do
    [[ -x $b ]] || { echo "gpu-check: $b is missing: build first (make build; cmake --build $build --target benchmarks)" >&2; exit 1; }
    cp "$b" "$stage/bin/"
  done
  # The shared libraries the binaries load, by their sonames, but the C library, the C++ runtime
  # and CUDA's (the GPU machine has its own).
  ldd "${bins[@]}" | awk '/=> \// {print $1, $3}' | sort -u | while read -r soname path; do
    system_lib "$soname" || gpu_machine_lib "$soname" || cp -L "$path" "$stage/lib/$soname"
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
      system_lib "$soname" || [[ -e $stage/lib/$soname ]] || cp -L "$path" "$stage/mpi/lib/$soname"
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

# One rank through NCCL under mpirun against one process without it: the same model file. (step
# runs it under ||, where set -e does not apply: each command returns on failure.)
nccl_one_rank() {
  local bin=$1 mpirun=$2 work=/tmp/tfm-gpu-nccl
  rm -rf "$work" && "$bin" demo-data --out "$work/data" --train 300 --valid 20 --test 20 --seed 3 >/dev/null || return
  local args=(train --train-source "$work/data/train.en" --train-target "$work/data/train.de" --preset tiny
              --d-model 64 --heads 4 --d-ff 128 --layers 2 --vocab-size 120 --batch-tokens 512 --warmup-steps 10
              --max-steps 40 --save-every 20 --log-every 10 --seed 5 --device cuda)
  "$bin" "${args[@]}" --run-dir "$work/plain" || return
  "$mpirun" --allow-run-as-root -np 1 "$bin" "${args[@]}" --run-dir "$work/nccl" 2>&1 | tee "$work/nccl.log" || return
  grep -q "gradients summed over the ranks' GPUs by NCCL" "$work/nccl.log" ||
    { echo "the run under mpirun did not sum its gradients through NCCL"; return 1; }
  cmp "$work/plain/model.safetensors" "$work/nccl/model.safetensors" || return
  echo "one rank through NCCL: the same model file as one process without it"
}

# The committed files cli_translate_cuda reads (dry checks that they are there).
cli_translate_files=(tests/fixtures/tiny_model/{model.safetensors,input.en,expected.greedy.de,expected.beam4.de})

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

# The demo's task, 300 steps on DEVICE (the model and schedule of scripts/demo.sh), its loss records
# kept as OUT/demo300.NAME.jsonl: demo300 BIN DEVICE OUT [NAME FLAG...] (NAME: DEVICE unless given,
# the flags added to train's). (step runs it under ||, where set -e does not apply: each command
# returns on failure.)
demo300() {
  local bin=$1 device=$2 out=$3 name=${4:-$2} demo=/tmp/tfm-gpu-demo
  [[ -f $demo/data/train.de ]] || "$bin" demo-data --out "$demo/data" --seed 1 >/dev/null || return
  rm -rf "${demo:?}/$name"
  "$bin" train --train-source "$demo/data/train.en" --train-target "$demo/data/train.de" --run-dir "$demo/$name" \
    --preset small --d-model 128 --heads 4 --d-ff 512 --layers 2 --vocab-size 400 --batch-tokens 2048 \
    --warmup-steps 200 --lr-factor 0.5 --max-steps 300 --log-every 10 --save-every 1000 --device "$device" \
    "${@:5}" || return
  cp "$demo/$name/metrics.jsonl" "$out/demo300.$name.jsonl"
}

# Whether the GPU machine has COMMAND (dry redefines it: every optional step listed).
have() { command -v "$1" >/dev/null; }

# The checks `run` runs, in order, each as `step NAME COMMAND...`: run runs them, dry lists them and
# checks what they need. Reads root (the unpacked package) and out (the logs' folder).
plan() {
  local bin=$root/bin
  if [[ ${GPU_CHECK_TESTS:-1} == 1 ]]; then
    step cuda_test "$bin/cuda_test"
    step core_test.cuda_memory "$bin/core_test" --gtest_filter='Tensor.Cuda*:Tensor.Device*'
    if have compute-sanitizer; then
      step sanitizer.memcheck compute-sanitizer --tool memcheck --error-exitcode 1 "$bin/cuda_test" \
        --gtest_filter='-Cuda.Nccl*'
      # NCCL's start asks the driver about kernels it has no image for (errors it expects and
      # handles): its memory accesses checked, its API calls' errors not reported.
      step sanitizer.memcheck.nccl compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 1 \
        "$bin/cuda_test" --gtest_filter='Cuda.Nccl*'
      step sanitizer.racecheck compute-sanitizer --tool racecheck --error-exitcode 1 "$bin/cuda_test" \
        --gtest_filter='Cuda.Attention*:Cuda.LayerNorm*:Cuda.LabelSmoothed*'
    fi
    step cli.translate_cuda cli_translate_cuda "$bin/transformer"
    if [[ -x $root/mpi/usr/bin/orterun ]]; then
      step mpi.nccl_one_rank nccl_one_rank "$bin/transformer" "$root/mpi/usr/bin/orterun"
    fi
  fi
  if [[ ${GPU_CHECK_BENCH:-1} == 1 ]]; then
    # The training step and translation against PyTorch on this GPU (docs/performance.md);
    # GPU_CHECK_BENCH_FILTER narrows ours (e.g. TranslateCuda), and then leaves out the peer and the demo.
    # GPU_CHECK_BENCH_ARGS: more flags (e.g. --benchmark_repetitions=4 --benchmark_enable_random_interleaving=true).
    # shellcheck disable=SC2086
    step bench.ours "$bin/tfm_bench" --benchmark_filter="${GPU_CHECK_BENCH_FILTER:-Cuda}" \
      --benchmark_counters_tabular=true ${GPU_CHECK_BENCH_ARGS:-}
    # Where a step's time goes, per op (TFM_PROFILE: each op timed alone, so slower than above).
    local peer=1
    [[ -n ${GPU_CHECK_BENCH_FILTER:-} ]] && peer=0
    if [[ $peer == 1 ]]; then
      step profile.base_bf16 env TFM_PROFILE=1 "$bin/tfm_bench" --benchmark_filter='TrainStepCuda/base_bf16'
    fi
    # The same for greedy decoding in bf16: the ops' own time against the benchmark's wall time
    # above shows how much of a decoding step is the host's (launches, bookkeeping, waits).
    step profile.greedy_bf16 env TFM_PROFILE=1 "$bin/tfm_bench" --benchmark_filter='TranslateCuda/greedy_bf16'
    # Translation's peer: PyTorch's incremental decoding with a key/value cache, the same shape.
    local dtype config device
    for dtype in bf16 fp32; do
      step "bench.torch_translate_$dtype" python3 bench/torch_gpu_translate.py --dtype $dtype
    done
    if [[ $peer == 1 ]]; then
      for config in base big; do
        step "bench.torch_$config" python3 bench/torch_gpu_train_step.py --config $config
        if [[ ${GPU_CHECK_COMPILE:-0} == 1 ]]; then
          step "bench.torch_${config}_compiled" python3 bench/torch_gpu_train_step.py --config $config --compile
        fi
      done
      # The demo's task, 300 steps on the GPU and on this machine's CPU: the two loss curves.
      for device in cuda cpu; do
        step "demo300.$device" demo300 "$bin/transformer" $device "$out"
      done
      step demo300.compare python3 tools/compare_loss_curves.py "$out/demo300.cuda.jsonl" "$out/demo300.cpu.jsonl" \
        --labels cuda cpu --title "demo, 300 steps: loss on cuda against the cpu, relative difference"
      # train --bf16 on the GPU (bfloat16 activations) against float32 on the CPU, with the limits
      # of scripts/bf16-curve.sh (docs/training.md).
      step demo300.cuda_bf16 demo300 "$bin/transformer" cuda "$out" cuda_bf16 --bf16
      step demo300.compare_bf16 python3 tools/compare_loss_curves.py "$out/demo300.cuda_bf16.jsonl" \
        "$out/demo300.cpu.jsonl" --labels "cuda bf16" "cpu float32" --window 5 --tolerance 0.12 \
        --final-tolerance 0.06 --early-until 100 --early-tolerance 0.005 \
        --title "demo, 300 steps: train --bf16 on cuda against float32 on the cpu, relative difference"
    fi
  fi
}

# The package's environment: its libraries, cuBLAS and NCCL where this machine has them, and its
# Open MPI relocated. Sets blas and nccl (the folders found, or empty) for the caller to report.
package_env() {
  blas=$(cublas_dirs)
  export LD_LIBRARY_PATH="$root/lib${blas:+:$blas}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export TFM_FIXTURE_DIR=$PWD/tests/fixtures
  nccl=$(nccl_dir)
  if [[ -n $nccl ]]; then export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$nccl"; fi
  if [[ -d $root/mpi ]]; then  # the packed Open MPI, relocated
    export OPAL_PREFIX=$root/mpi/usr PMIX_INSTALL_PREFIX=$root/mpi/usr/lib/x86_64-linux-gnu/pmix2
    export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$root/mpi/lib:$root/mpi/usr/lib/x86_64-linux-gnu/openmpi/lib"
    export PATH="$root/mpi/usr/bin:$PATH" OMPI_MCA_plm_rsh_agent='' OMPI_MCA_btl_vader_single_copy_mechanism=none
  fi
}

run() {
  [[ -f .gpu/pkg.tar.xz ]] || { echo "gpu-check: .gpu/pkg.tar.xz is missing: run 'scripts/gpu-check.sh pack' on the build machine" >&2; exit 1; }
  local root=/tmp/tfm-gpu out=${OUT:-/tmp/tfm-gpu-out}
  rm -rf "$root" /tmp/tfm-gpu-demo && mkdir -p "$root" "$out"
  tar -C "$root" -xJf .gpu/pkg.tar.xz
  local blas nccl
  package_env
  export TFM_REQUIRE_GPU=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-8}
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
  echo "cuBLAS from: ${blas:-not found}"
  echo "NCCL from: ${nccl:-not found}"
  "$root/bin/transformer" info --cpu || true
  local rows=() status=0
  step() {  # step NAME COMMAND...: runs it, logs it, records a row
    local name=$1; shift
    local t0=$SECONDS rc=0
    "$@" >"$out/$name.log" 2>&1 || rc=$?
    rows+=("$(printf '%-28s %-6s %4ds' "$name" "$([[ $rc == 0 ]] && echo pass || echo FAIL)" $((SECONDS - t0)))")
    [[ $rc == 0 ]] || { status=1; tail -40 "$out/$name.log"; }
  }
  plan
  echo
  echo "check                        result  time"
  printf '%s\n' "${rows[@]}"
  grep -h -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out"/*.log | sort | uniq -c || true
  [[ -f $out/bench.ours.log ]] && grep -E '^BM_|Benchmark' "$out/bench.ours.log"
  cat "$out"/bench.torch_*.log 2>/dev/null | grep '^{' || true
  [[ -f $out/profile.base_bf16.log ]] && sed -n '/TFM_PROFILE/,$p' "$out/profile.base_bf16.log"
  [[ -f $out/profile.greedy_bf16.log ]] && sed -n '/TFM_PROFILE/,$p' "$out/profile.greedy_bf16.log" | head -25
  [[ -f $out/cli.translate_cuda.log ]] && cat "$out/cli.translate_cuda.log"
  [[ -f $out/demo300.compare.log ]] && cat "$out/demo300.compare.log"
  [[ -f $out/demo300.compare_bf16.log ]] && cat "$out/demo300.compare_bf16.log"
  return $status
}

# The package's ELF files' shared libraries, as the GPU machine's loader will look for them (run's
# LD_LIBRARY_PATH): each must be packed, one of the system's base (system_lib) or CUDA's own, which
# the GPU machine provides (gpu_machine_lib). Reports through problem().
check_libraries() {
  local dirs=("$root/lib" "$root/mpi/lib" "$root/mpi/usr/lib/x86_64-linux-gnu/openmpi/lib")
  local path=${dirs[0]}:${dirs[1]}:${dirs[2]}
  local f lines soname arrow where d packed system gpu others=0 others_ok=0
  declare -A from_gpu=()
  while IFS= read -r -d '' f; do
    [[ $(head -c 4 "$f") == $'\x7fELF' ]] || continue
    lines=$(LD_LIBRARY_PATH=$path ldd "$f" 2>&1) || true
    [[ $lines == *"not a dynamic executable"* || $lines == *"statically linked"* ]] && continue
    packed=0 system=0 gpu=()
    local bad=0
    while read -r soname arrow where _; do
      [[ $arrow == "=>" ]] || continue  # the vDSO and the loader itself
      if system_lib "$soname"; then system=$((system + 1)); continue; fi
      if gpu_machine_lib "$soname"; then gpu+=("$soname"); from_gpu[$soname]=1; continue; fi
      # Packed if a file of that name is in one of the package's folders, wherever ldd found it
      # here (an RPATH may find this machine's copy first; the GPU machine has none).
      local found=0
      for d in "${dirs[@]}"; do [[ -e $d/$soname ]] && found=1; done
      [[ $where == "$root"/* ]] && found=1
      if [[ $found == 1 ]]; then packed=$((packed + 1)); continue; fi
      bad=1
      if [[ $where == not ]]; then problem "${f#"$root"/} needs $soname, which is neither packed nor on this machine"
      else problem "${f#"$root"/} needs $soname, which is not packed (here it is $where; the GPU machine has none)"; fi
    done <<< "$lines"
    case $f in
      "$root"/bin/*|"$root"/mpi/usr/bin/*)
        printf '  %-22s %2d packed, %d the system'"'"'s (glibc, libstdc++, libgcc_s)%s%s\n' "${f#"$root"/}:" \
          "$packed" "$system" "${gpu[*]:+, from the GPU machine: }${gpu[*]}" "$([[ $bad == 0 ]] || echo ', and MISSING ones')" ;;
      *) others=$((others + 1)); [[ $bad == 1 ]] || others_ok=$((others_ok + 1)) ;;
    esac
  done < <(find "$root" -type f -print0 | sort -z)
  echo "  the packed libraries and Open MPI's plugins: $others_ok of $others with every library they need"
  echo "  from the GPU machine (CUDA's own, not packed): ${!from_gpu[*]}"
}

# count_listed BINARY [FILTER]: how many tests (a googletest program) or benchmarks (tfm_bench) it
# lists, with FILTER (--gtest_filter=... or --benchmark_filter=...); 0 if it cannot start.
count_listed() {
  local binary=$1 filter=${2:-}
  if [[ $binary == */tfm_bench ]]; then "$binary" --benchmark_list_tests ${filter:+"$filter"} 2>/dev/null | grep -c . || true
  else "$binary" --gtest_list_tests ${filter:+"$filter"} 2>/dev/null | grep -c '^  ' || true; fi
}
# listed_what BINARY N: "N tests" or "N benchmarks", as BINARY lists them.
listed_what() {
  local what=test
  [[ $1 != *tfm_bench ]] || what=benchmark
  echo "$2 $what$([[ $2 == 1 ]] || echo s)"
}

# The command line ARGS... as a shell would take it back: the arguments with spaces or patterns quoted.
shell_words() {
  local arg words=()
  for arg in "$@"; do
    if [[ $arg =~ ^[A-Za-z0-9_./=:,+@%-]+$ ]]; then words+=("$arg"); else words+=("'${arg//\'/\'\\\'\'}'"); fi
  done
  echo "${words[*]}"
}

# dry: on a machine without a GPU (where the package was made), whether `run` has what it needs:
# unpacks the package, checks every packed binary's shared libraries, runs the binaries where no GPU
# is needed, lists the steps run would run with their commands, and checks the repository's files
# they read (the Python scripts compile). Exit status 1, with the problems listed, if any.
dry() {
  [[ -f .gpu/pkg.tar.xz ]] || { echo "gpu-check dry: .gpu/pkg.tar.xz is missing: run 'scripts/gpu-check.sh pack' first" >&2; exit 1; }
  local root out=${OUT:-/tmp/tfm-gpu-out} problems=() pyfiles=() steps=0
  root=$(mktemp -d /tmp/tfm-gpu-dry.XXXXXX)
  # shellcheck disable=SC2064  # expanded now: root is dry's own, out of scope at exit
  trap "rm -rf '$root'" EXIT
  problem() { problems+=("$*"); echo "  PROBLEM: $*"; }
  tar -C "$root" -xJf .gpu/pkg.tar.xz || { echo "gpu-check dry: cannot unpack .gpu/pkg.tar.xz" >&2; exit 1; }
  echo "gpu-check dry: .gpu/pkg.tar.xz ($(du -h .gpu/pkg.tar.xz | cut -f1), $(find "$root" -type f | wc -l) files)," \
    "unpacked into $root (\$PKG below)"

  echo "== the packed binaries' shared libraries"
  local b
  for b in "${packed_bins[@]}"; do
    [[ -x $root/bin/${b##*/} ]] || problem "bin/${b##*/} is not in the package (pack takes it from BUILD/$b)"
  done
  check_libraries

  echo "== smoke commands (no GPU needed)"
  local blas nccl
  package_env
  echo "  cuBLAS here: ${blas:-not found}; NCCL here: ${nccl:-not found} (the GPU machine brings its own)"
  smoke() {  # smoke WHAT COMMAND...: runs it; its output's first line, or a problem
    local what=$1 output rc=0; shift
    output=$("$@" 2>&1) || rc=$?
    if [[ $rc == 0 ]]; then printf '  %-34s ok: %s\n' "$what" "$(head -1 <<< "$output" | cut -c1-70)"
    else problem "$what failed (exit $rc): $(tail -2 <<< "$output" | tr '\n' ' ')${blas:- (this machine has no cuBLAS, which the binaries need to start)}"; fi
  }
  local tfm=$root/bin/transformer tiny=$root/smoke
  if [[ -x $tfm ]]; then
    smoke "transformer --version" "$tfm" --version
    smoke "transformer --help" "$tfm" --help
    smoke "transformer info --cpu" "$tfm" info --cpu
    smoke "transformer demo-data" "$tfm" demo-data --out "$tiny/data" --train 200 --valid 10 --test 10 --seed 3
    smoke "transformer train (cpu, 3 steps)" "$tfm" train --train-source "$tiny/data/train.en" \
      --train-target "$tiny/data/train.de" --run-dir "$tiny/run" --preset tiny --d-model 32 --heads 2 --d-ff 64 \
      --layers 1 --vocab-size 100 --batch-tokens 256 --max-steps 3 --log-every 1 --threads 1 --device cpu
  fi
  local n
  for b in cuda_test core_test tfm_bench; do
    if [[ -x $root/bin/$b ]]; then
      n=$(count_listed "$root/bin/$b")
      if (( n > 0 )); then printf '  %-34s ok: %s\n' "$b: its list" "$(listed_what "$b" "$n")"
      else
        local flag=--gtest_list_tests
        [[ $b != tfm_bench ]] || flag=--benchmark_list_tests
        problem "$b lists no $(listed_what "$b" 0 | cut -d' ' -f2): $("$root/bin/$b" $flag 2>&1 | tail -2 | tr '\n' ' ' || true)"
      fi
    fi
  done
  if [[ -x $root/mpi/usr/bin/orterun ]]; then  # the relocated Open MPI starts one rank of the packed command
    smoke "orterun -np 1 transformer --version" "$root/mpi/usr/bin/orterun" --allow-run-as-root -np 1 "$tfm" --version
  fi

  echo "== the steps 'run' would run (GPU_CHECK_TESTS, GPU_CHECK_BENCH, GPU_CHECK_BENCH_FILTER and GPU_CHECK_COMPILE as there)"
  step() {  # step NAME COMMAND...: listed; its package files, test filters and Python scripts checked
    local name=$1 arg binary='' filter='' n shown; shift
    shown=$(shell_words "$@")
    printf '  %-28s %s\n' "$name" "${shown//"$root"/\$PKG}"
    steps=$((steps + 1))
    for arg in "$@"; do
      case $arg in
        "$root"/*) [[ -x $arg ]] || problem "$name: ${arg#"$root"/} is not in the package"; [[ -n $binary ]] || binary=$arg ;;
        *.py) [[ " ${pyfiles[*]} " == *" $arg "* ]] || pyfiles+=("$arg") ;;
        --gtest_filter=*|--benchmark_filter=*) filter=$arg ;;
      esac
    done
    [[ $1 == "$root"/* ]] || declare -F "$1" >/dev/null || [[ $1 == env || $1 == python3 || $1 == compute-sanitizer ]] ||
      problem "$name: '$1' is neither packed nor a function of this script nor a tool the GPU machine has"
    # A filter that matches nothing would make the step pass having run nothing.
    if [[ -x $binary && ( $binary == *_test || $binary == */tfm_bench ) ]]; then
      n=$(count_listed "$binary" "$filter")
      if (( n > 0 )); then printf '  %-28s   (%s)\n' "" "$(listed_what "$binary" "$n")"
      elif [[ $binary == */tfm_bench && $(count_listed "$binary" --benchmark_filter=Cuda) == 0 ]]; then
        printf '  %-28s   (not checked: tfm_bench registers its CUDA benchmarks only where it finds a GPU)\n' ""
      else problem "$name: ${filter:-the binary} selects nothing in ${binary##*/}"; fi
    fi
  }
  have() { return 0; }  # every optional step listed
  plan
  echo "  (the sanitizer steps run where compute-sanitizer is found, mpi.nccl_one_rank where Open MPI is packed)"

  echo "== the repository's files the steps read"
  local f
  for f in "${pyfiles[@]}"; do
    if [[ ! -f $f ]]; then problem "$f is missing"
    elif PYTHONPYCACHEPREFIX=$root/pycache python3 -m py_compile "$f" 2>"$root/py_compile.err"; then echo "  $f: compiles"
    else problem "$f does not compile: $(tail -1 "$root/py_compile.err")"; fi
  done
  for f in "${cli_translate_files[@]}"; do
    if [[ -f $f ]]; then echo "  $f: present"; else problem "$f is missing (cli.translate_cuda reads it)"; fi
  done

  if (( ${#problems[@]} )); then
    echo "gpu-check dry: FAILED: ${#problems[@]} problem(s):" >&2
    printf '  %s\n' "${problems[@]}" >&2
    exit 1
  fi
  echo "gpu-check dry: the package and what its $steps steps need are in place (nothing ran on a GPU)"
}

case ${1:-} in
  pack) shift; pack "$@" ;;
  run) run ;;
  dry) dry ;;
  *) echo "usage: scripts/gpu-check.sh pack [BUILD] | run | dry" >&2; exit 2 ;;
esac
