package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
	"github.com/speech-infra/speech-infra/measure"
)

// TestTTotalUnderThrottling: with a DescribeEndpoint bucket that refills one read every 5 s (burst 1) and a
// 200-ms poll, ttotal's DescribeEndpoint reads are throttled; it backs off (cloud.Backoff), finishes, and its
// artifact marks each client stage observed right after throttled reads with the back-off and the window the
// stage was reached in.
//
// The refill is slower than any poll loop's turn can be, however loaded the machine: after a read that
// succeeds, the next one (200 ms later, or a few seconds on a starved machine) finds the bucket empty, so every
// successful read after the first follows throttled ones. The endpoint is Updating for seconds after the
// scale-out is asked for, so in_service is seen by a later read than the first, and that stage is marked.
func TestTTotalUnderThrottling(t *testing.T) {
	p, err := emulator.BuiltinProfile(emulator.ProfileKokoroG5)
	if err != nil {
		t.Fatal(err)
	}
	e := emulatortest.Start(t, emulatortest.Container(t), emulatortest.Throttle(t, "DescribeEndpoint=0.2/1,GetLogEvents=1/1"),
		func(o *emulator.Options) { o.Profile, o.TimeScale = p, 50 })
	emulatortest.Endpoint(t, e, "speech-espeak-ng", emulatortest.InService())
	dir := t.TempDir()
	qpath := writeQMaxArtifact(t, dir, capacity.TransportSageMakerStream)
	out := filepath.Join(dir, "ttotal.json")
	stdout, stderr, code := runCLI(t, "ttotal", "--qmax", qpath, "--warmup", "1s", "--window", "2s", "--min-samples", "5",
		"--probe-concurrency", "4", "--max-wait", "180s", "--request-timeout", "10s", "--poll-interval", "200ms", "--container-dir", containerDir,
		"--output", out, "--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", filepath.Join(dir, "journals"))
	if code != 0 {
		t.Fatalf("ttotal under throttling: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "throttled: backing off") && !strings.Contains(stderr, "throttled while watching") {
		t.Fatalf("ttotal was never throttled (the case proves nothing):\n%s", stderr)
	}
	tt, err := capacity.LoadTTotal(out)
	if err != nil {
		t.Fatal(err)
	}
	if errs := tt.Verify(); len(errs) > 0 || len(tt.MissingStages) > 0 {
		t.Fatalf("the artifact: %v, missing %v", errs, tt.MissingStages)
	}
	// The artifact records every back-off, and T_total's uncertainty includes it.
	if tt.Polling == nil || len(tt.Polling.Throttled) == 0 || tt.TTotalUncertaintyS == nil {
		t.Errorf("the artifact does not record the back-offs: polling %+v", tt.Polling)
	}
	marked := 0
	for _, s := range tt.Timeline {
		for _, f := range s.Flags {
			if strings.HasPrefix(f, "throttled: observed after ") && strings.Contains(f, "reached between ") {
				marked++
				if s.Source != capacity.SourceClient {
					t.Errorf("stage %s (%s) is marked throttled, but only client observations depend on the poll: %s", s.Stage, s.Source, f)
				}
			}
		}
	}
	if marked == 0 {
		t.Errorf("no client stage records the back-off before it, on a run throttled at 1 read in 5 s polled every 200 ms:\n%+v\nstderr:\n%s", tt.Timeline, stderr)
	}
}

// TestReplayUnderThrottling: replay's instance-count poller reads DescribeEndpoint every
// --poll; with a bucket of one read every 4 s it is throttled, backs off (a doubling wait, never shorter than the
// poll), finishes, and the instance log beside the records lists every back-off.
func TestReplayUnderThrottling(t *testing.T) {
	e := emulatortest.Start(t, emulatortest.Container(t), emulatortest.Throttle(t, "DescribeEndpoint=0.25/1"))
	emulatortest.Endpoint(t, e, "speech-espeak-ng", emulatortest.InService())
	dir := t.TempDir()
	csv := filepath.Join(dir, "trace.csv")
	if err := os.WriteFile(csv, []byte("timestamp,rps\n0,2\n8,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "replay.jsonl.gz")
	stdout, stderr, code := runCLI(t, "replay", "--local", "--state-dir", e.StateDir, "--model", "espeak-ng", "--trace", csv,
		"--request-timeout", "20s", "--poll", "1s", "--bucket", "2s", "--output", out)
	if code != 0 && code != 1 {
		t.Fatalf("replay under throttling: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var log measure.InstanceLog
	data, err := os.ReadFile(measure.InstancesPath(out))
	if err != nil || json.Unmarshal(data, &log) != nil {
		t.Fatalf("instance log: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if len(log.Backoffs) == 0 || len(log.Samples) == 0 || !strings.Contains(stderr, "throttled while reading the instance count") {
		t.Fatalf("instance log: %d samples, back-offs %+v; want samples and the recorded back-offs\nstderr:\n%s", len(log.Samples), log.Backoffs, stderr)
	}
	for _, b := range log.Backoffs {
		if b.Operation != "DescribeEndpoint" || b.WaitS < 1 || b.At.IsZero() {
			t.Errorf("back-off %+v: want DescribeEndpoint, at least the 1-s poll, and when", b)
		}
	}
	for i := 1; i < len(log.Samples); i++ {
		if log.Samples[i].At.Before(log.Samples[i-1].At) {
			t.Errorf("sample %d goes back in time", i)
		}
	}
}

// TestQMaxUnderThrottling: qmax's preflight (DescribeEndpoint, DescribeEndpointConfig,
// DescribeModel, drift's reads), its freeze and restore, and its per-step GetMetricData all go through the
// tools' retryer (cloud.NewRetryer: a throttled call is retried up to 10 times with the SDK's back-off). With
// every control-plane bucket at one call a second it still measures, writes a verified artifact and restores.
func TestQMaxUnderThrottling(t *testing.T) {
	e := emulatortest.Start(t, emulatortest.Container(t), emulatortest.Throttle(t, "*=1/1"))
	emulatortest.Endpoint(t, e, "speech-espeak-ng", emulatortest.InService())
	dir := t.TempDir()
	out := filepath.Join(dir, "qmax.json")
	stdout, stderr, code := runCLI(t, "qmax", "--ladder", "1,2", "--max-concurrency", "2", "--settle", "1s", "--hold", "2s",
		"--measure-window", "2s", "--request-timeout", "10s", "--slo-ms", "5000", "--stall-budget-ms", "5000",
		"--rate-fractions", "none", "--min-requests", "1", "--container-dir", containerDir,
		"--output", out, "--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", filepath.Join(dir, "journals"))
	if code != 0 && code != 1 {
		t.Fatalf("qmax under throttling: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	q, err := capacity.LoadQMax(out)
	if err != nil {
		t.Fatalf("qmax under throttling wrote no artifact: %v\nstderr:\n%s", err, stderr)
	}
	if errs := q.Verify(); len(errs) > 0 {
		t.Fatalf("the artifact does not verify: %v", errs)
	}
	if e.Throttled() == 0 {
		t.Errorf("the emulator throttled no call: the case proves nothing")
	}
	if after := readScaling(t, e); after.Desired != 1 {
		t.Errorf("after qmax the variant is %+v, want it restored to 1 instance", after)
	}
}
