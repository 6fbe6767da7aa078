package capacity

import (
	"math"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/loadmodel"
)

// The instance model of the test staircase (testRates): the four steps that kept up are its steady points, the
// 100% step (22 completed of 25 arriving, under 95%) an unsteady one at 22 rps, the 110% step (22.5 of 27.5) is
// the capacity and no point, the capacity is
// the most completed in open loop (22.5 rps, not the closed-loop c = 50 step's 25: open loop fell behind), each
// point carries the 95% lower bound of its rate, and the metric is the client's 10-s peak × the CloudWatch ratio
// where CloudWatch was not read.
func TestInstanceModelFromRateSteps(t *testing.T) {
	m := kokoro(t)
	q := testQMax(m)
	inst, err := q.InstanceModel(50, 50, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !inst.Measured || !strings.HasPrefix(inst.Basis, "measured") || !strings.Contains(inst.Basis, "4 of 6 open-loop rate steps of qmax run qmax-test kept up (7.5 to 21 rps), 1 more as unsteady points at what they completed (22 rps), capacity 22.5 rps (the most completed in open loop);") {
		t.Errorf("basis %q", inst.Basis)
	}
	if len(inst.Points) != 5 || !inst.Points[4].Unsteady || inst.Points[4].RPS != 22 || inst.Points[4].TTFABMs != 5000 || inst.CapacityRPS != 22.5 || inst.QueueDepth != 50 || inst.CloudWatchRatio != 1 {
		t.Fatalf("model %+v", inst)
	}
	for i, r := range testRates[:4] {
		p := inst.Points[i]
		if p.RPS != r.achieved || p.Metric != r.max10s || p.InFlight != r.inFlight || p.TTFABMs != r.p95 || p.StallMs != 30 {
			t.Errorf("point %d = %+v, want the step that completed %g rps", i, p, r.achieved)
		}
		// Each step completed achieved × 120 requests in its 120-s window.
		if want := loadmodel.RateLowerBound(int(r.achieved*120), 120, 0.95); math.Abs(p.RPSLow-want) > 1e-9 || !(p.RPSLow < p.RPS) {
			t.Errorf("point %d: rps_low %v, want %v, below its rate", i, p.RPSLow, want)
		}
	}
	if inst.SLO.TTFABMs != 3000 || inst.SLO.Percentile != 95 || inst.SLO.StallMs != 50 {
		t.Errorf("SLO %+v", inst.SLO)
	}
	approxTol(t, "safe rps", inst.SafeRPS(), testSafeRPS, 1e-4)

	// With CloudWatch read on no rate step, the closed-loop ratio scales the client's peak, and the basis says so.
	inst, _ = q.InstanceModel(50, 50, 0.5)
	approx(t, "metric × ratio", inst.Points[2].Metric, 4)
	if !strings.Contains(inst.Basis, "CloudWatch read on no rate step: client 10-s peaks × the closed-loop ratio 0.5") {
		t.Errorf("basis %q", inst.Basis)
	}
	// A CloudWatch reading is taken as it is, and its ratio to the client's peak (5 ÷ 8) scales the steps
	// CloudWatch did not read: one scale for the whole curve, not the closed-loop ratio.
	q.RateSteps[2].CloudWatchMax10s = 5
	inst, _ = q.InstanceModel(50, 50, 0.5)
	for i, want := range []float64{2 * 0.625, 4 * 0.625, 5, 14 * 0.625} {
		approx(t, "metric on CloudWatch's scale", inst.Points[i].Metric, want)
	}
	if !strings.Contains(inst.Basis, "CloudWatch read on 1 rate step(s), the others' client 10-s peaks × their CloudWatch ÷ client ratio 0.62") {
		t.Errorf("basis %q", inst.Basis)
	}
	// A reading that dips as the rate rises is fitted non-decreasing: 9 at 17.5 rps before 7 at 21.25 pool to 8.
	q.RateSteps[2].CloudWatchMax10s = 9
	q.RateSteps[3].CloudWatchMax10s = 7
	inst, _ = q.InstanceModel(50, 50, 0.5)
	approx(t, "pooled metric", inst.Points[2].Metric, 8)
	approx(t, "pooled metric", inst.Points[3].Metric, 8)
}

// A step that cannot be trusted (unusable, or nothing succeeded) is left out; a usable step that did not keep up
// (it shed past the SLO's allowance, or completed under 95% of its arrivals) is a point at what it completed,
// marked unsteady (u below), and the safe rate never passes it. The staircase's 100% step (22 of 25 completed)
// is always such a point; its 110% step completed 22.5, the capacity, and is not a point below it.
func TestInstanceModelLeavesOutStepsItCannotTrust(t *testing.T) {
	m := kokoro(t)
	for _, tt := range []struct {
		name   string
		edit   func(q *QMax)
		points string
		safe   float64 // SafeEstimate
	}{
		{"unusable", func(q *QMax) { q.RateSteps[1].Usable, q.RateSteps[1].UnusableReason = false, "client fell behind" }, "7.5 17.4 21 22u", 21},
		// 6% shed at 17.4 rps: the crossing of the SLO lies between 12.5 (0% shed, 1100 ms) and it.
		{"shed beyond the percentile", func(q *QMax) { q.RateSteps[2].ShedFraction, q.RateSteps[2].RejectedCount = 0.06, 130 }, "7.5 12.5 17.4u 21 22u", -1},
		{"fell behind its arrivals", func(q *QMax) { q.RateSteps[3].AchievedRPS = 0.94 * q.RateSteps[3].ArrivalRPS }, "7.5 12.5 17.4 19.97u 22u", 17.4},
		{"no success", func(q *QMax) { q.RateSteps[0].OKCount = 0 }, "12.5 17.4 21 22u", 21},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := testQMax(m)
			tt.edit(q)
			inst, err := q.InstanceModel(50, 50, 1)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range inst.Points {
				got = append(got, FormatNumber(p.RPS)+map[bool]string{true: "u"}[p.Unsteady])
			}
			if strings.Join(got, " ") != tt.points {
				t.Fatalf("points %q, want %q", strings.Join(got, " "), tt.points)
			}
			est := inst.SafeEstimate()
			if tt.safe >= 0 && est != tt.safe {
				t.Errorf("safe estimate %v, want %v", est, tt.safe)
			}
			if tt.safe < 0 && !(est > 12.5 && est < 17.4) {
				t.Errorf("safe estimate %v, want between 12.5 and the unsteady 17.4", est)
			}
		})
	}
	q := testQMax(m)
	for i := range q.RateSteps {
		q.RateSteps[i].AchievedRPS = 0.5 * q.RateSteps[i].ArrivalRPS
	}
	if _, err := q.InstanceModel(50, 50, 1); err == nil || !strings.Contains(err.Error(), "no usable step that kept up") {
		t.Errorf("err = %v, want no usable step", err)
	}
	// Without a rate staircase: the approximation from the closed-loop capacity, NOT MEASURED.
	q = testQMax(m)
	q.RateSteps, q.HighestThroughputRPS = nil, 0
	inst, err := q.InstanceModel(50, 50, 1)
	if err != nil || inst.Measured || !strings.HasPrefix(inst.Basis, "NOT MEASURED: the qmax artifact has no rate staircase") || inst.CapacityRPS != 25 {
		t.Errorf("model %+v, %v", inst, err)
	}
}

