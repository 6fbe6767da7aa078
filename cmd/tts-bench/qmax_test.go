package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
	"github.com/speech-infra/speech-infra/measure/measuretest"
)

// runCLIEnv, when "1", makes the test binary the tts-bench CLI itself (TestMain), so that a test can run a
// command as a process it can interrupt or kill -9.
const runCLIEnv = "TTS_BENCH_TEST_RUN_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(runCLIEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// containerDir is the repository's container source tree, whose digest the artifact records.
var containerDir = filepath.Join("..", "..", "container")

func TestLadder(t *testing.T) {
	for _, tt := range []struct {
		passed   map[int]bool
		hp, lf   int
		mid      int
		bisected bool
	}{
		{map[int]bool{1: true, 5: true, 10: false}, 5, 10, 7, true},
		{map[int]bool{1: true, 2: true}, 2, 0, 0, false},
		{map[int]bool{1: false}, 0, 1, 0, false},
		{map[int]bool{1: true, 5: true, 7: false, 10: false}, 5, 7, 6, true},
		{map[int]bool{1: true, 5: true, 6: true, 7: false}, 6, 7, 0, false},
		// A pass above the lowest failure does not move Q_max (docs/design.md, "Closed loop": below the first failing one).
		{map[int]bool{1: true, 2: false, 4: true}, 1, 2, 0, false},
	} {
		hp, lf := capacity.Bracket(tt.passed)
		if hp != tt.hp || lf != tt.lf {
			t.Errorf("capacity.Bracket(%v) = %d, %d; want %d, %d", tt.passed, hp, lf, tt.hp, tt.lf)
		}
		if lf == 0 {
			continue
		}
		mid, ok := bench.Bisect(hp, lf)
		if ok != tt.bisected || mid != tt.mid {
			t.Errorf("bisect(%d, %d) = %d %v, want %d %v", hp, lf, mid, ok, tt.mid, tt.bisected)
		}
	}
}

// Every problem of a command line is reported at once, each naming the flag, with exit 2, before any AWS call.
func TestQMaxReportsEveryProblemAtOnce(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, "qmax", "--model", "nope", "--ladder", "4,2", "--max-concurrency", "0", "--hold", "2s", "--measure-window", "3s",
		"--settle", "-1s", "--slo-ms", "0", "--stall-budget-ms", "-5", "--transport", "carrier-pigeon", "--url", "http://x", "--corpus", filepath.Join(dir, "none.txt"),
		"--output", filepath.Join(notDir, "q.json"), "--local", "--region", "eu-west-1", "extra")
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"qmax takes no arguments", "--model: unknown model \"nope\"", "--ladder: 2 follows 4", "--max-concurrency 0",
		"--settle -1s", "--measure-window 3s is longer than --hold 2s", "--slo-ms 0", "--stall-budget-ms -5", "--transport \"carrier-pigeon\"",
		"--corpus", "is not a directory", "--region eu-west-1 with --local"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// http transport: --url is required and AWS flags are refused; sagemaker-stream refuses --url.
	_, stderr, code = runCLI(t, "qmax", "--model", "espeak-ng", "--transport", "http", "--profile", "p", "--dry-run")
	if code != 2 || !strings.Contains(stderr, "--url: is required with --transport http") || !strings.Contains(stderr, "--transport http measures the container at --url") {
		t.Errorf("http without --url: exit %d, stderr:\n%s", code, stderr)
	}
	_, stderr, code = runCLI(t, "qmax", "--model", "espeak-ng", "--url", "http://127.0.0.1:1", "--dry-run")
	if code != 2 || !strings.Contains(stderr, "--url is for --transport http") {
		t.Errorf("--url with sagemaker-stream: exit %d, stderr:\n%s", code, stderr)
	}
	_, stderr, code = runCLI(t, "qmax", "--model", "espeak-ng", "--output", filepath.Join(dir, "q.txt"), "--dry-run")
	if code != 2 || !strings.Contains(stderr, "want a file name ending in .json") {
		t.Errorf("--output without .json: exit %d, stderr:\n%s", code, stderr)
	}
}

