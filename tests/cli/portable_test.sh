#!/usr/bin/env bash
# One binary for every x86-64 CPU, checked on CPUs this machine is not: under qemu-x86_64's
# emulation of a Nehalem (SSE4.2, no AVX: the generic level) and of a Haswell (AVX2, no AVX-512:
# the avx2 level), where an instruction the CPU lacks stops the program (SIGILL). Each emulated CPU
# detects its own level, and translates (beam search, float32 and int8, with scores) and trains
# (float32 and --bf16) bit for bit as this machine does with the level forced (TFM_CPU_ISA, and
# OpenBLAS forced to the same core): results depend on the level, not on the machine.
# Usage: portable_test.sh PATH/TO/transformer   (skipped, 77, without qemu-x86_64: Debian's qemu-user)
set -euo pipefail
bin=$1
here=$(cd "$(dirname "$0")/.." && pwd)
fix="$here/fixtures/tiny_model"
command -v qemu-x86_64 >/dev/null || { echo "skipped: qemu-x86_64 not found (qemu-user)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin" demo-data --out "$work/data" --train 300 --valid 20 --test 20 --seed 3 > /dev/null
train=(train --train-source "$work/data/train.en" --train-target "$work/data/train.de" --preset tiny --d-model 16
       --heads 2 --d-ff 32 --layers 1 --vocab-size 80 --batch-tokens 256 --warmup-steps 4 --max-steps 12
       --save-every 12 --log-every 4 --threads 1 --seed 5)
translate=(translate -m "$fix/model.safetensors" --vocab "$fix/vocab.model" --threads 1 --beam 4 --scores
           --input "$fix/input.en")
# This machine's own level: a level above it cannot be forced here to compare with.
own=$(env -u TFM_CPU_ISA "$bin" info --cpu | awk '$1 == "level" { print $2 }')
for spec in Nehalem-v2:generic:Nehalem Haswell-v4:avx2:Haswell; do
  IFS=: read -r cpu level core <<< "$spec"
  if [ "$level" = avx2 ] && [ "$own" = generic ]; then
    echo "$cpu: skipped, this machine has no AVX2 to compare with"
    continue
  fi
  emulated() {
    env -u TFM_CPU_ISA -u OPENBLAS_CORETYPE qemu-x86_64 -cpu "$cpu" "$bin" "$@" 2> >(grep -v "TCG doesn't support" >&2)
  }
  forced() { TFM_CPU_ISA=$level OPENBLAS_CORETYPE=$core "$bin" "$@"; }
  emulated info --cpu > "$work/cpu.txt" || fail "$cpu: info --cpu failed"
  grep -q "^level      $level (detected)" "$work/cpu.txt" || fail "$cpu: not detected as $level: $(cat "$work/cpu.txt")"
  grep -q "^OpenBLAS   core $core " "$work/cpu.txt" || fail "$cpu: OpenBLAS did not pick $core: $(cat "$work/cpu.txt")"
  for extra in "" --int8; do
    emulated "${translate[@]}" $extra > "$work/emulated.txt" || fail "$cpu: translate $extra failed"
    forced "${translate[@]}" $extra > "$work/forced.txt" || fail "translate $extra at TFM_CPU_ISA=$level failed"
    [ -s "$work/forced.txt" ] || fail "no translations"
    cmp -s "$work/emulated.txt" "$work/forced.txt" || fail "$cpu: translate $extra differs from TFM_CPU_ISA=$level"
  done
  for extra in "" --bf16; do
    rm -rf "$work/e" "$work/f"
    emulated "${train[@]}" $extra --run-dir "$work/e" > /dev/null 2>"$work/e.log" ||
      { cat "$work/e.log"; fail "$cpu: train $extra failed"; }
    forced "${train[@]}" $extra --run-dir "$work/f" > /dev/null 2>&1 || fail "train $extra at TFM_CPU_ISA=$level failed"
    cmp -s "$work/e/model.safetensors" "$work/f/model.safetensors" ||
      fail "$cpu: train $extra gives another model than TFM_CPU_ISA=$level"
  done
  echo "$cpu: $level detected; translations and trained models identical to TFM_CPU_ISA=$level"
done
echo "portable binary checks passed"