// A point is never credited with more than its step offered: a window that completes requests sent before it
// (here the 21.25-rps step completing 23, the most any step completed, so also the capacity) puts its point at
// the arrival rate, below the capacity, and the model still validates.
func TestInstanceModelPointIsAtMostTheOfferedRate(t *testing.T) {
	m := kokoro(t)
	q := testQMax(m)
	for i := range q.Steps {
		q.Steps[i].AchievedRPS = min(q.Steps[i].AchievedRPS, 20)
	}
	q.HighestThroughputRPS = 20
	q.RateSteps[3].AchievedRPS = 23
	inst, err := q.InstanceModel(50, 50, 1)
	if err != nil {
		t.Fatalf("model: %v", err)
	}
	// The steady points end at that step; the steps that fell behind (22 and 22.5 completed) lie above it.
	var last loadmodel.Point
	for _, p := range inst.Points {
		if !p.Unsteady {
			last = p
		}
	}
	if last.RPS != 21.25 || inst.CapacityRPS != 23 {
		t.Fatalf("last steady point at %g rps, capacity %g: want the arrival rate 21.25 below the capacity 23", last.RPS, inst.CapacityRPS)
	}
}

// A qmax artifact no instance model can be built from fails the plan's build with the model's own reason, not
// only with the empty model's fields.
func TestPlanNamesWhyTheInstanceModelCannotBeBuilt(t *testing.T) {
	m := kokoro(t)
	q := testQMax(m)
	for i := range q.RateSteps {
		q.RateSteps[i].Usable, q.RateSteps[i].UnusableReason = false, "client fell behind"
	}
	_, err := FromArtifacts(m, testMeasurement(q, testTTotal(m)), DefaultOptions(m))
	if err == nil || !strings.Contains(err.Error(), "the instance model cannot be built from") || !strings.Contains(err.Error(), "has no usable step") {
		t.Fatalf("FromArtifacts: %v; want the instance model's reason", err)
	}
}

