package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/simulate"
)

// espeakPlan is a feasible espeak-ng plan (fleet 3 to 4) derived by tts-bench plan (--peak-rps 400
// --trough-rps 20 --min-instances 3 --max-instances 4) from a qmax artifact measured on the emulator and a
// ttotal artifact, both beside it. The qmax artifact predates qmax's rate staircase: its rate_steps were added
// by hand (plausible numbers for espeak on two cores: keeping up to 85% of the highest closed-loop throughput
// of 152.8 rps, in flight 0.55 to 4.5, the 10-s peak 4 to 13; at 100% and 110% it falls behind), and the ttotal
// artifact's qmax_sha256 follows the edited file.
var espeakPlan = func() string {
	p, err := filepath.Abs(filepath.Join("testdata", "simulate-espeak-ng", "plan.json"))
	if err != nil {
		panic(err)
	}
	return p
}()

// A feasible plan can still break on a spike: 560 rps from 150 within one minute outruns the 3 instances
// while the fourth starts (T_total 280.8 s); the simulation shows it and exits 1.
func TestSimulateFeasibleEspeakPlanGolden(t *testing.T) {
	dir := t.TempDir()
	chart := filepath.Join(dir, "chart.svg")
	stdout, stderr, code := runCLI(t, "simulate", "--plan", espeakPlan, "--trace", "spike", "--trough-rps", "150",
		"--peak-rps", "560", "--duration", "90m", "--at", "20m", "--width", "30m", "--output", chart)
	if code != 1 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	golden(t, "simulate-espeak-spike.txt", stdout)
	for _, want := range []string{"SCALING", "TOTALS", "COMPARISON", "RESULT", "fleet: plan (s 1.25), 3 to 4 instances",
		// 150 rps on 3 instances, 50 each; the spike puts 186.67 on each, above the 141.2 one completes in open loop.
		"SLO-violation minutes  6 of 90", "560 rps offered to 3 serving instance(s) (186.67 rps each; one instance completes at most 141.2 rps)",
		"1 instance(s) still starting (T_total 280.8 s after the scale-out)", "3 → 4",
		// The comparison: the oracle, the original's thresholds (docs/design.md, "The original": 12/8), target
		// tracking on invocations and a fixed fleet of ceil(560 / 126.8) = 5 (the safe rate: the 95% lower bound of
		// the highest rate step that met the SLO), which alone holds (the cheapest that meets the SLO).
		"oracle", "original thresholds 12/8", "target tracking on InvocationsPerInstance", "fixed fleet of 5", "yes (cheapest)"} {
		if !strings.Contains(flat(stdout), flat(want)) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The plan violated on this trace: the oracle ratio, which means something only at zero violation minutes,
	// is not printed.
	if strings.Contains(stdout, "oracle instance-hours ÷ plan instance-hours") {
		t.Error("the oracle ratio is printed for a plan that does not hold on the trace")
	}
	svg, err := os.ReadFile(chart)
	if err != nil || !strings.Contains(string(svg), "<svg") || !strings.Contains(string(svg), "SLO 1000 ms") {
		t.Errorf("chart %s: %v, %.200s", chart, err, svg)
	}
}

func TestSimulateDiurnalDefaultsWriteChartInCurrentDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	stdout, stderr, code := runCLI(t, "simulate", "--plan", espeakPlan, "--trace", "diurnal", "--peak-rps", "200", "--trough-rps", "20", "--minutes")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if n := strings.Count(stdout, "\n  "); n < 1440 {
		t.Errorf("%d indented lines, want a row per minute of the day", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "simulate-espeak-ng.svg")); err != nil {
		t.Errorf("chart not written in the current directory: %v", err)
	}
}

