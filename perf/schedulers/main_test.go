package main

import (
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/perf/internal/row"
)

// q builds a result whose Q_max is qmax and whose lowest failing step is fail (0: none failed, a lower
// bound); the steps at both are usable unless unusable names one of them.
func q(name string, qmax, fail int, unusable ...int) *result {
	r := &result{Scheduler: Scheduler{Name: name}}
	if qmax == 0 {
		return r
	}
	bad := map[int]bool{}
	for _, c := range unusable {
		bad[c] = true
	}
	step := func(c int, pass bool) capacity.QMaxStep {
		s := capacity.QMaxStep{Concurrency: c, MeetsSLO: pass, Usable: !bad[c]}
		if bad[c] {
			s.UnusableReason = "too few requests"
		}
		return s
	}
	r.Q = &capacity.QMax{QMax: qmax, BracketHighestPass: qmax, BracketLowestFail: fail, Steps: []capacity.QMaxStep{step(qmax, true)}}
	if fail > 0 {
		r.Q.Steps = append(r.Q.Steps, step(fail, false))
	}
	return r
}

func set(rs ...*result) map[string]*result {
	by := map[string]*result{}
	for _, r := range rs {
		by[r.Scheduler.Name] = r
	}
	return by
}

// TestDeadlineGoal checks the verdicts of deadlineGoal, above all that a lower bound decides only what it
// can: two schedulers that both passed every step are not ordered, and an unusable bracketing step is not
// trusted.
func TestDeadlineGoal(t *testing.T) {
	e := Engine{Name: "calibration"}
	for _, c := range []struct {
		name    string
		by      map[string]*result
		smoke   bool
		verdict string
		why     string
	}{
		{"met", set(q("deadline", 28, 30), q("first-chunk", 2, 3), q("fifo", 1, 2), q("serial-lock", 1, 2)), false, row.Met, ""},
		{"met by a lower bound", set(q("deadline", 256, 0), q("first-chunk", 128, 160), q("fifo", 64, 96), q("serial-lock", 32, 48)), false, row.Met, "lower bound"},
		{"behind first-chunk", set(q("deadline", 4, 6), q("first-chunk", 6, 8), q("fifo", 1, 2), q("serial-lock", 1, 2)), false, row.Missed, "below first-chunk's"},
		{"not twice the lock", set(q("deadline", 3, 4), q("first-chunk", 2, 3), q("fifo", 2, 3), q("serial-lock", 2, 3)), false, row.Missed, "twice the serial lock"},
		{"two lower bounds", set(q("deadline", 256, 0), q("first-chunk", 256, 0), q("fifo", 64, 96), q("serial-lock", 32, 48)), false, row.NotMeasured, "not ordered"},
		{"lower bound short", set(q("deadline", 64, 0), q("first-chunk", 96, 128), q("fifo", 64, 96), q("serial-lock", 32, 48)), false, row.NotMeasured, "raise the ladder"},
		{"lock a lower bound", set(q("deadline", 64, 0), q("first-chunk", 64, 0), q("fifo", 64, 0), q("serial-lock", 64, 0)), false, row.NotMeasured, "serial lock failed no step"},
		{"lock never passed", set(q("deadline", 28, 30), q("first-chunk", 2, 3), q("fifo", 1, 2), q("serial-lock", 0, 0)), false, row.NotMeasured, "no step"},
		{"unusable bracket", set(q("deadline", 28, 30, 30), q("first-chunk", 2, 3), q("fifo", 1, 2), q("serial-lock", 1, 2)), false, row.NotMeasured, "deadline at C=30"},
		{"smoke", set(q("deadline", 2, 0), q("first-chunk", 2, 0), q("fifo", 2, 0), q("serial-lock", 2, 0)), true, row.NotMeasured, "smoke"},
		{"fifo missing", set(q("deadline", 28, 30), q("first-chunk", 2, 3), q("serial-lock", 1, 2)), false, row.NotMeasured, "not all measured"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := deadlineGoal(e, c.by, c.smoke)
			if g.Verdict != c.verdict || !strings.Contains(g.Why, c.why) {
				t.Fatalf("verdict %q, why %q; want %q with %q (measured %q)", g.Verdict, g.Why, c.verdict, c.why, g.Measured)
			}
			if g.Verdict != row.Met && g.Why == "" {
				t.Fatalf("verdict %q without a why", g.Verdict)
			}
		})
	}
}

// TestChoose checks the -engines and -schedulers lists: the default is all, the order is the row's, and an
// unknown name is refused naming the flag and the choices.
func TestChoose(t *testing.T) {
	e, err := chooseEngines("espeak, calibration")
	if err != nil || len(e) != 2 || e[0].Name != "calibration" {
		t.Fatalf("chooseEngines: %v, %v", e, err)
	}
	if s, err := chooseSchedulers(""); err != nil || len(s) != len(Schedulers) {
		t.Fatalf("chooseSchedulers(\"\"): %v, %v", s, err)
	}
	if _, err := chooseSchedulers("deadline,lifo"); err == nil || !strings.Contains(err.Error(), "-schedulers") || !strings.Contains(err.Error(), "fifo") {
		t.Fatalf("an unknown scheduler: %v", err)
	}
}
