package capacity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// compressedPlan writes, in a temporary directory, the valid fixture's artifacts as measured on an emulator with
// CloudWatch compression f, and the plan built from them; it returns the plan and its path.
func compressedPlan(t *testing.T, f int) (*Plan, string) {
	t.Helper()
	src := filepath.Join("..", "testdata", "plans", "valid")
	dir := t.TempDir()
	q, err := LoadQMax(filepath.Join(src, QMaxFile))
	if err != nil {
		t.Fatal(err)
	}
	if q.RecordsFile != "" {
		data, err := os.ReadFile(filepath.Join(src, q.RecordsFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, q.RecordsFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	q.Emulator, q.CloudWatchCompression = true, f
	qPath, tPath := filepath.Join(dir, QMaxFile), filepath.Join(dir, TTotalFile)
	if err := WriteJSON(qPath, q); err != nil {
		t.Fatal(err)
	}
	tt, err := LoadTTotal(filepath.Join(src, TTotalFile))
	if err != nil {
		t.Fatal(err)
	}
	tt.Emulator, tt.CloudWatchCompression = true, f
	if tt.QMaxSHA256, err = FileDigest(qPath); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(tPath, tt); err != nil {
		t.Fatal(err)
	}
	ms, err := LoadMeasurement(qPath, tPath)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := LoadPlan(fixturePlan("valid"))
	if err != nil {
		t.Fatal(err)
	}
	m := kokoro(t)
	o := DefaultOptions(m)
	o.PeakRPS, o.TroughRPS = orig.Inputs.PeakRPS, orig.Inputs.TroughRPS
	p, err := FromArtifacts(m, ms, o)
	if err != nil {
		t.Fatal(err)
	}
	planPath := filepath.Join(dir, PlanFile)
	if err := WriteJSON(planPath, p); err != nil {
		t.Fatal(err)
	}
	return p, planPath
}

// A plan measured on an emulator at CloudWatch compression 10 takes the factor from its artifacts into its
// fingerprint and divides every AWS-facing duration by it, leaving the measured T_total as it is.
func TestCompressedPlanDividesAWSDurations(t *testing.T) {
	aws, err := LoadPlan(fixturePlan("valid"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := compressedPlan(t, 10)
	in, d := p.Inputs, p.Derived
	if p.Fingerprint.CloudWatchCompression != 10 || in.Compression() != 10 {
		t.Fatalf("fingerprint.cloudwatch_compression %d, inputs' compression %d: want 10 from the artifacts", p.Fingerprint.CloudWatchCompression, in.Compression())
	}
	if in.MetricPeriodS != 1 || d.ScaleInPeriodS != 1 {
		t.Errorf("metric period %d s, scale-in period %d s: want 10 s ÷ 10", in.MetricPeriodS, d.ScaleInPeriodS)
	}
	if in.DetectionBufferS != aws.Inputs.DetectionBufferS || in.TTotalS != aws.Inputs.TTotalS {
		t.Errorf("inputs: detection buffer %g s, T_total %g s; want AWS's %g s and the measured %g s, unchanged", in.DetectionBufferS, in.TTotalS, aws.Inputs.DetectionBufferS, aws.Inputs.TTotalS)
	}
	if want := in.TTotalS + in.DetectionBufferS/10; d.TPlanS != want {
		t.Errorf("T_plan %g s, want T_total + detection buffer ÷ 10 = %g s", d.TPlanS, want)
	}
	if want := max(30, ceilSeconds(3*d.TPlanS)); d.ScaleInCooldownS != want {
		t.Errorf("scale-in cooldown %d s, want max(300 s ÷ 10, 3 × T_plan) = %d s", d.ScaleInCooldownS, want)
	}
	if d.ScaleOutCooldownS < 1 || d.ScaleOutCooldownS > 3 {
		t.Errorf("scale-out cooldown %d s, want T_plan ÷ 2 within [10, 30] s ÷ 10", d.ScaleOutCooldownS)
	}
	if got := p.ScaleOutAlarmMemory(); got != 5*time.Second {
		t.Errorf("scale-out alarm memory %s, want (1 + 3 + 1) metric periods of 1 s", got)
	}
	spec := ScalingSpecFor("speech-"+p.Fingerprint.Model, "AllTraffic", p)
	if spec.MetricPeriodS != 1 || spec.SimulatedScaling().PeriodS != 1 {
		t.Errorf("scaling spec metric period %d s, simulated %d s: want 1", spec.MetricPeriodS, spec.SimulatedScaling().PeriodS)
	}
	for _, a := range spec.Alarms {
		if a.PeriodS != 1 && a.PeriodS != 6 {
			t.Errorf("alarm %s has period %d s: want the metric period (1 s) or AWS's 60 s ÷ 10", a.ID, a.PeriodS)
		}
	}
	if aws.Fingerprint.Compression() != 1 || aws.ScaleOutAlarmMemory() != 50*time.Second {
		t.Errorf("the AWS fixture: compression %d, alarm memory %s; want 1 and 50 s", aws.Fingerprint.Compression(), aws.ScaleOutAlarmMemory())
	}
}

// The gate refuses a plan whose CloudWatch compression differs from the deployment's: a compressed plan on AWS
// (naming the field and that it never deploys there), and on an emulator at another factor; it accepts it on
// an emulator with the same factor. A plan edited to claim factor 1 is caught by the re-derivation.
func TestGateRefusesACompressedPlanOnAWS(t *testing.T) {
	p, planPath := compressedPlan(t, 10)
	aws := fixtureDeployment(t)
	aws.InstanceType = p.Fingerprint.InstanceType
	dec := Gate(aws, planPath)
	all := strings.Join(dec.Reasons, "\n")
	if dec.Enabled || !strings.Contains(all, "fingerprint.cloudwatch_compression 10") || !strings.Contains(all, "never deploys to AWS") {
		t.Fatalf("a compression-10 plan on AWS: enabled %v, reasons %q; want a refusal naming fingerprint.cloudwatch_compression and AWS", dec.Enabled, dec.Reasons)
	}
	local := aws
	local.Emulator = true
	local.CloudWatchCompression = 5
	dec = Gate(local, planPath)
	if all := strings.Join(dec.Reasons, "\n"); dec.Enabled || !strings.Contains(all, "compression 5 (this emulator)") || !strings.Contains(all, "SPEECH_EMULATOR_TIME_SCALE") {
		t.Fatalf("a compression-10 plan on an emulator at 5: enabled %v, reasons %q; want a refusal naming the time scale", dec.Enabled, dec.Reasons)
	}
	local.CloudWatchCompression = 10
	if dec := Gate(local, planPath); !dec.Enabled {
		t.Fatalf("a compression-10 plan on an emulator at 10 refused: %q", dec.Reasons)
	}
	// Forged: the plan claims compression 1, its qmax artifact says 10.
	p.Fingerprint.CloudWatchCompression = 0
	if err := WriteJSON(planPath, p); err != nil {
		t.Fatal(err)
	}
	local.CloudWatchCompression = 1
	if dec := Gate(local, planPath); dec.Enabled || !strings.Contains(strings.Join(dec.Reasons, "\n"), "fingerprint.cloudwatch_compression") {
		t.Fatalf("a plan edited to claim compression 1: enabled %v, reasons %q; want the re-derivation to name fingerprint.cloudwatch_compression", dec.Enabled, dec.Reasons)
	}
}

// An artifact claiming compression on AWS, or a factor no emulator publishes, is refused by Verify; qmax and
// ttotal measured at different factors fail measurement_validity.
func TestCompressionOfArtifactsIsChecked(t *testing.T) {
	src := filepath.Join("..", "testdata", "plans", "valid")
	q, err := LoadQMax(filepath.Join(src, QMaxFile))
	if err != nil {
		t.Fatal(err)
	}
	q.CloudWatchCompression = 10
	if errs := q.Verify(); !strings.Contains(joinedErrors(errs), "cloudwatch_compression: is 10 on AWS") {
		t.Errorf("qmax at compression 10 on AWS: %v; want it refused", errs)
	}
	q.Emulator, q.CloudWatchCompression = true, 3
	if errs := q.Verify(); !strings.Contains(joinedErrors(errs), "cloudwatch_compression: is 3") {
		t.Errorf("qmax at compression 3: %v; want it refused", errs)
	}
	tt, err := LoadTTotal(filepath.Join(src, TTotalFile))
	if err != nil {
		t.Fatal(err)
	}
	q.CloudWatchCompression = 10
	tt.Emulator = true
	f := measurementValidity(kokoro(t), Measurement{QMax: q, TTotal: tt, QMaxFile: QMaxFile, TTotalFile: TTotalFile, QMaxSHA256: tt.QMaxSHA256})
	if f.Status != StatusFail || !strings.Contains(f.Detail, "CloudWatch compression 10 but ttotal with 1") {
		t.Errorf("qmax at 10, ttotal at 1: %s %q; want a failure naming both", f.Status, f.Detail)
	}
}

// A what-if plan has no measurement to take a factor from: it is always on AWS's clock.
func TestWhatIfPlanIsNeverCompressed(t *testing.T) {
	m := kokoro(t)
	o := DefaultOptions(m)
	o.PeakRPS = 40
	p, err := FromWhatIf(m, WhatIf{QMax: 50, TTotalS: 260, ThroughputRPS: 16.3}, o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Fingerprint.Compression() != 1 || p.Inputs.MetricPeriodS != DefaultMetricPeriodS || p.Derived.ScaleInCooldownS < ScaleInCooldownMinS {
		t.Errorf("what-if plan: compression %d, metric period %d s, scale-in cooldown %d s; want AWS's 1, 10 s and at least 300 s",
			p.Fingerprint.Compression(), p.Inputs.MetricPeriodS, p.Derived.ScaleInCooldownS)
	}
}

func joinedErrors(errs []error) string {
	var s []string
	for _, e := range errs {
		s = append(s, e.Error())
	}
	return strings.Join(s, "\n")
}
