package simulate

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseCSVSecondsAndRFC3339(t *testing.T) {
	tr, err := ParseCSV("a.csv", strings.NewReader("timestamp,rps\n0,10\n60,20\n# comment\n\n90,5\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Duration != 120*time.Second || len(tr.Points) != 3 {
		t.Fatalf("got %+v", tr)
	}
	if r := tr.RateAt(61 * time.Second); r != 20 {
		t.Errorf("RateAt(61s) = %g, want 20", r)
	}
	if got := tr.Requests(0, tr.Duration); got != 10*60+20*30+5*30 {
		t.Errorf("Requests = %g", got)
	}
	tr, err = ParseCSV("b.csv", strings.NewReader("2026-05-01T00:00:00Z,1\n2026-05-01T00:00:10.5Z,2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Points[1].At != 10500*time.Millisecond || tr.Duration != 21*time.Second {
		t.Fatalf("got %+v", tr)
	}
}

func TestParseCSVErrors(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"not monotonic": {"0,1\n60,2\n60,3\n", "line 3: timestamp \"60\" does not come after"},
		"backwards":     {"0,1\n60,2\n30,3\n", "line 3: timestamp \"30\" does not come after"},
		"negative rps":  {"0,1\n60,-2\n", "line 2: rps \"-2\" is not a finite number"},
		"nan rps":       {"0,NaN\n60,2\n", "line 1: rps \"NaN\" is not a finite number"},
		"inf rps":       {"0,+Inf\n60,2\n", "line 1: rps \"+Inf\""},
		"fields":        {"0,1,2\n60,2\n", "line 1: want 2 fields"},
		"bad timestamp": {"yesterday,1\n60,2\n", "line 1: timestamp \"yesterday\" is neither"},
		"mixed kinds":   {"0,1\n2026-05-01T00:00:00Z,2\n", "line 2: timestamp \"2026-05-01T00:00:00Z\" is an RFC 3339 time, but earlier rows are seconds"},
		"one row":       {"0,1\n", "at least 2 rows"},
		"empty":         {"", "at least 2 rows"},
		"bad header":    {"timestamp,qps\n0,1\n1,1\n", "the header must be"},
		"too long":      {"0,1\n9999999999,1\n", "line 2: timestamp \"9999999999\" is not a number of seconds"},
		"negative secs": {"-5,1\n0,1\n", "line 1: timestamp \"-5\""},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseCSV("t.csv", strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseCSVBounded(t *testing.T) {
	var b strings.Builder
	for i := range MaxTracePoints + 1 {
		b.WriteString(strconv.Itoa(i))
		b.WriteString(",1\n")
	}
	_, err := ParseCSV("big.csv", strings.NewReader(b.String()))
	if err == nil || !strings.Contains(err.Error(), "more than 200000 rows") {
		t.Fatalf("err = %v", err)
	}
	_, err = ParseCSV("huge.csv", strings.NewReader(strings.Repeat("#", MaxTraceBytes+10)))
	if err == nil || !strings.Contains(err.Error(), "larger than the limit") {
		t.Fatalf("err = %v", err)
	}
}

func TestGenerateShapes(t *testing.T) {
	p := DefaultShapeParams(ShapeDiurnal)
	tr, err := Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Points) != 1440 || tr.Duration != 24*time.Hour {
		t.Fatalf("%d points, %s", len(tr.Points), tr.Duration)
	}
	if peak := tr.Peak(); math.Abs(peak-80) > 0.01 {
		t.Errorf("peak %g, want ~80", peak)
	}
	if r := tr.RateAt(14 * time.Hour); math.Abs(r-80) > 0.01 {
		t.Errorf("rate at 14h %g, want ~80", r)
	}
	if r := tr.RateAt(2 * time.Hour); math.Abs(r-10) > 0.01 {
		t.Errorf("rate at 2h %g, want ~10", r)
	}

	p = DefaultShapeParams(ShapeSpike)
	p.Duration, p.At, p.Width = time.Hour, 20*time.Minute, 5*time.Minute
	tr, err = Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	if tr.RateAt(19*time.Minute) != 10 || tr.RateAt(20*time.Minute) != 80 || tr.RateAt(24*time.Minute) != 80 || tr.RateAt(25*time.Minute) != 10 {
		t.Errorf("spike edges wrong: %+v", tr.Points[18:27])
	}

	p = DefaultShapeParams(ShapeRamp)
	p.Duration = 10 * time.Minute
	tr, _ = Generate(p)
	if tr.Points[0].RPS >= tr.Points[9].RPS || tr.Points[9].RPS > 80 {
		t.Errorf("ramp not increasing to the peak: %+v", tr.Points)
	}
}

func TestShapeParamsErrors(t *testing.T) {
	p := DefaultShapeParams("sine")
	p.PeakRPS, p.TroughRPS, p.Step = 5, 10, time.Millisecond
	errs := p.Validate()
	joined := ""
	for _, e := range errs {
		joined += e.Error() + "\n"
	}
	for _, want := range []string{"trace \"sine\" is neither", "trough-rps 10 is above peak-rps 5", "step 1ms"} {
		if !strings.Contains(joined, want) {
			t.Errorf("errors %q lack %q", joined, want)
		}
	}
	p = DefaultShapeParams(ShapeSpike)
	p.At, p.Width = 48*time.Hour, 0
	if _, err := Generate(p); err == nil || !strings.Contains(err.Error(), "at 48h0m0s") || !strings.Contains(err.Error(), "width 0s") {
		t.Errorf("err = %v", err)
	}
}
