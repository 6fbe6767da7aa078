package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
	"github.com/speech-infra/speech-infra/measure"
	"github.com/speech-infra/speech-infra/measure/measuretest"
)

// wavOnce answers every POST like the container: a WAV header and 100 ms of PCM16 silence at 24 kHz, after
// delay.
func wavOnce(t *testing.T, delay time.Duration) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		h := []byte("RIFF\xff\xff\xff\xffWAVEfmt ")
		h = binary.LittleEndian.AppendUint32(h, 16)
		h = binary.LittleEndian.AppendUint16(h, 1)
		h = binary.LittleEndian.AppendUint16(h, 1)
		h = binary.LittleEndian.AppendUint32(h, 24000)
		h = binary.LittleEndian.AppendUint32(h, 48000)
		h = binary.LittleEndian.AppendUint16(h, 2)
		h = binary.LittleEndian.AppendUint16(h, 16)
		h = append(h, "data\xff\xff\xff\xff"...)
		w.Write(append(h, make([]byte, 4800)...))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// runShards runs n replay shards, each its own process (as on separate machines, which also keeps urfave/cli's
// package-level help flag out of a data race between concurrent in-process runs), sharing a --start-at a few
// seconds ahead; during, if given, runs while they do. It returns each shard's output and exit error. A shard
// that refuses the start as past (a loaded machine started its process late) makes the whole set run again with
// a start three times further ahead, up to 45 s; every wait is bounded.
func runShards(t *testing.T, n int, argsFor func(i int, startAt string) []string, during func(start time.Time, cmds []*exec.Cmd)) ([]*measuretest.SyncBuffer, []error) {
	t.Helper()
	for lead := 5 * time.Second; ; lead *= 3 {
		start := time.Now().Add(lead).UTC()
		cmds := make([]*exec.Cmd, n)
		outs := make([]*measuretest.SyncBuffer, n)
		for i := range n {
			cmds[i], outs[i] = startCLI(t, argsFor(i, start.Format(time.RFC3339Nano))...)
		}
		if during != nil {
			during(start, cmds)
		}
		errs := make([]error, n)
		late := false
		for i, cmd := range cmds {
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case errs[i] = <-done:
			case <-time.After(2 * time.Minute):
				cmd.Process.Kill()
				<-done
				t.Fatalf("shard %d did not finish within 2m:\n%s", i, outs[i])
			}
			late = late || strings.Contains(outs[i].String(), "is in the past")
		}
		if !late {
			return outs, errs
		}
		if lead >= 45*time.Second {
			t.Fatalf("a shard's process started after its --start-at %s ahead, three times:\n%v", lead, outs)
		}
		t.Logf("a shard's process started after its --start-at %s ahead; the shards run again with a start further ahead", lead)
	}
}

