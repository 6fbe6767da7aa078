# The inference container (container/, its own Go module with cgo).
#
#   make deps-container   install libespeak-ng-dev, espeak-ng, sox, the codec libraries and ONNX Runtime (only what is missing)
#   make container-build  build bin/speech-container
#   make container-test   build, then go test the container module against the real libraries
#   make container-bench  the gate/stream and espeak benchmarks
#
# Paths are relative to the repository root, where the root Makefile includes this file.

# What the build, the tests and the README's soxi check need; the stand-in model's generator needs more (below).
# libopus-dev, libsoxr-dev, libmp3lame-dev, libflac-dev: the opus/resampling/mp3/flac encoders (cgo); opus-tools
# (opusinfo, opusdec) and flac: the decoders the format tests check answers with.
CONTAINER_APT_PACKAGES := libespeak-ng-dev espeak-ng sox libsox-fmt-base libopus-dev libsoxr-dev libmp3lame-dev libflac-dev opus-tools flac pkg-config
CONTAINER_TESTDATA_APT_PACKAGES := python3-onnx python3-numpy
CONTAINER_ORT_LIB := $(CURDIR)/.cache/onnxruntime/libonnxruntime.so.1
CONTAINER_ENV := CGO_ENABLED=1 ONNXRUNTIME_LIB=$(CONTAINER_ORT_LIB)

DEPS_EXTRA += deps-container
BUILD_EXTRA += container-build
TEST_EXTRA += container-test

.PHONY: container-apt-packages deps-container container-build container-test container-bench container-testdata

# The package list, for installers outside make (the GitHub workflow installs them with sudo).
container-apt-packages:
	@echo $(CONTAINER_APT_PACKAGES)

deps-container: ## install the container's system packages and ONNX Runtime (only what is missing)
	@bash scripts/apt-install-missing.sh $(CONTAINER_APT_PACKAGES)
	@bash scripts/install-onnxruntime.sh

# Written beside and renamed over bin/speech-container: go build -o rewrites its output in place, and a test of a
# second make (CI runs make test and make test-measurement at once) may be running the binary while it does.
container-build: ## build bin/speech-container (cgo: libespeak-ng, ONNX Runtime loaded at run time)
	@mkdir -p bin
	cd container && $(CONTAINER_ENV) $(GO) build -o $(CURDIR)/bin/.speech-container.$$$$ . && mv -f $(CURDIR)/bin/.speech-container.$$$$ $(CURDIR)/bin/speech-container

container-test: deps-container container-build ## test the container module with -race (tests use bin/speech-container)
	cd container && $(CONTAINER_ENV) SPEECH_CONTAINER_BIN=$(CURDIR)/bin/speech-container $(GO) test -count=1 -race ./...

container-bench: deps-container container-build ## benchmarks: gate and stream overhead, espeak pool vs serialized
	cd container && $(CONTAINER_ENV) SPEECH_CONTAINER_BIN=$(CURDIR)/bin/speech-container $(GO) test -run '^$$' -bench . -benchtime 2s ./...

container-testdata: ## regenerate the tiny stand-in Kokoro model in container/testdata (Debian python3-onnx)
	@bash scripts/apt-install-missing.sh $(CONTAINER_TESTDATA_APT_PACKAGES)
	/usr/bin/python3 container/testdata/make_tiny_kokoro.py

.PHONY: container-g2p-golden
container-g2p-golden: deps-node ## regenerate container/testdata/g2p/golden.jsonl from kokoro-js 1.2.1's phonemizer (the G2P oracle)
	node container/testdata/g2p/oracle.mjs container/testdata/g2p/corpus.txt container/testdata/g2p/golden.jsonl
