package measure

import (
	"errors"
	"fmt"

	"github.com/speech-infra/speech-infra/capacity"
)

// LoadQMax loads and verifies the qmax artifact at QMaxPath, refuses one for another model, endpoint or
// transport (as tts-bench ttotal's usage errors), derives the default probe from it unless ProbeSet, and sets
// QMax and QMaxSHA256. It returns the qmax curve's p95 TTFAB at the probe concurrency on one instance.
func (o *TTotal) LoadQMax() (baselineP95Ms float64, errs []error) {
	q, err := capacity.LoadQMax(o.QMaxPath)
	if err != nil {
		return 0, []error{fmt.Errorf("--qmax: %w: measure it with tts-bench qmax --model %s", err, o.Model.ID)}
	}
	if v := q.Verify(); len(v) > 0 {
		return 0, []error{fmt.Errorf("--qmax %s: not a valid qmax artifact: %w: re-run tts-bench qmax", o.QMaxPath, errors.Join(v...))}
	}
	if q.DryRun {
		errs = append(errs, fmt.Errorf("--qmax %s: is a dry run: measure Q_max first (tts-bench qmax without --dry-run)", o.QMaxPath))
	}
	if q.Model != o.Model.ID {
		errs = append(errs, fmt.Errorf("--qmax %s: is for model %s, not %s: pass the %s artifact or --model %s", o.QMaxPath, q.Model, o.Model.ID, o.Model.ID, q.Model))
	}
	if q.Endpoint != o.Model.EndpointName() {
		errs = append(errs, fmt.Errorf("--qmax %s: was measured on %s, not the endpoint %s: measure Q_max on the endpoint ttotal scales (tts-bench qmax --model %s)", o.QMaxPath, q.Endpoint, o.Model.EndpointName(), o.Model.ID))
	}
	if q.Transport != o.Transport {
		errs = append(errs, fmt.Errorf("--qmax %s: was measured over %s, but ttotal probes over %s: the recovery threshold must come from the same transport: re-run tts-bench qmax --transport %s", o.QMaxPath, q.Transport, o.Transport, o.Transport))
	}
	if !o.ProbeSet {
		c, basis, ok := DefaultProbe(q)
		if !ok {
			errs = append(errs, fmt.Errorf("--qmax %s: no usable step has a p95 TTFAB above the SLO %d ms, so the default probe cannot put the fleet past Q_max: extend the staircase past Q_max (tts-bench qmax --max-concurrency) or pass --probe-concurrency", o.QMaxPath, q.SLOTTFABMs))
		}
		o.ProbeConcurrency, o.ProbePerInstance, o.ProbeBasis = c, c, basis
	}
	p95, ok := QMaxP95At(q, o.ProbeConcurrency)
	if !ok && o.ProbeConcurrency > 0 {
		lo, hi := QMaxRange(q)
		errs = append(errs, fmt.Errorf("--probe-concurrency %d: the qmax curve of %s covers concurrency %d to %d only: choose a probe concurrency inside it", o.ProbeConcurrency, o.QMaxPath, lo, hi))
	}
	if len(errs) > 0 {
		return 0, errs
	}
	digest, err := capacity.FileDigest(o.QMaxPath)
	if err != nil {
		return 0, []error{fmt.Errorf("--qmax: %w", err)}
	}
	o.QMax, o.QMaxSHA256 = q, digest
	return p95, nil
}
