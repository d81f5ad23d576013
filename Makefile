# The commands a newcomer runs (see README.md). Each installs what is missing, then builds.
BUILD ?= build
JOBS  ?= $(shell nproc)

.PHONY: all deps configure build install test test-sanitize deps-arm64 test-arm64 bench demo fixtures fuzz clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

configure: deps $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The library, its headers and package config, and the command (docs/api.md): PREFIX=/usr/local.
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# Every test through ctest. Each test program runs its OpenMP kernels on 1 thread so that ctest can
# run $(JOBS) programs side by side; the thread-count tests set their own counts.
test: build
	cd $(BUILD) && OMP_NUM_THREADS=1 ctest -j $(JOBS) --output-on-failure --timeout 300

# The suite under AddressSanitizer and UndefinedBehaviorSanitizer (float-to-int overflow included;
# the first report fails its test) in build-sanitize, at the CPU's own level and the generic one
# (the other levels run the same code as these two's SIMD builds but for the vector width), without
# the emulated-CPU check (qemu does not run sanitized binaries). Not part of `make test`: with its
# own build it would take that past 10 minutes (README).
BUILD_SANITIZE ?= build-sanitize
SANITIZE = -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer
test-sanitize: deps
	cmake -S . -B $(BUILD_SANITIZE) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTFM_BUILD_BENCH=OFF \
	  -DCMAKE_CXX_FLAGS="$(SANITIZE)" -DCMAKE_EXE_LINKER_FLAGS="$(SANITIZE)"
	cmake --build $(BUILD_SANITIZE) -j $(JOBS)
	cd $(BUILD_SANITIZE) && OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=1 ctest -j $(JOBS) --output-on-failure \
	  --timeout 900 -E '^(avx2|avx512|avx512_vnni|avx512_bf16|amx):|portable|^cli\.mpi_'
# Open MPI keeps allocations until exit, many in plugins it has unloaded by then (no library name
# for a suppression to match): the MPI runs keep ASan's and UBSan's other checks, not LeakSanitizer.
	cd $(BUILD_SANITIZE) && OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=0 ctest -j $(JOBS) --output-on-failure \
	  --timeout 900 -R '^cli\.mpi_'

# The same suite cross-compiled for aarch64 (Debian's cross toolchain and arm64 libraries) and run
# under qemu-aarch64, no binfmt_misc needed (docs/arm64.md). No -march=native: the build machine is
# not the target.
BUILD_ARM64 ?= build-arm64
$(BUILD_ARM64)/build.ninja:
	cmake -S . -B $(BUILD_ARM64) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake

deps-arm64:
	@scripts/install-deps.sh --arm64

test-arm64: deps-arm64 $(BUILD_ARM64)/build.ninja
	cmake --build $(BUILD_ARM64) -j $(JOBS)
	cd $(BUILD_ARM64) && OMP_NUM_THREADS=1 ctest -j $(JOBS) --output-on-failure --timeout 300

# Benchmarks (never timed tests): op-level and whole-model at 2 threads, then the peers in the same
# run and the ratios (scripts/bench.sh); figures recorded in docs/performance.md.
bench: build
	cmake --build $(BUILD) -j $(JOBS) --target benchmarks
	BIN=$(BUILD)/bench/tfm_bench scripts/bench.sh

# The main job on bundled data: generate the number-words task, train, score, translate, plot.
demo: build
	BIN=$(BUILD)/transformer scripts/demo.sh

# Regenerates the committed PyTorch fixtures in tests/fixtures, the model family's in
# tests/fixtures/family (needs python3-torch).
fixtures:
	@scripts/install-deps.sh --fixtures
	/usr/bin/python3 tools/make_fixtures.py --out tests/fixtures
	/usr/bin/python3 tools/make_family_fixtures.py --out tests/fixtures/family

# Fuzzes the model-file loader for FUZZ_SECONDS under AddressSanitizer and UBSan (clang, libFuzzer),
# starting from a valid model file; crashes are written to build-fuzz/crash-*.
FUZZ_SECONDS ?= 60
fuzz: build
	@scripts/install-deps.sh --fuzz
	cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
	  -DTFM_FUZZ=ON -DTFM_BUILD_TESTS=OFF -DTFM_BUILD_BENCH=OFF
	cmake --build build-fuzz --target safetensors_fuzzer
	mkdir -p build-fuzz/corpus
	$(BUILD)/transformer init --preset tiny --vocab-size 16 --d-model 8 --heads 2 --d-ff 8 --layers 1 \
	  -o build-fuzz/corpus/seed.safetensors
	cd build-fuzz && ./fuzz/safetensors_fuzzer -max_total_time=$(FUZZ_SECONDS) -max_len=65536 corpus

clean:
	rm -rf $(BUILD)
