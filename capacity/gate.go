package capacity

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/speech-infra/speech-infra/models"
)

// Deployment is what is about to be deployed.
type Deployment struct {
	// Model is the catalog entry being deployed.
	Model models.Model
	// InstanceType is the instance type being deployed ("local" on the emulator).
	InstanceType string
	// ContainerDigest is the SourceDigest of the container being deployed.
	ContainerDigest string
	// Transport is the transport clients will use; "" accepts any.
	Transport string
	// AutoscalingOverride overrides the catalog's scaling.autoscaling when set (-c autoscaling=true|false).
	AutoscalingOverride *bool
}

// Decision is the gate's answer.
type Decision struct {
	// Enabled is true when scaling, alarms and the queue shield may be created from Plan.
	Enabled bool
	// Explicit is true when autoscaling was asked for explicitly (AutoscalingOverride true): a refusal is
	// then an error rather than a warning.
	Explicit bool
	// Reasons say, as sentences that name the fix, why the gate refused (or that it is off). Empty when Enabled.
	Reasons []string
	// Plan is the accepted plan when Enabled, nil otherwise.
	Plan *Plan
	// PlanSHA256 is the digest of the plan file's bytes the gate parsed and accepted, "" unless Enabled: record
	// it rather than reading the file again, which may by then hold another plan.
	PlanSHA256 string
}

// QueueMaxDepth is the container's queue shield depth the decision allows: the accepted plan's, or 0
// (unbounded, the measurement configuration) when the gate refused.
func (d Decision) QueueMaxDepth() int {
	if !d.Enabled || d.Plan == nil {
		return 0
	}
	return d.Plan.Derived.QueueMaxDepth
}

// Gate decides whether the deployment may create autoscaling from the plan at planPath. It accepts only when
// autoscaling is on for the model (catalog, overridden by AutoscalingOverride) and the plan exists, parses
// strictly, verifies, is feasible, is measured (not what-if), was derived from live (not dry-run) artifacts,
// the artifacts beside it (when present) match the digests it records and give the measured numbers and
// fingerprint it records, and its fingerprint matches the deployment (model, revision, instance type,
// container digest, SLO, and transport when given). Every reason that applies is reported, not only the first.
func Gate(d Deployment, planPath string) Decision {
	id := d.Model.ID
	dec := Decision{Explicit: d.AutoscalingOverride != nil && *d.AutoscalingOverride}
	on := d.Model.Scaling.Autoscaling
	if d.AutoscalingOverride != nil {
		on = *d.AutoscalingOverride
	}
	if !on {
		why := fmt.Sprintf("autoscaling is off for %s in the model catalog (scaling.autoscaling)", id)
		if d.AutoscalingOverride != nil {
			why = fmt.Sprintf("autoscaling is off for %s (-c autoscaling=false)", id)
		}
		dec.Reasons = []string{why + ": the endpoint keeps a fixed fleet and the unbounded measurement queue; enable it with -c autoscaling=true once a plan exists"}
		return dec
	}
	measureFirst := fmt.Sprintf("run tts-bench qmax, tts-bench ttotal and tts-bench plan for %s first", id)
	p := &Plan{}
	digest, err := loadArtifact("plan", planPath, p)
	if errors.Is(err, fs.ErrNotExist) {
		dec.Reasons = []string{fmt.Sprintf("no plan at %s: %s", planPath, measureFirst)}
		return dec
	}
	if err != nil {
		dec.Reasons = []string{fmt.Sprintf("plan at %s cannot be used: %v: run tts-bench plan again", planPath, err)}
		return dec
	}
	if errs := p.Verify(); len(errs) > 0 {
		dec.Reasons = []string{fmt.Sprintf("plan at %s does not verify: %v: run tts-bench plan again instead of editing it", planPath, errors.Join(errs...))}
		return dec
	}
	var reasons []string
	if !p.Measured {
		reasons = append(reasons, fmt.Sprintf("plan at %s is a what-if plan (measured: false), built from assumed numbers: %s", planPath, measureFirst))
	}
	if !p.Feasible() {
		var failed []string
		for _, f := range p.Failed() {
			failed = append(failed, f.Name+" ("+f.Detail+")")
		}
		reasons = append(reasons, fmt.Sprintf("plan at %s is infeasible (%s): follow the findings' recommendations (tts-bench plan prints them) and plan again",
			planPath, strings.Join(failed, "; ")))
	}
	if p.Inputs.DryRun {
		reasons = append(reasons, fmt.Sprintf("plan at %s was derived from dry-run artifacts: run tts-bench qmax and tts-bench ttotal without --dry-run, then tts-bench plan", planPath))
	}
	if p.Measured {
		reasons = append(reasons, checkArtifacts(p, planPath)...)
	}
	reasons = append(reasons, checkFingerprint(p.Fingerprint, d, planPath)...)
	if len(reasons) > 0 {
		dec.Reasons = reasons
		return dec
	}
	dec.Enabled, dec.Plan, dec.PlanSHA256 = true, p, digest
	return dec
}

