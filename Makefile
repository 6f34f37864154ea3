# Convenience wrapper around CMake. `make demo` builds and runs dotlm on a
# generated tiny model; `make test` builds and runs the whole test suite.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all build demo test asan-test clean

all: build

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	@[ -f demo-model/model.safetensors ] || python3 tools/make_demo_model.py demo-model
	./$(BUILD)/dotlm run demo-model --chat -p "Write a haiku about memory bandwidth." -n 48 --seed 1

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

asan-test:
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DDOTLM_SANITIZE=ON >/dev/null
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -L 'unit|asan' -j $(JOBS)

clean:
	rm -rf $(BUILD) build-asan demo-model
