# Sourced by the command-line tests. ctest runs each of them once per instruction-set level
# (TFM_CPU_ISA, tests/CMakeLists.txt); at a level this CPU lacks, the test is skipped (77, ctest's
# SKIP_RETURN_CODE) instead of failing on the error the level gives; at its own level too (the
# test's unforced run covers it).
skip_unsupported_level() {
  local err
  if ! err=$("$1" info --cpu 2>&1 >/dev/null); then
    case "$err" in
      *"does not have it"*) echo "skipped: $err"; exit 77 ;;
      *) echo "FAIL: transformer info --cpu: $err" >&2; exit 1 ;;
    esac
  fi
  # A level whose products the CPU's own run and the lower levels' runs cover for this script
  # (TFM_TEST_COVERED_FROM, tests/CMakeLists.txt).
  if [ -n "${TFM_CPU_ISA:-}" ] && [ -n "${TFM_TEST_COVERED_FROM:-}" ]; then
    if TFM_CPU_ISA=$TFM_TEST_COVERED_FROM "$1" info --cpu > /dev/null 2>&1; then  # the CPU has that level
      echo "skipped: TFM_CPU_ISA=$TFM_CPU_ISA, covered here by this CPU's own level and the levels below"
      exit 77
    fi
  fi
  # At the CPU's own level the unforced run of the same test covers it: not twice.
  if [ -n "${TFM_CPU_ISA:-}" ] && "$1" info --cpu | grep -q '^level .*(detected)$'; then
    echo "skipped: TFM_CPU_ISA=$TFM_CPU_ISA is this CPU's own level, which the unforced run tests"
    exit 77
  fi
}

# Called where a script's checks of what the kernels compute end and its checks of messages, flags,
# limits, files and signals begin (which no kernel changes): at a forced level (TFM_CPU_ISA) the
# script ends there, and the unforced run alone goes on.
end_of_level_checks() {
  if [ -n "${TFM_CPU_ISA:-}" ]; then
    echo "level $TFM_CPU_ISA: the computed results checked; the rest is level-independent (the unforced run checks it)"
    exit 0
  fi
}