// TestReplayShardsMergeToOneRun: three shards of one step trace, run at once with one run id and start over
// the http transport, merge with tts-bench report into the report one machine would give: every arrival of
// the trace once, the slices' offered rates of the whole trace. Incomplete, duplicated or foreign files are
// refused (exit 2), --force merges an incomplete set.
func TestReplayShardsMergeToOneRun(t *testing.T) {
	srv := wavOnce(t, 20*time.Millisecond)
	dir := t.TempDir()
	// step: 5 rps for 2 s, then 15 rps for 2 s: 10 + 30 = 40 arrivals.
	trace := []string{"--trace", "step", "--trough-rps", "5", "--peak-rps", "15", "--duration", "4s", "--step", "1s", "--at", "2s"}
	files := make([]string, 3)
	for i := range 3 {
		files[i] = filepath.Join(dir, fmt.Sprintf("shard%d.jsonl.gz", i))
	}
	outs, errs := runShards(t, 3, func(i int, startAt string) []string {
		return append([]string{"replay", "--model", "espeak-ng", "--arrivals", "uniform", "--transport", "http", "--url", srv.URL, "--shard", fmt.Sprintf("%d/3", i),
			"--run-id", "merge-test", "--start-at", startAt, "--bucket", "2s", "--max-workers", "8", "--output", files[i]}, trace...)
	}, nil)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, outs[i])
		}
	}
	stdout, stderr, code := runCLI(t, append([]string{"report", "--model", "espeak-ng", "--bucket", "2s", "--format", "json"}, files...)...)
	if code != 0 {
		t.Fatalf("report: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{`"scheduled": 10,`, `"offered_rps": 5,`, `"scheduled": 30,`, `"offered_rps": 15,`, `"Scheduled": 40,`, `"Sent": 40,`, `"Dropped": 0,`, `"OK": 40,`, `"shards": [`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("merged report lacks %s:\n%s", want, stdout)
		}
	}
	// Every arrival once, from the shard k mod 3.
	seen := map[int64]bool{}
	for i, f := range files {
		recs, err := measure.ReadRecordsFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Arrival.Shard != i || int(r.Arrival.Index%3) != i || seen[r.Arrival.Index] {
				t.Errorf("%s: arrival %d on shard %d (seen before: %v)", f, r.Arrival.Index, r.Arrival.Shard, seen[r.Arrival.Index])
			}
			seen[r.Arrival.Index] = true
		}
	}
	if len(seen) != 40 {
		t.Errorf("the shards recorded %d arrivals, want 40", len(seen))
	}

	for _, c := range []struct {
		name  string
		args  []string
		code  int
		wants []string
	}{
		{"missing shard", []string{files[0], files[2]}, 2, []string{"shard(s) 1 of 3 are missing", "--force"}},
		{"forced", []string{"--force", files[0], files[2]}, 0, []string{"arrivals 27"}},
		{"duplicate", []string{files[0], files[1], files[2], files[1]}, 2, []string{"are both shard 1/3"}},
		{"foreign run", []string{files[0], files[1], otherRun(t, files[2])}, 2, []string{"are of different runs"}},
		{"no files", nil, 2, []string{"needs the records files"}},
		{"not a records file", []string{filepath.Join(fixtures, "valid", "plan.json")}, 2, []string{"plan.json is not gzip"}},
	} {
		stdout, stderr, code := runCLI(t, append([]string{"report", "--model", "espeak-ng", "--bucket", "2s"}, c.args...)...)
		if code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s%s", c.name, code, c.code, stdout, stderr)
		}
		for _, w := range c.wants {
			if !strings.Contains(stdout+stderr, w) {
				t.Errorf("%s: output lacks %q:\n%s%s", c.name, w, stdout, stderr)
			}
		}
	}
}

// otherRun writes a copy of a records file with another run id.
func otherRun(t *testing.T, path string) string {
	recs, err := measure.ReadRecordsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		recs[i].RunID = "another-run"
	}
	out := filepath.Join(t.TempDir(), "other.jsonl.gz")
	writeShardFile(t, out, recs, &measure.ShardEnd{Complete: true, Arrivals: int64(len(recs)), LastArrival: recs[len(recs)-1].Arrival.Index})
	return out
}

