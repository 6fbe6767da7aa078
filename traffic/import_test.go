package traffic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/simulate"
)

// importString imports log with o (Name "log", TempDir a test directory) and returns the trace text.
func importString(t *testing.T, log string, o ImportOptions) (string, ImportResult, error) {
	t.Helper()
	if o.Name == "" {
		o.Name = "log"
	}
	if o.TempDir == "" {
		o.TempDir = t.TempDir()
	}
	var out bytes.Buffer
	res, err := Import(context.Background(), strings.NewReader(log), &out, o)
	return out.String(), res, err
}

// offsets are the request offsets of a trace text.
func offsets(t *testing.T, trace string) []string {
	t.Helper()
	_, body, ok := strings.Cut(trace, "\n"+simulate.RequestTraceColumn+"\n")
	if !ok {
		t.Fatalf("no %s header in\n%s", simulate.RequestTraceColumn, trace)
	}
	body, end, ok := strings.Cut(body, simulate.RequestTraceEndPrefix)
	if !ok || !strings.HasSuffix(end, " requests\n") {
		t.Fatalf("no end line in\n%s", trace)
	}
	return strings.Fields(body)
}

func startOf(t *testing.T, trace string) string {
	t.Helper()
	for _, l := range strings.Split(trace, "\n") {
		if s, ok := strings.CutPrefix(l, simulate.RequestTraceStartPrefix); ok {
			return s
		}
	}
	t.Fatalf("no start line in\n%s", trace)
	return ""
}

// Every time format reads to the same instants: RFC 3339 with a zone, Unix seconds and milliseconds with
// fractions, SQL with 7 fractional digits (no zone: UTC) and with a zone. Rows out of order are sorted.
func TestImportEachTimeFormat(t *testing.T) {
	// The same three requests, at 12:00:00.1234567, 12:00:00.5 and 12:00:02 UTC, the last written first.
	cases := []struct {
		name, format, timeFormat, log string
		wantFormat                    string
	}{
		{"rfc3339 with zones", FormatCSV, TimeRFC3339, "ts,voice\n2024-03-01T14:00:02+02:00,a\n2024-03-01T12:00:00.1234567Z,b\n2024-03-01T07:00:00.5-05:00,c\n", TimeRFC3339},
		{"unix seconds", FormatCSV, TimeUnix, "ts\n1709294402\n1709294400.1234567\n1709294400.5\n", TimeUnix},
		{"unix milliseconds", FormatCSV, TimeUnixMS, "ts\n1709294402000\n1709294400123.4567\n1709294400500\n", TimeUnixMS},
		{"sql, 7 digits, no zone", FormatCSV, TimeSQL, "id,ts\n1,2024-03-01 12:00:02\n2,2024-03-01 12:00:00.1234567\n3,2024-03-01 12:00:00.5000000\n", TimeSQL},
		{"sql with zones", FormatCSV, TimeSQL, "ts\n2024-03-01 13:00:02+01:00\n2024-03-01 12:00:00.1234567 +00:00\n2024-03-01 12:00:00.5+00\n", TimeSQL},
		{"auto: sql", FormatCSV, TimeAuto, "ts\n2024-03-01 12:00:02\n2024-03-01 12:00:00.1234567\n2024-03-01 12:00:00.5\n", TimeSQL},
		{"auto: rfc3339", FormatCSV, "", "ts\n2024-03-01T12:00:02Z\n2024-03-01T12:00:00.1234567Z\n2024-03-01T12:00:00.5Z\n", TimeRFC3339},
		{"auto: unix", FormatCSV, TimeAuto, "ts\n1709294402\n1709294400.1234567\n1709294400.5\n", TimeUnix},
		{"auto: unix-ms", FormatCSV, TimeAuto, "ts\n1709294402000\n1709294400123.4567\n1709294400500\n", TimeUnixMS},
		{"jsonl, strings and numbers", FormatJSONL, TimeAuto, `{"ts":1709294402,"text":"a \"quoted\" ts"}` + "\n\n" + `{"meta":{"ts":1},"ts":1709294400.1234567}` + "\n" + `{"ts" : 1709294400.5 }` + "\n", TimeUnix},
		{"jsonl, sql strings", FormatJSONL, TimeSQL, `{"ts":"2024-03-01 12:00:02"}` + "\n" + `{"ts":"2024-03-01 12:00:00.1234567"}` + "\n" + `{"ts":"2024-03-01 12:00:00.5"}` + "\n", TimeSQL},
		{"csv with quotes and a BOM", FormatCSV, TimeAuto, "\uFEFF\"ts\",\"note\"\n\"2024-03-01T12:00:02Z\",\"x, y\"\n2024-03-01T12:00:00.1234567Z,\"\"\"\"\n2024-03-01T12:00:00.5Z,z\n", TimeRFC3339},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			trace, res, err := importString(t, c.log, ImportOptions{Format: c.format, TimeColumn: "ts", TimeFormat: c.timeFormat})
			if err != nil {
				t.Fatal(err)
			}
			if got := startOf(t, trace); got != "2024-03-01T12:00:00.1234567Z" {
				t.Errorf("start %s, want 2024-03-01T12:00:00.1234567Z", got)
			}
			if got, want := offsets(t, trace), []string{"0", "0.3765433", "1.8765433"}; !slices.Equal(got, want) {
				t.Errorf("offsets %v, want %v\n%s", got, want, trace)
			}
			if res.Rows != 3 || res.Requests != 3 || res.Sorted || res.TimeFormat != c.wantFormat {
				t.Errorf("result %+v: want 3 rows and requests, unsorted, format %s", res, c.wantFormat)
			}
			q, err := simulate.ReadRequests("t", strings.NewReader(trace))
			if err != nil || q.Count != 3 || !slices.Equal(q.PerSecond, []float64{2, 1}) {
				t.Fatalf("read back: %v, %+v", err, q)
			}
		})
	}
}

