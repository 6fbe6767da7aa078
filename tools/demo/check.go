package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/simulate"
)

// localMaxInstances is the twin's catalog largest fleet: the plan must fit it.
const localMaxInstances = 4

// surgeBucket is the length of the surge replay's slices (the demo runs tts-bench replay with --bucket 10s), the
// "10-s slices" of the summary's surge line.
const surgeBucket = 10 * time.Second

// The value patterns of the summary's lines (summary.write).
var (
	reQMax       = regexp.MustCompile(`^(\d+) requests in flight per instance \(p95 TTFAB (\d+) ms, SLO (\d+) ms`)
	reTTotal     = regexp.MustCompile(`^(\d+(?:\.\d+)?) s from asking for one more instance until it served`)
	reThresholds = regexp.MustCompile(`^scale out above (\d+(?:\.\d+)?) rps per instance \(metric (\d+(?:\.\d+)?)\), scale in below (\d+(?:\.\d+)?) rps \(metric (\d+(?:\.\d+)?)\); fleet (\d+) to (\d+) instances; T_plan (\d+) s`)
	reVerdict    = regexp.MustCompile(`^(\w+): (\d+) of (\d+) envelope traces failed in simulation`)
	reSurge      = regexp.MustCompile(`^(\w+): .*the autoscaler went from (\d+) to (\d+) instances, the new instance served (\d+) s after the surge began, and back to (\d+) \((\d+) scale-in\(s\), (\d+) flap\(s\)\); (\d+) of (\d+) 10-s slices violated after the first T_plan \((\d+) within it\); (\d+) requests sent, (\d+) shed`)
	reDay        = regexp.MustCompile(`^(\w+): the plan simulated on a day from (\d+(?:\.\d+)?) to (\d+(?:\.\d+)?) rps: (\d+) violation minute\(s\), (\d+) flap\(s\), (\d+(?:\.\d+)?) instance-hours`)
	reScatter    = regexp.MustCompile(`^(\w+): the replay (?:first scaled out at (\d+) s|never scaled out) and peaked at (\d+) instances; (\d+) simulated runs .* scaled out first at (\d+) / (\d+) / (\d+) s \(p2\.5 / median / p97\.5; (\d+) s either side counts\) and peaked at (\d+) to (\d+) instances`)
	reSim        = regexp.MustCompile(`^(\w+): the same trace simulated with the plan: (\d+) violation minute\(s\), (\d+) flap\(s\), (\d+) scale-out\(s\), (\d+) scale-in\(s\), peak \d+ instances; (\d+) of (\d+) scattered runs held`)
)

// The patterns of the lines before the summary that its claims stand on: tts-bench replay's per-slice table
// (measure/report_merge.go, ReplayReport.render), the scaling activities (demo.showActivities) and the
// simulations' comparison lines (demo.simulate).
var (
	reReplayTitle  = regexp.MustCompile(`^replay \S+ of \S+, run \S+, trace \S+$`)
	reReplayOpen   = regexp.MustCompile(`^open loop; shards \S+ of \d+; \d+ file\(s\); slices of (\S+); SLO p95 TTFAB (\S+) ms$`)
	reReplayTotals = regexp.MustCompile(`^arrivals (\d+): sent (\d+), dropped (\d+) \(\S+%\), ok (\d+), shed (\d+) \(\S+%\), errors (\d+) \(\d+ timeouts\)$`)
	reReplayViol   = regexp.MustCompile(`^SLO-violation slices: (\d+) of (\d+)$`)
	reActivities   = regexp.MustCompile(`^Scaling activities of \S+ \(DescribeScalingActivities\), newest first:$`)
	reActivity     = regexp.MustCompile(`^  (\d\d:\d\d:\d\d)  (\S+) +(.*)$`)
	reSetDesired   = regexp.MustCompile(`^Setting desired instance count to (\d+)\.$`)
	reSimCommand   = regexp.MustCompile(`simulate-(\w+)\.json'?$`)
	reColumnGap    = regexp.MustCompile(`\s{2,}`)
	reComparison   = regexp.MustCompile(`^  (.+?) +(meets the SLO|VIOLATES the SLO): (\d+) violation minute\(s\), (\d+) flap\(s\),(?: (\d+) of (\d+) scattered runs held,)? (\d+(?:\.\d+)?) instance-hours, fleet (\d+) to (\d+)$`)
)

