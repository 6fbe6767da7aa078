// Package simulate replays a traffic trace through a model of a deployed SageMaker fleet: instances whose
// behaviour at an offered rate comes from the measured qmax and ttotal artifacts, scaled by the very policies
// and alarms capacity.ScalingSpecFor renders for the plan, decided by autoscale.Decide (the code the emulator's
// autoscaler runs). It parses no flags and calls no AWS API.
//
// A Trace (a CSV or a built-in shape) is shared with `tts-bench replay`, which drives the same arrivals as
// open-loop load against a real endpoint.
package simulate

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Limits of a trace, so that a careless or hostile input cannot exhaust memory or run for hours.
const (
	// MaxTracePoints is the most samples a trace may hold.
	MaxTracePoints = 200_000
	// MaxTraceDuration is the longest trace.
	MaxTraceDuration = 31 * 24 * time.Hour
	// MaxTraceBytes is the largest CSV trace file.
	MaxTraceBytes = 16 << 20
	// MaxTraceRPS is the highest rate a trace may offer.
	MaxTraceRPS = 10_000_000
)

// Built-in trace shapes.
const (
	ShapeDiurnal = "diurnal"
	ShapeStep    = "step"
	ShapeSpike   = "spike"
	ShapeRamp    = "ramp"
)

// Shapes lists the built-in shapes.
var Shapes = []string{ShapeDiurnal, ShapeStep, ShapeSpike, ShapeRamp}

// Point is one sample of a trace: from At (since the start of the trace) until the next point's At, requests
// arrive at RPS per second.
type Point struct {
	At  time.Duration
	RPS float64
}

// Trace is offered load over time: a step function of request rate. It starts at 0 and lasts Duration.
type Trace struct {
	// Name says where the trace came from ("diurnal peak 80 rps, trough 10 rps, ..." or the CSV's name).
	Name string
	// Points are the samples, At strictly increasing, the first at 0.
	Points []Point
	// Duration is when the trace ends (after the last point's At).
	Duration time.Duration
}

// RateAt is the offered rate at t (0 before the start and from Duration on).
func (t Trace) RateAt(at time.Duration) float64 {
	if at < 0 || at >= t.Duration || len(t.Points) == 0 {
		return 0
	}
	// The last point whose At ≤ at.
	lo, hi := 0, len(t.Points)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if t.Points[mid].At <= at {
			lo = mid
		} else {
			hi = mid
		}
	}
	return t.Points[lo].RPS
}

// Requests is the number of requests the trace offers in [from, to): the integral of its rate.
func (t Trace) Requests(from, to time.Duration) float64 {
	from, to = max(from, 0), min(to, t.Duration)
	if to <= from {
		return 0
	}
	total := 0.0
	for i, p := range t.Points {
		end := t.Duration
		if i+1 < len(t.Points) {
			end = t.Points[i+1].At
		}
		lo, hi := max(p.At, from), min(end, to)
		if hi > lo {
			total += p.RPS * (hi - lo).Seconds()
		}
	}
	return total
}

// Peak is the highest rate of the trace.
func (t Trace) Peak() float64 {
	peak := 0.0
	for _, p := range t.Points {
		peak = max(peak, p.RPS)
	}
	return peak
}

// Lowest is the lowest rate of the trace (+Inf for a trace without points).
func (t Trace) Lowest() float64 {
	low := math.Inf(1)
	for _, p := range t.Points {
		low = math.Min(low, p.RPS)
	}
	return low
}

// Validate checks the trace's invariants (what ParseCSV and Generate guarantee), every problem at once.
func (t Trace) Validate() error {
	var errs []error
	if len(t.Points) == 0 {
		errs = append(errs, errors.New("the trace has no points"))
	}
	if len(t.Points) > MaxTracePoints {
		errs = append(errs, fmt.Errorf("the trace has %d points, more than the limit %d", len(t.Points), MaxTracePoints))
	}
	for i, p := range t.Points {
		if i == 0 && p.At != 0 {
			errs = append(errs, fmt.Errorf("the first point is at %s, not at 0", p.At))
		}
		if i > 0 && p.At <= t.Points[i-1].At {
			errs = append(errs, fmt.Errorf("point %d at %s does not follow point %d at %s", i+1, p.At, i, t.Points[i-1].At))
		}
		if !finiteRate(p.RPS) {
			errs = append(errs, fmt.Errorf("point %d: rate %g is not a finite number in [0, %d]", i+1, p.RPS, MaxTraceRPS))
		}
	}
	if len(t.Points) > 0 && t.Duration <= t.Points[len(t.Points)-1].At {
		errs = append(errs, fmt.Errorf("the trace ends at %s, not after its last point at %s", t.Duration, t.Points[len(t.Points)-1].At))
	}
	if t.Duration > MaxTraceDuration {
		errs = append(errs, fmt.Errorf("the trace lasts %s, longer than the limit %s", t.Duration, MaxTraceDuration))
	}
	return errors.Join(errs...)
}