// A bad time is refused (exit 2 in the CLI) with its row, line and column; --skip-bad skips and counts it.
func TestImportRefusesBadRows(t *testing.T) {
	log := "id,ts\n1,2024-03-01T12:00:00Z\n2,yesterday\n3,\n4,2024-03-01T12:00:01Z\n5\n"
	_, _, err := importString(t, log, ImportOptions{Format: FormatCSV, TimeColumn: "ts"})
	var bad *BadRowsError
	if !errors.As(err, &bad) || len(bad.Rows) != 3 {
		t.Fatalf("err = %v, want 3 bad rows", err)
	}
	for i, want := range []string{
		`row 2 (line 3), column "ts": "yesterday": not an RFC 3339 time with a zone`,
		`row 3 (line 4), column "ts": "": empty`,
		`row 5 (line 6), column "ts": "": the row has no such column`,
	} {
		if !strings.HasPrefix(bad.Rows[i].String(), want) {
			t.Errorf("bad row %d = %q, want it to start %q", i, bad.Rows[i], want)
		}
	}
	if !strings.Contains(err.Error(), "--skip-bad") {
		t.Errorf("the refusal does not name --skip-bad: %v", err)
	}
	trace, res, err := importString(t, log, ImportOptions{Format: FormatCSV, TimeColumn: "ts", SkipBad: true})
	if err != nil || res.Skipped != 3 || res.Requests != 2 || len(res.Bad) != 3 {
		t.Fatalf("--skip-bad: %v, %+v", err, res)
	}
	if !strings.Contains(trace, "# 5 rows read, 3 skipped as bad") {
		t.Errorf("the trace does not record the skipped rows:\n%s", trace)
	}
	// JSONL: a line that is not JSON, and a row without the key after the first.
	_, _, err = importString(t, `{"ts":1709294400}`+"\n{not json\n"+`{"other":1}`+"\n", ImportOptions{Format: FormatJSONL, TimeColumn: "ts"})
	if !errors.As(err, &bad) || len(bad.Rows) != 2 || bad.Rows[0].Line != 2 || bad.Rows[0].Reason != "not a JSON object" || bad.Rows[1].Reason != "the row has no such column" || bad.More {
		t.Fatalf("jsonl: %v", err)
	}
	// A mix of formats under auto: the first row decides.
	_, _, err = importString(t, "ts\n1709294400\n2024-03-01T12:00:00Z\n", ImportOptions{Format: FormatCSV, TimeColumn: "ts"})
	if !errors.As(err, &bad) || !strings.Contains(bad.Rows[0].Reason, "detected as unix") {
		t.Fatalf("mixed formats: %v", err)
	}
	// A first line that is not JSON does not hide the keys of the first object.
	var mc *MissingColumnError
	_, _, err = importString(t, "{oops\n"+`{"time":1709294400}`+"\n", ImportOptions{Format: FormatJSONL, TimeColumn: "ts"})
	if !errors.As(err, &mc) || !slices.Equal(mc.Present, []string{"time"}) {
		t.Fatalf("first line not JSON: %v", err)
	}
	// A line that is not CSV names its line.
	_, _, err = importString(t, "ts,x\n1709294400,a\n1709294401,b\"c\n", ImportOptions{Format: FormatCSV, TimeColumn: "ts"})
	if !errors.As(err, &bad) || len(bad.Rows) != 1 || bad.Rows[0].Line != 3 || !strings.HasPrefix(bad.Rows[0].Reason, "not CSV: ") {
		t.Fatalf("not CSV: %v", err)
	}
	// Reading stops after maxBadExamples bad rows.
	_, _, err = importString(t, "ts\n"+strings.Repeat("x\n", 50), ImportOptions{Format: FormatCSV, TimeColumn: "ts", TimeFormat: TimeUnix})
	if !errors.As(err, &bad) || len(bad.Rows) != maxBadExamples || !bad.More {
		t.Fatalf("many bad rows: %v", err)
	}
}