// replayColumns are the columns of tts-bench replay's per-slice table, in order.
var replayColumns = []string{"time", "offered rps", "sent", "dropped", "instances", "desired", "p95 TTFAB ms", "over SLO", "shed %", "errors", "SLO"}

// replayRow is one printed row of the replay's table: one slice.
type replayRow struct {
	line               int // in the log, from 1
	clock              string
	offset             time.Duration
	offeredRPS         float64
	sent, dropped      int
	instances, desired int // -1 when printed "-"
	p95Ms              float64
	over               int // successful requests over the SLO
	shedPct            float64
	errors             int
	verdict            string
}

// replayTable is the surge replay's table as printed: its slice length and SLO (from the line above the
// columns), its rows and its totals.
type replayTable struct {
	line         int
	bucket       time.Duration
	sloMs        float64
	header, rows bool // the columns were read; rows are being read
	slices       []replayRow
	// totals: the arrivals line; violating: the "SLO-violation slices: k of n" line.
	totals    []int // arrivals, sent, dropped, ok, shed, errors
	violating []int // k, n
}

// activity is one scaling activity as printed: newest first in the log.
type activity struct {
	status string
	// desired is the count the activity set ("Setting desired instance count to N."), -1 for another activity.
	desired int
}

// comparisonRow is one configuration of a simulation's comparison as the demo prints it.
type comparisonRow struct {
	line             int
	name             string
	meets            bool
	violationMinutes int
	flaps            int
	instanceHours    float64
	// scatterHeld of scatterRuns scattered runs held (0 of 0 when the line gives none).
	scatterHeld, scatterRuns int
}

// evidence is what one run printed before its summary.
type evidence struct {
	table      *replayTable
	activities []activity
	// activitiesPrinted is true once the activities' title line was read ("none" leaves the list empty).
	activitiesPrinted bool
	// sims are the comparison lines of each simulation, by its name (simulate-<name>.json): surge, diurnal.
	sims map[string][]comparisonRow
	// problems are lines of the evidence that do not read as the tools print them.
	problems []error

	inActivities bool
	sim          string
}

// read takes one line of a run's output (outside its summary).
func (e *evidence) read(n int, l string) {
	if strings.HasPrefix(l, "$ ") {
		e.inActivities, e.sim = false, ""
		if strings.Contains(l, "tts-bench simulate ") {
			if m := reSimCommand.FindStringSubmatch(l); m != nil {
				e.sim = m[1]
				e.sims[e.sim] = nil
			}
		}
		if e.table != nil {
			e.table.rows = false
		}
		return
	}
	if reReplayTitle.MatchString(l) {
		e.table = &replayTable{line: n}
		return
	}
	if t := e.table; t != nil {
		switch {
		case t.rows && strings.TrimSpace(l) == "":
			t.rows = false
			return
		case t.rows:
			e.readRow(n, l)
			return
		case !t.header:
			if m := reReplayOpen.FindStringSubmatch(l); m != nil {
				d, err1 := time.ParseDuration(m[1])
				slo, err2 := strconv.ParseFloat(m[2], 64)
				if err1 != nil || err2 != nil {
					e.problems = append(e.problems, fmt.Errorf("replay table, line %d: %q: the slice length or the SLO does not read as a number", n, l))
				}
				t.bucket, t.sloMs = d, slo
				return
			}
			if h := strings.TrimSpace(l); strings.HasPrefix(h, "time") {
				cols := reColumnGap.Split(h, -1)
				if strings.Join(cols, "|") != strings.Join(replayColumns, "|") {
					e.problems = append(e.problems, fmt.Errorf("replay table, line %d: columns %q: want %q", n, cols, replayColumns))
				}
				t.header, t.rows = true, true
				return
			}
		}
		if m := reReplayTotals.FindStringSubmatch(l); m != nil {
			t.totals = atois(m[1:])
			return
		}
		if m := reReplayViol.FindStringSubmatch(l); m != nil {
			t.violating = atois(m[1:])
			return
		}
	}
	if reActivities.MatchString(l) {
		e.activities, e.activitiesPrinted, e.inActivities = nil, true, true
		return
	}
	if e.inActivities {
		switch m := reActivity.FindStringSubmatch(l); {
		case l == "  none" || strings.HasPrefix(l, "    cause: "):
		case m != nil:
			a := activity{status: m[2], desired: -1}
			if d := reSetDesired.FindStringSubmatch(m[3]); d != nil {
				a.desired, _ = strconv.Atoi(d[1])
			}
			e.activities = append(e.activities, a)
		default:
			e.inActivities = false
		}
		return
	}
	if e.sim != "" {
		if m := reComparison.FindStringSubmatch(l); m != nil {
			v := atois(m[3:5])
			h, _ := strconv.ParseFloat(m[7], 64)
			row := comparisonRow{line: n, name: m[1], meets: m[2] == "meets the SLO", violationMinutes: v[0], flaps: v[1], instanceHours: h}
			if m[5] != "" {
				s := atois(m[5:7])
				row.scatterHeld, row.scatterRuns = s[0], s[1]
			}
			e.sims[e.sim] = append(e.sims[e.sim], row)
		}
	}
}