// The basis names the measured bracket of the SLO's boundary (RateBracket, the refinement's rule): the highest
// step that met it and the lowest usable step above it that did not, whichever way it missed (fell behind, or
// over the SLO); without a missing step above, that the boundary is not bracketed; without a step that met it,
// that there is none.
func TestInstanceModelBasisNamesTheBracket(t *testing.T) {
	m := kokoro(t)
	for _, tc := range []struct {
		name string
		edit func(q *QMax)
		want string
	}{
		{"fell behind", func(*QMax) {}, "the SLO held at 21 rps and was missed at 25 rps offered, the lowest usable rate step above it (completed 22 rps, p95 TTFAB 5000 ms, 0% shed)"},
		{"highest steps unusable", func(q *QMax) {
			q.RateSteps[4].Usable, q.RateSteps[5].Usable = false, false
		}, "no usable rate step missed the SLO, so its boundary is not bracketed"},
		{"kept up but over the SLO", func(q *QMax) {
			q.RateSteps[3].TTFABP50Ms, q.RateSteps[3].TTFABP95Ms, q.RateSteps[3].TTFABP99Ms, q.RateSteps[3].MeetsSLO = 3500, 4000, 4500, false
		}, "the SLO held at 17.4 rps and was missed at 21.25 rps offered, the lowest usable rate step above it (completed 21 rps, p95 TTFAB 4000 ms, 0% shed)"},
		{"none met", func(q *QMax) {
			for i := range q.RateSteps {
				q.RateSteps[i].MeetsSLO = false
			}
		}, ""},
	} {
		q := testQMax(m)
		tc.edit(q)
		if tc.want == "" {
			if lo, hi := RateBracket(q.RateSteps); lo != -1 || hi != -1 || !strings.Contains(rateBracket(q), "no rate step met the SLO") {
				t.Errorf("%s: bracket %d, %d, %q: want none", tc.name, lo, hi, rateBracket(q))
			}
			continue
		}
		inst, err := q.InstanceModel(50, 50, 1)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !strings.Contains(inst.Basis, tc.want) {
			t.Errorf("%s: basis %q\nwant it to say %q", tc.name, inst.Basis, tc.want)
		}
	}
}

// The capacity is the open loop's highest completion only once open loop fell behind: with the two steps that
// fell behind left out of the staircase, no rate step offered more than the instance completed, and the
// closed-loop ladder's 25 rps stands, the basis saying so.
func TestInstanceModelCapacityFromOpenLoopOnceItFellBehind(t *testing.T) {
	q := testQMax(kokoro(t))
	q.RateSteps = q.RateSteps[:4]
	inst, err := q.InstanceModel(50, 50, 1)
	if err != nil {
		t.Fatal(err)
	}
	if inst.CapacityRPS != 25 || !strings.Contains(inst.Basis, "capacity 25 rps (the closed-loop ladder's: no rate step fell behind)") {
		t.Errorf("capacity %v, basis %q", inst.CapacityRPS, inst.Basis)
	}
	// A step that kept up but arrived above that capacity (25.5 offered, 24.5 completed) is no point: neither a
	// steady one above the capacity's arrivals nor an unsteady one, since it did not fall behind.
	q.RateSteps[3].ArrivalRPS, q.RateSteps[3].AchievedRPS = 25.5, 24.5
	if inst, err = q.InstanceModel(50, 50, 1); err != nil {
		t.Fatal(err)
	}
	if n := len(inst.Points); n != 3 || inst.Points[n-1].RPS != 17.4 || inst.Points[n-1].Unsteady {
		t.Errorf("points %+v: want the three steady ones up to 17.4 rps", inst.Points)
	}
	// One step that fell behind (the 100% step: 22 of 25) makes the open loop's 22 rps the capacity.
	q = testQMax(kokoro(t))
	q.RateSteps = q.RateSteps[:5]
	if inst, err = q.InstanceModel(50, 50, 1); err != nil {
		t.Fatal(err)
	}
	if inst.CapacityRPS != 22 || !strings.Contains(inst.Basis, "capacity 22 rps (the most completed in open loop)") {
		t.Errorf("capacity %v, basis %q", inst.CapacityRPS, inst.Basis)
	}
}
