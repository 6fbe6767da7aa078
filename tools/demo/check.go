package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// localMaxInstances is the twin's catalog largest fleet: the plan must fit it.
const localMaxInstances = 4

// The value patterns of the summary's lines (summary.write).
var (
	reQMax       = regexp.MustCompile(`^(\d+) requests in flight per instance \(p95 TTFAB (\d+) ms, SLO (\d+) ms`)
	reTTotal     = regexp.MustCompile(`^(\d+(?:\.\d+)?) s from asking for one more instance until it served`)
	reThresholds = regexp.MustCompile(`^scale out above (\d+(?:\.\d+)?) rps per instance \(metric (\d+(?:\.\d+)?)\), scale in below (\d+(?:\.\d+)?) rps \(metric (\d+(?:\.\d+)?)\); fleet (\d+) to (\d+) instances`)
	reVerdict    = regexp.MustCompile(`^(\w+): (\d+) of (\d+) envelope traces failed in simulation`)
	reSurge      = regexp.MustCompile(`^(\w+): .*the autoscaler went from (\d+) to (\d+) instances, the new instance served (\d+) s after the surge began, and back to (\d+) \((\d+) scale-in\(s\), (\d+) flap\(s\)\); (\d+) of (\d+) 10-s slices violated after the first T_plan \((\d+) within it\); (\d+) requests sent, (\d+) shed`)
	reDay        = regexp.MustCompile(`^(\w+): the plan simulated on a day from (\d+(?:\.\d+)?) to (\d+(?:\.\d+)?) rps: (\d+) violation minute\(s\), (\d+) flap\(s\)`)
	reScatter    = regexp.MustCompile(`^(\w+): the replay (?:first scaled out at (\d+) s|never scaled out) and peaked at (\d+) instances; (\d+) simulated runs .* scaled out first at (\d+) / (\d+) / (\d+) s \(p2\.5 / median / p97\.5; (\d+) s either side counts\) and peaked at (\d+) to (\d+) instances`)
	reSim        = regexp.MustCompile(`^(\w+): the same trace simulated with the plan: (\d+) violation minute\(s\), (\d+) flap\(s\), (\d+) scale-out\(s\), (\d+) scale-in\(s\)`)
)

// checkSummary reads a demo's output and lists every summary line that is missing or whose value is not
// sane; nil when all are.
func checkSummary(r io.Reader) []error {
	lines, err := summaryLines(r)
	if err != nil {
		return []error{err}
	}
	var errs []error
	fail := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("summary line %q: %s", key, fmt.Sprintf(format, args...)))
	}
	get := func(key string, re *regexp.Regexp) []float64 {
		v, ok := lines[key]
		if !ok {
			fail(key, "missing")
			return nil
		}
		if re == nil {
			return []float64{}
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
	if v := get("Q_max", reQMax); v != nil {
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
	if v := get("thresholds", reThresholds); v != nil {
		out, target, in, inMetric, lo, hi := v[0], v[1], v[2], v[3], v[4], v[5]
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
	if v := get("surge", reSurge); v != nil {
		// An honest FAILED (the replay did not hold, and its numbers say so) is a truthful summary: the check
		// refuses claims the numbers contradict, and a surge that did not happen at all.
		verdict, from, to, after, end, ins, flaps, bad, sent, shed := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[10], v[11]
		held := from >= 1 && to > from && bad == 0 && flaps == 0
		if verdict == heldValue && !held {
			fail("surge", "says held, but the numbers beside it say otherwise (%g to %g instances, %g violating slices after the first T_plan, %g flaps)", from, to, bad, flaps)
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
	}
	if v := get("diurnal", reDay); v != nil {
		verdict, viol, flaps := v[0], v[3], v[4]
		if verdict == heldValue && (viol > 0 || flaps > 0) {
			fail("diurnal", "says held, but the numbers beside it say %g violation minutes and %g flaps", viol, flaps)
		}
	}
	if v := get("simulation", reSim); v != nil {
		verdict, viol, flaps, outs := v[0], v[1], v[2], v[3]
		if verdict == heldValue && (viol > 0 || flaps > 0) {
			fail("simulation", "says held, but the numbers beside it say %g violation minutes and %g flaps", viol, flaps)
		}
		if outs < 1 {
			fail("simulation", "%g scale-outs: the simulated fleet must grow on the surge as the replayed one did", outs)
		}
	}
	if v, ok := lines["scatter"]; !ok {
		fail("scatter", "missing")
	} else if m := reScatter.FindStringSubmatch(v); m == nil {
		if !strings.HasPrefix(v, "DISAGREES") {
			fail("scatter", "%q does not read as %s", v, reScatter)
		}
	} else {
		f := func(i int) float64 { x, _ := strconv.ParseFloat(m[i], 64); return x }
		out, peak, lo, hi, slack, pmin, pmax := f(2), f(3), f(5), f(7), f(8), f(9), f(10)
		agrees := m[2] != "" && out >= lo-slack && out <= hi+slack && peak >= pmin && peak <= pmax
		if (m[1] == "agrees") != agrees {
			fail("scatter", "says %s, but the replay's first scale-out %q s and peak %g lie %s the simulated %g to %g s (± %g) and %g to %g instances",
				m[1], m[2], peak, map[bool]string{true: "inside", false: "outside"}[agrees], lo, hi, slack, pmin, pmax)
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

// summaryLines reads the last summary block of r as key → value.
func summaryLines(r io.Reader) (map[string]string, error) {
	var lines map[string]string
	in, ended := false, false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		l := strings.TrimRight(sc.Text(), "\r")
		switch {
		case l == SummaryBegin:
			lines, in, ended = map[string]string{}, true, false
		case l == SummaryEnd && in:
			in, ended = false, true
		case in:
			key, value, _ := strings.Cut(l, " ")
			lines[key] = strings.TrimSpace(value)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the demo's output: %w", err)
	}
	if lines == nil {
		return nil, errors.New("no summary in the demo's output: the demo did not finish (look above its last lines)")
	}
	if !ended {
		return nil, fmt.Errorf("the summary has no end line %q: the output is cut", SummaryEnd)
	}
	return lines, nil
}