// --dry-run prints the ladder, the estimate and every control-plane action, makes no call (the emulator
// counts none) and writes nothing.
func TestQMaxDryRunMakesNoCall(t *testing.T) {
	e := emulatortest.Start(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "qmax.json")
	before := e.Requests()
	stdout, stderr, code := runCLI(t, "qmax", "--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", filepath.Join(dir, "journals"),
		"--ladder", "1,2,4", "--max-concurrency", "8", "--settle", "1s", "--hold", "4s", "--measure-window", "3s", "--refine", "--output", out, "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	time.Sleep(200 * time.Millisecond) // a stray call in flight would arrive by now
	if n := e.Requests() - before; n != 0 {
		t.Errorf("the emulator received %d request(s) during a dry run, want none", n)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Errorf("a dry run wrote %v (%v), want nothing", entries, err)
	}
	got := strings.ReplaceAll(strings.ReplaceAll(stdout, e.StateDir, "$STATE"), dir, "$DIR")
	golden(t, "qmax-dry-run.txt", got)
}

// The staircase against the emulator with the espeak engine under a tight SLO: a bracket, a valid artifact
// with its records and chart, drift clean before and after, and tts-bench plan accepts the artifact. A 400-ms
// request timeout and a ladder up to 128 make the bracket certain on a machine idle or loaded. espeak is bound
// by throughput (about 100 rps on two idle cores, at every step from 2 up), so a request's response time grows
// as C ÷ throughput: 1.3 s at C = 128 idle, and more than 1% of a step timed out is a failing step. The
// container's scheduler keeps p95 TTFAB near 15 ms up to C = 32 on an idle machine, under the tight SLO's
// 20-ms floor: with the SLO alone and a 10-s timeout no step failed there (Q_max 32, no bracket; it had
// failed only under CI's load). A 150-ms timeout was too tight the other way: under -race and three busy
// loops, 1 of 73 requests at C = 1 timed out.
func TestQMaxEndToEnd(t *testing.T) {
	e := emulatortest.Start(t, emulatortest.Container(t))
	emulatortest.Endpoint(t, e, "speech-espeak-ng", emulatortest.InService())
	dir := t.TempDir()
	jdir := filepath.Join(dir, "journals")
	slo := tightSLO(t, e)
	common := []string{"--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", jdir}

	if _, stderr, code := runCLI(t, append([]string{"drift"}, common...)...); code != 0 {
		t.Fatalf("drift before qmax: exit %d\n%s", code, stderr)
	}
	out := filepath.Join(dir, "art", "qmax.json")
	// The digest of the container tree as the run starts (the artifact records the tree it was run from).
	digest, err := capacity.SourceDigest(containerDir)
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI(t, append([]string{"qmax", "--ladder", "1,2,4,8,16,32,64,128", "--max-concurrency", "128", "--settle", "1s", "--hold", "4s",
		"--measure-window", "3s", "--request-timeout", "400ms", "--slo-ms", strconv.Itoa(slo), "--stall-budget-ms", "250",
		"--rate-fractions", "none", "--min-requests", "10", "--max-client-cpu", "0", "--max-client-lag", "0", "--container-dir", containerDir, "--output", out}, common...)...)
	if code != 0 {
		t.Fatalf("qmax: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	q, err := capacity.LoadQMax(out)
	if err != nil {
		t.Fatal(err)
	}
	if errs := q.Verify(); len(errs) > 0 {
		t.Fatalf("the artifact does not verify: %v", errs)
	}
	t.Logf("Q_max %d, lowest failing step %d (SLO %d ms)", q.QMax, q.BracketLowestFail, slo)
	if q.QMax < 1 || q.BracketLowestFail <= q.QMax || q.DryRun || q.Transport != capacity.TransportSageMakerStream || q.InstanceType != "local" {
		t.Errorf("want a live bracket over sagemaker-stream on local, got Q_max %d, lowest fail %d, dry run %v, %s on %s", q.QMax, q.BracketLowestFail, q.DryRun, q.Transport, q.InstanceType)
	}
	if want := digest; q.ContainerDigest != want || q.SLOTTFABMs != slo || q.ModelRevision != "none" || q.Endpoint != "speech-espeak-ng" {
		t.Errorf("artifact identity: digest %s (want %s), slo %d (want %d), revision %s, endpoint %s", q.ContainerDigest, want, q.SLOTTFABMs, slo, q.ModelRevision, q.Endpoint)
	}
	if len(q.RateSteps) != 0 || q.HighestThroughputRPS != 0 {
		t.Errorf("--rate-fractions none: %d rate steps, highest throughput %g; want no rate staircase", len(q.RateSteps), q.HighestThroughputRPS)
	}
	if q.Steps[0].Concurrency != 1 || q.ServiceTimeMeanMs <= 0 {
		t.Errorf("the first step is at %d with service time %g; want the uncontended C=1", q.Steps[0].Concurrency, q.ServiceTimeMeanMs)
	}
	for _, s := range q.Steps {
		if s.CloudWatchConcurrencyMax <= 0 || s.CloudWatchRatio <= 0 {
			t.Errorf("step %d: ConcurrentRequestsPerModel not recorded (max %g, ratio %g)", s.Concurrency, s.CloudWatchConcurrencyMax, s.CloudWatchRatio)
		}
		if s.AchievedRPS <= 0 || s.ResponseMeanMs <= 0 {
			t.Errorf("step %d: achieved rate %g and mean response %g ms must be recorded", s.Concurrency, s.AchievedRPS, s.ResponseMeanMs)
		}
	}
	// The records: beside the artifact, digest as recorded, and re-reporting them gives the same numbers.
	data, err := os.ReadFile(filepath.Join(dir, "art", q.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	if capacity.DigestBytes(data) != q.RecordsSHA256 || q.RecordsFile != "qmax.records.jsonl.gz" {
		t.Errorf("records %s: digest differs from the artifact's %s", q.RecordsFile, q.RecordsSHA256)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := bench.ReadRecords(zr)
	if err != nil {
		t.Fatal(err)
	}
	cfg := bench.DefaultConfig()
	cfg.SLO, cfg.StallBudget = time.Duration(slo)*time.Millisecond, 250*time.Millisecond
	again := bench.Summarize(recs, cfg.Judge())
	if len(again) != len(q.Steps) {
		t.Fatalf("the records hold %d steps, the artifact %d", len(again), len(q.Steps))
	}
	for i, s := range again {
		if a := q.Steps[i]; s.Concurrency != a.Concurrency || s.TTFABP95Ms != a.TTFABP95Ms || s.StallP95Ms != a.StallP95Ms || s.MeetsSLO != a.MeetsSLO {
			t.Errorf("re-reported step %d differs: %+v vs %+v", i, s, a)
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, "art", "qmax.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if text := measuretest.SVGText(t, svg); !strings.Contains(text, "Q_max = "+strconv.Itoa(q.QMax)) {
		t.Errorf("the chart does not mark Q_max %d: %q", q.QMax, text)
	}
	if !strings.Contains(stdout, "Q_max of espeak-ng on local over sagemaker-stream: "+strconv.Itoa(q.QMax)) {
		t.Errorf("stdout lacks the summary:\n%s", stdout)
	}
	if _, stderr, code := runCLI(t, append([]string{"drift"}, common...)...); code != 0 {
		t.Errorf("drift after qmax: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(jdir, "speech-espeak-ng.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the journal is still there after a normal end: %v", err)
	}

	// tts-bench plan accepts the artifact (with a ttotal measured against it).
	ttotal := filepath.Join(dir, "art", "ttotal.json")
	qdata, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := os.ReadFile(filepath.Join("testdata", "qmax-ttotal.json.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ttotal, bytes.ReplaceAll(tmpl, []byte("{{QMAX_SHA256}}"), []byte(capacity.DigestBytes(qdata))), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "art", "plan.json")
	stdout, stderr, code = runCLI(t, "plan", "--model", "espeak-ng", "--qmax", out, "--ttotal", ttotal, "--peak-rps", "1", "--output", plan)
	if code == 2 {
		t.Fatalf("plan refused the qmax artifact as input: exit 2\n%s\n%s", stdout, stderr)
	}
	p, err := capacity.LoadPlan(plan)
	if err != nil {
		t.Fatal(err)
	}
	if p.Inputs.QMax != q.QMax || !p.Measured || p.Inputs.QMaxSHA256 != capacity.DigestBytes(qdata) {
		t.Errorf("the plan was built from Q_max %d (measured %v, qmax digest %s), want %d from the artifact", p.Inputs.QMax, p.Measured, p.Inputs.QMaxSHA256, q.QMax)
	}
}

// tightSLO measures a few uncontended requests and returns an SLO (ms) four times their slowest TTFAB:
// C=1 passes with margin, and at 32 requests in flight on one instance the queue makes it fail.
func tightSLO(t *testing.T, e *emulatortest.Emulator) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr := &bench.SageMakerStream{Endpoint: "speech-espeak-ng", NewClient: func() bench.StreamInvoker { return e.NewClients().Runtime }}
	s, err := tr.Worker(0)
	if err != nil {
		t.Fatal(err)
	}
	worst := time.Duration(0)
	for i := 0; i < 8; i++ {
		res, err := s.Send(ctx, "The quick brown fox jumps over the lazy dog near the river bank.")
		if err != nil {
			t.Fatalf("probe request: %v", err)
		}
		worst = max(worst, res.TTFAB())
	}
	return max(int(4*worst/time.Millisecond), 20)
}

var _ bench.StreamInvoker = (*sagemakerruntime.Client)(nil)

// scalingState is what freeze and thaw must put back exactly.
type scalingState struct {
	Desired  int32
	Min, Max int32
	Susp     aastypes.SuspendedState
}

func readScaling(t *testing.T, e *emulatortest.Emulator) scalingState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := e.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("speech-espeak-ng")})
	if err != nil {
		t.Fatal(err)
	}
	var st scalingState
	st.Desired = aws.ToInt32(d.ProductionVariants[0].DesiredInstanceCount)
	out, err := e.AutoScaling.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker})
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range out.ScalableTargets {
		st.Min, st.Max = aws.ToInt32(tg.MinCapacity), aws.ToInt32(tg.MaxCapacity)
		if tg.SuspendedState != nil {
			st.Susp = aastypes.SuspendedState{DynamicScalingInSuspended: tg.SuspendedState.DynamicScalingInSuspended,
				DynamicScalingOutSuspended: tg.SuspendedState.DynamicScalingOutSuspended, ScheduledScalingSuspended: tg.SuspendedState.ScheduledScalingSuspended}
		}
	}
	return st
}

// frozenEndpoint is an espeak endpoint of two instances with a scalable target (1 to 3, nothing suspended), so
// that a freeze visibly suspends scaling and pins the count.
func frozenEndpoint(t *testing.T, env map[string]string) (*emulatortest.Emulator, scalingState) {
	e := emulatortest.Start(t, emulatortest.Container(t))
	emulatortest.Endpoint(t, e, "speech-espeak-ng", emulatortest.InService(), emulatortest.Instances(2), emulatortest.Env(env))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.AutoScaling.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{
		ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String(capacity.ResourceID("speech-espeak-ng", "AllTraffic")),
		ScalableDimension: aastypes.ScalableDimensionSageMakerVariantDesiredInstanceCount, MinCapacity: aws.Int32(1), MaxCapacity: aws.Int32(3),
		SuspendedState: &aastypes.SuspendedState{DynamicScalingInSuspended: aws.Bool(false), DynamicScalingOutSuspended: aws.Bool(false), ScheduledScalingSuspended: aws.Bool(false)},
	}); err != nil {
		t.Fatal(err)
	}
	return e, readScaling(t, e)
}

// startCLI starts tts-bench (this test binary) as a process.
func startCLI(t *testing.T, args ...string) (*exec.Cmd, *measuretest.SyncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runCLIEnv+"=1")
	out := &measuretest.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, out
}

// waitFile waits up to d for path to exist.
func waitFile(t *testing.T, path string, d time.Duration, out *measuretest.SyncBuffer) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %s; output so far:\n%s", path, d, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitExit waits up to d for cmd to exit and returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd, d time.Duration, out *measuretest.SyncBuffer) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return cmd.ProcessState.ExitCode()
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		t.Fatalf("tts-bench did not exit within %s; output:\n%s", d, out)
		return -1
	}
}

