package main

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/internal/emulatortest"
)

// writeQMaxArtifact writes a valid espeak-ng qmax artifact measured over transport on the repository's
// container source, with a generous curve (p95 TTFAB 200 ms at 1 to 800 ms at 20).
func writeQMaxArtifact(t *testing.T, dir, transport string) string {
	t.Helper()
	digest, err := capacity.SourceDigest(containerDir)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	q := &capacity.QMax{
		SchemaVersion: capacity.SchemaVersion, Model: "espeak-ng", Endpoint: "speech-espeak-ng", InstanceType: "local",
		ModelRevision: "none", ContainerDigest: digest, Transport: transport, SLOTTFABMs: 1000, SLOPercentile: 95,
		RunID: "qmax-test", StartedAt: start, EndedAt: start.Add(time.Minute), QMax: 20, BracketHighestPass: 20,
		ServiceTimeMeanMs: 50, ServiceTimeP95Ms: 80, RecordsFile: "qmax.records.jsonl.gz", RecordsSHA256: capacity.DigestBytes([]byte("r")),
	}
	if transport == capacity.TransportHTTP {
		q.Endpoint = "http://127.0.0.1:8080"
	}
	for _, c := range []int{1, 5, 10, 20} {
		p95 := 200 + 30*float64(c)
		q.Steps = append(q.Steps, capacity.QMaxStep{Concurrency: c, OKCount: 100, TTFABP50Ms: p95 / 2, TTFABP95Ms: p95, TTFABP99Ms: p95 * 1.1,
			StallBudgetMs: 250, StallJitterMs: 50, ResponseMeanMs: 100, AchievedRPS: float64(c) * 10,
			ClientConcurrencyMean: float64(c), ClientConcurrencyPeak: c, MeetsSLO: true, Usable: true})
	}
	path := filepath.Join(dir, "qmax.json")
	if err := capacity.WriteJSON(path, q); err != nil {
		t.Fatal(err)
	}
	return path
}

// profiled is an emulator whose instances start on the kokoro-g5 timing profile, scale times faster, with an
// InService espeak-ng endpoint of one instance.
func profiled(t *testing.T, scale float64) *emulatortest.Emulator {
	t.Helper()
	p, err := emulator.BuiltinProfile(emulator.ProfileKokoroG5)
	if err != nil {
		t.Fatal(err)
	}
	e := emulatortest.Start(t, emulatortest.Container(t), func(o *emulator.Options) { o.Profile, o.TimeScale = p, scale })
	emulatortest.Endpoint(t, e, "speech-espeak-ng", emulatortest.InService())
	return e
}

