package main

import (
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/models"
	"github.com/speech-infra/speech-infra/perf/internal/row"
)

// report is a comparison on one trace with the plan's and the oracle's totals as given.
func report(planViol int, planHours, oracleHours, claimedRatio float64) capacity.Report {
	return capacity.Report{Trace: "t", OracleRatio: claimedRatio, Comparison: []capacity.Summary{
		{Kind: capacity.KindPlan, Name: "plan", ViolationMinutes: planViol, InstanceHours: planHours, MeetsSLO: planViol == 0},
		{Kind: capacity.KindOracle, Name: "oracle", InstanceHours: oracleHours, MeetsSLO: true},
	}}
}

func testProfile(reps ...capacity.Report) profile {
	p := &capacity.Plan{Inputs: capacity.Inputs{SurgeRatio: 1.25}, Derived: capacity.Derived{SafeRPS: 16, ScaleOutRPS: 12.8, TPlanS: 320, MinInstances: 1}}
	return profile{key: "x", label: "x", plan: p, reports: reps}
}

var keys3 = []string{"diurnal", "growth", "spike"}

func TestJudgeMetOnlyWhenTheNumbersSaySo(t *testing.T) {
	g := judge(testProfile(report(0, 10, 9, 0.9), report(0, 4, 3.6, 0.9), report(0, 2, 1.8, 0.9)), keys3, false)
	if g[0].Verdict != row.Met || g[1].Verdict != row.Met {
		t.Fatalf("honest passing numbers: got %+v", g)
	}
	if !strings.Contains(g[1].Measured, "lowest 0.90") {
		t.Errorf("measured %q: want the lowest ratio", g[1].Measured)
	}
}

// A doctored result: the numbers beside a goal say it is missed, whatever else claims.
func TestJudgeDoctoredResultsFail(t *testing.T) {
	cases := []struct {
		name       string
		reps       []capacity.Report
		viol, cost string
	}{
		{"one violation minute on one trace", []capacity.Report{report(0, 10, 9, 0.9), report(1, 4, 3.6, 0.9), report(0, 2, 1.8, 0.9)}, row.Missed, row.Missed},
		// The report's own OracleRatio field is doctored to 0.95; the instance-hours say 0.5.
		{"ratio field doctored above the hours", []capacity.Report{report(0, 10, 5, 0.95), report(0, 4, 3.6, 0.9), report(0, 2, 1.8, 0.9)}, row.Met, row.Missed},
		{"ratio just below the goal", []capacity.Report{report(0, 10, 8.49, 0.9), report(0, 4, 3.6, 0.9), report(0, 2, 1.8, 0.9)}, row.Met, row.Missed},
		// A cheap plan that violates: its ratio does not count.
		{"cheap but violating", []capacity.Report{report(5, 10, 9.5, 0.95), report(0, 4, 3.6, 0.9), report(0, 2, 1.8, 0.9)}, row.Missed, row.Missed},
		{"no plan in the comparison", []capacity.Report{{Trace: "t", OracleRatio: 1, Comparison: []capacity.Summary{{Kind: capacity.KindOracle, InstanceHours: 1}}}}, row.Missed, row.Missed},
		{"zero plan instance-hours", []capacity.Report{report(0, 0, 1, 1)}, row.Met, row.Missed},
		{"no trace at all", nil, row.Missed, row.Missed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := judge(testProfile(c.reps...), keys3, false)
			if g[0].Verdict != c.viol || g[1].Verdict != c.cost {
				t.Fatalf("verdicts %s / %s, want %s / %s: %+v", g[0].Verdict, g[1].Verdict, c.viol, c.cost, g)
			}
			for _, x := range g {
				if x.Verdict != row.Met && x.Why == "" {
					t.Errorf("%s: a %s goal without a why", x.Text, x.Verdict)
				}
			}
		})
	}
}

func TestJudgeSmokeIsNotMeasuredButStatesTheNumbers(t *testing.T) {
	g := judge(testProfile(report(2, 10, 9, 0.9)), keys3, true)
	for _, x := range g {
		if x.Verdict != row.NotMeasured || !strings.Contains(x.Why, "missed") || x.Measured == "" {
			t.Errorf("smoke goal %+v: want not-measured, the figures' verdict in why, and the figures", x)
		}
	}
}

// The published profile's plan and the traces build from the catalog, and Compare runs every configuration.
func TestPublishedProfileCompares(t *testing.T) {
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := publishedPlan(cat)
	if err != nil {
		t.Fatal(err)
	}
	if p.Measured || p.Inputs.Instance.Measured || !strings.HasPrefix(p.Inputs.Instance.Basis, "NOT MEASURED") {
		t.Fatalf("the published profile must be marked NOT MEASURED: %+v", p.Inputs.Instance.Basis)
	}
	if p.Derived.CScaleMax != 37.5 || p.Derived.CScaleMin != 25 {
		t.Errorf("original thresholds %g/%g, want 37.5/25", p.Derived.CScaleMax, p.Derived.CScaleMin)
	}
	names, traces, err := traceSet(p, smoke)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 3 || len(traces) != 3 {
		t.Fatalf("traces %v", names)
	}
	for i, tr := range traces {
		if tr.Peak() < 0.99*peakRPS || tr.Peak() > peakRPS {
			t.Errorf("%s: peak %g, want %g", names[i], tr.Peak(), peakRPS)
		}
		rep, err := capacity.Compare(tr, capacity.Setup{Plan: p, PricePerHour: 1.408, AllowedMaxInstances: originalMaxInstances})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Comparison) != len(kinds) {
			t.Errorf("%s: %d configurations, want %d", names[i], len(rep.Comparison), len(kinds))
		}
		if o, ok := summary(rep, capacity.KindOriginal); !ok || o.MaxInstances > originalMaxInstances {
			t.Errorf("%s: original thresholds %+v", names[i], o)
		}
	}
	if traces[2].Points[0].RPS != peakRPS/1.25 {
		t.Errorf("the spike starts at %g rps, want peak ÷ s = %g", traces[2].Points[0].RPS, peakRPS/1.25)
	}
}