// readRow reads one row of the replay's table.
func (e *evidence) readRow(n int, l string) {
	f := strings.Fields(l)
	bad := func(why string) {
		e.problems = append(e.problems, fmt.Errorf("replay table, line %d: %q: %s", n, strings.TrimSpace(l), why))
	}
	if len(f) != len(replayColumns) {
		bad(fmt.Sprintf("%d fields, want the %d columns %q", len(f), len(replayColumns), replayColumns))
		return
	}
	r := replayRow{line: n, clock: f[0], verdict: f[10]}
	var h, mi, sec int
	if _, err := fmt.Sscanf(f[0], "%d:%02d:%02d", &h, &mi, &sec); err != nil {
		bad("the time does not read as h:mm:ss")
		return
	}
	r.offset = time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute + time.Duration(sec)*time.Second
	count := func(s string, dash bool) (int, bool) {
		if dash && s == "-" {
			return -1, true
		}
		v, err := strconv.Atoi(s)
		return v, err == nil && v >= 0
	}
	number := func(s string) (float64, bool) {
		v, err := strconv.ParseFloat(s, 64)
		return v, err == nil && v >= 0 && !math.IsInf(v, 0)
	}
	var ok [9]bool
	r.offeredRPS, ok[0] = number(f[1])
	r.sent, ok[1] = count(f[2], false)
	r.dropped, ok[2] = count(f[3], false)
	r.instances, ok[3] = count(f[4], true)
	r.desired, ok[4] = count(f[5], true)
	r.p95Ms, ok[5] = number(f[6])
	r.over, ok[6] = count(f[7], false)
	r.shedPct, ok[7] = number(f[8])
	r.errors, ok[8] = count(f[9], false)
	for i, good := range ok {
		if !good {
			bad(fmt.Sprintf("%s %q is not a number as the table prints it", replayColumns[i+1], f[i+1]))
			return
		}
	}
	e.table.slices = append(e.table.slices, r)
}

