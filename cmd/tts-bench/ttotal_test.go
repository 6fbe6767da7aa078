package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
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
	return profiledWith(t, scale, "", nil)
}

// profiledWith is profiled with the instances running bin ("" for the container itself) and env added to the
// endpoint's container environment.
func profiledWith(t *testing.T, scale float64, bin string, env map[string]string) *emulatortest.Emulator {
	t.Helper()
	p, err := emulator.BuiltinProfile(emulator.ProfileKokoroG5)
	if err != nil {
		t.Fatal(err)
	}
	opts := []emulatortest.Option{emulatortest.Container(t), func(o *emulator.Options) { o.Profile, o.TimeScale = p, scale }}
	if bin != "" {
		opts = append(opts, emulatortest.ContainerBin(bin))
	}
	e := emulatortest.Start(t, opts...)
	emulatortest.Endpoint(t, e, "speech-espeak-ng", emulatortest.InService(), emulatortest.Env(env))
	return e
}

// slotEnv is a container of one synthesis slot served first come, first served, computing 60 ms a segment
// (the calibration engine waits it): an instance whose TTFAB grows by a request's time (about 270 ms
// measured) with each request in flight, and that a second instance relieves, whatever the machine's cores
// do. 6 in flight give a p95 TTFAB of about 1400 ms on one instance and 600 ms on each of two.
var slotEnv = map[string]string{"ENGINE": "calibration", "ENGINE_WORKERS": "1", "SCHEDULER": "fifo", "CALIBRATION_SEGMENT_MS": "60"}

// writeSlotQMax writes an espeak-ng qmax artifact for slotEnv's instance, its curve above what the instance
// does (as a qmax measured on a busier machine would be), so that the recovery threshold rests on the SLO:
// the SLO is the catalog's 1000 ms, Q_max 3, and the first step past 1.2 × the SLO is 6 in flight (p95
// 1700 ms), the default probe.
func writeSlotQMax(t *testing.T, dir string) string {
	t.Helper()
	path := writeQMaxArtifact(t, dir, capacity.TransportSageMakerStream)
	q, err := capacity.LoadQMax(path)
	if err != nil {
		t.Fatal(err)
	}
	q.Steps, q.QMax, q.BracketHighestPass, q.BracketLowestFail = nil, 3, 3, 4
	for _, r := range []struct {
		c   int
		p95 float64
	}{{1, 150}, {2, 450}, {3, 800}, {4, 1100}, {5, 1150}, {6, 1700}} {
		q.Steps = append(q.Steps, capacity.QMaxStep{Concurrency: r.c, OKCount: 100, TTFABP50Ms: r.p95 * 0.8, TTFABP95Ms: r.p95, TTFABP99Ms: r.p95 * 1.1,
			StallBudgetMs: 250, StallJitterMs: 50, ResponseMeanMs: 300 * float64(r.c), AchievedRPS: 3.3,
			ClientConcurrencyMean: float64(r.c), ClientConcurrencyPeak: r.c, MeetsSLO: r.p95 <= 1000, Usable: true})
	}
	if err := capacity.WriteJSON(path, q); err != nil {
		t.Fatal(err)
	}
	if errs := q.Verify(); len(errs) > 0 {
		t.Fatalf("the slot qmax artifact does not verify: %v", errs)
	}
	return path
}

// wrapContainer writes a container binary for the emulator that runs the real one with INSTANCE_ID set for
// every instance and CALIBRATION_SEGMENT_MS for every instance after the first (an empty value leaves it as
// is).
func wrapContainer(t *testing.T, instanceID, segmentMs string) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\n"
	if instanceID != "" {
		script += "INSTANCE_ID=" + instanceID + "; export INSTANCE_ID\n"
	}
	script += "if ! mkdir " + filepath.Join(dir, "first") + " 2>/dev/null; then\n  :\n"
	if segmentMs != "" {
		script += "  CALIBRATION_SEGMENT_MS=" + segmentMs + "; export CALIBRATION_SEGMENT_MS\n"
	}
	script += "fi\nexec " + emulatortest.ContainerBinary(t) + " \"$@\"\n"
	bin := filepath.Join(dir, "container.sh")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestTTotalEndToEnd: with the default probe, from the qmax artifact, the one
