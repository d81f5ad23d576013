#!/usr/bin/env bash
# The library runs on every x86-64 CPU: instructions beyond the baseline (AVX and AVX-512 ones, whose
# mnemonics start with v; AVX-512's mask instructions, k...; x86-64-v3's BMI1, BMI2, LZCNT and MOVBE)
# may appear only in functions of the SIMD builds' own namespaces,
# tfm::cpu::avx2 and tfm::cpu::avx512 (src/ops/cpu/simd/target.h). Anywhere else, say in a
# std::vector member the linker could pick from an AVX-512 object, they would crash older CPUs.
# Usage: simd_objects_test.sh LIBRARY.a   (an x86-64 build with the SIMD builds, without TFM_NATIVE)
set -euo pipefail
lib=$1
command -v objdump >/dev/null || { echo "FAIL: objdump (binutils) not found"; exit 1; }
# Per function: its mangled name, and whether it uses a v-instruction. tfm::cpu::avx2 mangles as
# _ZN3tfm3cpu4avx2..., tfm::cpu::avx512 as _ZN3tfm3cpu6avx512... (_ZZN... for their local entities:
# lambdas, OpenMP bodies)
# Whole mnemonics (SSE andnps is not BMI andn). Not tzcnt: the baseline rep bsf prints as tzcnt and
# runs as bsf on older CPUs.
report=$(objdump -d --no-show-raw-insn "$lib" | awk '
  /^[0-9a-f]+ <.*>:$/ { fn = substr($2, 2, length($2) - 3); next }
  /^ +[0-9a-f]+:\t/ {
    split($0, parts, "\t"); split(parts[2], insn, " ")
    beyond = insn[1] ~ /^v/ || insn[1] ~ /^(k(and|andn|or|xor|xnor|not|mov|shiftl|shiftr|test|ortest|add|unpck)[bwdq]+|shlx|shrx|sarx|rorx|andn|bzhi|pdep|pext|mulx|lzcnt|movbe|blsi|blsr|blsmsk|bextr)$/
    if (beyond && fn !~ /^_ZZ?N3tfm3cpu(4avx2|6avx512)/) bad[fn] = insn[1]
    if (beyond) simd++
  }
  END { for (f in bad) print "outside a SIMD namespace: " f " (" bad[f] ")"; print "instructions beyond the baseline: " simd + 0 }')
echo "$report" | tail -n 1
if echo "$report" | grep -q "^outside"; then
  echo "$report" | grep "^outside" | head -n 20
  echo "FAIL: instructions beyond the baseline outside tfm::cpu::avx2 / tfm::cpu::avx512"
  exit 1
fi
# The check must have something to find: the AVX-512 build's kernels are there.
echo "$report" | tail -n 1 | grep -qv "baseline: 0$" || { echo "FAIL: no AVX code found at all"; exit 1; }
echo "simd objects check passed"