// longRun is a qmax run that is still measuring when the test interrupts it.
func longRun(e *emulatortest.Emulator, jdir, out string) []string {
	return []string{"qmax", "--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", jdir, "--force",
		"--ladder", "1", "--max-concurrency", "1", "--settle", "1s", "--hold", "60s", "--measure-window", "3s",
		"--container-dir", containerDir, "--output", out}
}

// kill -9 mid-run leaves the journal; drift reports it and the suspension as errors; thaw restores exactly
// the state before; drift then finds nothing the run left behind.
func TestQMaxKillLeavesJournalThawRestores(t *testing.T) {
	e, before := frozenEndpoint(t, nil)
	dir := t.TempDir()
	jdir := filepath.Join(dir, "journals")
	journal := filepath.Join(jdir, "speech-espeak-ng.json")
	common := []string{"--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", jdir, "--container-dir", containerDir}
	baseline, _, _ := runCLI(t, append([]string{"drift", "--format", "json"}, common...)...)

	cmd, out := startCLI(t, longRun(e, jdir, filepath.Join(dir, "qmax.json"))...)
	waitFile(t, journal, 60*time.Second, out)
	waitOutput(t, out, "step 1: concurrency 1", 60*time.Second)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExit(t, cmd, 10*time.Second, out)
	if _, err := os.Stat(journal); err != nil {
		t.Fatalf("kill -9 removed the journal: %v", err)
	}
	frozen := readScaling(t, e)
	if frozen.Desired != 1 || frozen.Min != 1 || frozen.Max != 1 || !aws.ToBool(frozen.Susp.DynamicScalingInSuspended) || !aws.ToBool(frozen.Susp.DynamicScalingOutSuspended) {
		t.Errorf("after the freeze the variant is %+v, want pinned to 1 with dynamic scaling suspended", frozen)
	}
	stdout, stderr, code := runCLI(t, append([]string{"drift", "--format", "json"}, common...)...)
	if code != 1 {
		t.Fatalf("drift after kill -9: exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{`"journal_present"`, `"scaling_suspended"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("drift does not report %s:\n%s", want, stdout)
		}
	}
	if _, stderr, code := runCLI(t, append([]string{"thaw"}, common...)...); code != 0 {
		t.Fatalf("thaw: exit %d\n%s", code, stderr)
	}
	if after := readScaling(t, e); !reflect.DeepEqual(after, before) {
		t.Errorf("thaw restored %+v, want exactly the state before the run %+v", after, before)
	}
	if _, err := os.Stat(journal); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("thaw left the journal: %v", err)
	}
	// Drift is as before the run: nothing the run left behind (the test's own target is the only finding).
	if stdout, _, _ := runCLI(t, append([]string{"drift", "--format", "json"}, common...)...); stdout != baseline {
		t.Errorf("drift after thaw differs from before the run:\n--- after\n%s\n--- before\n%s", stdout, baseline)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.AutoScaling.DeregisterScalableTarget(ctx, &applicationautoscaling.DeregisterScalableTargetInput{
		ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String(capacity.ResourceID("speech-espeak-ng", "AllTraffic")),
		ScalableDimension: aastypes.ScalableDimensionSageMakerVariantDesiredInstanceCount,
	}); err != nil {
		t.Fatal(err)
	}
	// Two instances are what the catalog's one does not expect; the count drift reports is the test's own.
	if stdout, _, _ := runCLI(t, append([]string{"drift", "--format", "json"}, common...)...); strings.Contains(stdout, `"journal_present"`) || strings.Contains(stdout, `"scaling_suspended"`) {
		t.Errorf("drift still reports the run:\n%s", stdout)
	}
}