// instance is past its Q_max before the scale-out (the probe's p95 above the SLO); the first response from
// the new instance stamps first_served_by_new_instance; traffic recovers after it; T_total is printed with
// its uncertainty; the plan's measurement_validity passes the artifact.
func TestTTotalEndToEnd(t *testing.T) {
	// At time scale 20 ActivatingTraffic lasts about 3 s: at 50 it lasted 1.3 s, and a 1-s DescribeEndpoint
	// poll slowed by the race detector on a busy machine missed it in a clean-clone CI run.
	e := profiledWith(t, 20, "", slotEnv)
	dir := t.TempDir()
	jdir := filepath.Join(dir, "journals")
	qpath := writeSlotQMax(t, dir)
	out := filepath.Join(dir, "art", "ttotal.json")
	common := []string{"--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", jdir}
	before := readScaling(t, e)
	stdout, stderr, code := runCLI(t, append([]string{"ttotal", "--qmax", qpath, "--warmup", "4s", "--window", "3s", "--min-samples", "5",
		"--max-wait", "120s", "--request-timeout", "20s", "--container-dir", containerDir, "--output", out}, common...)...)
	if code != 0 {
		t.Fatalf("ttotal: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("ttotal:\n%s%s", stdout, stderr)
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
		have["ActivatingTraffic"] < have["in_service"] && have["in_service"] < have["traffic_recovered"] &&
		have["ready"] < have["first_served_by_new_instance"] && have["first_served_by_new_instance"] < have["traffic_recovered"]) {
		t.Errorf("stages out of causal order: %v", have)
	}
	// The default probe: the qmax step past 1.2 × the SLO (6 in flight) on the one instance, above the SLO
	// before the scale-out; the new instance is one no response named before it.
	p := tt.Probe
	if p == nil {
		t.Fatalf("the artifact records no probe")
	}
	if p.Concurrency != 6 || !strings.HasPrefix(p.ConcurrencyBasis, "qmax: the first step past Q_max 3") || !p.ExceededSLOBeforeInService ||
		p.P95BeforeScaleOutMs <= 1000 || p.SamplesBeforeScaleOut < 5 || p.RecoveryThresholdMs > 1000 {
		t.Errorf("probe %+v: want 6 in flight from the qmax artifact, its p95 before the scale-out above the SLO 1000 ms, a threshold within it", *p)
	}
	if len(p.InstancesBeforeScaleOut) != 1 || p.NewInstance == "" || p.NewInstance == p.InstancesBeforeScaleOut[0] {
		t.Errorf("instances before %v, new %q: want one before and another new", p.InstancesBeforeScaleOut, p.NewInstance)
	}
	if tt.TTotalUncertaintyS == nil || *tt.TTotalUncertaintyS <= 0 || *tt.TTotalUncertaintyS > 30 || tt.Polling == nil || tt.Polling.InServiceGapS != *tt.TTotalUncertaintyS {
		t.Errorf("uncertainty %v, polling %+v: want the in_service read's gap, a poll interval or a back-off", tt.TTotalUncertaintyS, tt.Polling)
	}
	if !regexp.MustCompile(`T_total of espeak-ng on local over sagemaker-stream: \d+(\.\d+)? s ± \d+(\.\d+)? s \(1 → 2`).MatchString(stdout) {
		t.Errorf("the table does not print T_total with its uncertainty:\n%s", stdout)
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
	// What ttotal wrote passes tts-bench plan's checks of the ttotal artifact as it is, byte for byte (the
	// hand-written qmax artifact of this test has no raw records beside it, which plan refuses for its own
	// reason), and its probe passes measurement_validity's check.
	if _, stderr, code := runCLI(t, "plan", "--model", "espeak-ng", "--qmax", qpath, "--ttotal", out, "--peak-rps", "20", "--output", filepath.Join(dir, "art", "plan.json")); code == 2 && strings.Contains(stderr, out) {
		t.Errorf("plan refused the ttotal artifact: %s", stderr)
	}
	if s, detail, _ := tt.ProbeValidity(1000); s != capacity.StatusPass {
		t.Errorf("measurement_validity of the probe: %s: %s", s, detail)
	}
}

// TestTTotalNoRequestReachesTheNewInstance: when no probe response names an instance
// other than those seen before the scale-out within --max-wait (here every instance names itself alike, so
// whatever the emulator routes to the new one is not seen as new), ttotal writes a partial artifact that
// says so and exits 1.
func TestTTotalNoRequestReachesTheNewInstance(t *testing.T) {
	e := profiledWith(t, 50, wrapContainer(t, "the-only-name", ""), nil)
	dir := t.TempDir()
	qpath := writeQMaxArtifact(t, dir, capacity.TransportSageMakerStream)
	out := filepath.Join(dir, "ttotal.json")
	stdout, stderr, code := runCLI(t, "ttotal", "--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", filepath.Join(dir, "journals"),
		"--qmax", qpath, "--warmup", "1s", "--window", "2s", "--min-samples", "5", "--probe-concurrency", "2", "--max-wait", "25s",
		"--request-timeout", "10s", "--container-dir", containerDir, "--output", out, "--format", "json")
	if code != 1 {
		t.Fatalf("ttotal: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	tt, err := capacity.LoadTTotal(out)
	if err != nil {
		t.Fatal(err)
	}
	if errs := tt.Verify(); len(errs) > 0 {
		t.Fatalf("the partial artifact does not verify: %v", errs)
	}
	// --format json prints the artifact as written.
	if printed, err := capacity.ParseTTotal("stdout", []byte(stdout)); err != nil || printed.RunID != tt.RunID {
		t.Errorf("--format json: stdout is not the artifact (%v):\n%s", err, stdout)
	}
	missing := strings.Join(tt.MissingStages, ",")
	if !strings.Contains(missing, "first_served_by_new_instance") || !strings.Contains(missing, "traffic_recovered") || strings.Contains(missing, "in_service") {
		t.Errorf("missing_stages %v: want first_served_by_new_instance and traffic_recovered, not in_service", tt.MissingStages)
	}
	if !strings.Contains(tt.IncompleteReason, "no probe response named an instance other than the 1 seen before the scale-out (the-only-name)") ||
		!strings.Contains(stderr, "routed no probe request to the new instance") {
		t.Errorf("incomplete_reason %q does not say why; stderr:\n%s", tt.IncompleteReason, stderr)
	}
	if tt.Probe == nil || tt.Probe.NewInstance != "" || len(tt.Probe.InstancesBeforeScaleOut) != 1 {
		t.Errorf("probe %+v: want one instance before, none new", tt.Probe)
	}
	if st := readScaling(t, e); st.Desired != 1 {
		t.Errorf("after ttotal the variant is %+v, want 1 instance", st)
	}
}

// TestTTotalRecoveryThatCannotCome: the new instance serves, but every first audio it sends comes after the
// SLO (its engine computes 2,000 ms a segment, twice the catalog's 1,000-ms SLO, where the first computes
// 60), so the probe cannot recover: ttotal waits --recovery-windows windows after the new instance served, not
// --max-wait, writes what it saw with the reason, and exits 1.
//
// Why no window can pass, whatever the machine's load: the calibration engine's compute is a wait, so load
// only slows an instance. Least-outstanding routing keeps a request in flight on the slow instance; the
// probe's cohort counts only requests sent before the oldest one still in flight, so a window holds at most
// the requests in flight on the fast instance when a slow one was sent (fewer than --min-samples 8), or, when
// a slow request has just ended, that request too: its TTFAB above the threshold is the window's p95 while
// the window holds at most 20 requests (one slow request of the fast instance's 60-ms segments' 3 s).
func TestTTotalRecoveryThatCannotCome(t *testing.T) {
	e := profiledWith(t, 20, wrapContainer(t, "", "2000"), slotEnv)
	dir := t.TempDir()
	qpath := writeSlotQMax(t, dir)
	out := filepath.Join(dir, "ttotal.json")
	stdout, stderr, code := runCLI(t, "ttotal", "--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", filepath.Join(dir, "journals"),
		"--qmax", qpath, "--warmup", "4s", "--window", "3s", "--min-samples", "8", "--recovery-windows", "3", "--max-wait", "600s",
		"--request-timeout", "60s", "--container-dir", containerDir, "--output", out)
	if code != 1 {
		t.Fatalf("ttotal: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("ttotal:\n%s%s", stdout, stderr)
	tt, err := capacity.LoadTTotal(out)
	if err != nil {
		t.Fatal(err)
	}
	if errs := tt.Verify(); len(errs) > 0 {
		t.Fatalf("the artifact does not verify: %v", errs)
	}
	if strings.Join(tt.MissingStages, ",") != "traffic_recovered" {
		t.Errorf("missing_stages %v: want traffic_recovered only (the stages reached are all on the timeline)", tt.MissingStages)
	}
	// The wait ended on the recovery windows (their reason), not on --max-wait (its own reason).
	if !strings.HasPrefix(tt.IncompleteReason, "traffic_recovered not observed: 3 windows of 3s") || !strings.Contains(stdout, "why: traffic_recovered not observed") ||
		!strings.Contains(stderr, "waiting at most 9s (3 windows of 3s)") {
		t.Errorf("incomplete_reason %q; stdout:\n%s\nstderr:\n%s", tt.IncompleteReason, stdout, stderr)
	}
	p := tt.Probe
	if p == nil || p.NewInstance == "" || !p.ExceededSLOBeforeInService {
		t.Fatalf("probe %+v: want a new instance, past the SLO before in_service", tt.Probe)
	}
	// The artifact's last window is the one the verdict was taken on (its reason states it), and it is not a
	// recovery: too few requests to judge, or a p95 above the threshold.
	if !strings.Contains(tt.IncompleteReason, fmt.Sprintf(" over %d requests,", p.SamplesLastWindow)) {
		t.Errorf("the artifact's last window has %d requests, its reason says otherwise: %q", p.SamplesLastWindow, tt.IncompleteReason)
	}
	if p.SamplesLastWindow >= 8 && p.P95LastWindowMs <= p.RecoveryThresholdMs {
		t.Errorf("probe %+v: the last window (%d requests, p95 %.1f ms) is a recovery to %.1f ms, yet none was recorded", p, p.SamplesLastWindow, p.P95LastWindowMs, p.RecoveryThresholdMs)
	}
	if st := readScaling(t, e); st.Desired != 1 {
		t.Errorf("after ttotal the variant is %+v, want 1 instance", st)
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
