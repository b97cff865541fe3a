# Entry points for people and CI. `make run` starts the main job, `make test` builds and runs every
# test suite, `make bench` runs the benchmarks. BUILD and JOBS can be overridden.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
CLI := $(BUILD)/bin/headscope-cli
SHARED := $(abspath ../shared/data)
STORIES := $(SHARED)/models/stories260K

.PHONY: all configure build run run-cli test bench clean format

all: build

configure:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

# Main job: the GUI (on stories260K until the embedded toy model ships); without a display, the
# headless alternative through the CLI.
run: build
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then \
	  $(BUILD)/bin/headscope $(STORIES)/stories260K.bin --tokenizer $(STORIES)/tok512.bin; \
	else \
	  echo "no display: running the headless alternative (make run-cli)"; $(MAKE) --no-print-directory run-cli; \
	fi

run-cli: build
	$(CLI) info $(STORIES)/stories260K.bin
	$(CLI) tokenize --tokenizer $(STORIES)/tok512.bin --text "Once upon a time"
	$(CLI) generate $(STORIES)/stories260K.bin --tokenizer $(STORIES)/tok512.bin --text "Once upon a time" --max-new 60

test: build
	cd $(BUILD) && ctest --output-on-failure --timeout 900

bench: build
	@for b in $(BUILD)/bin/bench_*; do echo "== $$b"; $$b || exit 1; done

format:
	find core app widgets tests bench -name '*.h' -o -name '*.cpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