func waitOutput(t *testing.T, out *measuretest.SyncBuffer, want string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q within %s; output:\n%s", want, d, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// SIGINT and SIGTERM mid-run restore the endpoint by themselves, remove the journal, write no artifact and
// exit 1.
func TestQMaxSignalRestores(t *testing.T) {
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { testSignalRestores(t, sig) })
	}
}

func testSignalRestores(t *testing.T, sig os.Signal) {
	e, before := frozenEndpoint(t, nil)
	dir := t.TempDir()
	jdir := filepath.Join(dir, "journals")
	journal := filepath.Join(jdir, "speech-espeak-ng.json")
	out := filepath.Join(dir, "qmax.json")
	cmd, output := startCLI(t, longRun(e, jdir, out)...)
	waitFile(t, journal, 60*time.Second, output)
	waitOutput(t, output, "step 1: concurrency 1", 60*time.Second)
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, 90*time.Second, output); code != 1 {
		t.Errorf("exit %d after %s, want 1; output:\n%s", code, sig, output)
	}
	for _, want := range []string{"interrupted", "restored speech-espeak-ng", "journal removed"} {
		if !strings.Contains(output.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, output)
		}
	}
	if _, err := os.Stat(journal); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the journal is still there after %s: %v", sig, err)
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an interrupted run wrote the artifact: %v", err)
	}
	if after := readScaling(t, e); !reflect.DeepEqual(after, before) {
		t.Errorf("after %s the variant is %+v, want exactly %+v", sig, after, before)
	}
}

