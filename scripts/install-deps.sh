#!/usr/bin/env bash
# Installs the Debian packages this project builds and tests with. Idempotent: installs only what is
# missing, runs `apt-get update` at most once, and does nothing (no network) when all is present.
# Runs as root directly, through sudo otherwise.
#
#   scripts/install-deps.sh              build + test + benchmark dependencies
#   scripts/install-deps.sh --fixtures   also python3-torch, needed only to regenerate the PyTorch
#                                        fixtures (tools/make_fixtures.py); tests never need it
#   scripts/install-deps.sh --fuzz       also clang and its runtime, for `make fuzz` (libFuzzer)
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libopenblas-openmp-dev      # BLAS, OpenMP variant: BLAS and our kernels share one thread pool
  libdnnl-dev                 # oneDNN (OpenMP build): large float GEMMs and VNNI int8 GEMMs
  ocl-icd-opencl-dev          # only a Recommends of libdnnl-dev, but its CMake config needs OpenCL
  libsentencepiece-dev        # subword vocabulary
  nlohmann-json3-dev          # config files, checkpoint headers, fixtures
  libcli11-dev                # command line
  libgtest-dev libgmock-dev   # tests
  libbenchmark-dev            # micro-benchmarks (make bench)
)
for arg in "$@"; do
  case "$arg" in
    --fixtures) packages+=(python3-torch python3-numpy) ;;
    --fuzz) packages+=(clang libclang-rt-dev) ;;
    *) echo "install-deps.sh: unknown option '$arg' (known: --fixtures, --fuzz)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "install-deps.sh: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
