# The commands a newcomer runs (see README.md). Each installs what is missing, then builds.
BUILD ?= build
JOBS  ?= $(shell nproc)

.PHONY: all deps configure build test bench demo fixtures clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

configure: deps $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# Every test through ctest. Each test program runs its OpenMP kernels on 1 thread so that ctest can
# run $(JOBS) programs side by side; the thread-count tests set their own counts.
test: build
	cd $(BUILD) && OMP_NUM_THREADS=1 ctest -j $(JOBS) --output-on-failure --timeout 300

# Micro-benchmarks (never timed tests): 2 threads, figures recorded in docs/performance.md.
bench: build
	OMP_NUM_THREADS=2 $(BUILD)/bench/tfm_bench --benchmark_counters_tabular=true

# The main job on bundled data.
demo: build
	$(BUILD)/demo_attention_copy

# Regenerates the committed PyTorch fixtures in tests/fixtures (needs python3-torch).
fixtures:
	@scripts/install-deps.sh --fixtures
	/usr/bin/python3 tools/make_fixtures.py --out tests/fixtures

clean:
	rm -rf $(BUILD)
