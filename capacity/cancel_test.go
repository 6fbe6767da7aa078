package capacity

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/simulate"
)

// signaled is a context done as main's signal context is after SIGINT, with its cause.
func signaled() (context.Context, error) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("interrupt signal received")
	cancel(cause)
	return ctx, cause
}

// isStopped fails unless err is the error of work stopped by a done context: ErrCanceled, with the cause.
func isStopped(t *testing.T, what string, err, cause error) {
	t.Helper()
	if !errors.Is(err, ErrCanceled) || !errors.Is(err, cause) {
		t.Errorf("%s on a done context: %v, want an error that is ErrCanceled and the context's cause", what, err)
	}
}

func validMeasurement(t *testing.T) Measurement {
	t.Helper()
	dir := filepath.Join("..", "testdata", "plans", "valid")
	ms, err := LoadMeasurement(filepath.Join(dir, QMaxFile), filepath.Join(dir, TTotalFile))
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// Every piece of work that simulates the envelope (a build, a verification, the plan as written, a
// comparison) stops on a done context with an error that says so, never a plan or an input problem.
func TestPlanWorkStopsWithItsContext(t *testing.T) {
	ctx, cause := signaled()
	m := kokoro(t)
	o := DefaultOptions(m)
	o.PeakRPS, o.TroughRPS = 80, 10
	p, err := FromArtifactsContext(ctx, m, validMeasurement(t), o)
	if p != nil {
		t.Error("FromArtifactsContext returned a plan on a done context")
	}
	isStopped(t, "FromArtifactsContext", err, cause)
	_, err = FromWhatIfContext(ctx, m, WhatIf{QMax: 40, TTotalS: 280, ThroughputRPS: 13.6}, o)
	isStopped(t, "FromWhatIfContext", err, cause)

	valid := loadValid(t)
	if errs := valid.VerifyContext(ctx); len(errs) != 1 {
		t.Errorf("VerifyContext on a done context: %v, want the one error that it stopped", errs)
	} else {
		isStopped(t, "VerifyContext", errs[0], cause)
	}
	_, err = SimulateAsWritten(ctx, valid)
	isStopped(t, "SimulateAsWritten", err, cause)
	tr, err := simulate.Generate(simulate.ShapeParams{Shape: simulate.ShapeDiurnal, PeakRPS: 80, TroughRPS: 10, Duration: 24 * time.Hour,
		Step: time.Minute, Period: 24 * time.Hour, PeakAt: 14 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := CompareContext(ctx, tr, Setup{Plan: valid, PricePerHour: 1.4, AllowedMaxInstances: 10})
	isStopped(t, "CompareContext", err, cause)
	if rep.Plan.Name != "" || len(rep.Comparison) != 0 {
		t.Errorf("CompareContext returned a report on a done context: %+v", rep.Comparison)
	}
}

// The search stops at the build during which its context is done: no further build, nothing found, and an
// error that says it stopped (not "nothing passes").
func TestSearchStopsWithItsContext(t *testing.T) {
	m, ms := kokoro(t), validMeasurement(t)
	o := DefaultOptions(m)
	o.PeakRPS, o.TroughRPS = 200, 10 // infeasible: every configuration is tried
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	cause := errors.New("terminated signal received")
	builds := 0
	build := func(ctx context.Context, o Options) (*Plan, error) {
		builds++
		if builds == 3 {
			cancel(cause) // the signal arrives during the third build
		}
		return FromArtifactsContext(ctx, m, ms, o)
	}
	_, tried, found, err := Search(ctx, o, build)
	isStopped(t, "Search", err, cause)
	if found || builds != 3 {
		t.Errorf("found %v after %d builds (%d configurations tried): want nothing found and no build after the third", found, builds, tried)
	}
}

// A gate whose context is done refuses with the one reason that it stopped; Gate, without a context, still
// accepts the valid plan.
func TestGateContextStops(t *testing.T) {
	plan := validSet(t)
	ctx, cause := signaled()
	dec := GateContext(ctx, fixtureDeployment(t), plan)
	if dec.Enabled || len(dec.Reasons) != 1 || !strings.Contains(dec.Reasons[0], "the gate stopped ("+cause.Error()+")") || !strings.Contains(dec.Reasons[0], "run it again") {
		t.Errorf("GateContext on a done context: enabled %v, reasons %q", dec.Enabled, dec.Reasons)
	}
	if dec := Gate(fixtureDeployment(t), plan); !dec.Enabled {
		t.Errorf("Gate refused the valid plan: %q", dec.Reasons)
	}
}