// checkSummary reads a demo's output and lists every summary line that is missing, whose value is not sane, or
// whose claim the lines it summarizes contradict (the surge replay's per-slice table, the scaling activities,
// the simulations' comparison lines), and every row of that table whose verdict its own numbers contradict; nil
// when there is none.
func checkSummary(r io.Reader) []error {
	lines, ev, err := readRun(r)
	if err != nil {
		return []error{err}
	}
	errs := append([]error(nil), ev.problems...)
	fail := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("summary line %q: %s", key, fmt.Sprintf(format, args...)))
	}
	get := func(key string, re *regexp.Regexp) []float64 {
		v, ok := lines[key]
		if !ok {
			fail(key, "missing")
			return nil
		}
		m := re.FindStringSubmatch(v)
		if m == nil {
			fail(key, "%q does not read as %s", v, re)
			return nil
		}
		var out []float64
		for _, s := range m[1:] {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				f = verdictValue(s)
			}
			out = append(out, f)
		}
		return out
	}
	// word is the verdict word a line starts with; a verdict other than held and FAILED is refused.
	word := func(key string, words ...string) string {
		w, _, _ := strings.Cut(lines[key], ":")
		for _, x := range words {
			if w == x {
				return w
			}
		}
		fail(key, "verdict %q: want one of %q", w, words)
		return ""
	}
	var sloMs float64
	if v := get("Q_max", reQMax); v != nil {
		sloMs = v[2]
		if v[0] < 1 {
			fail("Q_max", "Q_max %g: want at least 1", v[0])
		}
		if v[1] > v[2] {
			fail("Q_max", "p95 TTFAB %g ms at Q_max is above the SLO %g ms", v[1], v[2])
		}
	}
	if v := get("T_total", reTTotal); v != nil && (v[0] <= 0 || v[0] > 600) {
		fail("T_total", "%g s: want more than 0 and at most 600 s on the compressed profile", v[0])
	}
	tPlanS := -1.0
	if v := get("thresholds", reThresholds); v != nil {
		out, target, in, inMetric, lo, hi := v[0], v[1], v[2], v[3], v[4], v[5]
		tPlanS = v[6]
		if !(in > 0 && in < out && inMetric > 0 && inMetric < target) {
			fail("thresholds", "scale out above %g rps (metric %g), scale in below %g rps (metric %g): want 0 < scale-in < scale-out in both", out, target, in, inMetric)
		}
		if !(lo >= 1 && lo <= hi && hi >= 2 && hi <= localMaxInstances) {
			fail("thresholds", "fleet %g to %g: want a minimum of at least 1 and a maximum from 2 to %d (the local fleet)", lo, hi, localMaxInstances)
		}
	}
	if v := get("verdict", reVerdict); v != nil {
		switch failed, traces := v[1], v[2]; {
		case v[0] != held || failed != 0 || traces < 3:
			fail("verdict", "%q: want a feasible plan whose envelope (at least 3 traces) all held", lines["verdict"])
		case !strings.Contains(lines["verdict"], "deployed scaling matches the plan"):
			fail("verdict", "%q: want the deployed scaling to validate", lines["verdict"])
		}
	}
	surgeMax := -1
	if v := get("surge", reSurge); v != nil {
		// An honest FAILED (the replay did not hold, and its numbers say so) is a truthful summary: the check
		// refuses claims the numbers contradict, and a surge that did not happen at all.
		from, to, after, end, ins, flaps, bad, slices, early, sent, shed := v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11]
		surgeMax = int(to)
		// The line reads "served N s after the surge began" only when the new instance served after it.
		holds := replayVerdict(summary{ViolatingSlices: int(bad), Flaps: int(flaps), InstancesBefore: int(from), InstancesMax: int(to), Served: true, ServingAfterS: after}) == "held"
		if w := word("surge", "held", "FAILED"); w != "" && (w == "held") != holds {
			fail("surge", "says %s, but the numbers beside it say %s (%g to %g instances, %g violating slices after the first T_plan, %g flaps)", w, heldWord(holds), from, to, bad, flaps)
		}
		if ins < 1 || end >= to {
			fail("surge", "%g scale-in(s), back to %g of %g instances: the decline must exercise scale-in", ins, end, to)
		}
		if after <= 0 {
			fail("surge", "the new instance served %g s after the surge began: want a positive time", after)
		}
		if sent <= 0 || shed > sent {
			fail("surge", "%g sent, %g shed: want requests sent and no more shed than sent", sent, shed)
		}
		errs = append(errs, checkReplayTable(ev.table, surgeClaim{slices: int(slices), after: int(bad), early: int(early), sent: int(sent), shed: int(shed), instancesMax: int(to)}, tPlanS, sloMs)...)
		errs = append(errs, checkActivities(ev, int(from), int(to), int(end), int(ins))...)
	}
	if v := get("diurnal", reDay); v != nil {
		viol, flaps, hours := v[3], v[4], v[5]
		holds := simHolds(viol, flaps)
		if w := word("diurnal", "held", "FAILED"); w != "" && (w == "held") != holds {
			fail("diurnal", "says %s, but the numbers beside it say %s (%g violation minutes, %g flaps)", w, heldWord(holds), viol, flaps)
		}
		errs = append(errs, checkComparison(ev, "diurnal", int(viol), int(flaps), hours)...)
	}
	if v := get("simulation", reSim); v != nil {
		viol, flaps, outs, held, runs := v[1], v[2], v[3], v[5], v[6]
		holds := simHoldsScattered(viol, flaps, held, runs)
		if w := word("simulation", "held", "FAILED"); w != "" && (w == "held") != holds {
			fail("simulation", "says %s, but the numbers beside it say %s (%g violation minutes, %g flaps, %g of %g scattered runs held)", w, heldWord(holds), viol, flaps, held, runs)
		}
		if held > runs {
			fail("simulation", "%g of %g scattered runs held: more than ran", held, runs)
		}
		if outs < 1 {
			fail("simulation", "%g scale-outs: the simulated fleet must grow on the surge as the replayed one did", outs)
		}
		errs = append(errs, checkComparison(ev, "surge", int(viol), int(flaps), -1, int(held), int(runs))...)
	}
	if v, ok := lines["scatter"]; !ok {
		fail("scatter", "missing")
	} else if m := reScatter.FindStringSubmatch(v); m == nil {
		if !strings.HasPrefix(v, "DISAGREES") {
			fail("scatter", "%q does not read as %s", v, reScatter)
		}
	} else {
		f := func(i int) float64 { x, _ := strconv.ParseFloat(m[i], 64); return x }
		peak := f(3)
		if m[1] != "agrees" && m[1] != "DISAGREES" {
			fail("scatter", "verdict %q: want agrees or DISAGREES", m[1])
		} else if can, must := scatterVerdicts(m[2] != "", f(2), int(peak), int(f(4)), f(5), f(6), f(7), int(f(9)), int(f(10))); m[1] == "agrees" && !can || m[1] == "DISAGREES" && must {
			fail("scatter", "says %s, but the replay's first scale-out %q s and peak %g lie %s the simulated %g to %g s (± %d) and %g to %g instances",
				m[1], m[2], peak, map[bool]string{true: "inside", false: "outside"}[can], f(5), f(7), ScatterSlackS, f(9), f(10))
		}
		if f(8) != ScatterSlackS {
			fail("scatter", "%g s either side counts: the demo counts %d", f(8), ScatterSlackS)
		}
		if surgeMax >= 0 && int(peak) != surgeMax {
			fail("scatter", "the replay peaked at %g instances, but the surge line says the autoscaler went to %d", peak, surgeMax)
		}
	}
	if v, ok := lines["artifacts"]; !ok {
		fail("artifacts", "missing")
	} else if !strings.Contains(v, "qmax.svg") || !strings.Contains(v, "ttotal.svg") {
		fail("artifacts", "%q: want both charts, qmax.svg and ttotal.svg", v)
	}
	if v, ok := lines["cleanup"]; !ok {
		fail("cleanup", "missing")
	} else if !strings.Contains(v, "nothing left running") {
		fail("cleanup", "%q: want nothing left running", v)
	}
	return errs
}

