# Thin wrapper around CMake. `make run` and `make test` are the two set-up commands.
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
# Seconds per fuzz harness: a short run in `make test`, a longer one in `make fuzz`.
FUZZ_TEST_SECONDS ?= 3
FUZZ_SECONDS ?= 60
JOBS ?= $(shell nproc)

.PHONY: all deps configure build run test test-vm test-asan fuzz soak package clean

all: build

deps:
	@bash scripts/deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	@bash scripts/demo.sh $(BUILD)

# Every test, label by label (unit, integration, quality, perf, real, then the fuzz harnesses,
# the package and the system test; vm where the tree has it), ending with a table per label.
# TEST_STEPS picks some: make test TEST_STEPS="unit quality".
test: build
	@JOBS=$(JOBS) FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_TEST_SECONDS=$(FUZZ_TEST_SECONDS) \
		bash scripts/test.sh $(BUILD) $(TEST_STEPS)

# The VM test alone (tests/vm, docs/testing.md): the package, then a Debian 12 VM that installs it.
test-vm: build
	@bash scripts/test.sh $(BUILD) package vm

test-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPCTL_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	@cd $(ASAN_BUILD) && ctest -j $(JOBS) --output-on-failure -L '^(unit|integration)$$'

# The 10-minute soak of issue 28 (tests/soak/soak.sh): not part of `make test`, whose
# integration tests run its short mode (test_soak_short, about a minute). Niced: the machine is shared.
soak: build
	@TEST_LIB=$(CURDIR)/tests/integration/lib.sh BUILD_DIR=$(CURDIR)/$(BUILD) SRC_DIR=$(CURDIR) \
		PCTL=$(CURDIR)/$(BUILD)/pctl PCTLD=$(CURDIR)/$(BUILD)/pctld PBENCH=$(CURDIR)/$(BUILD)/pbench \
		nice bash tests/soak/soak.sh $(SOAK_ARGS)

fuzz: deps
	@bash scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# The Debian package, built from the working tree in a copy: $(BUILD)/pctl_*.deb.
package: deps
	@bash scripts/package.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
