package capacity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"

	"github.com/speech-infra/speech-infra/models"
)

// Deployment is what is about to be deployed.
type Deployment struct {
	// Model is the catalog entry being deployed.
	Model models.Model
	// InstanceType is the instance type being deployed ("local" on the emulator).
	InstanceType string
	// Emulator is true when the deployment is on the local emulator (whatever its instance type): only then is a
	// plan measured on the emulator accepted.
	Emulator bool
	// CloudWatchCompression is the CloudWatch compression of the deployment's platform: the emulator's
	// published factor (emulator.Info), 1 on AWS; 0 counts as 1. A plan deploys only where it matches its
	// fingerprint's (docs/design.md, "Compressed CloudWatch time").
	CloudWatchCompression int
	// ContainerDigest is the SourceDigest of the container being deployed.
	ContainerDigest string
	// ContainerNote, when set, is added to a container-digest mismatch: which files the digest covers that
	// git does not track (SourceFiles.UntrackedNote), the usual cause of a digest nobody committed.
	ContainerNote string
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
// the artifacts it names are beside it, match the digests it records and rebuild it exactly (see
// checkArtifacts), and its fingerprint matches the deployment (model, revision, instance type, container
// digest, SLO, and transport when given). Every reason that applies is reported, not only the first. The plan
// and the artifacts are read with size limits (MaxPlanBytes, MaxQMaxBytes, MaxTTotalBytes, MaxRecordsBytes),
// and only when they are regular files.
func Gate(d Deployment, planPath string) Decision {
	return GateContext(context.Background(), d, planPath)
}

// GateContext is Gate that stops when ctx is done: verifying the plan and rebuilding it from its artifacts
// simulate its whole envelope, the user's traces included. A gate that stopped refuses, with the one reason
// that it stopped.
func GateContext(ctx context.Context, d Deployment, planPath string) Decision {
	id := d.Model.ID
	dec := Decision{Explicit: d.AutoscalingOverride != nil && *d.AutoscalingOverride}
	on := d.Model.Scaling.Autoscaling
	if d.AutoscalingOverride != nil {
		on = *d.AutoscalingOverride
	}
	if !on {
		why := fmt.Sprintf("autoscaling is off for %s in the model catalog (scaling.autoscaling)", id)
		if d.AutoscalingOverride != nil {
			why = fmt.Sprintf("autoscaling is off for %s (-c autoscaling=false, speech-infra deploy --autoscaling=false)", id)
		}
		dec.Reasons = []string{why + ": the endpoint keeps a fixed fleet and the unbounded measurement queue; once a plan exists, enable it with -c autoscaling=true (speech-infra deploy --autoscaling)"}
		return dec
	}
	measureFirst := fmt.Sprintf("run tts-bench qmax, tts-bench ttotal and tts-bench plan for %s first", id)
	p, digest, err := load[Plan](planPath)
	if errors.Is(err, fs.ErrNotExist) {
		dec.Reasons = []string{fmt.Sprintf("no plan at %s: %s", planPath, measureFirst)}
		return dec
	}
	if err != nil {
		dec.Reasons = []string{fmt.Sprintf("plan at %s cannot be used: %v: run tts-bench plan again", planPath, err)}
		return dec
	}
	stopped := func() Decision {
		dec.Reasons = []string{fmt.Sprintf("the gate stopped (%v) before it finished checking the plan at %s: run it again", context.Cause(ctx), planPath)}
		return dec
	}
	if errs := p.VerifyContext(ctx); len(errs) > 0 {
		if ctx.Err() != nil {
			return stopped()
		}
		dec.Reasons = []string{fmt.Sprintf("plan at %s does not verify: %v: run tts-bench plan again instead of editing it", planPath, errors.Join(errs...))}
		// What the plan as written would do: its thresholds and fleet bounds on the envelope of its inputs.
		env, err := SimulateAsWritten(ctx, p)
		if ctx.Err() != nil {
			return stopped()
		}
		if err == nil && !env.Holds() {
			dec.Reasons = append(dec.Reasons, fmt.Sprintf("plan at %s, as written, does not hold the SLO on its envelope: %s", planPath, worstMinuteText(env)))
		}
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
	fingerprint := checkFingerprint(p.Fingerprint, d, planPath)
	if p.Measured {
		// Rebuilding the plan against a catalog entry it was not measured for would only restate the
		// fingerprint mismatch.
		reasons = append(reasons, checkArtifacts(ctx, p, d.Model, planPath, len(fingerprint) == 0)...)
		if ctx.Err() != nil {
			return stopped()
		}
	}
	reasons = append(reasons, fingerprint...)
	if len(reasons) > 0 {
		dec.Reasons = reasons
		return dec
	}
	dec.Enabled, dec.Plan, dec.PlanSHA256 = true, p, digest
	return dec
}

// checkArtifacts requires the artifacts a measured plan names beside it, and that the plan follows from them.
// Absent is not fine: a measured plan is accepted only with both files present in the plan's directory under
// the plain names it records (inputs.qmax_file, inputs.ttotal_file), each a regular file within its size
// limit, with the digest the plan records, of the right kind, verifying on its own, the qmax artifact's figures
// being what its raw records beside it give (QMax.CheckRecords); then what the plan
// records as measured (the fingerprint's measured half, Q_max, the throughput curve, the CloudWatch ratio,
// T_total, the dry-run flag) must be what those artifacts give, and the whole plan must be what tts-bench plan
// builds from them with the plan's own planning options and the deployment's catalog entry (when rebuild is
// set: the caller skips it when the fingerprint does not match the deployment anyway). A plan edited
// after planning verifies on its own once its derived values are recomputed, but no longer follows from its
// artifacts.
func checkArtifacts(ctx context.Context, p *Plan, m models.Model, planPath string, rebuild bool) []string {
	in := p.Inputs
	dir := filepath.Dir(planPath)
	planName := filepath.Base(planPath)
	again := "run tts-bench plan again instead of editing it"
	if in.QMaxFile == in.TTotalFile {
		return []string{fmt.Sprintf("plan at %s names %s as both its qmax and its ttotal artifact (inputs.qmax_file, inputs.ttotal_file): %s", planPath, in.QMaxFile, again)}
	}
	type artifactFile struct {
		kind, field, file, digest, producer, path string
		read                                      func(path string) ([]byte, error)
		data                                      []byte
	}
	arts := []*artifactFile{
		{kind: "qmax", read: readFile[QMax], field: "inputs.qmax_file", file: in.QMaxFile, digest: in.QMaxSHA256, producer: "tts-bench qmax"},
		{kind: "ttotal", read: readFile[TTotal], field: "inputs.ttotal_file", file: in.TTotalFile, digest: in.TTotalSHA256, producer: "tts-bench ttotal"},
	}
	var reasons []string
	for _, a := range arts {
		a.path = filepath.Join(dir, a.file)
		if a.file == planName {
			reasons = append(reasons, fmt.Sprintf("plan at %s names itself as its %s artifact (%s %q): %s", planPath, a.kind, a.field, a.file, again))
			continue
		}
		data, err := a.read(a.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			reasons = append(reasons, fmt.Sprintf("%s artifact %s is missing: the plan at %s was derived from it (%s %q, %s) and a measured plan is accepted only with the artifacts it was derived from beside it: put that %s file next to the plan, or run %s and tts-bench plan again",
				a.kind, a.path, planPath, a.field, a.file, a.digest, a.kind, a.producer))
			continue
		case err != nil:
			reasons = append(reasons, fmt.Sprintf("%s artifact %s (%s of the plan at %s) cannot be used: %v: put the %s file the plan was derived from next to the plan, or run %s and tts-bench plan again",
				a.kind, a.path, a.field, planPath, err, a.kind, a.producer))
			continue
		}
		if got := DigestBytes(data); got != a.digest {
			reasons = append(reasons, fmt.Sprintf("%s artifact %s has digest %s but the plan was derived from %s: the artifact changed after planning, or is another file; restore it or run tts-bench plan again", a.kind, a.path, got, a.digest))
			continue
		}
		a.data = data
	}
	if len(reasons) > 0 {
		return reasons
	}
	qa, ta := arts[0], arts[1]
	q, qErr := ParseQMax(qa.path, qa.data)
	t, tErr := ParseTTotal(ta.path, ta.data)
	for _, c := range []struct {
		a      *artifactFile
		parse  error
		verify func() []error
	}{
		{qa, qErr, func() []error { return q.Verify() }},
		{ta, tErr, func() []error { return t.Verify() }},
	} {
		if c.parse != nil {
			reasons = append(reasons, fmt.Sprintf("%s artifact %s is not a %s artifact the plan can stand on: %v: put the %s file written by %s there and run tts-bench plan again", c.a.kind, c.a.path, c.a.kind, c.parse, c.a.kind, c.a.producer))
		} else if errs := c.verify(); len(errs) > 0 {
			reasons = append(reasons, fmt.Sprintf("%s artifact %s does not verify: %v: run %s and tts-bench plan again", c.a.kind, c.a.path, errors.Join(errs...), c.a.producer))
		}
	}
	if len(reasons) > 0 {
		return reasons
	}
	// The qmax artifact's figures, folded again from the raw records beside it.
	if errs := q.CheckRecords(dir); len(errs) > 0 {
		return []string{RecordsRefusal(qa.path, errs)}
	}
	for _, c := range []struct {
		a   *artifactFile
		dry bool
	}{{qa, q.DryRun}, {ta, t.DryRun}} {
		if c.dry && !in.DryRun {
			reasons = append(reasons, fmt.Sprintf("%s artifact %s is a dry run: run tts-bench %s without --dry-run, then tts-bench plan", c.a.kind, c.a.path, c.a.kind))
		}
	}
	want := *p
	if err := want.recordQMax(q); err != nil {
		reasons = append(reasons, fmt.Sprintf("qmax artifact %s gives no instance model (%v): run tts-bench qmax again, then tts-bench plan", qa.path, err))
	}
	want.recordTTotal(t)
	for _, c := range []struct{ field, kind, path, recorded, measured string }{
		{"fingerprint.model", "qmax", qa.path, p.Fingerprint.Model, q.Model},
		{"fingerprint.model_revision", "qmax", qa.path, p.Fingerprint.ModelRevision, want.Fingerprint.ModelRevision},
		{"fingerprint.instance_type", "qmax", qa.path, p.Fingerprint.InstanceType, want.Fingerprint.InstanceType},
		{"fingerprint.emulator", "qmax", qa.path, fmt.Sprint(p.Fingerprint.Emulator), fmt.Sprint(want.Fingerprint.Emulator)},
		{"fingerprint.cloudwatch_compression", "qmax", qa.path, fmt.Sprint(p.Fingerprint.Compression()), fmt.Sprint(want.Fingerprint.Compression())},
		{"fingerprint.container_digest", "qmax", qa.path, p.Fingerprint.ContainerDigest, want.Fingerprint.ContainerDigest},
		{"fingerprint.transport", "qmax", qa.path, p.Fingerprint.Transport, want.Fingerprint.Transport},
		{"inputs.q_max", "qmax", qa.path, fmt.Sprint(p.Inputs.QMax), fmt.Sprint(want.Inputs.QMax)},
		{"inputs.throughput", "qmax", qa.path, fmt.Sprint(p.Inputs.Throughput), fmt.Sprint(want.Inputs.Throughput)},
		{"inputs.cloudwatch_ratio", "qmax", qa.path, fmt.Sprint(p.Inputs.CloudWatchRatio), fmt.Sprint(want.Inputs.CloudWatchRatio)},
		{"inputs.instance", "qmax", qa.path, fmt.Sprint(p.Inputs.Instance), fmt.Sprint(want.Inputs.Instance)},
		{"inputs.t_total_s", "ttotal", ta.path, fmt.Sprint(p.Inputs.TTotalS), fmt.Sprint(want.Inputs.TTotalS)},
	} {
		if c.recorded != c.measured {
			reasons = append(reasons, fmt.Sprintf("plan at %s records %s %s but %s artifact %s gives %s: the plan was edited after planning; %s",
				planPath, c.field, c.recorded, c.kind, c.path, c.measured, again))
		}
	}
	if len(reasons) > 0 || !rebuild {
		return reasons
	}
	// The whole plan, rebuilt: the measurement findings (measurement_validity, slo_consistency,
	// transport_consistency), which Verify cannot recompute without the artifacts, and every detail.
	rebuilt, err := FromArtifactsContext(ctx, m, Measurement{
		QMax: q, QMaxFile: in.QMaxFile, QMaxSHA256: in.QMaxSHA256, TTotal: t, TTotalFile: in.TTotalFile, TTotalSHA256: in.TTotalSHA256,
	}, in.PlanOptions())
	if err != nil {
		return []string{fmt.Sprintf("plan at %s cannot be rebuilt from its artifacts and the catalog entry for %s: %v: run tts-bench plan again", planPath, m.ID, err)}
	}
	if diffs := planDiff(p, rebuilt); len(diffs) > 0 {
		return []string{fmt.Sprintf("plan at %s does not follow from its artifacts and the catalog entry for %s (%s): the plan was edited after planning, or the catalog changed since; %s",
			planPath, m.ID, strings.Join(diffs, "; "), "run tts-bench plan again")}
	}
	return nil
}

// maxDiffs bounds how many differences planDiff reports.
const maxDiffs = 6

// planDiff lists, by JSON path, where plan got differs from plan want (numbers compared with nearlyEqual),
// at most maxDiffs entries and a count of the rest.
func planDiff(got, want *Plan) []string {
	var g, w any
	gb, err1 := MarshalArtifact(got)
	wb, err2 := MarshalArtifact(want)
	if err1 != nil || err2 != nil || json.Unmarshal(gb, &g) != nil || json.Unmarshal(wb, &w) != nil {
		return []string{"the plan cannot be compared with its rebuild"}
	}
	var out []string
	diffJSON("", g, w, &out)
	if len(out) > maxDiffs {
		out = append(out[:maxDiffs], fmt.Sprintf("and %d more", len(out)-maxDiffs))
	}
	return out
}

func diffJSON(path string, got, want any, out *[]string) {
	show := func(v any) string {
		b, _ := json.Marshal(v)
		s := string(b)
		if len(s) > 80 {
			s = s[:77] + "..."
		}
		return s
	}
	differ := func() {
		*out = append(*out, fmt.Sprintf("%s is %s but the artifacts give %s", path, show(got), show(want)))
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			differ()
			return
		}
		keys := map[string]bool{}
		for k := range g {
			keys[k] = true
		}
		for k := range w {
			keys[k] = true
		}
		for _, k := range sortedKeys(keys) {
			p := k
			if path != "" {
				p = path + "." + k
			}
			diffJSON(p, g[k], w[k], out)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			differ()
			return
		}
		for i := range w {
			diffJSON(fmt.Sprintf("%s[%d]", path, i), g[i], w[i], out)
		}
	case float64:
		if g, ok := got.(float64); !ok || !nearlyEqual(g, w) {
			differ()
		}
	default:
		if got != want {
			differ()
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
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
		reasons = append(reasons, instanceTypeMismatch(fp.InstanceType, d.InstanceType, planPath))
	} else if fp.Emulator && !(d.Emulator || d.InstanceType == models.LocalInstanceType) {
		// The emulator runs an instance type as a profile of assumptions (start-up phases, a service-time factor):
		// numbers measured there do not stand for the type on AWS (docs/design.md, "The gate").
		reasons = append(reasons, fmt.Sprintf("plan at %s was measured on the local emulator's profile of %s, not on AWS: an AWS deployment needs a plan measured on AWS (tts-bench compare, or qmax, ttotal and plan, without --local); the emulator's plan deploys with speech-infra deploy --local --instance-type %s",
			planPath, fp.InstanceType, fp.InstanceType))
	}
	if planned, deployed := fp.Compression(), max(1, d.CloudWatchCompression); planned != deployed {
		reasons = append(reasons, compressionMismatch(planned, deployed, d.Emulator, planPath))
	}
	if fp.ContainerDigest != d.ContainerDigest {
		mismatch("container digest", fp.ContainerDigest, d.ContainerDigest)
		if d.ContainerNote != "" {
			reasons = append(reasons, d.ContainerNote)
		}
	}
	if fp.SLOTTFABMs != d.Model.SLO.TTFABMs || fp.SLOPercentile != d.Model.SLO.Percentile {
		mismatch("SLO", fmt.Sprintf("p%d ≤ %d ms", fp.SLOPercentile, fp.SLOTTFABMs), fmt.Sprintf("p%d ≤ %d ms", d.Model.SLO.Percentile, d.Model.SLO.TTFABMs))
	}
	if d.Transport != "" && fp.Transport != d.Transport {
		mismatch("transport", fp.Transport, d.Transport)
	}
	return reasons
}

// compressionMismatch says that the plan runs on another CloudWatch clock than the deployment's: its metric
// period, detection buffer and cooldowns are AWS's divided by its fingerprint.cloudwatch_compression
// (docs/design.md, "Compressed CloudWatch time"), and the fix.
func compressionMismatch(planned, deployed int, emulator bool, planPath string) string {
	what := fmt.Sprintf("plan at %s has fingerprint.cloudwatch_compression %d (its metric period, detection buffer and cooldowns are AWS's ÷ %d) but the deployment runs CloudWatch at compression %d",
		planPath, planned, planned, deployed)
	if !emulator {
		return what + " (AWS): a plan measured on an emulator that compresses CloudWatch time never deploys to AWS; measure and plan on AWS (tts-bench qmax, ttotal, plan without --local)"
	}
	return what + fmt.Sprintf(" (this emulator): run the emulator at the time scale the plan was measured at (%s; compression %d needs a time scale from %d up%s), or measure and plan again on this emulator",
		"SPEECH_EMULATOR_TIME_SCALE", planned, planned, nextCompressionNote(planned))
}

// nextCompressionNote bounds the time scales of compression f from above (" to below N"), "" for 10.
func nextCompressionNote(f int) string {
	next := map[int]int{1: 2, 2: 5, 5: 10}[f]
	if next == 0 {
		return ""
	}
	return fmt.Sprintf(" to below %d", next)
}

// instanceTypeMismatch says that the plan was measured on another instance type than the one deployed, and
// the two ways out: deploy the plan's type (-c instance_type, speech-infra deploy --instance-type), or measure
// and plan again on the deployed type (docs/design.md, "Instance types side by side").
func instanceTypeMismatch(planned, deployed, planPath string) string {
	replan := fmt.Sprintf("or re-measure on %s (tts-bench qmax, ttotal, plan) and deploy that plan", quoteOrNone(deployed))
	fix := fmt.Sprintf("deploy the plan's type with -c instance_type=%s (speech-infra deploy --instance-type %s), %s", planned, planned, replan)
	switch {
	case planned == models.LocalInstanceType:
		fix = fmt.Sprintf("a plan measured on the local emulator's own instances deploys only on them (speech-infra deploy --local, without --instance-type): re-measure on %s (tts-bench qmax, ttotal, plan) and deploy that plan", quoteOrNone(deployed))
	case ValidInstanceType(planned) != nil:
		fix = "re-measure (tts-bench qmax, ttotal, plan) on the type you deploy"
	}
	return fmt.Sprintf("plan at %s was measured for instance type %s but the deployment has %s: %s", planPath, quoteOrNone(planned), quoteOrNone(deployed), fix)
}

// ValidInstanceType returns nil when t is a SageMaker endpoint instance type, a value of the service model's
// ProductionVariantInstanceType enum (as the AWS SDK knows it), and otherwise an error saying so.
func ValidInstanceType(t string) error {
	for _, v := range smtypes.ProductionVariantInstanceType("").Values() {
		if string(v) == t {
			return nil
		}
	}
	return fmt.Errorf("%q is not a SageMaker endpoint instance type (the service model's ProductionVariantInstanceType enum has no such value)", t)
}

func quoteOrNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