// surgeClaim is what the summary's surge line says of the replay's table.
type surgeClaim struct {
	slices, after, early int
	sent, shed           int
	instancesMax         int
}

// checkReplayTable checks the surge replay's table: every row's verdict against its own numbers (by
// bench.SliceViolates, the rule tts-bench replay printed it by), its totals against its rows, and the summary's
// surge line against the table. tPlanS is the summary's T_plan (-1 when unread), sloMs its SLO (0 when unread).
func checkReplayTable(t *replayTable, c surgeClaim, tPlanS, sloMs float64) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("summary line \"surge\": %s", fmt.Sprintf(format, args...)))
	}
	if t == nil || !t.header {
		fail("the log holds no per-slice table of the surge replay (tts-bench replay's \"time  offered rps  ...  SLO\" table): its %d slices have no evidence", c.slices)
		return errs
	}
	row := func(r replayRow, format string, args ...any) {
		errs = append(errs, fmt.Errorf("replay table, row %s (line %d): %s", r.clock, r.line, fmt.Sprintf(format, args...)))
	}
	if t.bucket != surgeBucket {
		errs = append(errs, fmt.Errorf("replay table, line %d: slices of %s, but the summary counts 10-s slices", t.line, t.bucket))
	}
	if sloMs > 0 && t.sloMs != sloMs {
		errs = append(errs, fmt.Errorf("replay table, line %d: SLO p95 TTFAB %g ms, but the summary's Q_max line judges against %g ms", t.line, t.sloMs, sloMs))
	}
	var violated, afterMin, afterMax, sent, dropped, errors, shedMin, shedMax, maxInstances int
	for i, r := range t.slices {
		if want := time.Duration(i) * t.bucket; r.offset != want {
			row(r, "the %d. slice starts at %s, want %s: a row is missing or out of order", i+1, r.offset, want)
		}
		sent, dropped, errors, maxInstances = sent+r.sent, dropped+r.dropped, errors+r.errors, max(maxInstances, r.instances)
		// The row prints its shed share of sent to 0.01 %: these shed counts print as it.
		lo, hi := int(math.Ceil((r.shedPct-0.005)*float64(r.sent)/100-1e-9)), int(math.Floor((r.shedPct+0.005)*float64(r.sent)/100+1e-9))
		lo, hi = max(lo, 0), min(hi, r.sent)
		if lo > hi || r.sent == 0 && r.shedPct != 0 {
			row(r, "shed %g %% of %d sent is no whole number of requests", r.shedPct, r.sent)
			continue
		}
		shedMin, shedMax = shedMin+lo, shedMax+hi
		// Scheduled arrivals are sent or dropped; a slice of full length offers them at its printed rate (to 0.01 rps).
		scheduled := r.sent + r.dropped
		if i < len(t.slices)-1 && math.Abs(r.offeredRPS*t.bucket.Seconds()-float64(scheduled)) > 0.005*t.bucket.Seconds()+1e-9 {
			row(r, "offered %g rps over %s is not its %d sent + %d dropped arrivals", r.offeredRPS, t.bucket, r.sent, r.dropped)
		}
		// The shed count is known to within what its printed share rounds from: where the verdict turns within
		// that range, either verdict is true to the numbers. The verdict reads the count over the SLO; the p95
		// beside it must agree with that count (nearest rank: a p95 over the SLO puts more than a twentieth of
		// the successful requests over it, a p95 within it at most that many), to within its printed 0.1 ms.
		okMax := r.sent - lo - r.errors
		switch {
		case r.over > okMax:
			row(r, "%d over the SLO, but at most %d of its %d sent succeeded", r.over, okMax, r.sent)
		case r.p95Ms-0.05 > t.sloMs && r.over == 0:
			row(r, "p95 TTFAB %g ms is over the SLO %g ms, but none of its requests is counted over it", r.p95Ms, t.sloMs)
		case r.p95Ms+0.05 <= t.sloMs && r.over > okMax-int(math.Ceil(0.95*float64(okMax))):
			row(r, "p95 TTFAB %g ms is within the SLO %g ms, but %d of at most %d successful requests are counted over it (more than the twentieth a p95 leaves)", r.p95Ms, t.sloMs, r.over, okMax)
		}
		can := bench.SliceViolates(scheduled, r.over, hi+r.errors+r.dropped)
		must := bench.SliceViolates(scheduled, r.over, lo+r.errors+r.dropped)
		shed := strconv.Itoa(lo)
		if hi > lo {
			shed = fmt.Sprintf("%d to %d", lo, hi)
		}
		failed := fmt.Sprintf("%d over the SLO %g ms + %d dropped + %s shed (%g %% of %d sent) + %d errors of %d arrivals against at most %g %%",
			r.over, t.sloMs, r.dropped, shed, r.shedPct, r.sent, r.errors, scheduled, float64(100-bench.SLOPercentile))
		switch r.verdict {
		case "ok":
			if must {
				row(r, "says ok, but its numbers violate the SLO (%s)", failed)
			}
		case "VIOLATED":
			violated++
			if !can {
				row(r, "says VIOLATED, but its numbers meet the SLO (%s)", failed)
			}
			// A violating slice counts within the first T_plan when it starts before it (T_plan prints to 1 s).
			if tPlanS < 0 || r.offset.Seconds() >= tPlanS-0.5 {
				afterMax++
			}
			if tPlanS < 0 || r.offset.Seconds() >= tPlanS+0.5 {
				afterMin++
			}
		default:
			row(r, "verdict %q: want ok or VIOLATED", r.verdict)
		}
	}
	n := len(t.slices)
	if v := t.violating; v == nil {
		errs = append(errs, fmt.Errorf("replay table, line %d: no \"SLO-violation slices: k of n\" line below it", t.line))
	} else if v[0] != violated || v[1] != n {
		errs = append(errs, fmt.Errorf("replay table, line %d: \"SLO-violation slices: %d of %d\", but the table has %d rows of which %d say VIOLATED", t.line, v[0], v[1], n, violated))
	}
	if v := t.totals; v == nil {
		errs = append(errs, fmt.Errorf("replay table, line %d: no \"arrivals N: sent ...\" totals below it", t.line))
	} else {
		arrivals, tSent, tDropped, ok, shed, tErrors := v[0], v[1], v[2], v[3], v[4], v[5]
		if tSent != sent || tDropped != dropped || tErrors != errors || arrivals != sent+dropped || ok+shed+tErrors != tSent || shed < shedMin || shed > shedMax {
			errs = append(errs, fmt.Errorf("replay table, line %d: totals of %d arrivals, %d sent, %d dropped, %d ok, %d shed, %d errors, but its rows add up to %d sent, %d dropped, %d to %d shed, %d errors",
				t.line, arrivals, tSent, tDropped, ok, shed, tErrors, sent, dropped, shedMin, shedMax, errors))
		}
		if c.shed != shed {
			fail("%d shed, but the replay's table totals %d shed", c.shed, shed)
		}
	}
	if c.slices != n {
		fail("%d 10-s slices, but the replay's table has %d rows", c.slices, n)
	}
	if c.after+c.early != violated {
		fail("%d violating slices after the first T_plan and %d within it, but %d rows of the replay's table say VIOLATED", c.after, c.early, violated)
	} else if c.after < afterMin || c.after > afterMax {
		fail("%d violating slices after the first T_plan (%g s), but the replay's table has %d to %d VIOLATED rows from then on", c.after, tPlanS, afterMin, afterMax)
	}
	if c.sent != sent {
		fail("%d requests sent, but the replay's table's rows sent %d", c.sent, sent)
	}
	if maxInstances > c.instancesMax {
		fail("the autoscaler went to %d instances, but the replay's table shows %d", c.instancesMax, maxInstances)
	}
	return errs
}

