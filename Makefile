# Entry points for people and CI. `make run` starts the main job, `make test` builds and runs every
# test suite, `make bench` runs the benchmarks. BUILD and JOBS can be overridden.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
CLI := $(BUILD)/bin/headscope-cli
SHARED := $(abspath ../shared/data)
STORIES := $(SHARED)/models/stories260K

.PHONY: all configure build run run-cli test test-slurm bench deb clean format

all: build

configure:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

# Main job: the GUI on the embedded toy model (it opens the toy model and a toy task and runs the first
# analyses); without a display, the headless alternative through the CLI on the same model.
run: build
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then \
	  $(BUILD)/bin/headscope; \
	else \
	  echo "no display: running the headless alternative (make run-cli)"; $(MAKE) --no-print-directory run-cli; \
	fi

run-cli: build
	$(CLI) info toy
	$(CLI) eval-toy --model toy --n 100
	$(CLI) tsla toy --task toy:category_label --n 24 --out $(BUILD)/toy-tsla.hscope --json $(BUILD)/toy-tsla.json
	$(CLI) induction toy --out $(BUILD)/toy-induction.hscope
	$(CLI) export $(BUILD)/toy-tsla.hscope --csv $(BUILD)/toy-tsla-csv

test: build
	cd $(BUILD) && ctest --output-on-failure --timeout 900 -LE slurm

# The batch path on a real single-node Slurm (needs root and Debian's slurmctld, slurmd, slurm-client, munge).
test-slurm: build
	cd $(BUILD) && ctest --output-on-failure --timeout 900 -L slurm

bench: build
	@for b in $(BUILD)/bin/bench_*; do echo "== $$b"; $$b || exit 1; done

# The Debian package $(BUILD)/headscope_<version>_amd64.deb: builds the two programs, then CPack.
deb: configure
	cmake --build $(BUILD) -j$(JOBS) --target deb

format:
	find core app widgets tests bench -name '*.h' -o -name '*.cpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
