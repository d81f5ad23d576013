# Sourced by the command-line tests. ctest runs each of them once per instruction-set level
# (TFM_CPU_ISA, tests/CMakeLists.txt); at a level this CPU lacks, the test is skipped (77, ctest's
# SKIP_RETURN_CODE) instead of failing on the error the level gives.
skip_unsupported_level() {
  local err
  if ! err=$("$1" info --cpu 2>&1 >/dev/null); then
    case "$err" in
      *"does not have it"*) echo "skipped: $err"; exit 77 ;;
      *) echo "FAIL: transformer info --cpu: $err" >&2; exit 1 ;;
    esac
  fi
}