// A missing column names the columns present (and a case-insensitive match).
func TestImportMissingColumnNamesThePresentOnes(t *testing.T) {
	_, _, err := importString(t, "Timestamp,voice\n2024-03-01T12:00:00Z,a\n", ImportOptions{Format: FormatCSV, TimeColumn: "timestamp"})
	var mc *MissingColumnError
	if !errors.As(err, &mc) || err.Error() != `log has no column "timestamp"; its columns are: "Timestamp", "voice" (did you mean "Timestamp"? names are case-sensitive)` {
		t.Fatalf("err = %v", err)
	}
	_, _, err = importString(t, `{"time":"x","user":{"ts":1}}`+"\n", ImportOptions{Format: FormatJSONL, TimeColumn: "ts"})
	if !errors.As(err, &mc) || !slices.Equal(mc.Present, []string{"time", "user"}) {
		t.Fatalf("jsonl err = %v", err)
	}
}

// A log larger than one run is sorted through spilled runs and comes out exactly as a sort in memory does; the
// temporary runs are removed.
func TestImportSortsInBoundedRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := int64(1709294400) * 1e9
	var times []int64
	var b strings.Builder
	b.WriteString("ts\n")
	for range 5000 {
		ns := base + rng.Int64N(3600e9)
		times = append(times, ns)
		fmt.Fprintf(&b, "%d.%09d\n", ns/1e9, ns%1e9)
	}
	tmp := t.TempDir()
	trace, res, err := importString(t, b.String(), ImportOptions{Format: FormatCSV, TimeColumn: "ts", RunSize: 700, TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs != 8 || res.Requests != 5000 {
		t.Errorf("runs %d, requests %d; want 8 runs (5000 / 700, rounded up) and 5000", res.Runs, res.Requests)
	}
	slices.Sort(times)
	got := offsets(t, trace)
	for i, ns := range times {
		if want := string(appendSeconds(nil, ns-times[0])); got[i] != want {
			t.Fatalf("offset %d = %s, want %s", i, got[i], want)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the import left %d file(s) in its temporary directory", len(left))
	}
}

// --scale multiplies the count (copies spread to the next request), --time-scale divides the offsets.
func TestImportScales(t *testing.T) {
	log := "ts\n100\n101\n103\n104\n"
	trace, res, err := importString(t, log, ImportOptions{Format: FormatCSV, TimeColumn: "ts", TimeFormat: TimeUnix, Scale: 2.5})
	if err != nil {
		t.Fatal(err)
	}
	// floor(2.5·k) after request k: 2, 5, 7, 10 → 2, 3, 2, 3 copies.
	if got, want := offsets(t, trace), []string{"0", "0.5", "1", "1.666666666", "2.333333333", "3", "3.5", "4", "4", "4"}; !slices.Equal(got, want) || res.Requests != 10 {
		t.Errorf("scale 2.5: %v (%d), want %v", got, res.Requests, want)
	}
	trace, _, err = importString(t, log, ImportOptions{Format: FormatCSV, TimeColumn: "ts", TimeFormat: TimeUnix, Scale: 0.5, TimeScale: 4})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := offsets(t, trace), []string{"0.25", "1"}; !slices.Equal(got, want) {
		t.Errorf("scale 0.5, time scale 4: %v, want %v", got, want)
	}
	if !strings.Contains(trace, "scale 0.5, time scale 4") {
		t.Errorf("the trace does not record the scales:\n%s", trace)
	}
	for _, o := range []ImportOptions{{Scale: -1}, {TimeScale: 1e6}, {Format: "xml"}, {TimeFormat: "iso"}} {
		if o.Format == "" {
			o.Format = FormatCSV
		}
		o.TimeColumn = "ts"
		if _, _, err := importString(t, log, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// A log spanning more than a trace may last is refused, naming --time-scale.
func TestImportRefusesTooLongASpan(t *testing.T) {
	_, _, err := importString(t, "ts\n2024-01-01T00:00:00Z\n2024-03-01T00:00:00Z\n", ImportOptions{Format: FormatCSV, TimeColumn: "ts"})
	if err == nil || !strings.Contains(err.Error(), "--time-scale") {
		t.Fatalf("err = %v", err)
	}
}

func TestDetectTimeFormat(t *testing.T) {
	for in, want := range map[string]string{
		"1709294400": TimeUnix, "99999999999": TimeUnix, "100000000000": TimeUnixMS, "1709294400123": TimeUnixMS, "0001709294400": TimeUnix,
		"2024-03-01T12:00:00Z": TimeRFC3339, "2024-03-01 12:00:00": TimeSQL, "yesterday": "", "-5": "", "": "",
	} {
		if got := detectTimeFormat(in); got != want {
			t.Errorf("detectTimeFormat(%q) = %q, want %q", in, got, want)
		}
	}
}

// genLog is a CSV request log of n requests at rate rps, with a second column, unsorted in blocks of 100.
func genLog(n int, rps float64) []byte {
	var b bytes.Buffer
	b.WriteString("request_id,ts,voice\n")
	base := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		j := i - i%100 + 99 - i%100 // reversed within each block of 100
		at := base.Add(time.Duration(float64(j) / rps * 1e9))
		b.WriteString(strconv.Itoa(i))
		b.WriteByte(',')
		b.WriteString(at.Format("2006-01-02 15:04:05.0000000"))
		b.WriteString(",af_heart\n")
	}
	return b.Bytes()
}

// BenchmarkImport imports a CSV log of 1M requests at 80 rps (SQL times with 7 fractional digits, unsorted in
// blocks), through spilled runs of DefaultRunSize / 4; it reports requests per second of import.
func BenchmarkImport(b *testing.B) {
	const n = 1_000_000
	log := genLog(n, 80)
	dir := b.TempDir()
	b.SetBytes(int64(len(log)))
	b.ResetTimer()
	for b.Loop() {
		res, err := Import(context.Background(), bytes.NewReader(log), discard{}, ImportOptions{Name: "bench", Format: FormatCSV, TimeColumn: "ts", TempDir: dir, RunSize: DefaultRunSize / 4})
		if err != nil || res.Requests != n {
			b.Fatalf("%v, %d requests", err, res.Requests)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