// writeShardFile writes recs as replay writes a shard's records file: gzipped, then the end record (none when
// end is nil).
func writeShardFile(t *testing.T, path string, recs []bench.Record, end *measure.ShardEnd) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	w := bench.NewRecordWriter(zw)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if end != nil {
		if err := measure.WriteShardEnd(&buf, *end); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReportGolden: the table of a fixed two-shard run with instance samples, shed and dropped arrivals and a
// slow minute, rendered as tts-bench report prints it (exit 1: a slice violated the SLO). The third minute's
// p95 is within the SLO, but 2 of its 60 arrivals were dropped and 2 more were over the SLO: 6.7% missed it,
// more than the 5% a p95 leaves.
func TestReportGolden(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	end := start.Add(3 * time.Minute)
	var files []string
	for shard := range 2 {
		var recs []bench.Record
		for k := int64(shard); k < 180; k += 2 { // 1 rps for 3 minutes
			at := start.Add(time.Duration(k) * time.Second)
			r := bench.Record{RunID: "golden", Transport: "sagemaker-stream", Step: 4, Worker: int(k % 4), Seq: int(k),
				Sent: at, End: at.Add(300 * time.Millisecond), WindowStart: start, WindowEnd: end, Measured: true,
				TTFABMs: float64(100 + k%10), ResponseMs: 300, Class: bench.ClassOK, Status: 200,
				Arrival: &bench.Arrival{Index: k, Scheduled: at, Shard: shard, Shards: 2, Trace: "sha256:abc"}}
			switch {
			case k >= 60 && k < 120 && k%3 == 0:
				r.Class, r.Status, r.TTFABMs = bench.ClassShed, 503, 0
			case k >= 60 && k < 120:
				r.TTFABMs = float64(1000 + 10*k)
			case k == 150 || k == 151:
				r.Class, r.Worker, r.Status, r.TTFABMs, r.End = bench.ClassDropped, -1, 0, 0, at
			case k == 160 || k == 161:
				r.TTFABMs = 1500
			}
			recs = append(recs, r)
		}
		f := filepath.Join(dir, fmt.Sprintf("golden-%d.jsonl.gz", shard))
		writeShardFile(t, f, recs, &measure.ShardEnd{Complete: true, Arrivals: int64(len(recs)), LastArrival: recs[len(recs)-1].Arrival.Index, StoppedAtS: 180})
		files = append(files, f)
	}
	inst := `{"run_id":"golden","trace":"sha256:abc","endpoint":"speech-espeak-ng","samples":[
{"at":"2026-06-01T09:00:05Z","current":1,"desired":1},{"at":"2026-06-01T09:01:30Z","current":1,"desired":2},
{"at":"2026-06-01T09:02:10Z","current":2,"desired":2}]}`
	if err := os.WriteFile(filepath.Join(dir, "golden-1.instances.json"), []byte(inst), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI(t, append([]string{"report", "--model", "espeak-ng"}, files...)...)
	if code != 1 || !strings.Contains(stderr, "2 of 3 slices violated the SLO") {
		t.Errorf("exit %d, stderr %s: want 1 naming the violating slices (minute 1 slow and shed, minute 2 two of 60 dropped and two over the SLO)", code, stderr)
	}
	golden(t, "report.txt", stdout)
}

// TestReplayUsageErrors: careless command lines are usage errors (exit 2) naming every problem at once.
func TestReplayUsageErrors(t *testing.T) {
	csv := filepath.Join(t.TempDir(), "t.csv")
	os.WriteFile(csv, []byte("timestamp,rps\n0,1\n60,2\n"), 0o644)
	for _, c := range []struct {
		args  []string
		wants []string
	}{
		{[]string{}, []string{"--trace is required"}},
		{[]string{"--trace", "step", "--shard", "3/3"}, []string{"shard index 3: want 0 to 2"}},
		{[]string{"--trace", "step", "--shard", "1/2", "--run-id", "../x"}, []string{"--run-id \"../x\"", "--start-at"}},
		{[]string{"--trace", csv, "--peak-rps", "5"}, []string{"--peak-rps set the parameters of a built-in shape"}},
		{[]string{"--trace", "sawtooth", "--max-workers", "0", "--bucket", "0s"}, []string{"sawtooth", "--max-workers 0", "--bucket 0s"}},
		{[]string{"--trace", "step", "--start-at", "2001-01-01T00:00:00Z"}, []string{"is in the past"}},
		{[]string{"--trace", "step", "--transport", "http"}, []string{"--url: is required"}},
		{[]string{"--trace", "step", "extra"}, []string{"takes no arguments"}},
		{[]string{"--trace", "spike", "--peak-rps", "5000000"}, []string{"peaks at 5e+06 rps", "--shard"}},
	} {
		stdout, stderr, code := runCLI(t, append([]string{"replay", "--model", "espeak-ng"}, c.args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s%s", c.args, code, stdout, stderr)
		}
		for _, w := range c.wants {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, stderr)
			}
		}
	}
}

// TestReplayNamesAMissingEndpoint: replay against an emulator without the endpoint says to deploy it first and
// fails the check (exit 1); an unreachable AWS is not a missing endpoint (TestConventionsGolden's replay case:
// exit 3 with the diagnosis, no "deploy it first").
func TestReplayNamesAMissingEndpoint(t *testing.T) {
	e := emulatortest.Start(t)
	stdout, stderr, code := runCLI(t, "replay", "--local", "--state-dir", e.StateDir, "--model", "espeak-ng", "--trace", "step",
		"--peak-rps", "2", "--trough-rps", "1", "--duration", "10s", "--step", "1s", "--at", "2s", "--output", filepath.Join(t.TempDir(), "r.jsonl.gz"))
	if code != 1 || !strings.Contains(stderr, "the endpoint speech-espeak-ng does not exist: deploy it first (speech-infra deploy espeak-ng)") {
		t.Errorf("exit %d, want 1 naming the missing endpoint:\n%s%s", code, stdout, stderr)
	}
}
