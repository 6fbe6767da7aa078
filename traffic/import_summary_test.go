package traffic

import (
	"strings"
	"testing"
	"time"
)

// The summary says what was read, in which order, the span, the scales when given, and the bad rows kept and
// not kept.
func TestImportResultWriteSummary(t *testing.T) {
	first := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := ImportResult{Rows: 5, Skipped: 3, Bad: []BadRow{{Line: 2, Reason: "no time"}}, Requests: 4, TimeFormat: TimeSQL,
		First: first, Last: first.Add(90 * time.Second)}
	var b strings.Builder
	r.WriteSummary(&b, "access.csv", "ts", 2, 1)
	for _, want := range []string{`imported 4 requests from access.csv (column "ts", time format sql: a time without a zone is UTC)`,
		"5 rows read, 3 skipped as bad; sorted: the log was out of time order", "the trace lasts 1m31s",
		"scale 2 (rate), time scale 1 (time compressed)", "  skipped ", "(and 2 more skipped)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, b.String())
		}
	}
}