// checkActivities checks the surge line's instance counts against the scaling activities the demo printed
// after the replay: every instance count the replay saw was set by an activity (the activities may go on past
// the replay's end, so they may show more).
func checkActivities(ev evidence, from, to, end, scaleIns int) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("summary line \"surge\": %s", fmt.Sprintf(format, args...)))
	}
	if !ev.activitiesPrinted {
		fail("the log holds no scaling activities (\"Scaling activities of ...\"): the autoscaler's moves have no evidence")
		return errs
	}
	// Oldest first. A Failed activity set nothing; an Unfulfilled one set its count, and SageMaker set the count
	// before it back.
	var counts []int
	for i := len(ev.activities) - 1; i >= 0; i-- {
		switch a := ev.activities[i]; {
		case a.desired < 0 || a.status == "Failed":
		case a.status == "Unfulfilled" && len(counts) > 0:
			counts = append(counts, a.desired, counts[len(counts)-1])
		case a.status == "Unfulfilled":
			counts = append(counts, a.desired, from)
		default:
			counts = append(counts, a.desired)
		}
	}
	peak, lowered, reachedAt := from, 0, -1
	prev := from
	for i, c := range counts {
		if c < prev {
			lowered++
		}
		if c >= to && reachedAt < 0 {
			reachedAt = i
		}
		prev, peak = c, max(peak, c)
	}
	if to > from && peak < to {
		fail("the autoscaler went from %d to %d instances, but no scaling activity set the desired count to %d or more (the highest: %d)", from, to, to, peak)
	}
	if lowered < scaleIns {
		fail("%d scale-in(s), but the scaling activities lowered the desired count %d time(s)", scaleIns, lowered)
	}
	if end < to && reachedAt >= 0 && !containsAtMost(counts[reachedAt:], end) {
		fail("back to %d instances after %d, but no scaling activity after the scale-out set the desired count to %d or fewer", end, to, end)
	}
	return errs
}

