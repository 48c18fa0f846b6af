# The README's two commands: `make demo` and `make test`. Each installs what is missing first.
.PHONY: deps build test test-asan demo bench bench-live bench-overload bench-ha bench-sim bench-scheduler clean

JOBS ?= $(shell nproc)

deps:
	@scripts/install-deps

build: deps
	cmake --preset release
	cmake --build --preset release -j $(JOBS)

test: build
	@tests/e2e/openai/setup.sh
	ctest --preset release -j $(JOBS)

test-asan: deps
	cmake --preset asan
	cmake --build --preset asan -j $(JOBS)
	@tests/e2e/openai/setup.sh
	ctest --preset asan -j $(JOBS)

demo: build
	scripts/demo

bench: build
	bench/proxy-overhead/run.sh

bench-live: build
	bench/live/run.sh

bench-overload: build
	bench/live/overload.sh

bench-ha: build
	bench/live/ha.sh

bench-sim: build
	bench/sim-capacity/run.sh

bench-scheduler: build
	build/release/scheduler_bench --benchmark_min_time=2

clean:
	rm -rf build