// A container whose queue shield is below the ladder is refused before anything changes, naming the fix.
func TestQMaxRefusesBoundedQueue(t *testing.T) {
	e := emulatortest.Start(t, emulatortest.Container(t))
	emulatortest.Endpoint(t, e, "speech-espeak-ng", emulatortest.InService(), emulatortest.Env(map[string]string{"QUEUE_MAX_DEPTH": "4"}))
	dir := t.TempDir()
	jdir := filepath.Join(dir, "journals")
	_, stderr, code := runCLI(t, "qmax", "--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", jdir,
		"--ladder", "1,2,4,8", "--max-concurrency", "8", "--settle", "1s", "--hold", "4s", "--measure-window", "3s",
		"--container-dir", containerDir, "--output", filepath.Join(dir, "qmax.json"))
	if code != 1 {
		t.Fatalf("exit %d, want 1 (a failed check)\n%s", code, stderr)
	}
	for _, want := range []string{"QUEUE_MAX_DEPTH=4", "reaches concurrency 8", "measurement configuration QUEUE_MAX_DEPTH=0"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if _, err := os.Stat(jdir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused run wrote a journal directory: %v", err)
	}
}

// An output that cannot be written is refused before measuring: a careless --output must not cost a run.
func TestQMaxRefusesUnwritableOutputBeforeMeasuring(t *testing.T) {
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("no /proc to hold an unwritable directory")
	}
	e := emulatortest.Start(t)
	before := e.Requests()
	_, stderr, code := runCLI(t, "qmax", "--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--container-dir", containerDir, "--output", "/proc/qmax.json")
	if code != 2 || !strings.Contains(stderr, "--output /proc/qmax.json") || !strings.Contains(stderr, "checked before measuring") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	if n := e.Requests() - before; n != 0 {
		t.Errorf("the emulator received %d request(s) before the output was found unwritable, want none", n)
	}
}
