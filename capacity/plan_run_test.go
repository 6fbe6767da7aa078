package capacity

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// The what-if Builder builds what FromWhatIf builds; the table of its plan says it is not measured and ends
// with the verdict, and its JSON is the artifact's.
func TestWhatIfBuilderAndRenderPlan(t *testing.T) {
	m := kokoro(t)
	w := whatIf50(t)
	o := DefaultOptions(m)
	o.PeakRPS = 100
	p, err := WhatIfBuilder(m, w)(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var text, js bytes.Buffer
	if err := RenderPlan(&text, "text", p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"WHAT-IF (assumed numbers, measured: false)", "\nDERIVED", "\nENVELOPE", "\nFINDINGS", "\nVERDICT  " + string(p.Verdict)} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, text.String())
		}
	}
	if err := RenderPlan(&js, "json", p); err != nil {
		t.Fatal(err)
	}
	if data, _ := MarshalArtifact(p); !bytes.Equal(js.Bytes(), data) {
		t.Error("RenderPlan json is not the artifact's encoding")
	}
	if err := CheckPlanSize(p, nil); err != nil {
		t.Errorf("a plan without user traces: %v", err)
	}
}

// The measured Builder refuses an artifact set whose records do not fold to its figures, and a missing one.
func TestMeasuredBuilder(t *testing.T) {
	m := kokoro(t)
	valid := filepath.Join("..", "testdata", "plans", "valid")
	ms, build, err := MeasuredBuilder(m, filepath.Join(valid, QMaxFile), filepath.Join(valid, TTotalFile))
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions(m)
	o.PeakRPS = 80
	p, err := build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Measured || p.Inputs.QMaxSHA256 != ms.QMaxSHA256 {
		t.Errorf("plan measured %v, qmax digest %s: want the measurement's (%s)", p.Measured, p.Inputs.QMaxSHA256, ms.QMaxSHA256)
	}
	if _, _, err := MeasuredBuilder(m, filepath.Join(t.TempDir(), QMaxFile), filepath.Join(valid, TTotalFile)); err == nil {
		t.Error("a missing qmax artifact: no error")
	}
}

// A search stopped before it starts is ErrCanceled, and says on progress what it searches.
func TestSearchCheapestCanceled(t *testing.T) {
	m := kokoro(t)
	w := whatIf50(t)
	o := DefaultOptions(m)
	o.PeakRPS = 100
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var progress bytes.Buffer
	got, err := SearchCheapest(ctx, o, WhatIfBuilder(m, w), &progress)
	if !errors.Is(err, ErrCanceled) || got != "" {
		t.Errorf("SearchCheapest = %q, %v: want nothing and ErrCanceled", got, err)
	}
	if !strings.Contains(progress.String(), SearchSpace()) {
		t.Errorf("progress %q does not name the search space", progress.String())
	}
}

// TraceDays adds the traces' lengths; Why says why a comparison's row does not hold.
func TestTraceDaysAndRowWhy(t *testing.T) {
	if got := TraceDays([]TraceInput{{DurationS: 86400}, {DurationS: 43200}}); got != 1.5 {
		t.Errorf("TraceDays = %v, want 1.5", got)
	}
	for _, c := range []struct {
		row  TypeRow
		want string
	}{
		{TypeRow{Error: "deploy: no quota", Finding: "x"}, "deploy: no quota"},
		{TypeRow{Finding: "3 violation minute(s)"}, "3 violation minute(s)"},
		{TypeRow{Holds: true}, "holds the SLO"},
		{TypeRow{}, "does not hold the SLO (no finding recorded)"},
	} {
		if got := c.row.Why(); got != c.want {
			t.Errorf("Why() = %q, want %q", got, c.want)
		}
	}
}

// Choose picks the winner, or the row asked for, which must hold and name its artifacts.
func TestTypeComparisonChoose(t *testing.T) {
	c := &TypeComparison{Winner: "b", Rows: []TypeRow{
		{InstanceType: "a", Finding: "2 violation minute(s)", ArtifactDir: "art/a"},
		{InstanceType: "b", Holds: true, ArtifactDir: "art/b"},
		{InstanceType: "c", Holds: true},
	}}
	if r, err := c.Choose("compare.json", ""); err != nil || r.InstanceType != "b" {
		t.Errorf("the winner: %v, %v", r, err)
	}
	for it, want := range map[string]string{
		"x": "--instance-type x: the report compare.json has no row for it (it compares a, b, c)",
		"a": "--instance-type a: it does not hold the SLO in compare.json: 2 violation minute(s): plan for the winner (leave --instance-type out), b",
		"c": "--from-compare compare.json: the row of c has no artifact_dir",
	} {
		r, err := c.Choose("compare.json", it)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Choose(%s) = %v, want an error with %q", it, err, want)
		}
		if (r == nil) != (it == "x") {
			t.Errorf("Choose(%s) row %v: want one only when the row exists", it, r)
		}
	}
	c.Winner = ""
	if r, err := c.Choose("compare.json", ""); r != nil || err == nil || !strings.Contains(err.Error(), "no type holds the SLO (winner is empty): a: 2 violation minute(s); b: holds the SLO; c: holds the SLO") {
		t.Errorf("no winner: %v, %v", r, err)
	}
}

// whatIf50 is the what-if numbers these tests plan with: Q_max 50, T_total 240 s, 37.5 rps.
func whatIf50(t *testing.T) WhatIf {
	t.Helper()
	w, err := ParseWhatIf("q_max=50,t_total_s=240,throughput_rps=37.5")
	if err != nil {
		t.Fatal(err)
	}
	return w
}
