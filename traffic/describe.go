package traffic

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/speech-infra/speech-infra/simulate"
)

// Kinds of trace file.
const (
	// KindRequests is a request trace: every request's time (simulate.RequestTraceMagic).
	KindRequests = "requests"
	// KindRate is a rate trace: rows "timestamp,rps" (simulate.ParseCSV).
	KindRate = "rate"
)

// Series is a trace as its rate in each second: what Describe and Chart read.
type Series struct {
	// Name is where it came from (the file name).
	Name string
	// Kind is KindRequests or KindRate.
	Kind string
	// Start is the clock time of the first second, when the trace says it (a request trace, or a rate trace
	// with RFC 3339 timestamps); zero otherwise.
	Start time.Time
	// Step is the finest time the trace resolves: 1 s for a request trace, the shortest step between rows of
	// a rate trace. A peak over less than Step is no finer than Step.
	Step time.Duration
	// PerSecond is the mean rate in each second since the start (requests per second).
	PerSecond []float64
	// Comments are the trace's comment lines (where it came from), without "# ".
	Comments []string
}

// Duration is how long the series lasts.
func (s Series) Duration() time.Duration { return time.Duration(len(s.PerSecond)) * time.Second }

// Load reads a trace file of either kind.
func Load(path string) (Series, error) {
	f, err := os.Open(path)
	if err != nil {
		return Series{}, err
	}
	defer f.Close()
	return Read(path, f)
}

// Read reads a trace of either kind from r; name names it in messages.
func Read(name string, r io.Reader) (Series, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	head, _ := br.Peek(len(simulate.RequestTraceMagic) + 5)
	if simulate.IsRequestTrace(head) {
		q, err := simulate.ReadRequests(name, br)
		if err != nil {
			return Series{}, err
		}
		return Series{Name: name, Kind: KindRequests, Start: q.Start, Step: time.Second, PerSecond: q.PerSecond, Comments: q.Comments}, nil
	}
	data, err := io.ReadAll(io.LimitReader(br, simulate.MaxTraceBytes+1))
	if err != nil {
		return Series{}, fmt.Errorf("read %s: %w", name, err)
	}
	tr, err := simulate.ParseCSV(name, bytes.NewReader(data))
	if err != nil {
		return Series{}, err
	}
	s := Series{Name: name, Kind: KindRate, Step: tr.Duration}
	s.Start, s.Comments = rateTraceHead(data)
	for i, p := range tr.Points {
		end := tr.Duration
		if i+1 < len(tr.Points) {
			end = tr.Points[i+1].At
		}
		s.Step = min(s.Step, end-p.At)
	}
	s.PerSecond = perSecond(tr)
	return s, nil
}

// perSecond is the mean rate of tr in each second, in one pass over its points; a last partial second is the
// mean over the part the trace covers.
func perSecond(tr simulate.Trace) []float64 {
	n := int((tr.Duration + time.Second - 1) / time.Second)
	out := make([]float64, n)
	for i, p := range tr.Points {
		end := tr.Duration
		if i+1 < len(tr.Points) {
			end = tr.Points[i+1].At
		}
		for sec := int(p.At / time.Second); sec < n && time.Duration(sec)*time.Second < end; sec++ {
			lo := max(p.At, time.Duration(sec)*time.Second)
			hi := min(end, time.Duration(sec+1)*time.Second)
			out[sec] += p.RPS * (hi - lo).Seconds()
		}
	}
	if covered := tr.Duration - time.Duration(n-1)*time.Second; n > 0 && covered < time.Second {
		out[n-1] /= covered.Seconds()
	}
	return out
}

// rateTraceHead reads a rate trace's comments and, when its first row's timestamp is an RFC 3339 time, the
// clock time it starts at.
func rateTraceHead(data []byte) (time.Time, []string) {
	var comments []string
	for _, line := range strings.Split(strings.TrimPrefix(string(data), "\uFEFF"), "\n") {
		s := strings.TrimSpace(line)
		switch {
		case s == "":
		case strings.HasPrefix(s, "#"):
			comments = append(comments, strings.TrimSpace(strings.TrimPrefix(s, "#")))
		case strings.EqualFold(strings.ReplaceAll(s, " ", ""), "timestamp,rps"):
		default:
			ts, _, _ := strings.Cut(s, ",")
			t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(ts))
			if err != nil {
				return time.Time{}, comments
			}
			return t.UTC(), comments
		}
	}
	return time.Time{}, comments
}