// checkArtifacts compares the artifacts beside the plan, when present, with the digests the plan records, and
// what the plan records as measured (the fingerprint's measured half, Q_max, the throughput curve, the
// CloudWatch ratio, T_total and the dry-run flag) with what those artifacts give: a plan edited after planning
// verifies on its own once its derived values are recomputed, but no longer follows from its artifacts.
func checkArtifacts(p *Plan, planPath string) []string {
	var reasons []string
	dir := filepath.Dir(planPath)
	want := *p // what the artifacts beside the plan give; fields of an absent artifact stay as recorded
	paths := map[string]string{}
	for _, a := range []struct {
		kind, file, digest string
		record             func(source string, data []byte) (dryRun bool, err error)
	}{
		{"qmax", p.Inputs.QMaxFile, p.Inputs.QMaxSHA256, func(source string, b []byte) (bool, error) {
			q, err := ParseQMax(source, b)
			if err != nil {
				return false, err
			}
			want.recordQMax(q)
			return q.DryRun, nil
		}},
		{"ttotal", p.Inputs.TTotalFile, p.Inputs.TTotalSHA256, func(source string, b []byte) (bool, error) {
			t, err := ParseTTotal(source, b)
			if err != nil {
				return false, err
			}
			want.recordTTotal(t)
			return t.DryRun, nil
		}},
	} {
		path := filepath.Join(dir, a.file)
		paths[a.kind] = path
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // the plan's recorded digest stands alone
		}
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("cannot read the %s artifact %s: %v", a.kind, path, err))
			continue
		}
		if got := DigestBytes(data); got != a.digest {
			reasons = append(reasons, fmt.Sprintf("%s artifact %s has digest %s but the plan was derived from %s: the artifact changed after planning; restore it or run tts-bench plan again", a.kind, path, got, a.digest))
			continue
		}
		if dry, err := a.record(path, data); err != nil {
			reasons = append(reasons, fmt.Sprintf("%s artifact %s cannot be read: %v", a.kind, path, err))
		} else if dry && !p.Inputs.DryRun {
			reasons = append(reasons, fmt.Sprintf("%s artifact %s is a dry run: run tts-bench %s without --dry-run, then tts-bench plan", a.kind, path, a.kind))
		}
	}
	for _, c := range []struct{ field, kind, recorded, measured string }{
		{"fingerprint.model_revision", "qmax", p.Fingerprint.ModelRevision, want.Fingerprint.ModelRevision},
		{"fingerprint.instance_type", "qmax", p.Fingerprint.InstanceType, want.Fingerprint.InstanceType},
		{"fingerprint.container_digest", "qmax", p.Fingerprint.ContainerDigest, want.Fingerprint.ContainerDigest},
		{"fingerprint.transport", "qmax", p.Fingerprint.Transport, want.Fingerprint.Transport},
		{"inputs.q_max", "qmax", fmt.Sprint(p.Inputs.QMax), fmt.Sprint(want.Inputs.QMax)},
		{"inputs.throughput", "qmax", fmt.Sprint(p.Inputs.Throughput), fmt.Sprint(want.Inputs.Throughput)},
		{"inputs.cloudwatch_ratio", "qmax", fmt.Sprint(p.Inputs.CloudWatchRatio), fmt.Sprint(want.Inputs.CloudWatchRatio)},
		{"inputs.t_total_s", "ttotal", fmt.Sprint(p.Inputs.TTotalS), fmt.Sprint(want.Inputs.TTotalS)},
	} {
		if c.recorded != c.measured {
			reasons = append(reasons, fmt.Sprintf("plan at %s records %s %s but %s artifact %s gives %s: the plan was edited after planning; run tts-bench plan again instead of editing it",
				planPath, c.field, c.recorded, c.kind, paths[c.kind], c.measured))
		}
	}
	return reasons
}

// checkFingerprint compares what was measured with what is being deployed.
func checkFingerprint(fp Fingerprint, d Deployment, planPath string) []string {
	var reasons []string
	again := "re-measure (tts-bench qmax, ttotal, plan) against what is deployed, or deploy what was measured"
	mismatch := func(what, planned, deployed string) {
		reasons = append(reasons, fmt.Sprintf("plan at %s was measured for %s %s but the deployment has %s: %s", planPath, what, quoteOrNone(planned), quoteOrNone(deployed), again))
	}
	if fp.Model != d.Model.ID {
		mismatch("model", fp.Model, d.Model.ID)
	}
	if fp.ModelRevision != d.Model.Revision() {
		mismatch("model revision", fp.ModelRevision, d.Model.Revision())
	}
	if fp.InstanceType != d.InstanceType {
		mismatch("instance type", fp.InstanceType, d.InstanceType)
	}
	if fp.ContainerDigest != d.ContainerDigest {
		mismatch("container digest", fp.ContainerDigest, d.ContainerDigest)
	}
	if fp.SLOTTFABMs != d.Model.SLO.TTFABMs || fp.SLOPercentile != d.Model.SLO.Percentile {
		mismatch("SLO", fmt.Sprintf("p%d ≤ %d ms", fp.SLOPercentile, fp.SLOTTFABMs), fmt.Sprintf("p%d ≤ %d ms", d.Model.SLO.Percentile, d.Model.SLO.TTFABMs))
	}
	if d.Transport != "" && fp.Transport != d.Transport {
		mismatch("transport", fp.Transport, d.Transport)
	}
	return reasons
}

func quoteOrNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
