package traffic

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/speech-infra/speech-infra/simulate"
)

// CloudWatch's periods and retention for an endpoint's history.
const (
	// MinutePeriod is the period of SageMaker's standard-resolution metrics (Invocations among them).
	MinutePeriod = time.Minute
	// HighResPeriod is the period read where high-resolution data exists.
	HighResPeriod = 10 * time.Second
	// HighResRetention is how long CloudWatch keeps datapoints of a period under a minute.
	HighResRetention = 3 * time.Hour
	// MaxHistory is how far back 1-minute datapoints go: CloudWatch keeps them for 15 days.
	MaxHistory = 15 * 24 * time.Hour
)

// Datapoint is one period's Sum of a metric, stamped with the period's start.
type Datapoint struct {
	Time  time.Time
	Value float64
}

// SumReader reads the Sum of the endpoint's Invocations per period over [start, end), oldest first (a
// period without data has no datapoint). cloud.ReadInvocations is one, through GetMetricData.
type SumReader func(ctx context.Context, start, end time.Time, period time.Duration) ([]Datapoint, error)

// Period is one row of a fetched rate trace.
type Period struct {
	Start    time.Time
	Length   time.Duration
	Requests float64
}

// RPS is the period's mean rate.
func (p Period) RPS() float64 { return p.Requests / p.Length.Seconds() }

// History is an endpoint's request rate read back from CloudWatch.
type History struct {
	// Periods cover [Start, End) without a gap: 1-minute periods, then 10-s ones from HighResFrom.
	Periods    []Period
	Start, End time.Time
	// HighResFrom is where the 10-s periods start; zero when there are none (no high-resolution data).
	HighResFrom time.Time
	// Requests is the sum over every period.
	Requests float64
}

// Resolution says which periods the history has, for the output and the trace's comments.
func (h History) Resolution() string {
	if h.HighResFrom.IsZero() {
		return fmt.Sprintf("1-minute periods from %s to %s (no high-resolution data)", h.Start.Format(time.RFC3339), h.End.Format(time.RFC3339))
	}
	if h.HighResFrom.Equal(h.Start) {
		return fmt.Sprintf("10-s periods from %s to %s (high-resolution data)", h.Start.Format(time.RFC3339), h.End.Format(time.RFC3339))
	}
	return fmt.Sprintf("1-minute periods from %s to %s, then 10-s periods (high-resolution data) to %s",
		h.Start.Format(time.RFC3339), h.HighResFrom.Format(time.RFC3339), h.End.Format(time.RFC3339))
}

// Fetch reads the history of [now − since, now): 1-minute Sums over the whole window (its start rounded down to
// the minute), and 10-s Sums over the part CloudWatch keeps them for (the last HighResRetention, from a whole
// minute). When the 10-s read has a datapoint off the minute (data published more often than once a minute)
// that part is kept at 10 s; otherwise the metric is standard resolution (its 10-s read shows the minute's
// datapoints on the minute) and the whole window is at 1 minute. Periods without a datapoint had no request.
func Fetch(ctx context.Context, read SumReader, now time.Time, since time.Duration) (History, error) {
	if since < MinutePeriod || since > MaxHistory {
		return History{}, fmt.Errorf("since %s: want 1m to %s (CloudWatch keeps 1-minute datapoints for 15 days)", since, MaxHistory)
	}
	now = now.UTC()
	start := now.Add(-since).Truncate(MinutePeriod)
	end := now
	minutes, err := read(ctx, start, end, MinutePeriod)
	if err != nil {
		return History{}, err
	}
	// A whole minute inside the retention, so that the 10-s read starts where CloudWatch still has data.
	hiStart := start
	if oldest := now.Add(-HighResRetention).Truncate(MinutePeriod).Add(MinutePeriod); hiStart.Before(oldest) {
		hiStart = oldest
	}
	var highs []Datapoint
	if hiStart.Before(end) {
		if highs, err = read(ctx, hiStart, end, HighResPeriod); err != nil {
			return History{}, err
		}
	}
	highRes := false
	for _, d := range highs {
		if !d.Time.Equal(d.Time.Truncate(MinutePeriod)) {
			highRes = true
			break
		}
	}
	h := History{Start: start, End: end}
	cut := end
	if highRes {
		cut, h.HighResFrom = hiStart, hiStart
	}
	h.Periods = fill(start, cut, MinutePeriod, minutes)
	if highRes {
		h.Periods = append(h.Periods, fill(hiStart, end, HighResPeriod, highs)...)
	}
	for _, p := range h.Periods {
		h.Requests += p.Requests
	}
	return h, nil
}

