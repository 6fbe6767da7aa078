package capacity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

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
//
// The search never sees held-out traffic (Options.Holdout): it searches on the rest, and the candidate it names
// is then validated on the held-out part, which the recommendation reports, so that "held out" stays true of
// the configuration it advises.
func SearchCheapest(ctx context.Context, o Options, build Builder, progress io.Writer) (string, error) {
	fmt.Fprintf(progress, "searching surge ratio, fleet bounds and scale-in margin (%s) for the cheapest configuration that passes the envelope (Ctrl-C stops it and writes nothing)…\n", SearchSpace())
	on := o
	on.Holdout = nil
	c, tried, ok, err := Search(ctx, on, build)
	switch {
	case err != nil || ctx.Err() != nil:
		return "", canceled(ctx)
	case ok:
		held, err := heldOutResult(ctx, c, o, build)
		return c.Recommendation(tried) + held, err
	}
	fmt.Fprintf(progress, "none of %d autoscaling configurations passes; trying fixed fleets of %d to %d instances…\n", tried, o.MinInstances, o.MaxInstances)
	f, fixedTried, ok, err := CheapestFixedFleet(ctx, on, build)
	switch {
	case err != nil || ctx.Err() != nil:
		return "", canceled(ctx)
	case ok:
		held, err := heldOutResult(ctx, f, o, build)
		return fmt.Sprintf("\nnone of %d autoscaling configurations (%s) passes; a fixed fleet does, the smallest of %d tried:", tried, SearchSpace(), fixedTried) + f.Recommendation(tried+fixedTried) + held, err
	}
	return fmt.Sprintf("\n"+CheapestPassingHeading+"none of %d configurations (%s), nor a fixed fleet of %d to %d instances, passes: raise the allowed maximum, shorten T_total, or measure a faster instance\n",
		tried, SearchSpace(), o.MinInstances, o.MaxInstances), nil
}

// heldOutResult is the line that says how the search's candidate c does on o's held-out traffic, which the
// search did not see; "" when o holds none. It returns ErrCanceled when ctx is done first.
func heldOutResult(ctx context.Context, c Candidate, o Options, build Builder) (string, error) {
	if len(o.Holdout) == 0 {
		return "", nil
	}
	with := c.Options
	with.Holdout = o.Holdout
	p, err := tryBuild(ctx, build, with)
	if err != nil {
		return "", err
	}
	if p == nil {
		return "  (it could not be validated on the held-out traffic: its plan does not build with it)\n", nil
	}
	var held, failed []string
	for _, t := range p.Envelope.Traces {
		if t.Kind != EnvelopeHoldout {
			continue
		}
		held = append(held, t.Name)
		if !t.Holds {
			failed = append(failed, fmt.Sprintf("%s: %s", t.Name, t.Worst))
		}
	}
	if len(failed) == 0 {
		return fmt.Sprintf("  validated on the held-out traffic, which the search did not see: it holds on all %d part(s)\n", len(held)), nil
	}
	return fmt.Sprintf("  validated on the held-out traffic, which the search did not see: it FAILS %d of %d part(s) (%s): the traffic changed after the part planned on; plan on more of it (a smaller --holdout) or on a longer log\n",
		len(failed), len(held), strings.Join(failed, "; ")), nil
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

// Choose is the row of the comparison (read from path) that tts-bench plan --from-compare plans for: the
// winner, or the row of instanceType when given, which must hold the SLO and name its artifact directory. It
// returns nil and the error when there is no such row; the row and the error when the row cannot be planned
// for.
func (c *TypeComparison) Choose(path, instanceType string) (*TypeRow, error) {
	pick := c.Winner
	switch {
	case instanceType != "":
		pick = instanceType
		if c.Row(pick) == nil {
			var types []string
			for _, r := range c.Rows {
				types = append(types, r.InstanceType)
			}
			return nil, fmt.Errorf("--instance-type %s: the report %s has no row for it (it compares %s): pick one of those, or leave --instance-type out for the winner", pick, path, strings.Join(types, ", "))
		}
	case pick == "":
		var why []string
		for _, r := range c.Rows {
			why = append(why, r.InstanceType+": "+r.Why())
		}
		return nil, fmt.Errorf("--from-compare %s: no type holds the SLO (winner is empty): %s: there is no plan to deploy; compare more or larger types, or raise the allowed maximum fleet, and compare again", path, strings.Join(why, "; "))
	}
	row := c.Row(pick)
	var errs []error
	if !row.Holds {
		winner := "; the report has no winner"
		if c.Winner != "" {
			winner = ", " + c.Winner
		}
		errs = append(errs, fmt.Errorf("--instance-type %s: it does not hold the SLO in %s: %s: plan for the winner (leave --instance-type out)%s", pick, path, row.Why(), winner))
	}
	if row.ArtifactDir == "" {
		errs = append(errs, fmt.Errorf("--from-compare %s: the row of %s has no artifact_dir: run tts-bench compare again", path, pick))
	}
	return row, errors.Join(errs...)
}
