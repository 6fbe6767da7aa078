# Benchmarks as evidence: each row of BENCHMARKS.md is one program under perf/ that writes
# .cache/bench/<n>-<name>.json and its charts (perf/ROWS.md); the report assembles them.
#
#   make bench        every row at full size, then BENCHMARKS.md (tens of minutes; not in CI)
#   make bench-smoke  every row at its smallest size, then the report into .cache/bench/: checks each program
#                     still produces its row (what .ci/run runs after make test)
#   make deps-bench   the peer load tools from apt, only what is missing (vegeta is a Go library in go.mod)
#
# The programs take the container binary from SPEECH_CONTAINER_BIN, set here to the one container-build makes.

# n:program, in BENCHMARKS.md's order.
BENCH_ROWS := 1:loadengine 2:schedulers 3:overhead 4:emulatorpath 5:synth 6:growth 7:cost 8:gateway
BENCH_DIR := .cache/bench
BENCH_PEERS_APT := wrk hey
BENCH_ENV := SPEECH_CONTAINER_BIN=$(CURDIR)/bin/speech-container
bench_require = $(shell echo $(foreach r,$(BENCH_ROWS),$(firstword $(subst :, ,$(r)))) | tr ' ' ',')

.PHONY: deps-bench bench bench-smoke

deps-bench: ## install the benchmark peers wrk and hey (only what is missing)
	@bash scripts/apt-install-missing.sh $(BENCH_PEERS_APT)

# Full size: a missing peer is an error (-require-peers), and the report refuses a smoke row.
bench: deps deps-bench container-build ## run every benchmark row at full size and write BENCHMARKS.md
	@for r in $(BENCH_ROWS); do p=$${r#*:}; extra=""; [ "$$p" = loadengine ] && extra=-require-peers; \
		echo "== row $${r%%:*}: go run ./perf/$$p $$extra"; \
		$(BENCH_ENV) $(GO) run ./perf/$$p -out $(BENCH_DIR) $$extra; done
	$(GO) run ./perf/report -in $(BENCH_DIR) -out BENCHMARKS.md -require $(bench_require)

# Row 7's smoke run (about 2 of bench-smoke's 4.5 minutes) waits on the emulator's clock: it measures the twin,
# whose compute is a wait, and its figures are not judged at this size. So it runs beside the other rows, its
# output held in a log printed when it ends; the report waits for it.
BENCH_SMOKE_BESIDE := 7:cost

bench-smoke: deps deps-bench container-build ## every benchmark row at its smallest size (seconds each), then the report
	@start=$$(date +%s); rm -f $(BENCH_DIR)/[0-9]*-*.json; mkdir -p $(BENCH_DIR); \
	for r in $(BENCH_SMOKE_BESIDE); do p=$${r#*:}; echo "== row $${r%%:*}: go run ./perf/$$p -smoke (beside the others; output at its end)"; \
		( $(BENCH_ENV) $(GO) run ./perf/$$p -smoke -out $(BENCH_DIR) > $(BENCH_DIR)/smoke-$$p.log 2>&1; echo $$? > $(BENCH_DIR)/smoke-$$p.rc ) & done; \
	for r in $(filter-out $(BENCH_SMOKE_BESIDE),$(BENCH_ROWS)); do p=$${r#*:}; echo "== row $${r%%:*}: go run ./perf/$$p -smoke"; \
		$(BENCH_ENV) $(GO) run ./perf/$$p -smoke -out $(BENCH_DIR) || { wait; exit 1; }; done; \
	wait; \
	for r in $(BENCH_SMOKE_BESIDE); do p=$${r#*:}; echo "== row $${r%%:*} (ran beside): go run ./perf/$$p -smoke"; cat $(BENCH_DIR)/smoke-$$p.log; \
		rc=$$(cat $(BENCH_DIR)/smoke-$$p.rc); [ "$$rc" = 0 ] || { echo "bench-smoke: row $${r%%:*} exited $$rc" >&2; exit 1; }; done; \
	$(GO) run ./perf/report -in $(BENCH_DIR) -out $(BENCH_DIR)/BENCHMARKS.md -require $(bench_require); \
	echo "bench-smoke: every row produced in $$(( $$(date +%s) - start )) s"