func TestTTotalEndToEnd(t *testing.T) {
	// At time scale 20 ActivatingTraffic lasts about 3 s: at 50 it lasted 1.3 s, and a 1-s DescribeEndpoint
	// poll slowed by the race detector on a busy machine missed it in a clean-clone CI run.
	e := profiled(t, 20)
	dir := t.TempDir()
	jdir := filepath.Join(dir, "journals")
	qpath := writeQMaxArtifact(t, dir, capacity.TransportSageMakerStream)
	out := filepath.Join(dir, "art", "ttotal.json")
	common := []string{"--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", jdir}
	before := readScaling(t, e)
	stdout, stderr, code := runCLI(t, append([]string{"ttotal", "--qmax", qpath, "--warmup", "1s", "--window", "2s", "--min-samples", "5",
		"--probe-concurrency", "4", "--max-wait", "60s", "--request-timeout", "10s", "--container-dir", containerDir, "--output", out}, common...)...)
	if code != 0 {
		t.Fatalf("ttotal: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	tt, err := capacity.LoadTTotal(out)
	if err != nil {
		t.Fatal(err)
	}
	if errs := tt.Verify(); len(errs) > 0 {
		t.Fatalf("the artifact does not verify: %v", errs)
	}
	have := map[string]int{}
	for i, s := range tt.Timeline {
		have[s.Stage] = i
		if i > 0 && s.At.Before(tt.Timeline[i-1].At) {
			t.Errorf("timeline[%d] %s goes backwards", i, s.Stage)
		}
	}
	for _, s := range append(append([]string{}, capacity.ExpectedStages...), "Updating", "ActivatingTraffic") {
		if _, ok := have[s]; !ok {
			t.Errorf("stage %s missing from %+v", s, tt.Timeline)
		}
	}
	if !(have["desired_set"] < have["Updating"] && have["Updating"] < have["container_started"] && have["ready"] < have["ActivatingTraffic"] &&
		have["ActivatingTraffic"] < have["in_service"] && have["in_service"] < have["traffic_recovered"]) {
		t.Errorf("stages out of causal order: %v", have)
	}
	sum := 0.0
	for _, d := range tt.Durations {
		sum += d.DurationS
	}
	want := tt.Timeline[len(tt.Timeline)-1].At.Sub(tt.Timeline[have["desired_set"]].At).Seconds()
	if math.Abs(sum-tt.TTotalS) > 1e-6 || math.Abs(tt.TTotalS-want) > 1e-6 {
		t.Errorf("durations sum to %g, t_total_s %g, traffic_recovered - desired_set %g", sum, tt.TTotalS, want)
	}
	// The kokoro-g5 profile at 1/50: 184.5 s before the container starts → about 3.7 s of platform time.
	if tt.PlatformS < 3.5 || tt.PlatformShare <= 0.5 || len(tt.MissingStages) != 0 || tt.FromInstances != 1 || tt.ToInstances != 2 {
		t.Errorf("platform %g s (%g), missing %v, %d → %d: want ≥ 3.5 s of platform time, dominant, nothing missing, 1 → 2",
			tt.PlatformS, tt.PlatformShare, tt.MissingStages, tt.FromInstances, tt.ToInstances)
	}
	for _, w := range []string{"T_total of espeak-ng on local over sagemaker-stream", "traffic_recovered", "dominant stage:"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("the table lacks %q:\n%s", w, stdout)
		}
	}
	if svg, err := os.ReadFile(strings.TrimSuffix(out, ".json") + ".svg"); err != nil || !strings.Contains(svg2text(svg), "container_started") {
		t.Errorf("the waterfall chart: %v", err)
	}
	// Put back: one instance, the scaling state as before, no journal, drift clean.
	if after := readScaling(t, e); after != before || after.Desired != 1 {
		t.Errorf("after ttotal the variant is %+v, want %+v", after, before)
	}
	if _, err := os.Stat(filepath.Join(jdir, "speech-espeak-ng.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the journal stayed: %v", err)
	}
	if _, stderr, code := runCLI(t, append([]string{"drift"}, common...)...); code != 0 {
		t.Errorf("drift after ttotal: exit %d\n%s", code, stderr)
	}
	// What ttotal wrote passes tts-bench plan's sum check as it is, byte for byte.
	if _, stderr, code := runCLI(t, "plan", "--model", "espeak-ng", "--qmax", qpath, "--ttotal", out, "--peak-rps", "20", "--output", filepath.Join(dir, "art", "plan.json")); code == 2 {
		t.Errorf("plan refused the ttotal artifact: %s", stderr)
	}
}

func svg2text(b []byte) string { return string(b) }

// A --max-wait shorter than the profile's platform time gives a partial artifact naming what is missing,
// exit 1, and the endpoint is put back; then SIGINT during the wait restores and writes nothing.
func TestTTotalPartialAndInterrupted(t *testing.T) {
	e := profiled(t, 25)
	dir := t.TempDir()
	jdir := filepath.Join(dir, "journals")
	qpath := writeQMaxArtifact(t, dir, capacity.TransportSageMakerStream)
	out := filepath.Join(dir, "ttotal.json")
	args := []string{"ttotal", "--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", jdir, "--qmax", qpath,
		"--warmup", "0s", "--probe-concurrency", "2", "--request-timeout", "10s", "--container-dir", containerDir, "--output", out}
	stdout, stderr, code := runCLI(t, append(args, "--max-wait", "2s")...)
	if code != 1 || !strings.Contains(stderr, "partial") {
		t.Fatalf("ttotal --max-wait 2s: exit %d, want 1 with partial\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	tt, err := capacity.LoadTTotal(out)
	if err != nil {
		t.Fatal(err)
	}
	if errs := tt.Verify(); len(errs) > 0 {
		t.Fatalf("the partial artifact does not verify: %v", errs)
	}
	missing := strings.Join(tt.MissingStages, ",")
	for _, s := range []string{"container_started", "ready", "in_service", "traffic_recovered"} {
		if !strings.Contains(missing, s) {
			t.Errorf("missing_stages %v lacks %s", tt.MissingStages, s)
		}
	}
	if !strings.Contains(stdout, "missing stages: ") || readScaling(t, e).Desired != 1 {
		t.Errorf("table without the missing stages, or not put back to 1 instance:\n%s", stdout)
	}
	os.Remove(out)

	cmd, output := startCLI(t, append(args, "--max-wait", "120s")...)
	waitOutput(t, output, "desired instance count 1 → 2", 60*time.Second)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, 90*time.Second, output); code != 1 {
		t.Errorf("exit %d after SIGINT, want 1; output:\n%s", code, output)
	}
	for _, w := range []string{"interrupted while waiting", "restored speech-espeak-ng", "instance count 2 → 1", "journal removed"} {
		if !strings.Contains(output.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, output)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an interrupted run wrote the artifact: %v", err)
	}
	if st := readScaling(t, e); st.Desired != 1 {
		t.Errorf("after SIGINT the variant is %+v, want 1 instance", st)
	}
}

func TestTTotalRefusesQMaxOfAnotherTransportAndModel(t *testing.T) {
	dir := t.TempDir()
	qpath := writeQMaxArtifact(t, dir, capacity.TransportHTTP)
	_, stderr, code := runCLI(t, "ttotal", "--model", "espeak-ng", "--qmax", qpath, "--container-dir", containerDir, "--dry-run")
	if code != 2 || !strings.Contains(stderr, "was measured over http, but ttotal probes over sagemaker-stream") ||
		!strings.Contains(stderr, "re-run tts-bench qmax --transport sagemaker-stream") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	_, stderr, code = runCLI(t, "ttotal", "--model", "kokoro-82m", "--qmax", qpath, "--transport", "http", "--probe-concurrency", "0", "--warmup", "-1s")
	for _, w := range []string{"is for model espeak-ng, not kokoro-82m", "--transport http: a probe sent to one container", "--probe-concurrency 0", "--warmup -1s"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	ok := writeQMaxArtifact(t, t.TempDir(), capacity.TransportSageMakerStream)
	stdout, stderr, code := runCLI(t, "ttotal", "--model", "espeak-ng", "--qmax", ok, "--local", "--dry-run", "--probe-concurrency", "15")
	if code != 0 || !strings.Contains(stdout, "DRY RUN") || !strings.Contains(stdout, "p95 TTFAB 650.0 ms at concurrency 15") || !strings.Contains(stdout, "DesiredInstanceCount=N+1") {
		t.Errorf("dry run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	_, stderr, _ = runCLI(t, "ttotal", "--model", "espeak-ng", "--qmax", ok, "--dry-run", "--probe-concurrency", "40")
	if !strings.Contains(stderr, "covers concurrency 1 to 20 only") {
		t.Errorf("probe concurrency outside the curve: %s", stderr)
	}
}
