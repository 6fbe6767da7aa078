package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/models"
	"github.com/speech-infra/speech-infra/traffic"
)

// burstyLog writes, as a SQL export would (a space between date and time, 7 fractional digits, no zone), the
// request log of a Markov-modulated Poisson process: hours of requests at base rps, with bursts at mult × base
// (mean length 20 s) between quiet spells (mean 4 minutes). The seed fixes it.
func burstyLog(t *testing.T, path string, seed uint64, hours, base, mult float64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	exp := func(mean float64) float64 { return r.ExpFloat64() * mean }
	start := time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)
	fmt.Fprintln(w, "request_id,created_at,voice")
	at, burst, end := 0.0, false, hours*3600
	next := exp(240)
	for i := 0; ; {
		rate := base
		if burst {
			rate *= mult
		}
		at += exp(1 / rate)
		if at >= next {
			at, burst = next, !burst
			next = at + exp(map[bool]float64{true: 20, false: 240}[burst])
			continue
		}
		if at >= end {
			break
		}
		ts := start.Add(time.Duration(at * float64(time.Second)))
		fmt.Fprintf(w, "%d,%s,af_heart\n", i, ts.Format("2006-01-02 15:04:05.0000000"))
		i++
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// trafficSet imports a bursty log through the CLI and copies the valid fixture's artifacts into a directory of
// its own (the gate reads a plan's artifacts beside it); it returns the trace and the directory.
func trafficSet(t *testing.T, seed uint64, mult float64) (trace, dir string) {
	t.Helper()
	dir = t.TempDir()
	log := filepath.Join(dir, "requests.csv")
	burstyLog(t, log, seed, 3, 20, mult)
	trace = filepath.Join(dir, "traffic.csv")
	if _, stderr, code := runCLI(t, "traffic", "import", log, "--time-column", "created_at", "--output", trace); code != 0 {
		t.Fatalf("traffic import: exit %d: %s", code, stderr)
	}
	for _, f := range []string{capacity.QMaxFile, capacity.TTotalFile, "qmax.records.jsonl.gz"} {
		data, err := os.ReadFile(filepath.Join(fixtures, "valid", f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, f), string(data))
	}
	return trace, dir
}

func trafficPlanArgs(dir, trace, out string, extra ...string) []string {
	return append([]string{"plan", "--qmax", filepath.Join(dir, capacity.QMaxFile), "--ttotal", filepath.Join(dir, capacity.TTotalFile),
		"--traffic", trace, "--output", out}, extra...)
}

// holdoutTraces are the plan's envelope results on held-out traffic.
func holdoutTraces(p *capacity.Plan) []capacity.EnvelopeTrace {
	var out []capacity.EnvelopeTrace
	for _, et := range p.Envelope.Traces {
		if et.Kind == capacity.EnvelopeHoldout {
			out = append(out, et)
		}
	}
	return out
}

// plan --traffic on a bursty request log: the peak and the surge ratio come from the first 75% of it (a surge
// above the catalog's range, which the traffic needs), the plan holds that part, is validated on the last 25%,
// records both, and the gate, which re-runs the envelope, deploys it.
func TestPlanFromTrafficHoldsOnTheHeldOutPart(t *testing.T) {
	trace, dir := trafficSet(t, 11, 2)
	out := filepath.Join(dir, capacity.PlanFile)
	stdout, stderr, code := runCLI(t, trafficPlanArgs(dir, trace, out)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stderr, stdout)
	}
	for _, want := range []string{"planned on the first 2h15m", "held out and validated on: the last 45m", "plan: surge ratio ", "the p99 of the traffic's surge ratio at T_plan", "plan: peak "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	p, err := capacity.LoadPlan(out)
	if err != nil {
		t.Fatal(err)
	}
	s, err := traffic.Load(trace)
	if err != nil {
		t.Fatal(err)
	}
	planned, held, err := s.Split(0.25)
	if err != nil {
		t.Fatal(err)
	}
	peak, _ := traffic.PeakOver(planned, time.Minute)
	in := p.Inputs
	if capacity.FormatNumber(in.PeakRPS) != capacity.FormatNumber(peak) {
		t.Errorf("peak_rps %g: want the planned-on part's 1-minute peak %g", in.PeakRPS, peak)
	}
	tPlan := time.Duration(p.Derived.TPlanS+0.999) * time.Second
	q, _, err := traffic.SurgeQuantile(planned, tPlan.Truncate(time.Second), 0.99)
	if err != nil {
		t.Fatal(err)
	}
	if !(in.SurgeRatio >= q && in.SurgeRatio < q+0.01) || in.SurgeRatio < 1.5 || !strings.Contains(in.SurgeSource, "p99") {
		t.Errorf("surge_ratio %g (%q): want the planned-on part's p99 %g rounded up to hundredths, above the catalog's range for this bursty log", in.SurgeRatio, in.SurgeSource, q)
	}
	if len(in.Traces) != 1 || len(in.Holdout) != 1 || in.Holdout[0].DurationS != held.Duration().Seconds() || in.Traces[0].DurationS != planned.Duration().Seconds() {
		t.Fatalf("traces %d, holdout %d: want the planned-on part and the held-out part recorded", len(in.Traces), len(in.Holdout))
	}
	h := holdoutTraces(p)
	if len(h) != 1 || !h[0].Holds || !p.Feasible() {
		t.Fatalf("verdict %s, held-out results %+v: want a feasible plan that holds on the held-out part", p.Verdict, h)
	}
	if !strings.Contains(stdout, "holdout") {
		t.Errorf("the printed envelope has no holdout row:\n%s", stdout)
	}
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Get(p.Fingerprint.Model)
	if err != nil {
		t.Fatal(err)
	}
	dep := capacity.Deployment{Model: m, InstanceType: p.Fingerprint.InstanceType, ContainerDigest: p.Fingerprint.ContainerDigest}
	if dec := capacity.Gate(dep, out); !dec.Enabled {
		t.Fatalf("the gate refused a plan from traffic: %q", dec.Reasons)
	}
}

// When no autoscaling configuration holds traffic with 3× bursts, plan --traffic names the cheapest fixed fleet
// that does, validated on the held-out part the search never saw; planning with those flags gives a feasible
// plan that simulate confirms on the whole log, and one instance fewer does not hold.
func TestPlanFromTrafficNamesAFixedFleetThatSimulateConfirms(t *testing.T) {
	trace, dir := trafficSet(t, 7, 3)
	stdout, stderr, code := runCLI(t, trafficPlanArgs(dir, trace, filepath.Join(dir, "first.json"), "--max-instances", "30")...)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (infeasible)\n%s\n%s", code, stderr, stdout)
	}
	re := regexp.MustCompile(`a fixed fleet does, the smallest of \d+ tried:\n` + capacity.CheapestPassingHeading + `.*\n  tts-bench plan (--surge (\S+) --min-instances (\d+) --max-instances (\d+) --scale-in-margin (\S+))\n  validated on the held-out traffic, which the search did not see: it holds on all 1 part\(s\)\n`)
	g := re.FindStringSubmatch(stdout)
	if g == nil {
		t.Fatalf("no fixed fleet validated on the held-out part named:\n%s", stdout)
	}
	if g[3] != g[4] {
		t.Fatalf("%s is not a fixed fleet", g[1])
	}
	fixed := filepath.Join(dir, capacity.PlanFile)
	if _, stderr, code := runCLI(t, trafficPlanArgs(dir, trace, fixed, strings.Fields(g[1])...)...); code != 0 {
		t.Fatalf("planning with the named flags: exit %d\n%s", code, stderr)
	}
	p, err := capacity.LoadPlan(fixed)
	if err != nil {
		t.Fatal(err)
	}
	if h := holdoutTraces(p); len(h) != 1 || !h[0].Holds {
		t.Fatalf("the fixed fleet's held-out results: %+v", h)
	}
	simOut, simErr, code := runCLI(t, "simulate", "--plan", fixed, "--trace", trace, "--output", filepath.Join(dir, "sim.svg"))
	if code != 0 || !strings.Contains(simOut, "holds") {
		t.Fatalf("simulate on the whole log: exit %d\n%s\n%s", code, simErr, simOut)
	}
	var n int
	fmt.Sscan(g[3], &n)
	fewer := strings.Fields(strings.NewReplacer("--min-instances "+g[3], fmt.Sprintf("--min-instances %d", n-1), "--max-instances "+g[4], fmt.Sprintf("--max-instances %d", n-1)).Replace(g[1]))
	if _, _, code := runCLI(t, trafficPlanArgs(dir, trace, filepath.Join(dir, "fewer.json"), append(fewer, "--no-search")...)...); code != 1 {
		t.Fatalf("a fixed fleet of %d: exit %d, want 1: the named fleet must be the smallest that holds", n-1, code)
	}
}