func TestSimulateWhatIfProofOfValueViolates(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	stdout, stderr, code := runCLI(t, "simulate", "--model", "kokoro-82m", "--what-if", "q_max=50,t_total_s=260.2,throughput_rps=16.3",
		"--trace", "diurnal", "--peak-rps", "5000", "--trough-rps", "10")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %s", code, stderr)
	}
	// The M/M/1 at 16.3 rps (61.3 ms a request) keeps p95 TTFAB = 1000·ln 20/(16.3 − λ) ms within 3000 ms up to
	// about 15.26 rps on the model's table, so the catalog's 9 instances meet the SLO up to 137.3 rps; the
	// diurnal day, 10 + 4990 × (1 − cos θ)/2, is above that for 1 − 2 × acos(0.949)/(2π) = 89.8% of its 1440
	// minutes.
	for _, want := range []string{"NOT MEASURED", "fleet: plan (s 1.25), 1 to 9 instances", "SLO-violation minutes  1292 of 1440",
		"instance-hours", "cost", "the fleet is at its maximum of 9", "These numbers are NOT MEASURED"} {
		if !strings.Contains(flat(stdout), flat(want)) {
			t.Errorf("output lacks %q", want)
		}
	}
	if !strings.Contains(stderr, "the plan does not hold on this trace: 1292 violation minute(s)") {
		t.Errorf("stderr %s", stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "simulate-kokoro-82m.svg")); err != nil {
		t.Errorf("chart: %v", err)
	}
}

func TestSimulateJSON(t *testing.T) {
	stdout, stderr, code := runCLI(t, "simulate", "--plan", espeakPlan, "--trace", "step", "--duration", "30m", "--trough-rps", "100",
		"--peak-rps", "560", "--format", "json", "--output", filepath.Join(t.TempDir(), "c.svg"))
	if code != 1 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{`"minutes": [`, `"serving":`, `"shed":`, `"events": [`, `"comparison": [`, `"cheapest":`, `"oracle_ratio":`, `"kind": "oracle"`, `"instance": "measured`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("json lacks %s", want)
		}
	}
}

func TestSimulateInputErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("0,1\n60,-3\n60,2\n30,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		args []string
		want []string
	}{
		"no trace":       {[]string{"--plan", espeakPlan}, []string{"--trace is required"}},
		"unknown shape":  {[]string{"--plan", espeakPlan, "--trace", "sine"}, []string{`trace "sine" is neither`}},
		"bad params":     {[]string{"--plan", espeakPlan, "--trace", "diurnal", "--peak-rps", "5", "--trough-rps", "10", "--step", "1ms"}, []string{"--trough-rps 10 is above peak-rps 5", "--step 1ms"}},
		"bad csv":        {[]string{"--plan", espeakPlan, "--trace", bad}, []string{"line 2: rps \"-3\"", "line 4: timestamp \"30\" does not come after"}},
		"csv and shape":  {[]string{"--plan", espeakPlan, "--trace", bad, "--peak-rps", "9"}, []string{"--peak-rps shape a built-in trace"}},
		"missing plan":   {[]string{"--plan", filepath.Join(dir, "none.json"), "--trace", "ramp"}, []string{"--plan", "no such file"}},
		"both":           {[]string{"--plan", espeakPlan, "--what-if", "q_max=5,t_total_s=1,throughput_rps=1", "--trace", "ramp"}, []string{"--what-if replaces the plan"}},
		"bad what-if":    {[]string{"--what-if", "q_max=x", "--trace", "ramp"}, []string{"q_max=x", "missing"}},
		"negative price": {[]string{"--plan", espeakPlan, "--trace", "ramp", "--price-per-hour", "-1"}, []string{`--price-per-hour "-1": -1 is out of range`}},
		"price not a number": {[]string{"--plan", espeakPlan, "--trace", "ramp", "--price-per-hour", "ml.c5.large=cheap"},
			[]string{`--price-per-hour "ml.c5.large=cheap": "cheap" is not a number of US dollars: use --price-per-hour TYPE=USD`}},
		"type priced twice": {[]string{"--plan", espeakPlan, "--trace", "ramp", "--price-per-hour", "1.2", "--price-per-hour", "ml.c5.large=1"},
			[]string{`--price-per-hour "ml.c5.large=1": ml.c5.large is priced twice`}},
		"format":        {[]string{"--plan", espeakPlan, "--trace", "ramp", "--format", "yaml"}, []string{"--format \"yaml\""}},
		"surge on plan": {[]string{"--plan", espeakPlan, "--trace", "ramp", "--surge", "1.2"}, []string{"--surge applies to --what-if only"}},
		"wrong model":   {[]string{"--model", "kokoro-82m", "--plan", espeakPlan, "--trace", "ramp"}, []string{"is for model espeak-ng, not --model kokoro-82m"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, stderr, code := runCLI(t, append([]string{"simulate", "--output", filepath.Join(dir, "x.svg")}, tc.args...)...)
			if code != 2 {
				t.Fatalf("exit %d, want 2: %s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
		})
	}
}

// --price-per-hour prices the simulated plan's instance type: a bare USD or TYPE=USD, over the catalog's
// prices; a plan for a type the catalog does not price is refused naming --price-per-hour TYPE=USD.
func TestSimulatePricePerHour(t *testing.T) {
	dir := t.TempDir()
	// The espeak plan measured on the emulator, as if measured on ml.g6.xlarge, which espeak-ng's catalog entry
	// does not price.
	g6 := filepath.Join(dir, "g6")
	if err := os.MkdirAll(g6, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"plan.json", "qmax.json", "ttotal.json"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(espeakPlan), f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "plan.json" {
			b = []byte(strings.Replace(string(b), `"instance_type": "local"`, `"instance_type": "ml.g6.xlarge"`, 1))
		}
		if err := os.WriteFile(filepath.Join(g6, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g6Plan := filepath.Join(g6, "plan.json")
	for name, tc := range map[string]struct {
		plan  string
		price []string
		code  int
		want  []string
	}{
		"catalog price of the local run's type": {espeakPlan, nil, 1, []string{"$0.12 per instance-hour",
			"price: $0.12 per instance-hour from catalog models/espeak-ng.json (its provenance: --format json)", "(the local emulator run priced as the catalog's instance type ml.c5.large)"}},
		"bare USD": {espeakPlan, []string{"1.2"}, 1, []string{"$1.20 per instance-hour",
			"price: $1.20 per instance-hour from --price-per-hour (the local emulator run priced as the catalog's instance type ml.c5.large)"}},
		"TYPE=USD":                     {espeakPlan, []string{"ml.c5.large=1.2", "ml.g6.xlarge=2"}, 1, []string{"$1.20 per instance-hour", "from --price-per-hour"}},
		"unpriced type refused":        {g6Plan, nil, 2, []string{"no price for instance type ml.g6.xlarge of model espeak-ng: the catalog models/espeak-ng.json prices ml.c5.large, ml.c5.xlarge; pass --price-per-hour ml.g6.xlarge=USD"}},
		"unpriced type given":          {g6Plan, []string{"ml.g6.xlarge=0.9"}, 1, []string{"Simulation of espeak-ng on ml.g6.xlarge (measured), SLO p95 TTFAB ≤ 1000 ms, $0.90 per instance-hour"}},
		"bare USD for the plan's type": {g6Plan, []string{"0.8"}, 1, []string{"on ml.g6.xlarge (measured), SLO p95 TTFAB ≤ 1000 ms, $0.80 per instance-hour"}},
	} {
		t.Run(name, func(t *testing.T) {
			args := []string{"simulate", "--plan", tc.plan, "--trace", "spike", "--trough-rps", "150", "--peak-rps", "560", "--duration", "90m",
				"--at", "20m", "--width", "30m", "--output", filepath.Join(dir, "c.svg")}
			for _, p := range tc.price {
				args = append(args, "--price-per-hour", p)
			}
			stdout, stderr, code := runCLI(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(flat(stdout+stderr), flat(w)) {
					t.Errorf("output lacks %q:\n%s%s", w, stdout, stderr)
				}
			}
		})
	}
}

// SIGINT and SIGTERM stop a long simulation (a month at 1-s steps, five fleets: seconds of work) between
// simulated hours: exit 130 or 143, nothing printed, no chart written. The signal is sent once the CLI says the
// simulation starts (its line for a long run): its handler is installed by then, and the seconds of work lie
// ahead; a signal that came before the handler would kill the process by its default action.
func TestSimulateStopsOnSignals(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			chart := filepath.Join(t.TempDir(), "chart.svg")
			cmd, out := startCLI(t, "simulate", "--plan", espeakPlan, "--trace", "diurnal", "--peak-rps", "500", "--trough-rps", "20",
				"--duration", "744h", "--step", "1m", "--output", chart)
			// About 4 s of work without the race detector, far more with it, after the line.
			waitOutput(t, out, "this takes a while; Ctrl-C stops it", 2*time.Minute)
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("still running 20 s after %v:\n%s", c.sig, out)
			}
			if got := cmd.ProcessState.ExitCode(); got != c.code {
				t.Errorf("exit %d after %v, want %d:\n%s", got, c.sig, c.code, out)
			}
			if strings.Contains(out.String(), "TOTALS") || !strings.Contains(out.String(), "nothing written") {
				t.Errorf("output after %v:\n%s\nwant no report and a line saying nothing was written", c.sig, out)
			}
			if _, err := os.Stat(chart); err == nil {
				t.Errorf("the chart %s was written after %v", chart, c.sig)
			}
		})
	}
}

