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

// localMaxInstances is the espeak-ng catalog's largest fleet: the plan must fit it.
const localMaxInstances = 4

// The value patterns of the summary's lines (summary.write).
var (
	reQMax       = regexp.MustCompile(`^(\d+) requests in flight per instance \(p95 TTFAB (\d+) ms, SLO (\d+) ms`)
	reTTotal     = regexp.MustCompile(`^(\d+(?:\.\d+)?) s from asking for one more instance until it served`)
	reThresholds = regexp.MustCompile(`^scale out above (\d+(?:\.\d+)?), scale in below (\d+(?:\.\d+)?) requests in flight per instance; fleet (\d+) to (\d+) instances`)
	reSurge      = regexp.MustCompile(`the autoscaler went from (\d+) to (\d+) instances, the new instance served (\d+) s after the surge began; (\d+) requests sent, (\d+) shed`)
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
			f, _ := strconv.ParseFloat(s, 64)
			out = append(out, f)
		}
		return out
	}
	var qmax float64
	if v := get("Q_max", reQMax); v != nil {
		qmax = v[0]
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
		out, in, lo, hi := v[0], v[1], v[2], v[3]
		if !(in > 0 && in < out && (qmax == 0 || out <= qmax)) {
			fail("thresholds", "scale out above %g, scale in below %g: want 0 < scale-in < scale-out <= Q_max %g", out, in, qmax)
		}
		if !(lo >= 1 && lo <= hi && hi >= 2 && hi <= localMaxInstances) {
			fail("thresholds", "fleet %g to %g: want a minimum of at least 1 and a maximum from 2 to %d (the local fleet)", lo, hi, localMaxInstances)
		}
	}
	if v, ok := lines["verdict"]; !ok {
		fail("verdict", "missing")
	} else if !strings.HasPrefix(v, "feasible ") || !strings.Contains(v, "deployed scaling matches the plan") {
		fail("verdict", "%q: want a feasible plan whose deployed scaling validates", v)
	}
	if v := get("surge", reSurge); v != nil {
		from, to, after, sent, shed := v[0], v[1], v[2], v[3], v[4]
		if from < 1 || to <= from {
			fail("surge", "from %g to %g instances: the autoscaler must add one", from, to)
		}
		if after <= 0 {
			fail("surge", "the new instance served %g s after the surge began: want a positive time", after)
		}
		if sent <= 0 || shed > sent {
			fail("surge", "%g sent, %g shed: want requests sent and no more shed than sent", sent, shed)
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