// Every misuse of the traffic flags is a usage error naming the flag and the fix.
func TestPlanTrafficFlagErrors(t *testing.T) {
	trace, dir := trafficSet(t, 3, 2)
	short := writeFile(t, filepath.Join(dir, "short.csv"), "timestamp,rps\n0,5\n30,6\n")
	idle := writeFile(t, filepath.Join(dir, "idle.csv"), "timestamp,rps\n0,0\n600,0\n1200,0\n")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--holdout", "10%"}, "--holdout 10% needs --traffic"},
		{[]string{"--surge-quantile", "p95"}, "--surge-quantile p95 needs --traffic"},
		{[]string{"--traffic", trace, "--holdout", "95%"}, "--holdout 95%: want a share from 0"},
		{[]string{"--traffic", trace, "--holdout", "a quarter"}, `--holdout "a quarter" is not a share`},
		{[]string{"--traffic", trace, "--surge-quantile", "p30"}, `--surge-quantile "p30" is not a quantile`},
		{[]string{"--traffic", trace, "--surge", "2", "--surge-quantile", "p95"}, "both set the surge ratio"},
		{[]string{"--traffic", short}, "less than the minute a peak is measured over"},
		{[]string{"--traffic", idle}, "its planned-on part has no request"},
		{[]string{"--traffic", filepath.Join(dir, "none.txt")}, "--traffic " + filepath.Join(dir, "none.txt")},
	} {
		args := []string{"plan", "--qmax", filepath.Join(dir, capacity.QMaxFile), "--ttotal", filepath.Join(dir, capacity.TTotalFile), "--output", filepath.Join(dir, "p.json")}
		if !strings.Contains(strings.Join(tt.args, " "), "--traffic") {
			args = append(args, "--peak-rps", "80")
		}
		_, stderr, code := runCLI(t, append(args, tt.args...)...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%q: exit %d, want 2 with %q:\n%s", tt.args, code, tt.want, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "p.json")); err == nil {
		t.Error("a refused command line wrote a plan")
	}
}

