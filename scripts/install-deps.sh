#!/usr/bin/env bash
# Installs the Debian packages this project builds and tests with. Idempotent: installs only what is
# missing, runs `apt-get update` at most once, and does nothing (no network) when all is present.
# Runs as root directly, through sudo otherwise.
#
#   scripts/install-deps.sh              build + test + benchmark dependencies (the Python module's
#                                        included: Debian's python3, pybind11, NumPy and pytest)
#   scripts/install-deps.sh --fixtures   also python3-torch, needed only to regenerate the PyTorch
#                                        fixtures (tools/make_fixtures.py); tests never need it
#   scripts/install-deps.sh --fuzz       also clang and its runtime, for `make fuzz` (libFuzzer)
#   scripts/install-deps.sh --arm64      also the aarch64 cross toolchain, qemu-user and the arm64
#                                        libraries (Debian multiarch, `dpkg --add-architecture arm64`),
#                                        for `make test-arm64` (docs/arm64.md)
set -euo pipefail

arm64=0
packages=(
  build-essential cmake ninja-build pkg-config
  libopenblas-openmp-dev      # BLAS, OpenMP variant: BLAS and our kernels share one thread pool
  libdnnl-dev                 # oneDNN (OpenMP build): large float GEMMs and VNNI int8 GEMMs
  ocl-icd-opencl-dev          # only a Recommends of libdnnl-dev, but its CMake config needs OpenCL
  libsentencepiece-dev        # subword vocabulary
  nlohmann-json3-dev          # config files, checkpoint headers, fixtures
  libxxhash-dev               # XXH3-64 checksums of model and shortlist files
  libcli11-dev                # command line
  libzip-dev                  # .npz archives: Marian (OPUS-MT) models, for `transformer import marian`
  libyaml-cpp-dev             # Marian's YAML vocabularies and model configuration (yaml-cpp, as Marian writes them)
  libicu-dev                  # Unicode for Hugging Face tokenizers: normalization, categories, case, regexes (ICU)
  libcpp-httplib-dev          # `transformer serve` (HTTP server)
  zlib1g-dev                  # gzip bodies in the server's tests (tests/serve/http_limits_test.cc)
  libopenmpi-dev openmpi-bin  # data-parallel training over several processes (mpirun; docs/training.md)
  python3-jsonschema          # its OpenAPI document checked against it (tests/serve/openapi_test.py)
  chromium chromium-driver python3-selenium  # its web page in a headless browser (tests/serve/browser_test.py)
  libgtest-dev libgmock-dev   # tests
  libbenchmark-dev            # micro-benchmarks (make bench)
  qemu-user                   # qemu-x86_64 runs the binary on emulated older CPUs (tests/cli/portable_test.sh)
  python3-dev pybind11-dev    # the Python module (python/): Debian's Python headers and pybind11
  python3-numpy python3-pytest  # the Python module's attention arrays, and its tests
)
for arg in "$@"; do
  case "$arg" in
    --fixtures) packages+=(python3-torch python3-numpy) ;;
    --fuzz) packages+=(clang libclang-rt-dev) ;;
    --arm64)
      arm64=1
      packages+=(
        crossbuild-essential-arm64               # aarch64-linux-gnu-g++ (qemu-aarch64, from qemu-user, runs the tests)
        libc6:arm64                              # /lib/ld-linux-aarch64.so.1: qemu-aarch64 runs with it
        libopenblas-openmp-dev:arm64
        libxxhash-dev:arm64
        libicu-dev:arm64
        libzip-dev:arm64
        libgomp1:arm64                           # for libdnnl2:arm64, which is unpacked (below)
        libgtest-dev:arm64 libgmock-dev:arm64 libbenchmark-dev:arm64
      ) ;;  # nlohmann-json3-dev and libcli11-dev are header-only (Architecture: all): the host's serve
    *) echo "install-deps.sh: unknown option '$arg' (known: --fixtures, --fuzz, --arm64)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Three arm64 libraries cannot be installed beside their amd64 versions in Debian 12: SentencePiece
# and yaml-cpp's -dev package are not Multi-Arch (libsentencepiece0:arm64 or libyaml-cpp-dev:arm64
# would remove the amd64 package and break the native build), and libdnnl-dev:arm64 is Multi-Arch:
# same but its dnnl_config.h differs from amd64's (no OpenCL GPU runtime), which dpkg refuses. Their
# packages, each with the runtime library its libX.so link names, are unpacked, not installed, into
# ARM64_SYSROOT, which cmake/aarch64-linux-gnu.cmake searches first; a stamp per package records what
# is there.
sysroot=${ARM64_SYSROOT:-/opt/arm64-sysroot}
unpack=()
if ((arm64)); then
  for p in libsentencepiece0 libsentencepiece-dev libdnnl2 libdnnl-dev libyaml-cpp0.7 libyaml-cpp-dev; do
    [ -f "$sysroot/.unpacked/$p" ] || unpack+=("$p:arm64")
  done
fi
if ((${#missing[@]} == 0 && ${#unpack[@]} == 0)); then
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
if ((arm64)) && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "install-deps.sh: dpkg --add-architecture arm64"
  "${sudo[@]}" dpkg --add-architecture arm64
fi
what=("${missing[@]}")
((${#unpack[@]} == 0)) || what+=("(unpacked into $sysroot:)" "${unpack[@]}")
echo "install-deps.sh: installing ${what[*]}"
"${sudo[@]}" apt-get update -qq
if ((${#missing[@]} > 0)); then
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if ((${#unpack[@]} > 0)); then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  [ "$(id -u)" -ne 0 ] || chown _apt "$tmp" 2>/dev/null || true  # apt's download sandbox user
  (cd "$tmp" && apt-get download -qq "${unpack[@]}")
  "${sudo[@]}" mkdir -p "$sysroot/.unpacked"
  for p in "${unpack[@]}"; do
    p=${p%:arm64}
    "${sudo[@]}" dpkg-deb -x "$tmp/${p}"_*_arm64.deb "$sysroot"
    # .pc files name /usr as their prefix; point them at the unpacked copy.
    for pc in $(dpkg-deb -c "$tmp/${p}"_*_arm64.deb | grep -o '[^ ]*\.pc$'); do
      "${sudo[@]}" sed -i "s|^prefix=/usr\$|prefix=$sysroot/usr|" "$sysroot/$pc"
    done
    echo "$(dpkg-deb -f "$tmp/${p}"_*_arm64.deb Version)" | "${sudo[@]}" tee "$sysroot/.unpacked/$p" >/dev/null
  done
fi