// fill lays the datapoints stamped in [from, to) on periods of step from from, without a gap: a period
// without a datapoint had none. The last period starts before to and may end after it.
func fill(from, to time.Time, step time.Duration, points []Datapoint) []Period {
	var out []Period
	for t := from; t.Before(to); t = t.Add(step) {
		out = append(out, Period{Start: t, Length: step})
	}
	for _, d := range points {
		if d.Time.Before(from) || !d.Time.Before(to) {
			continue
		}
		out[int(d.Time.Sub(from)/step)].Requests += d.Value
	}
	return out
}

// WriteCSV writes the history as a rate trace, "timestamp,rps" rows (simulate.ParseCSV reads it), after
// comment lines saying what it is: about (the metric and the endpoint) and the resolution.
func (h History) WriteCSV(w io.Writer, about string) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# %s\n# %s\n# %s requests\ntimestamp,rps\n", about, h.Resolution(), strconv.FormatFloat(h.Requests, 'f', -1, 64))
	for _, p := range h.Periods {
		fmt.Fprintf(bw, "%s,%s\n", p.Start.Format(time.RFC3339), strconv.FormatFloat(p.RPS(), 'g', -1, 64))
	}
	return bw.Flush()
}

// Encode is the history as a rate trace (WriteCSV), checked to read back as one with the parser simulate uses;
// name names the trace in that parser's errors.
func (h History) Encode(name, about string) ([]byte, error) {
	var buf bytes.Buffer
	if err := h.WriteCSV(&buf, about); err != nil {
		return nil, err
	}
	if _, err := simulate.ParseCSV(name, bytes.NewReader(buf.Bytes())); err != nil {
		return nil, fmt.Errorf("the trace does not read back: %w", err)
	}
	return buf.Bytes(), nil
}

// FetchSummary says what a fetched history holds and where it was written: what tts-bench traffic fetch
// --format json prints.
type FetchSummary struct {
	Endpoint string `json:"endpoint"`
	Variant  string `json:"variant"`
	// Where is what was read: "AWS (us-east-1)" or "the local emulator at http://...".
	Where string `json:"where"`
	Start string `json:"start"`
	End   string `json:"end"`
	// HighResFrom is where the 10-s periods start, "" when the trace is at 1-minute periods throughout.
	HighResFrom string  `json:"high_res_from,omitempty"`
	Resolution  string  `json:"resolution"`
	Periods     int     `json:"periods"`
	Requests    float64 `json:"requests"`
	Output      string  `json:"output"`
}

// Summary is the history's FetchSummary: the endpoint's variant read where says, written to output.
func (h History) Summary(endpoint, variant, where, output string) FetchSummary {
	sum := FetchSummary{Endpoint: endpoint, Variant: variant, Where: where, Start: h.Start.Format(time.RFC3339),
		End: h.End.Format(time.RFC3339Nano), Resolution: h.Resolution(), Periods: len(h.Periods), Requests: h.Requests, Output: output}
	if !h.HighResFrom.IsZero() {
		sum.HighResFrom = h.HighResFrom.Format(time.RFC3339)
	}
	return sum
}

// ParseSince reads a duration that may be in days (14d, 1.5d) or anything time.ParseDuration reads.
func ParseSince(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(strings.TrimSpace(s), "d"); ok {
		v, err := strconv.ParseFloat(days, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1000 {
			return 0, errors.New("not a number of days")
		}
		return time.Duration(v * float64(24*time.Hour)), nil
	}
	return time.ParseDuration(s)
}
