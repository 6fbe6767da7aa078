package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/measure"
)

// A replay shard stopped with SIGINT halfway must not merge as if whole (it would show "offered rps 2" on a
// constant 4-rps trace). Two shards of a constant 4-rps trace run as separate processes; shard 1 gets SIGINT
// halfway. Its file says it stopped early (and up to which arrival); report refuses it (exit 2) naming the
// shard, and with --force merges it saying which slices are short. A non-gzip file, a file without its end
// record and a negative TTFAB are refused too.
func TestReportRefusesAShardStoppedBySIGINT(t *testing.T) {
	srv := wavOnce(t, 20*time.Millisecond)
	dir := t.TempDir()
	csv := filepath.Join(dir, "constant.csv")
	if err := os.WriteFile(csv, []byte("timestamp,rps\n0,4\n4,4\n"), 0o644); err != nil { // 4 rps for 8 s: 32 arrivals
		t.Fatal(err)
	}
	files := make([]string, 2)
	for i := range 2 {
		files[i] = filepath.Join(dir, fmt.Sprintf("shard%d.jsonl.gz", i))
	}
	outs, errs := runShards(t, 2, func(i int, startAt string) []string {
		return []string{"replay", "--model", "espeak-ng", "--arrivals", "uniform", "--transport", "http", "--url", srv.URL, "--trace", csv,
			"--shard", fmt.Sprintf("%d/2", i), "--run-id", "sigint-test", "--start-at", startAt,
			"--bucket", "2s", "--max-workers", "8", "--output", files[i]}
	}, func(start time.Time, cmds []*exec.Cmd) {
		// SIGINT to shard 1 halfway through the trace.
		time.Sleep(time.Until(start.Add(4 * time.Second)))
		cmds[1].Process.Signal(syscall.SIGINT)
	})
	if errs[0] != nil {
		t.Fatalf("shard 0: %v\n%s", errs[0], outs[0])
	}
	if errs[1] == nil {
		t.Fatalf("shard 1 exited 0 after SIGINT:\n%s", outs[1])
	}
	if !strings.Contains(outs[1].String(), "replay stopped early") {
		t.Fatalf("shard 1 does not say it stopped early:\n%s", outs[1].String())
	}

	// The merge is refused, naming the shard, where it stopped and --force.
	report := func(args ...string) (string, string, int) {
		return runCLI(t, append([]string{"report", "--model", "espeak-ng", "--bucket", "2s"}, args...)...)
	}
	stdout, stderr, code := report(files...)
	if code != 2 || !strings.Contains(stderr, "shard 1/2 stopped early") || !strings.Contains(stderr, "--force") {
		t.Fatalf("report of an interrupted shard: exit %d, want 2 naming shard 1/2 and --force\n%s%s", code, stdout, stderr)
	}
	// With --force it merges and says which slices are short: those from the one shard 1 stopped in.
	stdout, stderr, code = report(append([]string{"--force"}, files...)...)
	if code == 2 || !strings.Contains(stderr, "shard 1/2 stopped at ") || !strings.Contains(stderr, " s of the trace: slices short of its arrivals: 0:00:04, 0:00:06\n") || !strings.Contains(stderr, "slices short of its arrivals: ") ||
		!strings.Contains(stdout, "SHORT slices") || !strings.Contains(stdout, "0:00:06") {
		t.Fatalf("report --force: exit %d, want the short slices named\n%s%s", code, stdout, stderr)
	}
	t.Logf("report --force:\n%s%s", stdout, stderr)
	// Shard 0 alone is complete: it re-reports without --force, a missing shard aside.
	if _, stderr, code := report("--force", files[0]); code == 2 || strings.Contains(stderr, "stopped") {
		t.Fatalf("the complete shard: exit %d\n%s", code, stderr)
	}

	// A non-gzip copy of the complete shard.
	plain := filepath.Join(dir, "plain.jsonl")
	recs, err := measure.ReadRecordsFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	zr := mustGunzip(t, files[0])
	if err := os.WriteFile(plain, zr, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := report("--force", plain); code != 2 || !strings.Contains(stderr, "plain.jsonl is not gzip") {
		t.Fatalf("a non-gzip file: exit %d\n%s", code, stderr)
	}
	// The records without the end record (a process killed before it finished the file).
	noEnd := filepath.Join(dir, "noend.jsonl.gz")
	writeShardFile(t, noEnd, recs, nil)
	if _, stderr, code := report(noEnd); code != 2 || !strings.Contains(stderr, "has no end record") {
		t.Fatalf("a file without its end record: exit %d\n%s", code, stderr)
	}
	// A negative TTFAB, with a valid end record.
	neg := filepath.Join(dir, "negative.jsonl.gz")
	recs[3].TTFABMs = -5
	writeShardFile(t, neg, recs, &measure.ShardEnd{Complete: true, Arrivals: int64(len(recs)), LastArrival: recs[len(recs)-1].Arrival.Index, StoppedAtS: 8})
	if _, stderr, code := report("--force", neg); code != 2 || !strings.Contains(stderr, "record 4") || !strings.Contains(stderr, "ttfab_ms -5") {
		t.Fatalf("a negative TTFAB: exit %d\n%s", code, stderr)
	}
	// An end record that does not count the file's records.
	short := filepath.Join(dir, "edited.jsonl.gz")
	recs[3].TTFABMs = 100
	writeShardFile(t, short, recs[:10], &measure.ShardEnd{Complete: true, Arrivals: int64(len(recs)), LastArrival: recs[len(recs)-1].Arrival.Index, StoppedAtS: 8})
	if _, stderr, code := report("--force", short); code != 2 || !strings.Contains(stderr, "holds 10 records") {
		t.Fatalf("an end record unlike the file: exit %d\n%s", code, stderr)
	}
}

func mustGunzip(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Records hidden after the end record (a second records member appended to a complete file) are refused.
func TestReportRefusesDataAfterTheEndRecord(t *testing.T) {
	dir := t.TempDir()
	recs := goldenShardRecords(0)
	good := filepath.Join(dir, "good.jsonl.gz")
	writeShardFile(t, good, recs[:5], &measure.ShardEnd{Complete: true, Arrivals: 5, LastArrival: recs[4].Arrival.Index, StoppedAtS: 180})
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	var extra bytes.Buffer
	zw := gzip.NewWriter(&extra)
	zw.Write([]byte("{}\n"))
	zw.Close()
	bad := filepath.Join(dir, "appended.jsonl.gz")
	if err := os.WriteFile(bad, append(data, extra.Bytes()...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(t, "report", "--model", "espeak-ng", "--force", bad); code != 2 || !strings.Contains(stderr, "data follows the shard's end record") {
		t.Fatalf("data after the end record: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := runCLI(t, "report", "--model", "espeak-ng", good); code == 2 {
		t.Fatalf("the good file: exit %d\n%s", code, stderr)
	}
}

// goldenShardRecords are 1 rps for 3 minutes of one shard of two, all served in 100 ms.
func goldenShardRecords(shard int) []bench.Record {
	start := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	var recs []bench.Record
	for k := int64(shard); k < 180; k += 2 {
		at := start.Add(time.Duration(k) * time.Second)
		recs = append(recs, bench.Record{RunID: "g", Transport: "sagemaker-stream", Step: 4, Worker: int(k % 4), Seq: int(k),
			Sent: at, End: at.Add(300 * time.Millisecond), WindowStart: start, WindowEnd: start.Add(3 * time.Minute), Measured: true,
			TTFABMs: 100, ResponseMs: 300, Class: bench.ClassOK, Status: 200,
			Arrival: &bench.Arrival{Index: k, Scheduled: at, Shard: shard, Shards: 1, Trace: "sha256:abc"}})
	}
	return recs
}
