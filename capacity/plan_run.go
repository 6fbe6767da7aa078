package capacity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/speech-infra/speech-infra/models"
)

// Builder builds a plan from planning options under a context: FromArtifactsContext over one measurement, or
// FromWhatIfContext over one set of assumed numbers. Search varies the options it is given.
type Builder func(context.Context, Options) (*Plan, error)

// MeasuredBuilder loads the qmax and ttotal artifacts, checks that the qmax artifact's figures fold again from
// the raw records beside it (as the gate does), and returns the measurement and the Builder of plans from it.
func MeasuredBuilder(m models.Model, qmaxPath, ttotalPath string) (Measurement, Builder, error) {
	ms, err := LoadMeasurement(qmaxPath, ttotalPath)
	if err != nil {
		return ms, nil, err
	}
	if errs := ms.QMax.CheckRecords(filepath.Dir(qmaxPath)); len(errs) > 0 {
		return ms, nil, errors.New(RecordsRefusal(qmaxPath, errs))
	}
	return ms, func(ctx context.Context, o Options) (*Plan, error) { return FromArtifactsContext(ctx, m, ms, o) }, nil
}

// WhatIfBuilder is the Builder of plans from assumed numbers (not measured).
func WhatIfBuilder(m models.Model, w WhatIf) Builder {
	return func(ctx context.Context, o Options) (*Plan, error) { return FromWhatIfContext(ctx, m, w, o) }
}

// SearchCheapest searches for the cheapest configuration that passes the envelope (Search), saying on progress
// that it does and how to stop it, and returns what tts-bench plan prints after an infeasible plan: the
// candidate's Recommendation, or that none of the configurations passes. It returns ErrCanceled when ctx is
// done first.
func SearchCheapest(ctx context.Context, o Options, build Builder, progress io.Writer) (string, error) {
	fmt.Fprintf(progress, "searching surge ratio, fleet bounds and scale-in margin (%s) for the cheapest configuration that passes the envelope (Ctrl-C stops it and writes nothing)…\n", SearchSpace())
	c, tried, ok, err := Search(ctx, o, build)
	switch {
	case err != nil || ctx.Err() != nil:
		return "", canceled(ctx)
	case ok:
		return c.Recommendation(tried), nil
	}
	return fmt.Sprintf("\n"+CheapestPassingHeading+"none of %d configurations (%s) passes: raise the allowed maximum, shorten T_total, or measure a faster instance\n", tried, SearchSpace()), nil
}

// TraceDays is the total length of the user's traces, in days.
func TraceDays(traces []TraceInput) float64 {
	s := 0.0
	for _, t := range traces {
		s += t.DurationS
	}
	return s / 86400
}

// CheckPlanSize refuses a plan that the gate, simulate and validate would refuse to read: larger than
// MaxPlanBytes, which only the user's traces (recorded point by point) can make it. The error says how many
// points of how many traces made it so, and what to do.
func CheckPlanSize(p *Plan, traces []TraceInput) error {
	data, err := MarshalArtifact(p)
	if err != nil {
		return fmt.Errorf("encode plan: %w", err)
	}
	if len(data) <= MaxPlanBytes {
		return nil
	}
	points := 0
	for _, t := range traces {
		points += len(t.Points)
	}
	return &PlanSizeError{fmt.Sprintf("the plan would be %d bytes with the %d points of its %d trace(s), above the %d a plan file may be (the gate, simulate and validate refuse a larger one): resample the traces to a coarser step, or give fewer",
		len(data), points, len(traces), MaxPlanBytes)}
}

// PlanSizeError is CheckPlanSize's refusal of a plan too large to be read back.
type PlanSizeError struct{ msg string }

func (e *PlanSizeError) Error() string { return e.msg }

// Why is why a row of a comparison does not hold: its error, or its finding.
func (r TypeRow) Why() string {
	switch {
	case r.Error != "":
		return r.Error
	case r.Finding != "":
		return r.Finding
	case r.Holds:
		return "holds the SLO"
	}
	return "does not hold the SLO (no finding recorded)"
}