// --initial-instances starts the scaling fleets with the endpoint's count (the demo compares a replay that
// started on one instance with the simulation of the same trace); outside the plan's fleet range, or not a
// count, it is a usage error naming the flag.
func TestSimulateInitialInstances(t *testing.T) {
	dir := t.TempDir()
	args := func(extra ...string) []string {
		return append([]string{"simulate", "--plan", espeakPlan, "--trace", "step", "--trough-rps", "150", "--peak-rps", "200",
			"--duration", "20m", "--format", "json", "--output", filepath.Join(dir, "chart.svg")}, extra...)
	}
	first := func(stdout string) int {
		t.Helper()
		var rep struct {
			Plan struct {
				Minutes []struct {
					Serving int `json:"serving"`
				} `json:"minutes"`
			} `json:"plan"`
		}
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil || len(rep.Plan.Minutes) == 0 {
			t.Fatalf("json: %v\n%s", err, stdout)
		}
		return rep.Plan.Minutes[0].Serving
	}
	// 150 rps: three instances keep each below the scale-out target (the plan's minimum is 3 anyway).
	stdout, stderr, code := runCLI(t, args()...)
	if code > 1 || first(stdout) != 3 {
		t.Fatalf("default: exit %d, first minute serving %d, want 3\n%s", code, first(stdout), stderr)
	}
	stdout, stderr, code = runCLI(t, args("--initial-instances", "4")...)
	if code > 1 || first(stdout) != 4 {
		t.Fatalf("--initial-instances 4: exit %d, first minute serving %d\n%s", code, first(stdout), stderr)
	}
	for _, tc := range []struct{ value, want string }{
		{"2", "--initial-instances 2 is outside the plan's fleet range 3 to 4"},
		{"0", "--initial-instances 0: want 1 to"},
		{"-1", "--initial-instances -1: want 1 to"},
		{"many", "initial-instances"},
	} {
		_, stderr, code := runCLI(t, args("--initial-instances", tc.value)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("--initial-instances %s: exit %d, stderr %q, want exit 2 naming %q", tc.value, code, stderr, tc.want)
		}
	}
}