func containsAtMost(counts []int, n int) bool {
	for _, c := range counts {
		if c <= n {
			return true
		}
	}
	return false
}

// checkComparison checks a summary line of a simulation against the plan's comparison line the demo printed
// from the same simulation (the plan is the first configuration), and every comparison line's verdict against
// its numbers. hours < 0 skips the instance-hours; scatter, when given, is the summary's held and run counts of
// the scattered runs, which must be the plan line's.
func checkComparison(ev evidence, sim string, viol, flaps int, hours float64, scatter ...int) []error {
	key := map[string]string{"surge": "simulation", "diurnal": "diurnal"}[sim]
	rows, ok := ev.sims[sim]
	if !ok || len(rows) == 0 {
		return []error{fmt.Errorf("summary line %q: the log holds no comparison lines of tts-bench simulate's simulate-%s.json: its numbers have no evidence", key, sim)}
	}
	var errs []error
	for _, r := range rows {
		if holds := simHoldsScattered(float64(r.violationMinutes), float64(r.flaps), float64(r.scatterHeld), float64(r.scatterRuns)); holds != r.meets {
			numbers := fmt.Sprintf("%d violation minute(s) and %d flap(s)", r.violationMinutes, r.flaps)
			if r.scatterRuns > 0 {
				numbers = fmt.Sprintf("%d violation minute(s), %d flap(s) and %d of %d scattered runs held", r.violationMinutes, r.flaps, r.scatterHeld, r.scatterRuns)
			}
			errs = append(errs, fmt.Errorf("simulation %s, line %d (%s): says %s, but %s say otherwise",
				sim, r.line, r.name, map[bool]string{true: "meets the SLO", false: "VIOLATES the SLO"}[r.meets], numbers))
		}
	}
	p := rows[0]
	if len(scatter) == 2 && (p.scatterHeld != scatter[0] || p.scatterRuns != scatter[1]) {
		errs = append(errs, fmt.Errorf("summary line %q: %d of %d scattered runs held, but the simulation's plan line (line %d, %s) says %d of %d",
			key, scatter[0], scatter[1], p.line, p.name, p.scatterHeld, p.scatterRuns))
	}
	if p.violationMinutes != viol || p.flaps != flaps || hours >= 0 && math.Abs(p.instanceHours-hours) > 0.005+1e-9 {
		errs = append(errs, fmt.Errorf("summary line %q: %d violation minute(s), %d flap(s)%s, but the simulation's plan line (line %d, %s) says %d, %d, %g instance-hours",
			key, viol, flaps, map[bool]string{true: fmt.Sprintf(", %g instance-hours", hours), false: ""}[hours >= 0], p.line, p.name, p.violationMinutes, p.flaps, p.instanceHours))
	}
	return errs
}

