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
  # At the CPU's own level the unforced run of the same test covers it: not twice.
  if [ -n "${TFM_CPU_ISA:-}" ] && "$1" info --cpu | grep -q '^level .*(detected)$'; then
    echo "skipped: TFM_CPU_ISA=$TFM_CPU_ISA is this CPU's own level, which the unforced run tests"
    exit 77
  fi
}
