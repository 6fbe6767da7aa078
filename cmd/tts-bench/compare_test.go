package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sagemaker"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/measure"
)

// The comparison runs kokoro-82m-twin on ml.g5.xlarge and ml.g4dn.xlarge, not espeak-ng on two CPU types: espeak
// computes on this host's two cores whatever the type (the emulator's instance-type profiles do not apply to a
// real engine), so a second instance adds no capacity here and ttotal's probe never recovers; the twin waits its
// per-type service time on one slot (ml.g4dn.xlarge 2.9 times ml.g5.xlarge's, emulator/instancetypes.go), so
// the types differ and a second instance serves. The settings are make demo's (tools/demo) with a shorter
// ladder and rate staircase: the ladder brackets Q_max on both types (g5 fails at 192, g4dn at 64), every step
// is judged on at least 20 requests of an 8-s window, and the measuring process's own CPU and scheduling-lag
// bounds are off (this process runs the emulator and the CLI beside the other test processes; the twin's compute
// is a wait in the container). The rate steps' send-lag bound (bench.DefaultMaxRateLag) is not a flag and
// stays: the Makefile runs these tests without the race detector, under which the client fell behind it.
const (
	compareQMaxArgs = "--ladder 1,16,64,192 --max-concurrency 192 --settle 1s --hold 9s --measure-window 8s --min-requests 20 " +
		"--rate-fractions 0.6,0.9 --rate-refine 0 --rate-settle 2s --rate-hold 12s --rate-measure-window 11s --request-timeout 30s --max-client-cpu 0 --max-client-lag 0"
	// compareTTotalArgs probe at ttotal's default, each type's first failing ladder step (192 on ml.g5.xlarge, 64
	// on ml.g4dn.xlarge): the demo's fixed probe of 160 (twinrun.TTotalArgs) lies past ml.g4dn.xlarge's curve.
	compareTTotalArgs = "--warmup 35s --window 20s --min-samples 20 --max-wait 3m --poll-interval 1s"
	// compareTypes are two profiled GPU types; ml.g4dn.xlarge is priced by the flag (us-east-1 on-demand, 0.736
	// USD an hour) in case the catalog does not price it.
	compareModel = "kokoro-82m-twin"
	compareTypes = "ml.g5.xlarge,ml.g4dn.xlarge"
)

// compareArgs is a local comparison of the two twin types on e, writing under dir.
func compareArgs(e *emulatortest.Emulator, dir string, extra ...string) []string {
	return append([]string{"compare", "--local", "--state-dir", e.StateDir, "--model", compareModel, "--instance-types", compareTypes,
		"--trace", "diurnal", "--peak-rps", "10", "--trough-rps", "2", "--price-per-hour", "ml.g4dn.xlarge=0.736",
		"--journal-dir", filepath.Join(dir, "journals"), "--container-dir", containerDir, "--artifacts", filepath.Join(dir, "artifacts"),
		"--qmax-args", compareQMaxArgs, "--ttotal-args", compareTTotalArgs}, extra...)
}