// Windows and quantiles of a description.
const (
	// DefaultTPlan is the surge horizon when none is given: the order of T_total plus a detection buffer.
	DefaultTPlan = 80 * time.Second
	// surgeWindow is the window of the surge's and the burst factor's peaks.
	surgeWindow = 10
	// baseWindow is the window of the rate a surge is measured against.
	baseWindow = 60
	// burstWindow is the window of the burst factor's mean.
	burstWindow = 300
)

// SurgeQuantiles are the quantiles Describe reports.
var SurgeQuantiles = []float64{0.50, 0.90, 0.95, 0.99}

// Peak is a highest rate over a window and where it starts.
type Peak struct {
	// RPS is the mean rate over the window.
	RPS float64 `json:"rps"`
	// AtS is where the window starts, in seconds since the trace's start.
	AtS int `json:"at_s"`
}

// Surge is the surge ratio at the T_plan horizon over a trace's start minutes.
type Surge struct {
	// TPlanS is the horizon, in seconds.
	TPlanS float64 `json:"t_plan_s"`
	// StartMinutes is how many start minutes were measured; LeftOut how many were left out because the
	// minute before them had no request (a ratio to 0 is no ratio).
	StartMinutes int `json:"start_minutes"`
	LeftOut      int `json:"left_out"`
	// Quantiles holds the ratio's quantiles (nearest rank), keyed "p50", "p90", "p95", "p99"; Max the highest.
	Quantiles map[string]float64 `json:"quantiles"`
	Max       float64            `json:"max"`
	// MaxAtS is the start (seconds since the trace's start) of the minute with the highest ratio.
	MaxAtS int `json:"max_at_s"`
}

// Burst is the burst factor: the trace's 10-s peak ÷ the mean rate of the 5 minutes centred on it.
type Burst struct {
	Factor float64 `json:"factor"`
	// WindowAtS is where the 5-minute window starts (seconds since the trace's start).
	WindowAtS int `json:"window_at_s"`
	// Peak10sRPS is the trace's 10-s peak, MeanRPS the window's mean.
	Peak10sRPS float64 `json:"peak_10s_rps"`
	MeanRPS    float64 `json:"mean_rps"`
}

// Profile is a mean rate per hour of day (24 values, UTC) or per weekday (7 values, Monday first).
type Profile struct {
	// MeanRPS is the mean rate of each hour or weekday, over every time the trace covers it; nil when the
	// trace is too short (TooShort says why).
	MeanRPS  []float64 `json:"mean_rps,omitempty"`
	TooShort string    `json:"too_short,omitempty"`
}

// Description is what Describe finds in a trace.
type Description struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Start is the clock time of the trace's start (RFC 3339), "" when the trace does not say.
	Start     string  `json:"start,omitempty"`
	DurationS float64 `json:"duration_s"`
	// StepS is the finest time the trace resolves, in seconds.
	StepS    float64 `json:"step_s"`
	Requests float64 `json:"requests"`
	MeanRPS  float64 `json:"mean_rps"`
	// Peak1s, Peak10s and Peak1m are the highest mean rates over any 1 s, 10 s and 60 s (windows sliding by
	// 1 s); nil when the trace is shorter than the window.
	Peak1s  *Peak `json:"peak_1s"`
	Peak10s *Peak `json:"peak_10s"`
	Peak1m  *Peak `json:"peak_1m"`
	// Surge is nil when the trace is too short for one start minute (SurgeTooShort says why).
	Surge         *Surge `json:"surge,omitempty"`
	SurgeTooShort string `json:"surge_too_short,omitempty"`
	// Burst is nil when the trace is shorter than 5 minutes or has no request (BurstNone says why).
	Burst     *Burst  `json:"burst,omitempty"`
	BurstNone string  `json:"burst_none,omitempty"`
	Daily     Profile `json:"daily"`
	Weekly    Profile `json:"weekly"`
	// Notes say what limits the numbers (a coarse step).
	Notes []string `json:"notes,omitempty"`
}

