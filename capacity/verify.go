package capacity

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Verify returns every problem of the plan: schema, fingerprint, inputs out of range, derived values that do
// not follow from the inputs, findings missing or contradicting the inputs, and a verdict that does not follow
// from the findings. A hand-edited plan fails here.
func (p *Plan) Verify() []error { return p.VerifyContext(context.Background()) }

// VerifyContext is Verify that stops when ctx is done: recomputing the envelope simulates every trace of it,
// the user's included. It then returns only an error that is ErrCanceled.
func (p *Plan) VerifyContext(ctx context.Context) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if p.SchemaVersion != SchemaVersion {
		add("schema_version: is %d, this version reads %d: run tts-bench plan again", p.SchemaVersion, SchemaVersion)
	}
	fp := p.Fingerprint
	errs = append(errs, emptyFields([]field{
		{"fingerprint.model", fp.Model}, {"fingerprint.model_revision", fp.ModelRevision}, {"fingerprint.instance_type", fp.InstanceType},
	})...)
	if (p.Measured || fp.ContainerDigest != "") && !ValidDigest(fp.ContainerDigest) {
		add("fingerprint.container_digest: %q is not a digest: want sha256:<64 hex digits>", fp.ContainerDigest)
	}
	if fp.SLOTTFABMs <= 0 {
		add("fingerprint.slo_ttfab_ms: is %d: must be positive", fp.SLOTTFABMs)
	}
	if fp.SLOPercentile < 50 || fp.SLOPercentile > 99 {
		add("fingerprint.slo_percentile: is %d: want 50 to 99", fp.SLOPercentile)
	}
	if !knownTransport(fp.Transport) {
		add("fingerprint.transport: unknown transport %q", fp.Transport)
	}
	in := p.Inputs
	if p.Measured {
		for _, f := range []struct{ name, value string }{{"qmax_file", in.QMaxFile}, {"ttotal_file", in.TTotalFile}} {
			if !validFileName(f.value) {
				add("inputs.%s: %q is not %s: a measured plan names the artifact it was derived from", f.name, f.value, fileNameRule)
			}
		}
		for _, f := range []struct{ name, value string }{{"qmax_sha256", in.QMaxSHA256}, {"ttotal_sha256", in.TTotalSHA256}} {
			if !ValidDigest(f.value) {
				add("inputs.%s: %q is not a digest: a measured plan records its artifact's sha256:<64 hex digits>", f.name, f.value)
			}
		}
	} else if in.QMaxFile != "" || in.QMaxSHA256 != "" || in.TTotalFile != "" || in.TTotalSHA256 != "" {
		add("inputs: a what-if plan (measured: false) records no artifacts")
	}
	inputErrs := verifyInputs(in)
	for _, e := range inputErrs {
		add("inputs.%v", e)
	}
	errs = append(errs, verifyFindings(p.Findings)...)
	if want := verdict(p.Findings); p.Verdict != want {
		add("verdict: is %q but the findings give %q", p.Verdict, want)
	}
	if len(inputErrs) > 0 {
		return errs // derived values and model findings cannot be recomputed from invalid inputs
	}
	// Recompute everything the inputs determine — the derived values, their reasoning, the envelope
	// simulation and the model findings — and compare.
	want := *p
	var measurement []Finding
	for _, f := range p.Findings {
		switch f.Name {
		case FindingMeasurementValidity, FindingSLOConsistency, FindingTransportConsistency:
			measurement = append(measurement, f)
		}
	}
	if err := finish(ctx, &want, measurement); err != nil {
		return []error{err}
	}
	var got, exp any
	for _, c := range []struct {
		name      string
		got, want any
	}{{"derived", p.Derived, want.Derived}, {"envelope", p.Envelope, want.Envelope}} {
		got, exp = toJSONValue(c.got), toJSONValue(c.want)
		var diffs []string
		diffJSON(c.name, got, exp, &diffs)
		if len(diffs) > maxDiffs {
			diffs = append(diffs[:maxDiffs], fmt.Sprintf("and %d more", len(diffs)-maxDiffs))
		}
		for _, d := range diffs {
			add("%s: run tts-bench plan again instead of editing the plan", strings.Replace(d, "the artifacts give", "the inputs give", 1))
		}
	}
	for _, w := range want.Findings {
		if f, ok := p.Finding(w.Name); ok && f.Status != w.Status {
			add("findings.%s: is %s but the inputs give %s: run tts-bench plan again instead of editing the plan", w.Name, f.Status, w.Status)
		}
	}
	return errs
}

// toJSONValue is v as encoding/json decodes it into an any, for diffJSON.
func toJSONValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

func verifyFindings(fs []Finding) []error {
	var errs []error
	seen := map[string]bool{}
	known := map[string]bool{}
	for _, n := range FindingNames {
		known[n] = true
	}
	for i, f := range fs {
		if !known[f.Name] {
			errs = append(errs, fmt.Errorf("findings[%d].name: unknown finding %q", i, f.Name))
		}
		if seen[f.Name] {
			errs = append(errs, fmt.Errorf("findings[%d].name: %q appears twice", i, f.Name))
		}
		seen[f.Name] = true
		if f.Status != StatusPass && f.Status != StatusWarn && f.Status != StatusFail {
			errs = append(errs, fmt.Errorf("findings[%d].status: %q is not pass, warn or fail", i, f.Status))
		}
		if f.Detail == "" {
			errs = append(errs, fmt.Errorf("findings[%d].detail: is empty", i))
		}
	}
	for _, n := range FindingNames {
		if !seen[n] {
			errs = append(errs, fmt.Errorf("findings: %s is missing", n))
		}
	}
	return errs
}

// nearlyEqual compares recomputed values with a relative tolerance that absorbs float differences between
// platforms but not edits.
func nearlyEqual(a, b float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}