// noEndpointLeft fails the test when the emulator still has an endpoint (ListEndpoints), or an endpoint config
// or a model (the emulator implements no List call for those: its persisted state, state.json, is read).
func noEndpointLeft(t *testing.T, e *emulatortest.Emulator) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	eps, err := e.SageMaker.ListEndpoints(ctx, &sagemaker.ListEndpointsInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range eps.Endpoints {
		t.Errorf("left behind: endpoint %s", *ep.EndpointName)
	}
	data, err := os.ReadFile(filepath.Join(e.StateDir, "state.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return // nothing was ever created
	}
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Models          map[string]json.RawMessage `json:"models"`
		EndpointConfigs map[string]json.RawMessage `json:"endpoint_configs"`
		Endpoints       map[string]json.RawMessage `json:"endpoints"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatalf("the emulator's state.json: %v", err)
	}
	for kind, m := range map[string]map[string]json.RawMessage{"model": st.Models, "endpoint config": st.EndpointConfigs, "endpoint": st.Endpoints} {
		for name := range m {
			t.Errorf("left behind in the emulator's state: %s %s", kind, name)
		}
	}
}

// TestCompareEndToEnd: compare --local measures the Kokoro twin on two instance types on the emulator,
// plans and simulates each on the diurnal trace, names the cheaper type that holds, writes a valid report and
// the chart, records each type's real instance type in its artifacts, and leaves no endpoint behind.
func TestCompareEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("compare measures two instance types on the emulator for a few minutes")
	}
	e := emulatortest.Start(t, emulatortest.Container(t))
	dir := t.TempDir()
	stdout, stderr, code := runCLI(t, compareArgs(e, dir, "--format", "json")...)
	t.Logf("stderr:\n%s", stderr)
	if code != 0 {
		t.Fatalf("exit %d, want 0 (a winner)\nstdout:\n%s", code, stdout)
	}
	art := filepath.Join(dir, "artifacts")
	rep, err := capacity.LoadTypeComparison(filepath.Join(art, capacity.CompareFile))
	if err != nil {
		t.Fatalf("the written report: %v", err)
	}
	var printed capacity.TypeComparison
	if err := json.Unmarshal([]byte(stdout), &printed); err != nil || printed.Winner != rep.Winner {
		t.Fatalf("--format json printed %q (%v), not the report (winner %s)", stdout, err, rep.Winner)
	}
	// Both hold (a peak of 10 rps is within four instances of either); the winner is the cheaper per day, which
	// the report's own validation checks against every row (capacity.TypeComparison.Validate).
	if rep.Winner == "" {
		t.Fatalf("no winner; rows %+v", rep.Rows)
	}
	t.Logf("winner %s", rep.Winner)
	for _, r := range rep.Rows {
		if r.Error != "" || !r.Holds {
			t.Errorf("%s: error %q, holds %v, finding %q", r.InstanceType, r.Error, r.Holds, r.Finding)
		}
		if !(r.QMaxStall >= 1 && r.QMaxTTFAB >= r.QMaxStall && r.SafeRPS > 0 && r.TTotalS > 0 && r.InstanceHours > 0 && r.CostPerDayUSD > 0 && r.CostPer1000USD > 0) {
			t.Errorf("%s: implausible row %+v", r.InstanceType, r)
		}
		q, err := capacity.LoadQMax(filepath.Join(r.ArtifactDir, capacity.QMaxFile))
		if err != nil {
			t.Fatal(err)
		}
		tt, err := capacity.LoadTTotal(filepath.Join(r.ArtifactDir, capacity.TTotalFile))
		if err != nil {
			t.Fatal(err)
		}
		p, err := capacity.LoadPlan(filepath.Join(r.ArtifactDir, capacity.PlanFile))
		if err != nil {
			t.Fatal(err)
		}
		if q.InstanceType != r.InstanceType || tt.InstanceType != r.InstanceType || p.Fingerprint.InstanceType != r.InstanceType {
			t.Errorf("%s: the artifacts record %s (qmax), %s (ttotal), %s (plan): want the endpoint's real instance type", r.InstanceType, q.InstanceType, tt.InstanceType, p.Fingerprint.InstanceType)
		}
		if want := measure.CompareEndpoint(compareModel, r.InstanceType); q.Endpoint != want {
			t.Errorf("%s: measured on %s, want %s", r.InstanceType, q.Endpoint, want)
		}
	}
	for _, phase := range []string{"deploy", "drift", "qmax", "ttotal", "plan", "destroy"} {
		for _, it := range strings.Split(compareTypes, ",") {
			if !strings.Contains(stderr, "compare "+compareModel+" "+it+": "+phase) {
				t.Errorf("no progress line for %s's %s on stderr", it, phase)
			}
		}
	}
	checkPNG(t, filepath.Join(art, measure.CompareChartFile))
	noEndpointLeft(t, e)

	// The text report of the same comparison names the winner and the price sources.
	var text bytes.Buffer
	if err := capacity.RenderTypeComparison(&text, "text", rep, filepath.Join(art, capacity.CompareFile)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "WINNER  "+rep.Winner+": the cheapest type that holds the SLO") || !strings.Contains(text.String(), "(--price-per-hour)") {
		t.Errorf("text report:\n%s", text.String())
	}
}

// checkPNG fails unless path is a PNG of a readable size.
func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("%s: not a PNG: %v", path, err)
	}
	if cfg.Width < 400 || cfg.Height < 250 || cfg.Width > 4000 || cfg.Height > 4000 {
		t.Errorf("%s: %d×%d pixels: want a chart of a readable size", path, cfg.Width, cfg.Height)
	}
}

// The chart of a comparison is a PNG of a readable size, one point per measured type; a comparison with no
// measured type has no chart.
func TestCompareChart(t *testing.T) {
	rep := &capacity.TypeComparison{SchemaVersion: capacity.SchemaVersion, Model: "espeak-ng", Trace: "diurnal", Winner: "ml.c5.large", Rows: []capacity.TypeRow{
		{InstanceType: "ml.c5.large", TTotalS: 40, CostPerDayUSD: 5.7, Holds: true, Feasible: true},
		{InstanceType: "ml.c5.xlarge", TTotalS: 35, CostPerDayUSD: 8.1, Holds: true, Feasible: true},
		{InstanceType: "ml.c5.2xlarge", Error: "deploy: refused"},
	}}
	data, err := measure.RenderCompareChart(rep)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "compare.png")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, path)
	rep.Rows = rep.Rows[2:]
	rep.Winner = ""
	if _, err := measure.RenderCompareChart(rep); err == nil {
		t.Error("a chart of no measured type was drawn")
	}
}

// Bad command lines are usage errors (exit 2) naming the flag and the fix, before anything is deployed.
func TestCompareUsageErrors(t *testing.T) {
	dir := t.TempDir()
	base := func(types string, extra ...string) []string {
		return append([]string{"compare", "--local", "--state-dir", filepath.Join(dir, "state"), "--model", "espeak-ng", "--instance-types", types, "--trace", "diurnal",
			"--artifacts", filepath.Join(dir, "artifacts"), "--container-dir", containerDir}, extra...)
	}
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"unknown type", base("ml.c5.large,ml.banana.xlarge"), []string{`"ml.banana.xlarge" is not a SageMaker endpoint instance type`}},
		{"empty list", base(""), []string{"--instance-types: none given"}},
		{"only commas", base(" , ,"), []string{"--instance-types: none given"}},
		{"duplicate", base("ml.c5.large,ml.c5.large"), []string{"--instance-types: ml.c5.large is given twice"}},
		{"no price", base("ml.c5.large,ml.m5.xlarge"), []string{"no price for instance type ml.m5.xlarge", "--price-per-hour ml.m5.xlarge=USD"}},
		{"bad price", base("ml.c5.large", "--price-per-hour", "ml.c5.large=free"), []string{"--price-per-hour", "free"}},
		{"price of a type not compared", base("ml.c5.large", "--price-per-hour", "ml.m5.xlarge=0.2"), []string{"--price-per-hour ml.m5.xlarge=...: ml.m5.xlarge is not in --instance-types"}},
		{"bad qmax args", base("ml.c5.large", "--qmax-args", "--ladder 5,1"), []string{"qmax refuses its settings (--qmax-args", "--ladder"}},
		{"unknown ttotal flag", base("ml.c5.large", "--ttotal-args", "--warmpu 5s"), []string{"ttotal refuses its settings (--ttotal-args", "warmpu"}},
		{"another transport", base("ml.c5.large", "--qmax-args", "--transport=http --url http://127.0.0.1:1"), []string{"--qmax-args: --transport is compare's to set"}},
		{"flag compare sets", base("ml.c5.large", "--qmax-args", "--ladder 1,2 --output x.json"), []string{"--qmax-args: --output is compare's to set"}},
		{"no trace", []string{"compare", "--local", "--model", "espeak-ng", "--instance-types", "ml.c5.large"}, []string{"--trace is required"}},
		{"aws without image", []string{"compare", "--model", "espeak-ng", "--instance-types", "ml.c5.large", "--trace", "diurnal", "--region", "us-east-1"}, []string{"--image: none given", "--role: none given"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, tt.args...)
			if code != exitcode.CodeUsage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitcode.CodeUsage, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "artifacts")); err == nil {
		t.Error("a refused command line wrote artifacts")
	}
}

// buildTTSBench builds this command into dir and returns its path.
func buildTTSBench(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "tts-bench")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestCompareInterrupted: SIGINT in the middle of the second type's qmax ends the real tts-bench
// binary promptly with a non-zero exit, destroys the second type's endpoint (nothing is left on the emulator),
// keeps the first type's artifact set, and writes no report.
func TestCompareInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("compare measures one instance type on the emulator before it is interrupted")
	}
	dir := t.TempDir()
	bin := buildTTSBench(t, dir)
	e := emulatortest.Start(t, emulatortest.Container(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, compareArgs(e, dir)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	sc := bufio.NewScanner(stderr)
	second := "compare " + compareModel + " ml.g4dn.xlarge: qmax"
	var sent time.Time
	for sc.Scan() {
		line := sc.Text()
		log.WriteString(line + "\n")
		// The second type's qmax has frozen its endpoint and starts its first step: interrupt in its middle.
		if sent.IsZero() && strings.Contains(log.String(), second) && strings.Contains(line, "[ml.g4dn.xlarge] qmax "+compareModel+": frozen") {
			time.Sleep(4 * time.Second)
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			sent = time.Now()
		}
	}
	err = cmd.Wait()
	t.Logf("stderr:\n%s", log.String())
	if sent.IsZero() {
		t.Fatalf("the second type's qmax never started (%v)", err)
	}
	took := time.Since(sent)
	code := cmd.ProcessState.ExitCode()
	if code == 0 || err == nil {
		t.Errorf("exit %d after SIGINT: want non-zero", code)
	}
	if took > 90*time.Second {
		t.Errorf("took %s to end after SIGINT: want promptly (the destroy is bounded)", took)
	}
	if !strings.Contains(log.String(), "compare "+compareModel+" ml.g4dn.xlarge: destroy the endpoint") {
		t.Error("the second type's endpoint was not destroyed")
	}
	noEndpointLeft(t, e)
	first := filepath.Join(dir, "artifacts", "ml.g5.xlarge")
	for _, f := range []string{capacity.QMaxFile, capacity.TTotalFile, capacity.PlanFile} {
		if _, err := os.Stat(filepath.Join(first, f)); err != nil {
			t.Errorf("the first type's artifact set lost %s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "artifacts", capacity.CompareFile)); err == nil {
		t.Error("an interrupted comparison wrote a report")
	}
}

// --dry-run changes nothing. On --local it names the endpoints, the estimate and the cost and creates nothing
// on the emulator; against "AWS" (the emulator behind a proxy that records every call's operation, through
// AWS_ENDPOINT_URL) it also checks each type's quota, and every call it makes is a List, Describe or Get.
func TestCompareDryRun(t *testing.T) {
	e := emulatortest.Start(t)
	dir := t.TempDir()
	args := compareArgs(e, dir, "--dry-run")
	stdout, stderr, code := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, w := range []string{"DRY RUN: nothing is created", "speech-kokoro-82m-twin-ml-g5-xlarge", "speech-kokoro-82m-twin-ml-g4dn-xlarge",
		"none on the emulator", "per type at most", "USD", "0.74 USD an instance-hour (--price-per-hour)"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("the dry run does not say %q:\n%s", w, stdout)
		}
	}
	noEndpointLeft(t, e)
	for _, p := range []string{"artifacts", "journals"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			t.Errorf("the dry run wrote %s", p)
		}
	}

	// The AWS path: the SDK's own endpoint resolution sends every service to the recording proxy.
	var mu sync.Mutex
	var ops []string
	target, err := url.Parse(e.URL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ops = append(ops, r.Header.Get("X-Amz-Target"))
		mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	t.Setenv("AWS_ENDPOINT_URL", proxy.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", e.Key.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", e.Key.SecretAccessKey)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "no-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "no-credentials"))
	stdout, stderr, code = runCLI(t, "compare", "--model", compareModel, "--instance-types", compareTypes, "--trace", "diurnal", "--peak-rps", "10",
		"--price-per-hour", "ml.g4dn.xlarge=0.736", "--journal-dir", filepath.Join(dir, "journals"), "--container-dir", containerDir,
		"--artifacts", filepath.Join(dir, "artifacts"), "--qmax-args", compareQMaxArgs, "--ttotal-args", compareTTotalArgs, "--parallel", "2", "--dry-run")
	if code != 0 {
		t.Fatalf("AWS dry run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "QUOTA") || strings.Count(stdout, "ListServiceQuotas") < 2 {
		t.Errorf("the AWS dry run does not report each type's quota check:\n%s", stdout)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ops) == 0 {
		t.Fatal("the AWS dry run made no call: the quota check did not run")
	}
	for _, op := range ops {
		_, name, _ := strings.Cut(op, ".")
		if !(strings.HasPrefix(name, "List") || strings.HasPrefix(name, "Describe") || strings.HasPrefix(name, "Get")) {
			t.Errorf("the dry run called %q: only List, Describe and Get calls are allowed", op)
		}
	}
	t.Logf("calls: %v", ops)
	noEndpointLeft(t, e)
}