// Describe measures a series: mean, peaks, the surge ratio at the tPlan horizon, the burst factor and the
// daily and weekly profiles (definitions in the package documentation). tPlan is whole seconds, at least 10 s.
func Describe(s Series, tPlan time.Duration) (Description, error) {
	if tPlan < surgeWindow*time.Second || tPlan%time.Second != 0 {
		return Description{}, fmt.Errorf("t-plan %s: want whole seconds, at least %ds (the surge's peak is a %d-s rate)", tPlan, surgeWindow, surgeWindow)
	}
	n := len(s.PerSecond)
	prefix := prefixSums(s.PerSecond)
	d := Description{Name: s.Name, Kind: s.Kind, DurationS: float64(n), StepS: s.Step.Seconds(), Requests: prefix[n]}
	if !s.Start.IsZero() {
		d.Start = s.Start.Format(time.RFC3339Nano)
	}
	if n > 0 {
		d.MeanRPS = prefix[n] / float64(n)
	}
	d.Peak1s = peakOver(prefix, 0, n, 1)
	d.Peak10s = peakOver(prefix, 0, n, surgeWindow)
	d.Peak1m = peakOver(prefix, 0, n, baseWindow)
	d.Surge, d.SurgeTooShort = surge(prefix, int(tPlan/time.Second))
	d.Burst, d.BurstNone = burst(prefix, d.Peak10s)
	d.Daily, d.Weekly = profiles(s)
	if s.Step > time.Second {
		d.Notes = append(d.Notes, fmt.Sprintf("the trace's step is %s: rates over less than %s (the 1-s and 10-s peaks, the surge's and the burst's 10-s peaks) are no finer than its step, so short bursts are averaged away", s.Step, s.Step))
	}
	return d, nil
}

// mean is the mean rate over [from, from+w) seconds.
func mean(prefix []float64, from, w int) float64 { return (prefix[from+w] - prefix[from]) / float64(w) }

// peakOver is the highest mean rate over w seconds within [from, to), windows sliding by 1 s; nil when
// [from, to) is shorter than w. The first of equal peaks wins.
func peakOver(prefix []float64, from, to, w int) *Peak {
	if to-from < w {
		return nil
	}
	best := Peak{RPS: math.Inf(-1)}
	for i := from; i+w <= to; i++ {
		if v := mean(prefix, i, w); v > best.RPS+1e-12 {
			best = Peak{RPS: v, AtS: i}
		}
	}
	return &best
}

// surge is the surge ratio's distribution at horizon tPlan seconds (surgeRatios), with its quantiles.
func surge(prefix []float64, tPlan int) (*Surge, string) {
	ratios, starts, left := surgeRatios(prefix, tPlan)
	if len(ratios) == 0 {
		return nil, surgeTooShort(len(prefix)-1, tPlan, left)
	}
	maxRatio, maxAt := math.Inf(-1), 0
	for i, r := range ratios {
		if r > maxRatio+1e-12 {
			maxRatio, maxAt = r, starts[i]
		}
	}
	sorted := slices.Clone(ratios)
	slices.Sort(sorted)
	q := map[string]float64{}
	for _, p := range SurgeQuantiles {
		q[quantileName(p)] = nearestRank(sorted, p)
	}
	return &Surge{TPlanS: float64(tPlan), StartMinutes: len(ratios), LeftOut: left, Quantiles: q, Max: maxRatio, MaxAtS: maxAt}, ""
}

