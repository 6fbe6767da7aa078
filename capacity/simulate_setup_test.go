package capacity

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/simulate"
)

// A what-if plan for a trace is planned for the trace's peak and lowest rate; a trace without load is refused.
func TestWhatIfOnTrace(t *testing.T) {
	m := kokoro(t)
	w := whatIf50(t)
	sp := simulate.DefaultShapeParams(simulate.ShapeDiurnal)
	sp.PeakRPS, sp.TroughRPS = 60, 6
	tr, err := simulate.Generate(sp)
	if err != nil {
		t.Fatal(err)
	}
	surge := 1.3
	p, err := WhatIfOnTrace(context.Background(), m, w, tr, &surge)
	if err != nil {
		t.Fatal(err)
	}
	if p.Measured || p.Inputs.PeakRPS != tr.Peak() || p.Inputs.TroughRPS != tr.Lowest() || p.Inputs.SurgeRatio != 1.3 {
		t.Errorf("measured %v, peak %v, trough %v, surge %v: want what-if, %v, %v, 1.3", p.Measured, p.Inputs.PeakRPS, p.Inputs.TroughRPS, p.Inputs.SurgeRatio, tr.Peak(), tr.Lowest())
	}
	if _, err := WhatIfOnTrace(context.Background(), m, w, simulate.Trace{}, nil); err == nil || !strings.Contains(err.Error(), "--trace: the peak rate 0 rps must be in (0,") {
		t.Errorf("a trace without load: %v", err)
	}
}

// A measured plan's scatter comes from the artifacts beside it; a what-if plan has none to give.
func TestSimulationScatter(t *testing.T) {
	path := filepath.Join("..", "testdata", "plans", "valid", PlanFile)
	p, err := LoadPlan(path)
	if err != nil {
		t.Fatal(err)
	}
	if sc, err := p.SimulationScatter(path, 0); sc != nil || err != nil {
		t.Errorf("no runs: %v, %v; want neither", sc, err)
	}
	if sc, err := p.SimulationScatter(path, 10); (sc == nil) == (err == nil) {
		t.Errorf("10 runs: %v, %v; want a scatter or an error naming why not", sc, err)
	}
	if _, err := p.SimulationScatter(filepath.Join(t.TempDir(), PlanFile), 0); err == nil || !strings.Contains(err.Error(), "--plan ") {
		t.Errorf("a plan without its artifacts beside it: %v", err)
	}
	p.Measured = false
	if _, err := p.SimulationScatter(path, 10); err == nil || !strings.Contains(err.Error(), "is not measured") {
		t.Errorf("a what-if plan with runs: %v", err)
	}
}
