package capacity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureDigest is the container digest testdata/plans was generated with (see testdata/plans/README.md).
const fixtureDigest = "sha256:6ac968ec7e59a12ad96ac4fa210aa2319f20ab8b604192f8dbb3ca20d71ca4a1"

func fixturePlan(name string) string { return filepath.Join("..", "testdata", "plans", name, PlanFile) }

func fixtureDeployment(t *testing.T) Deployment {
	m := kokoro(t)
	return Deployment{Model: m, InstanceType: m.InstanceType, ContainerDigest: fixtureDigest}
}

func TestGateFixtures(t *testing.T) {
	tests := []struct {
		fixture string
		enabled bool
		reason  string
	}{
		{"valid", true, ""},
		{"dry-run", false, "was derived from dry-run artifacts: run tts-bench qmax and tts-bench ttotal without --dry-run"},
		{"infeasible", false, "is infeasible (peak_coverage (peak 200 rps needs 15 instance(s)"},
		{"what-if", false, "is a what-if plan (measured: false)"},
		{"tampered", false, "the artifact changed after planning"},
		{"fingerprint-mismatch", false, "was measured for container digest sha256:7318"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			dec := Gate(fixtureDeployment(t), fixturePlan(tt.fixture))
			if dec.Enabled != tt.enabled || dec.Explicit {
				t.Fatalf("Enabled %v Explicit %v, want %v false; reasons %q", dec.Enabled, dec.Explicit, tt.enabled, dec.Reasons)
			}
			if tt.enabled {
				if len(dec.Reasons) != 0 || dec.Plan == nil || dec.Plan.Derived.TargetValue != 30 || dec.Plan.Derived.MaxInstances != 6 {
					t.Fatalf("accepted decision %+v lacks the plan", dec)
				}
				if d, err := FileDigest(fixturePlan(tt.fixture)); err != nil || dec.PlanSHA256 != d {
					t.Fatalf("PlanSHA256 = %q, want the plan file's digest %q (%v)", dec.PlanSHA256, d, err)
				}
				return
			}
			// Each variant breaks exactly one rule, so that each gate branch is tested alone.
			if dec.Plan != nil || len(dec.Reasons) != 1 || !strings.Contains(dec.Reasons[0], tt.reason) {
				t.Fatalf("reasons = %q, want exactly one containing %q", dec.Reasons, tt.reason)
			}
		})
	}
}

func TestGateAutoscalingSwitch(t *testing.T) {
	on, off := true, false
	d := fixtureDeployment(t)

	d.AutoscalingOverride = &off
	dec := Gate(d, fixturePlan("valid"))
	if dec.Enabled || dec.Explicit || !strings.Contains(dec.Reasons[0], "-c autoscaling=false") {
		t.Fatalf("override off: %+v", dec)
	}

	d.AutoscalingOverride = nil
	d.Model.Scaling.Autoscaling = false
	dec = Gate(d, fixturePlan("valid"))
	if dec.Enabled || !strings.Contains(dec.Reasons[0], "off for kokoro-82m in the model catalog") {
		t.Fatalf("catalog off: %+v", dec)
	}

	d.AutoscalingOverride = &on
	dec = Gate(d, fixturePlan("valid"))
	if !dec.Enabled || !dec.Explicit {
		t.Fatalf("override on with a valid plan: %+v", dec)
	}
	dec = Gate(d, filepath.Join(t.TempDir(), "artifacts", "kokoro-82m", PlanFile))
	if dec.Enabled || !dec.Explicit || !strings.Contains(dec.Reasons[0], "no plan at ") ||
		!strings.Contains(dec.Reasons[0], "run tts-bench qmax, tts-bench ttotal and tts-bench plan for kokoro-82m first") {
		t.Fatalf("explicit, no plan: %+v", dec)
	}
}

