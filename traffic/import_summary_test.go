package traffic

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/simulate"
)

// The summary says what was read, in which order, the span, the scales when given, and the bad rows kept and
// not kept.
func TestImportResultWriteSummary(t *testing.T) {
	first := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := ImportResult{Name: "access.csv", Rows: 5, Skipped: 3, Bad: []BadRow{{Line: 2, Reason: "no time"}}, Requests: 4, TimeFormat: TimeSQL,
		First: first, Last: first.Add(90 * time.Second)}
	var b strings.Builder
	r.WriteSummary(&b, "ts", 2, 1)
	for _, want := range []string{`imported 4 requests from access.csv (column "ts", time format sql: a time without a zone is UTC)`,
		"5 rows read, 3 skipped as bad; sorted: the log was out of time order", "the trace lasts 1m31s",
		"scale 2 (rate), time scale 1 (time compressed)", "  skipped ", "(and 2 more skipped)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, b.String())
		}
	}
}

// ImportFile writes the trace of a log file, or of stdin, creating the output's directory; a missing log is an
// error naming it, and writes nothing.
func TestImportFile(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.csv")
	if err := os.WriteFile(log, []byte("ts\n2026-03-01T12:00:00Z\n2026-03-01T12:00:01Z\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "new", "day.csv")
	res, err := ImportFile(context.Background(), log, nil, out, ImportOptions{Format: FormatCSV, TimeColumn: "ts"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Name != log || res.Requests != 2 {
		t.Errorf("name %q, %d requests: want %s and 2", res.Name, res.Requests, log)
	}
	if _, err := simulate.ReadFile(out); err != nil {
		t.Errorf("the trace written does not read: %v", err)
	}
	res, err = ImportFile(context.Background(), "-", strings.NewReader("ts\n1700000000\n"), filepath.Join(dir, "stdin.csv"), ImportOptions{Format: FormatCSV, TimeColumn: "ts"})
	if err != nil || res.Name != "stdin" || res.Requests != 1 {
		t.Errorf("stdin: %+v, %v", res, err)
	}
	missing := filepath.Join(dir, "none.csv")
	if _, err := ImportFile(context.Background(), missing, nil, filepath.Join(dir, "x.csv"), ImportOptions{Format: FormatCSV, TimeColumn: "ts"}); err == nil || !strings.HasPrefix(err.Error(), missing+": ") {
		t.Errorf("a missing log: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.csv")); err == nil {
		t.Error("a failed import wrote its output")
	}
}
