# speech-infra — build, test and synthesize.
#
#   make demo    the whole measurement loop on the local emulator in a few minutes (no AWS account)
#   make test    set up what is missing, then run every test and linter (what CI runs)
#   make docs    regenerate the README's charts in docs/ from a real local run (the demo's)
#   make synth   synthesize the CDK app for MODEL (default kokoro-82m) into cdk.out/
#   make build   build every binary into bin/
#   make lint    gofmt, go vet, staticcheck, deadcode, cfn-lint over every synthesized template, actionlint
#
# Every target that needs a tool depends on `deps`, which installs only what is missing.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
MODEL ?= kokoro-82m
MODELS := kokoro-82m espeak-ng
GO ?= go
CDK := npx --no-install cdk
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_VERSION_CHECK := 1

# Fragments owned by parts of the project (the container, ...) add their own targets.
include $(wildcard mk/*.mk)

GO_FILES = $(shell find . -name '*.go' -not -path './node_modules/*' -not -path './.cache/*' -not -path './cdk.out/*')
CMDS := $(notdir $(wildcard cmd/*))

.PHONY: all build build-cmds test test-go synth synth-all fixture-plans lint lint-go lint-staticcheck lint-deadcode lint-cfn lint-actions deps deps-node deps-tools demo docs clean help

all: build

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort

deps: deps-node deps-tools deps-go-modules $(DEPS_EXTRA) ## install what the build and tests need (only what is missing)

deps-node: node_modules/.installed

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

# The Go module proxy can fail a fetch (a TLS handshake timeout has stopped CI). The modules of both modules
# (deps-go-modules) and the pinned Go linters (deps-go-tools, fetched and built into the caches) are fetched
# here, each up to three times, before a build or a linter needs them.
GO_TOOLS = $(ACTIONLINT) $(STATICCHECK) $(DEADCODE)
# go_retry WHAT COMMAND: runs COMMAND up to three times, 10 then 20 s apart, and fails naming WHAT.
go_retry = for i in 1 2 3; do $(2) && break; [ $$i = 3 ] && { echo "could not fetch $(1) from the Go module proxy, three times" >&2; exit 1; }; \
	echo "fetching $(1) failed; again in $$((10 * i)) s" >&2; sleep $$((10 * i)); done
.PHONY: deps-go-modules deps-go-tools
deps-go-modules:
	@$(call go_retry,the modules of go.mod,$(GO) mod download)
	@$(call go_retry,the modules of container/go.mod,(cd container && $(GO) mod download))
deps-go-tools:
	@for t in $(GO_TOOLS); do $(call go_retry,$$t,(d=$$(mktemp -d); trap 'rm -rf $$d' EXIT; GOBIN=$$d $(GO) install $$t)); done

deps-tools:
	@command -v cfn-lint >/dev/null || { echo "cfn-lint not found: install AWS's CloudFormation linter (pip install cfn-lint) and re-run" >&2; exit 1; }

build: build-cmds $(BUILD_EXTRA) ## build every binary into bin/

build-cmds:
	@mkdir -p bin
	@for c in $(CMDS); do echo "go build -o bin/$$c ./cmd/$$c"; $(GO) build -o bin/$$c ./cmd/$$c; done

# make test runs the linters beside the Go tests, on CPU those leave idle, and the container module's tests at once
# (those wait on real audio more than they compute: about 30 CPU-s in 55 s); then the checks on the tests. The Go
# tests alone keep both cores busy for their first 280 s and then wait on the emulator's clock (compare and
# ttotal) on cores half idle; most of the linters' 230 CPU-s fit in that room (they end about a minute
# after the tests, now the last of make test). They run at SCHED_IDLE (chrt --idle; nice 19 where that is
# refused), so the scheduler gives them only a core no test wants: a test's
# goroutine that wakes takes the core from them at once. The measurement tests compare a model from one qmax run
# with a second run; linters at normal priority beside them would slow one run and not the other, a difference
# the comparison would measure. A fresh clone's make test on the 2-core machine: 680–712 s, against 805–862 s
# with the linters first.
IDLE_PRIORITY := $(shell chrt --idle 0 true 2>/dev/null && echo chrt --idle 0 || echo nice -n 19)
test: deps container-build ## every linter and test but the measurement tests (make test-measurement; CI runs both)
	@$(MAKE) --no-print-directory -j 3 --output-sync=target test-go lint-idle $(TEST_EXTRA)
	@$(MAKE) --no-print-directory test-tools

.PHONY: lint-idle
lint-idle: deps-go-tools
	@start=$$(date +%s); $(IDLE_PRIORITY) $(MAKE) --no-print-directory -j 5 --output-sync=target lint-go lint-staticcheck lint-deadcode lint-cfn lint-actions; \
	echo "lint (at $(IDLE_PRIORITY)): every linter passed in $$(( $$(date +%s) - start )) s"

# -race on every package that starts goroutines (NO_RACE_PKGS below), each package within 40 minutes
# (cmd/tts-bench holds the end-to-end measurement and validation tests on the emulator: more than go test's
# default 10); the tests run the container built once by container-build (SPEECH_CONTAINER_BIN, read by
# emulator/emulatortest) instead of building it in each test process.
#
# cmd/tts-bench's tests take 20 minutes one after another, most of test-go, and the longest of them wait on the
# emulator's real time more than they compute: the measurement tests (below), the T_total runs (time-scaled
# instance start-ups), two throttled runs and compare. So they run in test processes of their own (-run of one
# pattern each: TTS_BENCH_APART, _COMPARE, _RACED, _VALIDATION, _SIMULATOR), beside the rest of the package
# (-skip of all of them, TTS_BENCH_ELSEWHERE: no test runs twice or never) and the other packages, all at once
# (make -j). Not TestTTotalUnderThrottling: whether a back-off comes before a client stage depends on the load,
# and beside the rest of the package it failed 1 run in 2; it runs in the rest. Processes, not t.Parallel: the
# tests run the CLI inside the test process, and two runs at once race on urfave/cli's package-level settings
# (its help flag, the templates cliflags.Conventions sets). The test binaries (with and without -race) are
# compiled first, so that the processes do not each compile the packages they import.
TEST_GO = SPEECH_CONTAINER_BIN=$(CURDIR)/bin/speech-container $(GO) test -count=1 -race -timeout 40m
#
# tts-bench compare's two end-to-end runs (about 7.5 minutes, measuring two emulated instance types one after the
# other, waits on the twin's emulated compute) run in a process of their own (TTS_BENCH_COMPARE): added to the
# apart process they made it the whole run's longest pole. Without -race: compare measures one type after the
# other on one goroutine of its own, and qmax's concurrency is raced by TTS_BENCH_RACED; under the race detector
# on a loaded machine its open-loop client falls behind its arrival schedule (past the rate step's 50-ms send-lag
# bound, bench.DefaultMaxRateLag, which is not a flag) and its rate steps are unusable.
#
# The measurement tests compare a model with a measurement: TestInstanceModelAgreesWithEmulator the instance
# model's predictions with a second qmax run (about 7.5 minutes, waiting on 31-s measure windows), and
# TestSimulatorAgreesWithReplay the simulator with a replay on the emulator. They are not part of make test (the
# rest of cmd/tts-bench skips them, TTS_BENCH_ELSEWHERE): `make test-measurement` runs them, each in a process of
# its own, and .ci/run starts it beside make test (so they are measured under the load they have always passed
# under, and CI's time is that of the longer of the two). Without -race: under it the in-process emulator is several
# times slower, and the comparison measured the race detector (a clean-clone CI run: 128 ms predicted from a
# loaded moment of the first qmax run, 58 ms measured by the second); the code they run is raced by the rest.
TTS_BENCH_VALIDATION := ^TestInstanceModelAgreesWithEmulator$$
TTS_BENCH_SIMULATOR := ^TestSimulatorAgreesWithReplay$$
TTS_BENCH_APART := ^(TestTTotal(EndToEnd|NoRequestReachesTheNewInstance|RecoveryThatCannotCome|PartialAndInterrupted)|Test(QMax|Replay)UnderThrottling)$$
TTS_BENCH_COMPARE := ^TestCompare(EndToEnd|Interrupted)$$
#
# The rest of cmd/tts-bench runs without -race but for TTS_BENCH_RACED, in two processes by the test's name
# (Test[A-Q]…, Test[R-Z]…): one after the other its tests take 6 to 9 minutes, the longest pole, for about 90
# CPU-s (they wait on the emulator's clock). cmd/tts-bench wires packages whose
# concurrency (bench's workers and open loop, measure's runs, the emulator, cloud's clients) is raced by their own
# tests; the race detector made the rest's planning and emulator tests 4 to 9 times slower (TestPlanGolden 55 s
# against 10 s, TestDriftThawValidateEmulator 36 s against 4 s) for no goroutine of cmd/tts-bench's own. Every
# concurrent path is still raced end to end: the closed-loop staircase with its SDK clients (TestQMaxEndToEnd),
# the open loop (TestQMaxRateStaircase), an interrupted run's workers (TestQMaxInterruptKeepsTheFinishedSteps), the
# sharded replay and its merge (TestReplayShardsMergeToOneRun) and ttotal's probe and poller (TTS_BENCH_APART);
# compare's loop over its types by measure's own tests (TestCompareRunInterrupted, under -race in its package).
TTS_BENCH_RACED := ^(TestQMax(EndToEnd|RateStaircase|InterruptKeepsTheFinishedSteps)|TestReplayShardsMergeToOneRun)$$
TTS_BENCH_ELSEWHERE := $(TTS_BENCH_APART)|$(TTS_BENCH_COMPARE)|$(TTS_BENCH_VALIDATION)|$(TTS_BENCH_SIMULATOR)|$(TTS_BENCH_RACED)
TEST_MEASUREMENT := test-measurement-instance-model test-measurement-simulator

.PHONY: test-tools flake-hunt flake-hunt-selftest check-leaks check-leaks-selftest
.PHONY: check-no-race test-go-others test-go-no-race test-go-tts-bench-apart test-go-tts-bench-compare test-go-tts-bench-rest-a test-go-tts-bench-rest-b test-go-tts-bench-raced
.PHONY: test-measurement test-measurement-instance-model test-measurement-simulator

# The longest first (make starts them in this order): compare waits on the emulator for about 7.5 minutes.
TEST_GO_PARTS = test-go-tts-bench-compare test-go-tts-bench-rest-a test-go-tts-bench-rest-b test-go-tts-bench-apart test-go-tts-bench-raced test-go-others test-go-no-race

test-go: deps container-build
	@start=$$(date +%s); $(GO) test -race -c -o /dev/null ./cmd/tts-bench; $(GO) test -c -o /dev/null ./cmd/tts-bench; \
	$(MAKE) --no-print-directory -j 8 --output-sync=target $(TEST_GO_PARTS); \
	echo "test-go: every package passed in $$(( $$(date +%s) - start )) s"

# The packages that start no goroutine run their tests without -race: the race detector has nothing to find in
# code that runs on one goroutine, and it made their folding and simulation 5 to 20 times slower (capacity 213 s
# against 25 s, fixturegen 128 s against 6 s, beside three other test processes on two cores). check-no-race
# refuses the list when one of them starts a goroutine in its own code (then move it back). Their tests' own
# goroutines only bound a hang of one Gate call at a time (capacity's gate and fuzz tests). The CDK app (the
# module's root) and stacks/ synthesize through jsii, whose goroutines are the library's, not this project's; under
# -race they cost about a minute of CPU for nothing of ours to check, as plantest's plan building did.
NO_RACE_PKGS := ./capacity ./capacity/internal/fixturegen ./capacity/plantest ./simulate ./loadmodel ./autoscale . ./stacks ./docs
# PART_TIMER starts a test part's recipe: when the part ends, passed or failed, it prints how long it took, so
# that a log says which part was make test's last.
PART_TIMER = start=$$(date +%s); trap 'echo "$@ ended after $$(( $$(date +%s) - start )) s"' EXIT;
TEST_GO_NO_RACE = SPEECH_CONTAINER_BIN=$(CURDIR)/bin/speech-container $(GO) test -count=1 -timeout 40m

# -p 4, not go test's default of one test binary a core: these packages' tests wait on the emulator's clock more
# than they compute (emulator 210 s, the CDK synthesis 150 s, cmd/speech-infra 135 s: about 1000 s of tests), and
# two at a time made them the last of test-go, on cores half idle. The longest first (TEST_GO_OTHERS_FIRST; go
# test starts its test binaries in the order given): in alphabetical order the emulator's and cmd/speech-infra's
# (about 400 s each beside the rest) started behind a dozen short packages and were test-go's last, on one core.
TEST_GO_OTHERS_FIRST := ./emulator ./cmd/speech-infra ./cloud ./bench ./modelsync
test-go-others:
	$(PART_TIMER) $(TEST_GO) -p 4 $(TEST_GO_OTHERS_FIRST) $$($(GO) list ./... | grep -v '/cmd/tts-bench$$' | grep -vxF "$$($(GO) list $(NO_RACE_PKGS) $(TEST_GO_OTHERS_FIRST))")

# A process of their own: after the raced packages they were test-go-others' last half minute, on one core.
test-go-no-race: check-no-race
	$(PART_TIMER) $(TEST_GO_NO_RACE) $(NO_RACE_PKGS)

check-no-race:
	@bad=$$(grep -HnE '^[[:space:]]*go[[:space:]]+(func|[A-Za-z_][A-Za-z0-9_.]*[(])' \
		/dev/null $$(for p in $(NO_RACE_PKGS); do ls $$p/*.go | grep -v '_test\.go$$'; done) || true); \
	if [ -n "$$bad" ]; then echo "check-no-race: these start goroutines, so their package must run under -race (take it out of NO_RACE_PKGS):" >&2; echo "$$bad" >&2; exit 1; fi

test-go-tts-bench-apart:
	$(PART_TIMER) $(TEST_GO) -run '$(TTS_BENCH_APART)' ./cmd/tts-bench

test-go-tts-bench-compare:
	$(PART_TIMER) $(TEST_GO_NO_RACE) -run '$(TTS_BENCH_COMPARE)' ./cmd/tts-bench

test-go-tts-bench-rest-a:
	$(PART_TIMER) $(TEST_GO_NO_RACE) -run '^Test[A-Q]' -skip '$(TTS_BENCH_ELSEWHERE)' ./cmd/tts-bench

test-go-tts-bench-rest-b:
	$(PART_TIMER) $(TEST_GO_NO_RACE) -run '^Test[R-Z]' -skip '$(TTS_BENCH_ELSEWHERE)' ./cmd/tts-bench

test-go-tts-bench-raced:
	$(PART_TIMER) $(TEST_GO) -run '$(TTS_BENCH_RACED)' ./cmd/tts-bench

test-measurement: deps container-build ## the tests that compare a model with a measurement on the emulator (about 8 minutes)
	@$(MAKE) --no-print-directory -j 2 --output-sync=target $(TEST_MEASUREMENT)

test-measurement-instance-model:
	$(PART_TIMER) $(TEST_GO_NO_RACE) -run '$(TTS_BENCH_VALIDATION)' ./cmd/tts-bench

test-measurement-simulator:
	$(PART_TIMER) $(TEST_GO_NO_RACE) -run '$(TTS_BENCH_SIMULATOR)' ./cmd/tts-bench

# The checks on the tests themselves, after them: the flake hunt finds a test that fails when a goroutine is
# slow, and the leak check catches a test that leaves the emulator running (each shown on a planted case).
test-tools: flake-hunt-selftest check-leaks-selftest

# make flake-hunt PKGS='./cmd/tts-bench' RUN='^TestTTotal' N=10 LOAD=2 [PAR=2] [RACE=0] [TAGS=...]: scripts/flake-hunt.sh
# runs the tests N times (PAR at a time) beside LOAD busy loops and lists each failure with its -shuffle seed and its log.
flake-hunt: ## run PKGS (-run RUN) N times beside LOAD busy loops; list each failure with its seed and log
	@PKGS='$(PKGS)' RUN='$(RUN)' N='$(N)' LOAD='$(LOAD)' PAR='$(PAR)' RACE='$(RACE)' TAGS='$(TAGS)' bash scripts/flake-hunt.sh

# The hunt at its defaults (10 runs, 2 busy loops) on tools/flakeplant's planted flaky test must report it.
flake-hunt-selftest:
	@if out=$$(PKGS=./tools/flakeplant TAGS=flakeplant RACE=0 OUT=.cache/flake-hunt-selftest bash scripts/flake-hunt.sh 2>&1); then \
		echo "$$out"; echo "flake-hunt-selftest: the hunt passed tools/flakeplant's test, which fails when a goroutine is slow" >&2; exit 1; fi; \
	if ! grep -q 'FAILED: TestPlantedSlowGoroutine' <<<"$$out"; then echo "$$out"; echo "flake-hunt-selftest: the hunt failed without naming the planted test" >&2; exit 1; fi; \
	echo "flake-hunt-selftest: the hunt found the planted flaky test: $$(grep -c 'FAILED: TestPlantedSlowGoroutine' <<<"$$out") of 10 runs failed"

check-leaks: ## fail, naming it, when a process a test started is still running
	@bash scripts/check-leaks.sh --wait 10

check-leaks-selftest:
	@bash scripts/check-leaks-selftest.sh

synth: deps ## synthesize the CDK app for MODEL into cdk.out/
	$(CDK) synth -q -c model=$(MODEL)
	@echo "templates: $$(ls cdk.out/*.template.json | tr '\n' ' ')"

# Plan fixtures "measured" against the current container source, so a real synthesis accepts the valid one:
#   npx cdk synth -c autoscaling=true -c plan=.cache/fixture-plans/valid/plan.json
fixture-plans: ## write plan fixtures matching the current container source to .cache/fixture-plans/
	$(GO) run ./capacity/internal/fixturegen -out .cache/fixture-plans -container-dir container

# Every model's app, each into its own directory, for the linters; kokoro also with the plan-gated scaling.
synth-all: deps fixture-plans
	@for m in $(MODELS); do echo "synth $$m"; $(CDK) synth -q -c model=$$m -o cdk.out/lint/$$m > /dev/null; done
	@echo "synth kokoro-82m with the valid fixture plan"
	@$(CDK) synth -q -c model=kokoro-82m -c autoscaling=true -c plan=.cache/fixture-plans/valid/plan.json -o cdk.out/lint/kokoro-82m-scaling > /dev/null
	@grep -q '"AWS::ApplicationAutoScaling::ScalableTarget"' cdk.out/lint/kokoro-82m-scaling/SpeechEndpointStack-kokoro-82m.template.json || { echo "the valid fixture plan did not produce a scalable target" >&2; exit 1; }
	@grep -q '"Custom::SpeechModelCache"' cdk.out/lint/kokoro-82m/SpeechModelCacheStack-kokoro-82m.template.json || { echo "kokoro-82m has weights but no model cache stack was synthesized" >&2; exit 1; }
	@if ls cdk.out/lint/espeak-ng/SpeechModelCacheStack-* >/dev/null 2>&1; then echo "espeak-ng needs no weights but a model cache stack was synthesized" >&2; exit 1; fi

# The linters run at once (each prints its output when it ends): deadcode's whole-program analysis and cfn-lint's
# three syntheses each keep about one core busy for 40 s, and one after the other they were most of lint's time.
lint: deps deps-go-tools ## gofmt, go vet, staticcheck, deadcode, cfn-lint, actionlint
	@$(MAKE) --no-print-directory -j 5 --output-sync=target lint-go lint-staticcheck lint-deadcode lint-cfn lint-actions

# The GitHub workflow cannot run here; actionlint (pinned, through the Go module proxy) checks it.
ACTIONLINT := github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
lint-actions:
	$(GO) run $(ACTIONLINT) -color=false .github/workflows/*.yml

lint-go: deps
	@out=$$(gofmt -l $(GO_FILES)); if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd container && $(GO) vet ./...

# staticcheck (pinned, through the Go module proxy) with its default checks, U1000 (unused code) among them. An
# intended finding is silenced where it is, with its reason: //lint:ignore <check> <why> on the line before.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint-staticcheck:
	$(GO) run $(STATICCHECK) ./...
	cd container && $(GO) run $(STATICCHECK) ./...

# deadcode (pinned, through the Go module proxy) lists the functions no main package reaches, in both modules. Its
# roots are the programs, not the tests, so a function only tests call is dead: delete it, or move it into a
# _test.go file. DEADCODE_IGNORE holds the exceptions, each reached by design from where deadcode cannot see:
#   - packages that exist only for tests: doubles and helpers the _test.go files of other packages import (Go
#     cannot put those in a _test.go file): cloudtest, emulatortest, cliflagstest, plantest, measuretest;
#   - container/internal/espeak's goSynthChunk: exported to C (//export) and called back by libespeak-ng;
#   - bench.Stall: the stall's definition as a function of a response's chunks (docs/design.md, "Playback
#     continuity"), the reference ReadStream's incremental computation is tested against.
DEADCODE := golang.org/x/tools/cmd/deadcode@v0.52.0
DEADCODE_IGNORE := ^(cloud/cloudtest|emulator/emulatortest|capacity/plantest|internal/cliflags/cliflagstest|measure/measuretest)/|^container/internal/espeak/espeak\.go:[0-9]+:[0-9]+: unreachable func: goSynthChunk$$|^bench/stall\.go:[0-9]+:[0-9]+: unreachable func: Stall$$
lint-deadcode:
	@root=$$($(GO) run $(DEADCODE) ./...); ctr=$$(cd container && $(GO) run $(DEADCODE) ./... | sed 's|^|container/|'); \
	dead=$$(printf '%s\n%s\n' "$$root" "$$ctr" | grep -Ev '$(DEADCODE_IGNORE)' | grep . || true); \
	if [ -n "$$dead" ]; then echo "deadcode: unreachable functions (delete them, or move test-only ones into _test.go files):"; echo "$$dead"; exit 1; fi; \
	echo "deadcode: no unreachable function in either module, but for the exceptions in DEADCODE_IGNORE"

lint-cfn: synth-all deps-tools
	cfn-lint --format parseable -- cdk.out/lint/*/*.template.json
	@echo "cfn-lint: no errors or warnings in $$(ls cdk.out/lint/*/*.template.json | wc -l) templates"

# The demo keeps everything in .demo/ (emulator state, journals, artifacts) on port 4699, never in .state/ or
# artifacts/; DEMO_FLAGS passes more flags (e.g. -time-scale 20). Built, not `go run`, so that a SIGTERM or
# Ctrl-C reaches the demo itself, which stops the emulator. .ci/run checks its summary with -check. It needs
# node_modules and the container's libraries, not cfn-lint (deps-tools): the demo lints nothing.
DEMO_FLAGS ?=
# A run that gets to its artifacts copies its qmax staircase and ttotal waterfall over docs/demo-qmax.svg and
# docs/demo-ttotal.svg (docs/measuring.md shows them): the charts in the docs are always a real run's.
demo: deps-node $(DEPS_EXTRA) build ## the whole loop on the local emulator: deploy, drift, qmax, ttotal, plan, redeploy, validate, surge, destroy; its charts replace docs/demo-*.svg
	$(GO) build -o bin/demo ./tools/demo
	bin/demo -docs docs $(DEMO_FLAGS)

docs: demo ## regenerate docs/demo-qmax.svg and docs/demo-ttotal.svg from a real local run (the demo)

clean: ## remove build outputs
	rm -rf bin cdk.out
