# Entry points for people and CI. `make run` starts the main job, `make test` builds and runs every
# test suite, `make bench` runs the benchmarks. BUILD and JOBS can be overridden.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
CLI := $(BUILD)/bin/headscope-cli
SHARED := $(abspath ../shared/data)
STORIES := $(SHARED)/models/stories260K

.PHONY: all configure build run run-cli test test-slurm test-torch2 bench deb clean format fuzz fuzz-build sanitize sanitize-ci check-sources \
  mutation-check

# Fuzzing (issue 25, docs/robustness.md): libFuzzer targets built by clang with ASan + UBSan in their own
# folder; `make fuzz` runs each for FUZZ_SECONDS, FUZZ_JOBS at a time, corpora kept in FUZZ_BUILD/corpus.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_JOBS ?= 1
FUZZ_TARGETS := safetensors gguf llama2c config_json tokenizer_json vocab_json tok_bin dataset session
SANITIZERS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
# `make sanitize`: core, CLI and core tests built with ASan + UBSan (the default compiler; -O1 -g1: line
# numbers in reports, half the compile time of -O2 -g) and run.
# SANITIZE_TARGETS limits what is built (default: everything), SANITIZE_TESTS what runs (a CTest regex).
SANITIZE_BUILD ?= build-sanitize
SANITIZE_TESTS ?= .
SANITIZE_TARGETS ?=
# The subset CI runs (`make sanitize-ci`): the suites of every reader of untrusted input (procfs too) and the
# replays of the regression corpus, which need only the reader libraries; the suites that run headscope-cli
# (hostile inputs, robust I/O) and the analyses are left to `make sanitize`, which builds everything.
SANITIZE_CI_TESTS := test_json_read test_safetensors test_llama2c test_gguf \
  test_session test_export_csv test_results_json test_load_config test_tokenizer_errors test_bytelevel_bpe \
  test_sentencepiece_tokenizers test_task_datasets test_util_error test_util_memory test_engine_thread_policy
SANITIZE_CI_REPLAYS := $(addprefix fuzz_replay_,$(FUZZ_TARGETS))

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

# Each suite runs on one thread (tests/CMakeLists.txt), so as many suites run at once as there are cores.
test: build
	cd $(BUILD) && ctest -j$(JOBS) --output-on-failure --timeout 900

# Only the batch test on a real single-node Slurm (root; ./scripts/setup.sh --with-slurm installs Slurm).
test-slurm: build
	cd $(BUILD) && ctest --output-on-failure --timeout 900 -L slurm

bench: build
	@for b in $(BUILD)/bin/bench_*; do echo "== $$b"; $$b || exit 1; done

# The Debian package $(BUILD)/headscope_<version>_amd64.deb: builds the two programs, then CPack.
deb: configure
	cmake --build $(BUILD) -j$(JOBS) --target deb

fuzz-build:
	cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_CXX_FLAGS="$(SANITIZERS) -fno-sanitize=vptr -fsanitize=fuzzer-no-link" -DHEADSCOPE_FUZZ=ON \
	  -DHEADSCOPE_BUILD_GUI=OFF -DHEADSCOPE_BUILD_TESTS=OFF -DHEADSCOPE_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build $(FUZZ_BUILD) -j$(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))

fuzz: fuzz-build
	python3 fuzz/make_seeds.py $(FUZZ_BUILD)/corpus
	fuzz/run_fuzzers.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_JOBS) $(FUZZ_TARGETS)

sanitize:
	cmake -S . -B $(SANITIZE_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -g1" \
	  -DCMAKE_CXX_FLAGS="$(SANITIZERS)" \
	  -DHEADSCOPE_BUILD_GUI=OFF -DHEADSCOPE_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build $(SANITIZE_BUILD) -j$(JOBS) $(if $(SANITIZE_TARGETS),--target $(SANITIZE_TARGETS))
	cd $(SANITIZE_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest -j$(JOBS) --output-on-failure --timeout 1800 -R '$(SANITIZE_TESTS)'

sanitize-ci:
	$(MAKE) --no-print-directory sanitize \
	  SANITIZE_TARGETS="$(SANITIZE_CI_TESTS) $(SANITIZE_CI_REPLAYS)" \
	  SANITIZE_TESTS='^($(subst $(eval) ,|,$(strip $(SANITIZE_CI_TESTS) $(SANITIZE_CI_REPLAYS))))$$'

# Each torch-using core source compiles without the precompiled header, as scripts/gpu_check.sh builds them.
check-sources:
	JOBS=$(JOBS) scripts/check_sources_alone.sh

# Each fixed defect of issues 22 and 24 brought back into the code, one at a time: its test must fail
# (tests/mutations/, docs/mutation-checks.md). About an hour on 2 cores; not part of `make test`.
mutation-check: build
	BUILD=$(BUILD) scripts/mutation_check.sh

format:
	find core app widgets tests bench fuzz -name '*.h' -o -name '*.cpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD)

# PyTorch 2.x (the reference environment's wheel, ./scripts/setup.sh --with-reference): core, CLI and the core
# tests built against its libtorch and run. The wheel is a CUDA build, so HeadScope's CUDA code paths compile
# and link against libtorch_cuda with the machine's CUDA toolkit (nvcc); without a GPU they run on the CPU.
# With the precompiled header, as the main build (`make check-sources` checks that each source also compiles on its
# own includes, as scripts/gpu_check.sh builds them). The reference suites run in `make test`.
TORCH2_BUILD ?= build-torch2
REFERENCE_PYTHON ?= .venv-reference/bin/python
test-torch2:
	@[ -x $(REFERENCE_PYTHON) ] || { echo "test-torch2: $(REFERENCE_PYTHON) missing: run ./scripts/setup.sh --with-reference" >&2; exit 2; }
	cmake -S . -B $(TORCH2_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DHEADSCOPE_BUILD_GUI=OFF \
	  -DHEADSCOPE_BUILD_BENCH=OFF $(CMAKE_FLAGS) \
	  -DCMAKE_PREFIX_PATH="$$($(REFERENCE_PYTHON) -c 'import torch; print(torch.utils.cmake_prefix_path)')"
	cmake --build $(TORCH2_BUILD) -j$(JOBS)
	cd $(TORCH2_BUILD) && ctest -j$(JOBS) --output-on-failure --timeout 900 -LE reference