// simHolds is a simulation's verdict on its printed numbers by capacity.Report.PlanHolds, the rule the verdict
// was taken by (tts-bench simulate exits 1 exactly when the plan does not hold), for a simulation without
// scattered runs.
func simHolds(violationMinutes, flaps float64) bool {
	return simHoldsScattered(violationMinutes, flaps, 0, 0)
}

// simHoldsScattered is simHolds for a simulation with runs scattered runs, held of which held.
func simHoldsScattered(violationMinutes, flaps, held, runs float64) bool {
	rep := capacity.Report{Plan: simulate.Result{ViolationMinutes: int(violationMinutes), Flaps: make([]simulate.Flap, int(flaps))}}
	if runs > 0 {
		rep.Spread = &capacity.SpreadSummary{Runs: int(runs), HeldRuns: int(held)}
	}
	return rep.PlanHolds()
}

// scatterVerdicts says whether the scatter line's numbers, printed to whole seconds, can and must agree by
// scatterAgrees: can when some values they round from agree, must when all do.
func scatterVerdicts(scaledOut bool, out float64, peak, runs int, lo, median, hi float64, peakMin, peakMax int) (can, must bool) {
	agrees := func(out, lo, hi float64) bool {
		first := -1.0
		if scaledOut {
			first = out
		}
		return scatterAgrees(summary{ScatterRuns: runs, ReplayFirstOutS: first, ScatterLo: lo, ScatterMedian: median, ScatterHi: hi,
			InstancesMax: peak, ScatterPeakMin: peakMin, ScatterPeakMax: peakMax})
	}
	const r = 0.5
	// Each bound is hardest with out at one end of its rounding and the spread at the other.
	must = agrees(out-r, lo+r, hi-r) && agrees(out+r, lo+r, hi-r)
	can = agrees(out-r, lo-r, hi+r) || agrees(out, lo-r, hi+r) || agrees(out+r, lo-r, hi+r)
	return can, must
}

// heldValue and the other verdict words read as numbers in the parsed values: held 1, anything else 0.
const heldValue = 1

// held is the verdict word of a plan or a replay that holds ("feasible" for the plan).
var held = float64(heldValue)

func verdictValue(word string) float64 {
	if word == "held" || word == "feasible" {
		return heldValue
	}
	return 0
}

func atois(ss []string) []int {
	out := make([]int, len(ss))
	for i, s := range ss {
		out[i], _ = strconv.Atoi(s)
	}
	return out
}

// readRun reads the last summary block of r as key → value, and what the same run printed before it.
func readRun(r io.Reader) (map[string]string, evidence, error) {
	var lines map[string]string
	var ev evidence
	cur := evidence{sims: map[string][]comparisonRow{}}
	in, ended := false, false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimRight(sc.Text(), "\r")
		switch {
		case l == SummaryBegin:
			lines, in, ended = map[string]string{}, true, false
			ev, cur = cur, evidence{sims: map[string][]comparisonRow{}}
		case l == SummaryEnd && in:
			in, ended = false, true
		case in:
			key, value, _ := strings.Cut(l, " ")
			lines[key] = strings.TrimSpace(value)
		default:
			cur.read(n, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, ev, fmt.Errorf("read the demo's output: %w", err)
	}
	if lines == nil {
		return nil, ev, errors.New("no summary in the demo's output: the demo did not finish (look above its last lines)")
	}
	if !ended {
		return nil, ev, fmt.Errorf("the summary has no end line %q: the output is cut", SummaryEnd)
	}
	return lines, ev, nil
}