func finiteRate(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 && v <= MaxTraceRPS
}

// ReadFile reads the CSV trace (or request trace) at path with ParseCSV, through the limit of MaxTraceBytes.
func ReadFile(path string) (Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return Trace{}, err
	}
	defer f.Close()
	return ParseCSV(path, io.LimitReader(f, MaxTraceBytes+1))
}

// ParseCSV reads a trace from CSV rows "timestamp,rps" (an optional header line "timestamp,rps"; blank lines
// and lines starting with # are skipped). A timestamp is either an RFC 3339 time (the trace starts at the
// first) or seconds since the start of the trace (a number, the first usually 0); all rows use the same kind.
// The step between rows may vary; the last row lasts as long as the step before it. Errors name the line.
//
// A request trace (RequestTraceMagic, written by `tts-bench traffic import`) is read too, as a rate trace at 1-s
// steps (ReadRequests, Requests.Trace); MaxTraceBytes does not bound it, its duration does.
func ParseCSV(name string, r io.Reader) (Trace, error) {
	peek := bufio.NewReader(r)
	if head, _ := peek.Peek(len(RequestTraceMagic) + 5); IsRequestTrace(head) {
		q, err := ReadRequests(name, peek)
		if err != nil {
			return Trace{}, err
		}
		return q.Trace()
	}
	br := bufio.NewReader(io.LimitReader(peek, MaxTraceBytes+1))
	var (
		pts     []Point
		kind    string // "rfc3339" or "seconds"
		origin  time.Time
		offset  float64
		line    int
		read    int64
		errs    []error
		prevRaw string
	)
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s line %d: "+format, append([]any{name, line}, args...)...))
	}
	for {
		text, err := br.ReadString('\n')
		read += int64(len(text))
		if read > MaxTraceBytes {
			return Trace{}, fmt.Errorf("%s: larger than the limit of %d bytes; use a coarser step", name, MaxTraceBytes)
		}
		if text == "" && err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return Trace{}, fmt.Errorf("read %s: %w", name, err)
		}
		line++
		if line == 1 {
			// A spreadsheet's UTF-8 export starts with a byte-order mark; it is not part of the header.
			text = strings.TrimPrefix(text, "\uFEFF")
		}
		s := strings.TrimSpace(strings.TrimSuffix(text, "\n"))
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		fields := strings.Split(s, ",")
		if len(pts) == 0 && kind == "" && len(fields) == 2 && strings.EqualFold(strings.TrimSpace(fields[0]), "timestamp") {
			if !strings.EqualFold(strings.TrimSpace(fields[1]), "rps") {
				fail("the header must be \"timestamp,rps\", not %q", s)
			}
			continue
		}
		if len(fields) != 2 {
			fail("want 2 fields \"timestamp,rps\", got %d in %q", len(fields), s)
			continue
		}
		ts, rs := strings.TrimSpace(fields[0]), strings.TrimSpace(fields[1])
		rps, perr := strconv.ParseFloat(rs, 64)
		if perr != nil || !finiteRate(rps) {
			fail("rps %q is not a finite number in [0, %d]", rs, MaxTraceRPS)
			continue
		}
		var at time.Duration
		if secs, serr := strconv.ParseFloat(ts, 64); serr == nil {
			if kind == "rfc3339" {
				fail("timestamp %q is seconds, but earlier rows are RFC 3339 times; use one kind", ts)
				continue
			}
			if math.IsNaN(secs) || math.IsInf(secs, 0) || secs < 0 || secs > MaxTraceDuration.Seconds() {
				fail("timestamp %q is not a number of seconds in [0, %g]", ts, MaxTraceDuration.Seconds())
				continue
			}
			if kind == "" {
				kind, offset = "seconds", secs
			}
			at = time.Duration((secs - offset) * float64(time.Second))
		} else {
			tm, terr := time.Parse(time.RFC3339Nano, ts)
			if terr != nil {
				fail("timestamp %q is neither an RFC 3339 time (2026-05-01T00:00:00Z) nor seconds since the start", ts)
				continue
			}
			if kind == "seconds" {
				fail("timestamp %q is an RFC 3339 time, but earlier rows are seconds; use one kind", ts)
				continue
			}
			if kind == "" {
				kind, origin = "rfc3339", tm
			}
			d := tm.Sub(origin)
			if tm.Before(origin) || d > MaxTraceDuration {
				fail("timestamp %q is not within %s after the first row", ts, MaxTraceDuration)
				continue
			}
			at = d
		}
		if n := len(pts); n > 0 && at <= pts[n-1].At {
			fail("timestamp %q does not come after the previous row's %q; timestamps must increase", ts, prevRaw)
			continue
		}
		if len(pts) >= MaxTracePoints {
			return Trace{}, fmt.Errorf("%s line %d: more than %d rows; use a coarser step", name, line, MaxTracePoints)
		}
		pts = append(pts, Point{At: at, RPS: rps})
		prevRaw = ts
		if len(errs) >= 20 {
			break
		}
	}
	if len(errs) > 0 {
		return Trace{}, errors.Join(errs...)
	}
	if len(pts) < 2 {
		return Trace{}, fmt.Errorf("%s: a trace needs at least 2 rows \"timestamp,rps\", got %d", name, len(pts))
	}
	n := len(pts)
	t := Trace{Name: name, Points: pts, Duration: pts[n-1].At + (pts[n-1].At - pts[n-2].At)}
	if err := t.Validate(); err != nil {
		return Trace{}, fmt.Errorf("%s: %w", name, err)
	}
	return t, nil
}

