package traffic

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// burstTrace is an hour at 10 rps with one burst of 40 rps over [1805 s, 1815 s), as a request trace: ten
// requests in each second, forty in the burst's.
func burstTrace(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("ts\n")
	base := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	for sec := range 3600 {
		n := 10
		if sec >= 1805 && sec < 1815 {
			n = 40
		}
		for k := range n {
			fmt.Fprintf(&b, "%s\n", base.Add(time.Duration(sec)*time.Second+time.Duration(k)*time.Second/time.Duration(n)).Format(time.RFC3339Nano))
		}
	}
	trace, _, err := importString(t, b.String(), ImportOptions{Format: FormatCSV, TimeColumn: "ts"})
	if err != nil {
		t.Fatal(err)
	}
	return trace
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// The numbers of a trace built so that they are known by hand.
//
// Mean: (3600 s × 10 + 10 s × 30 more) ÷ 3600 s = 10.0833. Peaks: 40 at 1 s and 10 s (from 1805 s); at 1 minute
// the first window holding the whole burst, [1755 s, 1815 s): (50 × 10 + 10 × 40) ÷ 60 = 15.
//
// Surge at T_plan 80 s: the start minutes are 60 s ... 3480 s (m + 80 s within 3600 s): 58 of them. The burst
// lies in the horizon [m, m + 80 s) of m = 1740 s and 1800 s, each after a minute at 10 rps: 40 ÷ 10 = 4. The
// minute before m = 1860 s holds the burst (15 rps) and its horizon is flat: 10 ÷ 15 = 0.667. The other 55 are
// 1. Sorted: 0.667, 55 × 1, 4, 4; nearest rank of 58: p50 the 29th (1), p90 the 53rd (1), p95 the 56th (1), p99
// the 58th (4).
//
// Burst factor: the 10-s peak, 40 at [1805 s, 1815 s), ÷ the mean of the 5 minutes centred on it, [1660 s,
// 1960 s): (290 × 10 + 10 × 40) ÷ 300 = 11; 40 ÷ 11 = 3.636.
func TestDescribeKnownTrace(t *testing.T) {
	s, err := Read("burst.csv", strings.NewReader(burstTrace(t)))
	if err != nil {
		t.Fatal(err)
	}
	if s.Kind != KindRequests || s.Step != time.Second || !s.Start.Equal(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)) || len(s.PerSecond) != 3600 {
		t.Fatalf("series %s %s %s %d", s.Kind, s.Step, s.Start, len(s.PerSecond))
	}
	d, err := Describe(s, 80*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if d.Requests != 36300 || !near(d.MeanRPS, 36300.0/3600) {
		t.Errorf("requests %g, mean %g; want 36300, 10.0833", d.Requests, d.MeanRPS)
	}
	for name, c := range map[string]struct {
		got  *Peak
		want Peak
	}{"1s": {d.Peak1s, Peak{40, 1805}}, "10s": {d.Peak10s, Peak{40, 1805}}, "1m": {d.Peak1m, Peak{15, 1755}}} {
		if c.got == nil || !near(c.got.RPS, c.want.RPS) || c.got.AtS != c.want.AtS {
			t.Errorf("peak %s = %+v, want %+v", name, c.got, c.want)
		}
	}
	sg := d.Surge
	if sg == nil || sg.StartMinutes != 58 || sg.LeftOut != 0 || !near(sg.Max, 4) || sg.MaxAtS != 1740 {
		t.Fatalf("surge %+v", sg)
	}
	for q, want := range map[string]float64{"p50": 1, "p90": 1, "p95": 1, "p99": 4} {
		if !near(sg.Quantiles[q], want) {
			t.Errorf("surge %s = %g, want %g", q, sg.Quantiles[q], want)
		}
	}
	b := d.Burst
	if b == nil || !near(b.Factor, 40.0/11) || b.WindowAtS != 1660 || !near(b.MeanRPS, 11) || !near(b.Peak10sRPS, 40) {
		t.Errorf("burst %+v, want 40/11 in the window from 1660 s", b)
	}
	if d.Daily.MeanRPS != nil || !strings.Contains(d.Daily.TooShort, "needs at least 24h") || !strings.Contains(d.Weekly.TooShort, "7 days") {
		t.Errorf("profiles of an hour: %+v %+v", d.Daily, d.Weekly)
	}
	if len(d.Notes) != 0 {
		t.Errorf("notes on a 1-s trace: %v", d.Notes)
	}
	// A longer horizon: T_plan 600 s. The burst is in the horizons of m = 1260 s ... 1800 s (10 minutes at 4),
	// the minute after it 0.667, and the start minutes run to 3000 s: 50 in all.
	d, err = Describe(s, 600*time.Second)
	if err != nil || d.Surge.StartMinutes != 50 || !near(d.Surge.Quantiles["p90"], 4) || !near(d.Surge.Quantiles["p50"], 1) {
		t.Errorf("T_plan 600 s: %v %+v", err, d.Surge)
	}
	if _, err := Describe(s, 5*time.Second); err == nil {
		t.Error("T_plan 5 s accepted: the surge's peak is a 10-s rate")
	}
}

// A rate trace with RFC 3339 timestamps: a week of hourly rows starting on Monday 2024-03-04 at 00:00 UTC, the
// rate 10 × weekday (Monday 0) + hour. Daily profile: the mean over the week, 30 + hour; weekly: 10 × weekday +
// 11.5. The hourly step is said to limit the peaks.
func TestDescribeProfiles(t *testing.T) {
	var b strings.Builder
	b.WriteString("# an hourly week\ntimestamp,rps\n")
	start := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)
	for h := range 7 * 24 {
		fmt.Fprintf(&b, "%s,%d\n", start.Add(time.Duration(h)*time.Hour).Format(time.RFC3339), 10*(h/24)+h%24)
	}
	s, err := Read("week.csv", strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if s.Kind != KindRate || s.Step != time.Hour || !s.Start.Equal(start) || len(s.Comments) != 1 {
		t.Fatalf("series %s %s %s %v", s.Kind, s.Step, s.Start, s.Comments)
	}
	d, err := Describe(s, DefaultTPlan)
	if err != nil {
		t.Fatal(err)
	}
	for h, v := range d.Daily.MeanRPS {
		if !near(v, 30+float64(h)) {
			t.Errorf("daily[%d] = %g, want %d", h, v, 30+h)
		}
	}
	for w, v := range d.Weekly.MeanRPS {
		if !near(v, 10*float64(w)+11.5) {
			t.Errorf("weekly[%d] = %g, want %g", w, v, 10*float64(w)+11.5)
		}
	}
	if len(d.Daily.MeanRPS) != 24 || len(d.Weekly.MeanRPS) != 7 {
		t.Fatalf("profiles %+v %+v", d.Daily, d.Weekly)
	}
	if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "step is 1h0m0s") {
		t.Errorf("notes %v", d.Notes)
	}
	if d.Peak1s.RPS != 83 || d.Peak10s.RPS != 83 {
		t.Errorf("peaks %+v %+v, want Sunday 23:00's 83", d.Peak1s, d.Peak10s)
	}
	// Seconds since the start: no clock, no profile.
	s, err = Read("secs.csv", strings.NewReader("0,5\n60,5\n"))
	if err != nil || !s.Start.IsZero() {
		t.Fatalf("%v %v", err, s.Start)
	}
	d, _ = Describe(s, DefaultTPlan)
	if !strings.Contains(d.Daily.TooShort, "does not say when it starts") || d.Surge != nil || d.SurgeTooShort == "" || d.Burst != nil {
		t.Errorf("a 2-minute trace: %+v", d)
	}
}

