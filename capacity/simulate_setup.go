package capacity

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/speech-infra/speech-infra/loadmodel"
	"github.com/speech-infra/speech-infra/models"
	"github.com/speech-infra/speech-infra/simulate"
)

// WhatIfOnTrace is the what-if plan tts-bench simulate simulates on tr: planned for the trace's peak and, when
// positive, its lowest rate, with the surge ratio when given (the catalog's otherwise). It stops when ctx is
// done (the caller checks ctx before the error).
func WhatIfOnTrace(ctx context.Context, m models.Model, w WhatIf, tr simulate.Trace, surge *float64) (*Plan, error) {
	opts := DefaultOptions(m)
	opts.PeakRPS = tr.Peak()
	if !(opts.PeakRPS > 0 && opts.PeakRPS <= MaxRPS) {
		return nil, fmt.Errorf("--trace: the peak rate %s rps must be in (0, %g] to plan for", exact(opts.PeakRPS), MaxRPS)
	}
	if low := tr.Lowest(); low > 0 {
		opts.TroughRPS = low
	}
	if surge != nil {
		opts.SurgeRatio = *surge
	}
	return FromWhatIfContext(ctx, m, w, opts)
}

// SimulationScatter checks that a measured plan read from path has beside it the artifacts it was derived
// from, and with runs > 0 returns the scatter of the alarm's 10-s datapoints its qmax artifact measured
// (PlanScatter), which a simulation of runs seeded runs draws from. A plan that is not measured has no
// scatter: nil, or an error when runs > 0.
func (p *Plan) SimulationScatter(path string, runs int) (*loadmodel.Scatter, error) {
	if !p.Measured {
		if runs > 0 {
			return nil, fmt.Errorf("--scatter-runs: %s is not measured: the scatter is qmax's measured 10-s peaks", path)
		}
		return nil, nil
	}
	ms, err := p.ArtifactsBeside(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("--plan %s: %w", path, err)
	}
	if runs <= 0 {
		return nil, nil
	}
	sc, err := PlanScatter(p, ms.QMax)
	if err != nil || sc == nil {
		return nil, fmt.Errorf("--scatter-runs: the qmax artifact beside %s records no 10th-percentile 10-s peaks to scatter around (%v): re-run tts-bench qmax", path, err)
	}
	return sc, nil
}