func TestGateFingerprint(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mutate func(*Deployment)
		reason string
	}{
		{"instance type", func(d *Deployment) { d.InstanceType = "ml.g5.2xlarge" }, "instance type ml.g5.xlarge but the deployment has ml.g5.2xlarge"},
		{"revision", func(d *Deployment) { s := *d.Model.Source; s.Revision = strings.Repeat("b", 40); d.Model.Source = &s }, "model revision"},
		{"SLO", func(d *Deployment) { d.Model.SLO.TTFABMs = 2500 }, "SLO p95 ≤ 3000 ms but the deployment has p95 ≤ 2500 ms"},
		{"model", func(d *Deployment) { d.Model.ID = "kokoro-82m-v2" }, "model kokoro-82m but"},
		{"no digest", func(d *Deployment) { d.ContainerDigest = "" }, "the deployment has (none)"},
		{"transport", func(d *Deployment) { d.Transport = TransportHTTP }, "transport sagemaker-stream but the deployment has http"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := fixtureDeployment(t)
			tt.mutate(&d)
			dec := Gate(d, fixturePlan("valid"))
			if dec.Enabled || len(dec.Reasons) != 1 || !strings.Contains(dec.Reasons[0], tt.reason) {
				t.Fatalf("reasons = %q, want one containing %q", dec.Reasons, tt.reason)
			}
		})
	}
	d := fixtureDeployment(t)
	d.Transport = TransportSageMakerStream
	if dec := Gate(d, fixturePlan("valid")); !dec.Enabled {
		t.Fatalf("matching transport refused: %q", dec.Reasons)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGateArtifactsBesideThePlan(t *testing.T) {
	src := filepath.Join("..", "testdata", "plans", "valid")
	dir := t.TempDir()
	plan := filepath.Join(dir, PlanFile)
	copyFile(t, filepath.Join(src, PlanFile), plan)
	if dec := Gate(fixtureDeployment(t), plan); !dec.Enabled {
		t.Fatalf("a plan without its artifacts beside it stands on its recorded digests: %q", dec.Reasons)
	}
	copyFile(t, filepath.Join(src, QMaxFile), filepath.Join(dir, QMaxFile))
	copyFile(t, filepath.Join("..", "testdata", "plans", "dry-run", TTotalFile), filepath.Join(dir, TTotalFile))
	dec := Gate(fixtureDeployment(t), plan)
	if dec.Enabled || len(dec.Reasons) != 1 || !strings.Contains(dec.Reasons[0], "ttotal artifact") {
		t.Fatalf("swapped ttotal: %q", dec.Reasons)
	}
}

func TestGateRefusesBrokenPlans(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(fixturePlan("valid"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, content, reason string
	}{
		{"not json", "{", "cannot be used"},
		{"unknown field", strings.Replace(string(data), `"measured"`, `"measured_by": "me", "measured"`, 1), "measured_by: unknown field"},
		{"edited threshold", strings.Replace(string(data), `"target_value": 30`, `"target_value": 36`, 1), "does not verify"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name+".json")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			dec := Gate(fixtureDeployment(t), path)
			if dec.Enabled || len(dec.Reasons) != 1 || !strings.Contains(dec.Reasons[0], tt.reason) {
				t.Fatalf("reasons = %q, want one containing %q", dec.Reasons, tt.reason)
			}
		})
	}
}

// A plan edited after planning, its derived values and load findings recomputed so that it verifies, still
// names artifacts beside it whose digests match: the gate compares what the plan records as measured with
// what those artifacts give, not only their dry_run flag.
func TestGateRefusesAPlanThatDoesNotFollowFromItsArtifacts(t *testing.T) {
	src := filepath.Join("..", "testdata", "plans", "valid")
	for _, tt := range []struct {
		name   string
		mutate func(*Plan)
		reason string
	}{
		{"q_max raised", func(p *Plan) { p.Inputs.QMax = 41 }, "inputs.q_max 41 but qmax artifact"},
		{"throughput raised", func(p *Plan) {
			for i := range p.Inputs.Throughput {
				p.Inputs.Throughput[i].RPS *= 2
			}
		}, "inputs.throughput"},
		{"t_total shortened", func(p *Plan) { p.Inputs.TTotalS = 120 }, "inputs.t_total_s 120 but ttotal artifact"},
		{"container digest moved to the deployment's", func(p *Plan) {
			p.Fingerprint.ContainerDigest = DigestBytes([]byte("a new container"))
		}, "fingerprint.container_digest"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			copyFile(t, filepath.Join(src, QMaxFile), filepath.Join(dir, QMaxFile))
			copyFile(t, filepath.Join(src, TTotalFile), filepath.Join(dir, TTotalFile))
			p, err := LoadPlan(filepath.Join(src, PlanFile))
			if err != nil {
				t.Fatal(err)
			}
			tt.mutate(p)
			finish(p, p.Findings[:3])
			if errs := p.Verify(); len(errs) > 0 || !p.Feasible() {
				t.Fatalf("edited plan must verify and stay feasible to test the gate: %v %s %+v", errs, p.Verdict, p.Findings)
			}
			path := filepath.Join(dir, PlanFile)
			if err := WriteJSON(path, p); err != nil {
				t.Fatal(err)
			}
			d := fixtureDeployment(t)
			d.ContainerDigest = p.Fingerprint.ContainerDigest
			dec := Gate(d, path)
			if dec.Enabled || len(dec.Reasons) != 1 || !strings.Contains(dec.Reasons[0], tt.reason) {
				t.Fatalf("reasons = %q, want one containing %q", dec.Reasons, tt.reason)
			}
		})
	}
}