// ShapeParams are the parameters of a built-in shape. Field names in errors are the parameter names
// (peak-rps, trough-rps, duration, step, period, peak-at, at, width), which `tts-bench` uses as flag names.
type ShapeParams struct {
	// Shape is one of Shapes.
	Shape string
	// PeakRPS is the highest rate: the diurnal peak, the level after the step, the spike's top, the ramp's end.
	PeakRPS float64
	// TroughRPS is the lowest rate: the diurnal trough, the level before the step and around the spike, the
	// ramp's start.
	TroughRPS float64
	// Duration is how long the trace lasts.
	Duration time.Duration
	// Step is the sampling step of the generated trace.
	Step time.Duration
	// Period is the diurnal cycle's length (24 h for a day).
	Period time.Duration
	// PeakAt is when (since the start) the diurnal rate peaks.
	PeakAt time.Duration
	// At is when the step happens or the spike starts.
	At time.Duration
	// Width is how long the spike lasts.
	Width time.Duration
}

// IsTraceFile says whether a --trace argument names a trace file rather than a built-in shape: a name ending in
// .csv, or any other name that is not a shape's and names an existing file (a request trace from tts-bench
// traffic import keeps whatever name its --output gave it). Everything else is read as a shape, whose
// validation names the shapes.
func IsTraceFile(arg string) bool {
	if strings.HasSuffix(strings.ToLower(arg), ".csv") {
		return true
	}
	if slices.Contains(Shapes, arg) {
		return false
	}
	_, err := os.Stat(arg)
	return err == nil
}

// DefaultShapeParams returns the defaults of shape: a day at 1-minute steps, trough 10 rps, peak 80 rps,
// the diurnal peak at 14:00 of a day starting at midnight, the step or spike one third in, a 10-minute spike.
func DefaultShapeParams(shape string) ShapeParams {
	p := ShapeParams{Shape: shape, PeakRPS: 80, TroughRPS: 10, Duration: 24 * time.Hour, Step: time.Minute,
		Period: 24 * time.Hour, PeakAt: 14 * time.Hour, Width: 10 * time.Minute}
	p.At = p.Duration / 3
	return p
}