// surgeRatios are the surge ratios at horizon tPlan seconds, in the order of their start minutes: for each
// start minute m (60, 120, ... seconds since the start, with m + tPlan within the trace), the highest 10-s mean
// rate in [m, m + tPlan) ÷ the mean rate over the minute before, [m − 60, m). left counts the start minutes
// left out because the minute before them had no request (a ratio to 0 is no ratio); starts[i] is ratio i's
// start minute, in seconds since the trace's start.
func surgeRatios(prefix []float64, tPlan int) (ratios []float64, starts []int, left int) {
	n := len(prefix) - 1
	for m := baseWindow; m+tPlan <= n; m += baseWindow {
		base := mean(prefix, m-baseWindow, baseWindow)
		if base <= 0 {
			left++
			continue
		}
		ratios = append(ratios, peakOver(prefix, m, m+tPlan, surgeWindow).RPS/base)
		starts = append(starts, m)
	}
	return ratios, starts, left
}

// surgeTooShort says why a trace of n seconds has no surge ratio at horizon tPlan seconds.
func surgeTooShort(n, tPlan, left int) string {
	if left > 0 {
		return fmt.Sprintf("every one of the %d start minutes follows a minute without requests", left)
	}
	return fmt.Sprintf("the trace lasts %s: a surge ratio needs a minute before the start and T_plan (%ds) after it, %s in all", time.Duration(n)*time.Second, tPlan, time.Duration(baseWindow+tPlan)*time.Second)
}

// quantileName is "p50" for 0.5.
func quantileName(p float64) string { return fmt.Sprintf("p%g", math.Round(p*1000)/10) }

// nearestRank is the smallest value with at least p of the sorted values at or below it.
func nearestRank(sorted []float64, p float64) float64 {
	rank := int(math.Ceil(p*float64(len(sorted)) - 1e-9))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// burst is the burst factor: the trace's 10-s peak ÷ the mean rate of the 5 minutes centred on it (moved to lie
// within the trace at its ends).
func burst(prefix []float64, peak10 *Peak) (*Burst, string) {
	n := len(prefix) - 1
	if n < burstWindow {
		return nil, fmt.Sprintf("the trace lasts %s, less than 5 minutes", time.Duration(n)*time.Second)
	}
	if peak10 == nil || peak10.RPS <= 0 {
		return nil, "the trace has no request"
	}
	from := peak10.AtS + surgeWindow/2 - burstWindow/2
	from = min(max(from, 0), n-burstWindow)
	m := mean(prefix, from, burstWindow)
	return &Burst{Factor: peak10.RPS / m, WindowAtS: from, Peak10sRPS: peak10.RPS, MeanRPS: m}, ""
}

// profiles are the mean rates per hour of day and per weekday (UTC), each when the trace covers a whole day or
// a whole week and says when it starts.
func profiles(s Series) (daily, weekly Profile) {
	n := len(s.PerSecond)
	if s.Start.IsZero() {
		why := "the trace does not say when it starts (its timestamps are seconds since the start, not RFC 3339 times)"
		return Profile{TooShort: why}, Profile{TooShort: why}
	}
	d := time.Duration(n) * time.Second
	const day, week = 24 * time.Hour, 7 * 24 * time.Hour
	var hourSum, hourN [24]float64
	var daySum, dayN [7]float64
	if d >= day {
		start := s.Start.UTC()
		for i, v := range s.PerSecond {
			t := start.Add(time.Duration(i) * time.Second)
			hourSum[t.Hour()] += v
			hourN[t.Hour()]++
			wd := (int(t.Weekday()) + 6) % 7 // Monday first
			daySum[wd] += v
			dayN[wd]++
		}
	}
	if d < day {
		daily.TooShort = fmt.Sprintf("the trace lasts %s: a daily profile needs at least 24h", d)
	} else {
		daily.MeanRPS = make([]float64, 24)
		for h := range 24 {
			daily.MeanRPS[h] = hourSum[h] / hourN[h]
		}
	}
	if d < week {
		weekly.TooShort = fmt.Sprintf("the trace lasts %s: a weekly profile needs at least 7 days (168h)", d)
	} else {
		weekly.MeanRPS = make([]float64, 7)
		for w := range 7 {
			weekly.MeanRPS[w] = daySum[w] / dayN[w]
		}
	}
	return daily, weekly
}
