# Convenience wrapper around meson (GNU make). `make check` and `make demo`
# each work as one command on a fresh Debian 12 machine: they install the
# build dependencies first (scripts/install-deps, idempotent).

BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
MESON ?= meson

# make fuzz: each target of tests/fuzz runs this long, in seconds (CI: 60);
# FUZZ_TARGETS="qmp policy" runs only those (default: every target, one per
# folder of tests/fuzz/corpus).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= $(notdir $(wildcard tests/fuzz/corpus/*))

# Sanitizer runs: every ASan/UBSan report fails the test. UBSan is made fatal
# at compile time too (-fno-sanitize-recover=all). Leak detection stays on:
# Criterion runs each test in a forked worker and LeakSanitizer checks each
# worker at its exit, so a leak fails the test that leaked.
ASAN_C_ARGS := -fno-sanitize-recover=all -fno-omit-frame-pointer
ASAN_ENV := \
	ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1:print_summary=1 \
	UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1:print_summary=1

# Targets run their prerequisites in the order listed (deps before build);
# meson/ninja parallelise the real work.
.NOTPARALLEL:

.PHONY: all deps build demo check asan-build check-asan check-asan-e2e fuzz bench bench-fleet bench-guest bench-vm architecture-svg format deb check-deb clean

all: build

deps:
	scripts/install-deps

build:
	@test -f $(BUILD)/meson-private/coredata.dat || $(MESON) setup $(BUILD)
	$(MESON) compile -C $(BUILD)

demo: deps build
	demo/run $(BUILD)

check: deps build
	$(MESON) test -C $(BUILD) --print-errorlogs

asan-build:
	@test -f $(ASAN_BUILD)/meson-private/coredata.dat || \
		$(MESON) setup $(ASAN_BUILD) -Db_sanitize=address,undefined -Db_lundef=false \
			-Dc_args="$(ASAN_C_ARGS)"
	$(MESON) compile -C $(ASAN_BUILD)

check-asan: deps asan-build
	$(ASAN_ENV) $(MESON) test -C $(ASAN_BUILD) --no-suite e2e --print-errorlogs

# The end-to-end tests (suite e2e, every one of them) with the host's
# programs (vreclaimd, vreclaimctl) from $(ASAN_BUILD), where a leak or any
# sanitizer report fails the test, and the guest's (agent, workloads, the
# image) from the ordinary $(BUILD): the guest has no sanitizer runtime.
# Needs what the e2e tests of make check need (docs/testing.md); about 25 min.
check-asan-e2e: deps build asan-build
	VR_E2E_GUEST_BUILD=$(abspath $(BUILD)) $(ASAN_ENV) \
		$(MESON) test -C $(ASAN_BUILD) --suite e2e --print-errorlogs

# libFuzzer (clang, ASan, UBSan) in $(FUZZ_BUILD)/: each target for
# FUZZ_SECONDS from its seed corpus; what it finds goes to
# $(FUZZ_BUILD)/fuzz/crashes/TARGET/ (docs/testing.md).
fuzz:
	scripts/install-deps --fuzz
	@test -f $(FUZZ_BUILD)/meson-private/coredata.dat || \
		CC=clang $(MESON) setup $(FUZZ_BUILD) -Dfuzz=true \
			-Db_sanitize=address,undefined -Db_lundef=false
	$(MESON) compile -C $(FUZZ_BUILD) $(addprefix fuzz-,$(FUZZ_TARGETS))
	tests/fuzz/run $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

bench: build
	mkdir -p $(BUILD)/bench
	$(BUILD)/bench/monitor-scale --csv $(BUILD)/bench/monitor-scale.csv
	$(BUILD)/bench/monitor-accuracy --csv $(BUILD)/bench/monitor-accuracy.csv
	$(BUILD)/bench/read-batch --csv $(BUILD)/bench/read-batch.csv
	$(BUILD)/hostd/vreclaimctl simulate --matrix --csv $(BUILD)/bench/damos-matrix.csv

# The real vreclaimd managing 10, 100 and 1000 fake domains (a few minutes;
# run it alone: it measures CPU). FLEET_ARGS="--domains 100 --ticks 60"
# passes options (bench/fleet-scale --help).
FLEET_ARGS ?=
bench-fleet: build
	mkdir -p $(BUILD)/bench
	$(BUILD)/bench/fleet-scale --vreclaimd $(BUILD)/hostd/vreclaimd \
		--fake-qemu $(BUILD)/tests/fake-qemu \
		--csv $(BUILD)/bench/fleet-scale.csv $(FLEET_ARGS)

# Real guests (about 30 minutes): both layouts of the hot set, THP off and on
# for the workload, and the control run without reclaim; one CSV row each.
bench-guest: build
	mkdir -p $(BUILD)/bench
	rm -f $(BUILD)/bench/guest-reclaim.csv
	for thp in off on; do \
		for layout in clustered interleaved; do \
			tests/e2e/guest-reclaim $(BUILD) $$layout --thp $$thp \
				--csv $(BUILD)/bench/guest-reclaim.csv || exit 1; \
		done; \
	done
	tests/e2e/guest-reclaim $(BUILD) control --csv $(BUILD)/bench/guest-reclaim.csv
	column -s, -t $(BUILD)/bench/guest-reclaim.csv

# The nested-VM benchmark harness, the full matrix (docs/benchmarks-vm.md:
# many hours on two TCG cores; bench/vm/run --quick takes about 15 minutes).
# Runs already in build/bench/vm/runs.csv are kept: an interrupted matrix
# goes on where it stopped.
bench-vm: deps build
	bench/vm/run --build $(BUILD)

# docs/architecture.svg from its Graphviz source (Debian's graphviz package).
architecture-svg:
	@command -v dot >/dev/null || { echo "architecture-svg: needs Graphviz's dot (apt-get install graphviz)" >&2; exit 1; }
	dot -Tsvg docs/architecture.dot -o docs/architecture.svg

format:
	git ls-files -z -- '*.c' '*.h' | xargs -0 -r clang-format -i

# The Debian packages vreclaimd and vreclaim-agent (debian/) of this
# checkout, with their .buildinfo and .changes, in $(BUILD)/deb/.
# dpkg-buildpackage builds in obj-<triplet>/ and writes to the parent
# folder: the files it wrote are those debian/files lists (the packages, their
# -dbgsym packages, the .buildinfo) and the .changes, named after the
# version and architecture, which are moved from there.
deb:
	scripts/install-deps --deb
	dpkg-buildpackage -us -uc -b
	mkdir -p $(BUILD)/deb
	version=$$(dpkg-parsechangelog -SVersion) arch=$$(dpkg-architecture -qDEB_HOST_ARCH) && \
		files="$$(cut -d' ' -f1 debian/files) vreclaim_$${version}_$${arch}.changes" && \
		cd .. && mv -f $$files $(abspath $(BUILD))/deb/
	debian/rules clean
	ls -l $(BUILD)/deb

# The packages installed into a clean Debian 12 root (debootstrap, kept as
# a tarball in $(BUILD)/deb-cache/) and checked: files, units, conffile,
# reinstall, purge (tests/packaging/check-deb; root, and a Debian mirror).
check-deb: deb
	tests/packaging/check-deb $(BUILD)/deb $(BUILD)/deb-cache

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