// A trace file is read whatever its name (tts-bench traffic import writes the name --output gives it); a name
// that is neither a file nor a shape is refused naming the shapes.
func TestSimulateReadsATraceOfAnyName(t *testing.T) {
	trace, dir := trafficSet(t, 5, 2)
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	named := writeFile(t, filepath.Join(dir, "day.trace"), string(data))
	whatIf := []string{"simulate", "--what-if", "q_max=50,t_total_s=260.2,throughput_rps=16.3", "--output", filepath.Join(dir, "sim.svg")}
	stdout, stderr, code := runCLI(t, append(whatIf, "--trace", named)...)
	// Read and simulated: exit 0 or 1 (whether the catalog's plan holds these bursts), never a usage error.
	if code == 2 || !strings.Contains(stdout, "trace: "+named+" (peak") {
		t.Fatalf("simulate --trace day.trace: exit %d\n%s\n%s", code, stderr, stdout)
	}
	_, stderr, code = runCLI(t, append(whatIf, "--trace", "diurnall")...)
	if code != 2 || !strings.Contains(stderr, `trace "diurnall" is neither a built-in shape (diurnal, step, spike, ramp) nor a trace file`) {
		t.Fatalf("simulate --trace diurnall: exit %d\n%s", code, stderr)
	}
}