// Validate returns every problem of the parameters, each naming the parameter and the fix.
func (p ShapeParams) Validate() []error {
	var errs []error
	known := false
	for _, s := range Shapes {
		known = known || p.Shape == s
	}
	if !known {
		errs = append(errs, fmt.Errorf("trace %q is neither a built-in shape (%s) nor a trace file (a name ending in .csv, or an existing file)", p.Shape, strings.Join(Shapes, ", ")))
	}
	if !finiteRate(p.PeakRPS) || p.PeakRPS == 0 {
		errs = append(errs, fmt.Errorf("peak-rps %g: want a number in (0, %d]", p.PeakRPS, MaxTraceRPS))
	}
	if !finiteRate(p.TroughRPS) {
		errs = append(errs, fmt.Errorf("trough-rps %g: want a number in [0, %d]", p.TroughRPS, MaxTraceRPS))
	}
	if finiteRate(p.PeakRPS) && finiteRate(p.TroughRPS) && p.TroughRPS > p.PeakRPS {
		errs = append(errs, fmt.Errorf("trough-rps %g is above peak-rps %g: the trough must not exceed the peak", p.TroughRPS, p.PeakRPS))
	}
	if p.Duration <= 0 || p.Duration > MaxTraceDuration {
		errs = append(errs, fmt.Errorf("duration %s: want more than 0 and at most %s", p.Duration, MaxTraceDuration))
	}
	if p.Step < time.Second {
		errs = append(errs, fmt.Errorf("step %s: want at least 1s", p.Step))
	} else if p.Duration > 0 && p.Duration/p.Step > MaxTracePoints {
		errs = append(errs, fmt.Errorf("step %s over duration %s gives more than %d points: use a larger step", p.Step, p.Duration, MaxTracePoints))
	} else if p.Step > p.Duration && p.Duration > 0 {
		errs = append(errs, fmt.Errorf("step %s is longer than duration %s: use a smaller step", p.Step, p.Duration))
	}
	switch p.Shape {
	case ShapeDiurnal:
		if p.Period <= 0 {
			errs = append(errs, fmt.Errorf("period %s: want a positive duration (24h for a day)", p.Period))
		}
		if p.PeakAt < 0 {
			errs = append(errs, fmt.Errorf("peak-at %s: want a duration from 0", p.PeakAt))
		}
	case ShapeStep, ShapeSpike:
		if p.At < 0 || p.At >= p.Duration {
			errs = append(errs, fmt.Errorf("at %s: want a time within the duration [0, %s)", p.At, p.Duration))
		}
		if p.Shape == ShapeSpike && p.Width <= 0 {
			errs = append(errs, fmt.Errorf("width %s: want a positive duration", p.Width))
		}
	}
	return errs
}

// Generate builds the trace of a built-in shape, sampled every p.Step: diurnal and ramp take the shape's value
// at the middle of each step; step and spike take the level at each step's start (an edge inside a step moves
// to the next step boundary).
func Generate(p ShapeParams) (Trace, error) {
	if errs := p.Validate(); len(errs) > 0 {
		return Trace{}, errors.Join(errs...)
	}
	n := int((p.Duration + p.Step - 1) / p.Step)
	t := Trace{Duration: p.Duration, Points: make([]Point, 0, n)}
	for i := range n {
		at := time.Duration(i) * p.Step
		t.Points = append(t.Points, Point{At: at, RPS: p.rate(at, at+p.Step/2)})
	}
	switch p.Shape {
	case ShapeDiurnal:
		t.Name = fmt.Sprintf("diurnal: trough %s rps, peak %s rps at %s, period %s, %s at %s steps",
			num(p.TroughRPS), num(p.PeakRPS), p.PeakAt, p.Period, p.Duration, p.Step)
	case ShapeStep:
		t.Name = fmt.Sprintf("step: %s rps, then %s rps from %s, %s at %s steps", num(p.TroughRPS), num(p.PeakRPS), p.At, p.Duration, p.Step)
	case ShapeSpike:
		t.Name = fmt.Sprintf("spike: %s rps, %s rps from %s for %s, %s at %s steps", num(p.TroughRPS), num(p.PeakRPS), p.At, p.Width, p.Duration, p.Step)
	case ShapeRamp:
		t.Name = fmt.Sprintf("ramp: %s rps to %s rps over %s at %s steps", num(p.TroughRPS), num(p.PeakRPS), p.Duration, p.Step)
	}
	return t, t.Validate()
}

// rate is the shape's rate for the sample starting at start (mid is its middle).
func (p ShapeParams) rate(start, mid time.Duration) float64 {
	lo, hi := p.TroughRPS, p.PeakRPS
	switch p.Shape {
	case ShapeDiurnal:
		phase := 2 * math.Pi * float64(mid-p.PeakAt) / float64(p.Period)
		return lo + (hi-lo)*(1+math.Cos(phase))/2
	case ShapeStep:
		if start >= p.At {
			return hi
		}
		return lo
	case ShapeSpike:
		if start >= p.At && start < p.At+p.Width {
			return hi
		}
		return lo
	default: // ramp
		return lo + (hi-lo)*min(1, float64(mid)/float64(p.Duration))
	}
}

// num formats a trace parameter for its name: six significant digits, so that a rate computed in floating
// point (4.694400000000001) reads as the number it stands for (4.6944).
func num(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