// The chart is an SVG document.
func TestChart(t *testing.T) {
	s, err := Read("burst.csv", strings.NewReader(burstTrace(t)))
	if err != nil {
		t.Fatal(err)
	}
	svg, err := Chart(s)
	if err != nil || !bytes.HasPrefix(bytes.TrimSpace(svg), []byte("<?xml")) || !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("minutes since the start")) {
		t.Fatalf("chart: %v, %.200s", err, svg)
	}
	if _, err := Chart(Series{Name: "empty"}); err == nil {
		t.Error("an empty series was drawn")
	}
}

// Fetch keeps 1-minute periods when the 10-s read shows only the minute's datapoints (standard resolution), and
// 10-s periods where they are finer; gaps are periods without requests; the trace reads back with the same
// requests.
func TestFetch(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 30, 25, 0, time.UTC)
	type call struct {
		start, end time.Time
		period     time.Duration
	}
	var calls []call
	reader := func(highRes bool) SumReader {
		return func(_ context.Context, start, end time.Time, period time.Duration) ([]Datapoint, error) {
			calls = append(calls, call{start, end, period})
			var out []Datapoint
			switch {
			case period == MinutePeriod:
				out = append(out, Datapoint{now.Add(-10 * time.Minute).Truncate(time.Minute), 120}, Datapoint{now.Truncate(time.Minute), 60})
			case highRes:
				out = append(out, Datapoint{now.Truncate(time.Minute).Add(10 * time.Second), 50}, Datapoint{now.Truncate(time.Minute), 10})
			default:
				out = append(out, Datapoint{now.Truncate(time.Minute), 60})
			}
			return out, nil
		}
	}
	h, err := Fetch(context.Background(), reader(false), now, 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Periods) != 31 || !h.Start.Equal(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)) || h.Requests != 180 || !h.HighResFrom.IsZero() {
		t.Fatalf("standard: %d periods from %s, %g requests, high-res from %s", len(h.Periods), h.Start, h.Requests, h.HighResFrom)
	}
	if h.Periods[20].RPS() != 2 || h.Periods[30].RPS() != 1 || h.Periods[0].RPS() != 0 {
		t.Errorf("rates %g %g %g", h.Periods[20].RPS(), h.Periods[30].RPS(), h.Periods[0].RPS())
	}
	if len(calls) != 2 || calls[1].period != HighResPeriod || !calls[1].start.Equal(h.Start) {
		t.Errorf("calls %+v", calls)
	}
	if !strings.Contains(h.Resolution(), "1-minute periods") || !strings.Contains(h.Resolution(), "no high-resolution data") {
		t.Errorf("resolution %q", h.Resolution())
	}
	var buf bytes.Buffer
	if err := h.WriteCSV(&buf, "test"); err != nil {
		t.Fatal(err)
	}
	s, err := Read("fetched.csv", &buf)
	if err != nil || s.Kind != KindRate || !s.Start.Equal(h.Start) {
		t.Fatalf("read back: %v %+v", err, s)
	}
	if d, _ := Describe(s, DefaultTPlan); !near(d.Requests, 180) {
		t.Errorf("read back %g requests, want 180", d.Requests)
	}

	calls = nil
	h, err = Fetch(context.Background(), reader(true), now, 5*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// 10-s periods from 3 h before now, rounded up to the minute: 09:31:00; the minute's periods before it.
	hi := time.Date(2026, 6, 1, 9, 31, 0, 0, time.UTC)
	if !h.HighResFrom.Equal(hi) || !calls[1].start.Equal(hi) {
		t.Fatalf("high-res from %s, read from %s; want %s", h.HighResFrom, calls[1].start, hi)
	}
	minutes := int(hi.Sub(h.Start) / time.Minute)
	if h.Periods[minutes-1].Length != time.Minute || h.Periods[minutes].Length != 10*time.Second || h.Requests != 10+50 {
		t.Errorf("periods around the cut: %+v %+v, %g requests", h.Periods[minutes-1], h.Periods[minutes], h.Requests)
	}
	// The minute's datapoint at 12:20 lies in the 10-s part, which the 10-s read (12:30:00 and 12:30:10 only)
	// replaces.
	if p := h.Periods[len(h.Periods)-2]; p.RPS() != 5 || !strings.Contains(h.Resolution(), "then 10-s periods") {
		t.Errorf("period %+v, resolution %q", p, h.Resolution())
	}
	if _, err := Fetch(context.Background(), reader(false), now, 16*24*time.Hour); err == nil {
		t.Error("16 days accepted: CloudWatch keeps 1-minute data for 15")
	}
}