// TestSimulateScatterRuns: --scatter-runs adds the spread of the plan's first scale-out and peak fleet over
// seeded runs with the alarm's datapoints scattered as qmax measured them, beside the deterministic run the
// verdict is (which sits at the late end). testdata/simulate-twin is a demo run's plan, qmax and ttotal
// artifacts and its surge trace (the demo replayed it: first scale-out at about 40 s, peak 3 instances).
func TestSimulateScatterRuns(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join("testdata", "simulate-twin", "plan.json")
	trace := filepath.Join("testdata", "simulate-twin", "surge.csv")
	args := []string{"simulate", "--plan", plan, "--trace", trace, "--initial-instances", "1", "--scatter-runs", "200", "--output", filepath.Join(dir, "s.svg")}
	stdout, stderr, code := runCLI(t, append(args, "--format", "json")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var rep capacity.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	sp := rep.Spread
	if sp == nil || sp.Runs != 200 || sp.FirstScaleOutS == nil {
		t.Fatalf("spread %+v: want 200 runs with a first scale-out", sp)
	}
	q := *sp.FirstScaleOutS
	det := simulate.FirstScaleOut(rep.Plan)
	t.Logf("first scale-out: deterministic %.0f s, scattered %.0f / %.0f / %.0f s; peak %d to %d instances", det, q[0], q[1], q[2], sp.PeakInstancesMin, sp.PeakInstancesMax)
	if !(q[0] <= q[1] && q[1] <= q[2]) || det < q[1] {
		t.Errorf("spread %v s beside the deterministic %.0f s: want ordered quantiles and the deterministic run at or after the median", q, det)
	}
	if !(sp.PeakInstancesMin >= 2 && sp.PeakInstancesMax <= rep.Plan.MaxInstances) {
		t.Errorf("peak instances %d to %d: want every run to scale out, within the plan's maximum %d", sp.PeakInstancesMin, sp.PeakInstancesMax, rep.Plan.MaxInstances)
	}
	// Exit 0: the run held and so did at least 95% of the scattered runs; the plan's comparison row and the
	// oracle ratio follow that verdict; the mean cost is the mean instance-hours at the price.
	if !rep.Plan.Holds() || sp.HeldRuns > sp.Runs || float64(sp.HeldRuns) < capacity.ScatterHoldShare*float64(sp.Runs) || !rep.PlanHolds() || !rep.Comparison[0].MeetsSLO {
		t.Errorf("exit 0 beside the run holding %v, %d of %d scattered runs held, comparison row meets %v", rep.Plan.Holds(), sp.HeldRuns, sp.Runs, rep.Comparison[0].MeetsSLO)
	}
	if !(sp.MeanInstanceHours > 0) || math.Abs(sp.MeanCost-sp.MeanInstanceHours*rep.PricePerHour) > 1e-9 {
		t.Errorf("mean instance-hours %g, mean cost %g at $%g/h", sp.MeanInstanceHours, sp.MeanCost, rep.PricePerHour)
	}
	again, _, _ := runCLI(t, append(args, "--format", "json")...)
	if again != stdout {
		t.Error("the same command gave another report: the seeds must make the runs reproducible")
	}
	text, _, code := runCLI(t, args...)
	if code != 0 || !strings.Contains(text, "SCATTERED (200 runs") || !strings.Contains(text, fmt.Sprintf("runs that held         %d of 200 (at least 95%% must: met)", sp.HeldRuns)) || !strings.Contains(text, fmt.Sprintf("first scale-out        %.0f / %.0f / %.0f s after the start", q[0], q[1], q[2])) {
		t.Errorf("exit %d; the text lacks the scattered runs:\n%s", code, text)
	}
	// Refusals: a plan whose qmax recorded no 10th-percentile peaks, a what-if, a negative or huge count.
	if _, stderr, code := runCLI(t, "simulate", "--plan", espeakPlan, "--trace", "step", "--scatter-runs", "10", "--output", filepath.Join(dir, "e.svg")); code != 2 || !strings.Contains(stderr, "records no 10th-percentile 10-s peaks") {
		t.Errorf("a plan without the peaks to scatter: exit %d, %s", code, stderr)
	}
	for _, bad := range [][]string{{"--scatter-runs", "-1"}, {"--scatter-runs", "10001"}, {"--scatter-runs", "5", "--what-if", "q_max=4,t_total_s=60,throughput_rps=10"}} {
		if _, stderr, code := runCLI(t, append([]string{"simulate", "--model", "espeak-ng", "--trace", "step"}, bad...)...); code != 2 || !strings.Contains(stderr, "--scatter-runs") {
			t.Errorf("%v: exit %d, want 2 naming --scatter-runs: %s", bad, code, stderr)
		}
	}
}
