package stacks

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/speech-infra/speech-infra/capacity"
)

// handMadeSet copies the valid fixture set (plan, both artifacts, the qmax records) into a fresh directory,
// lets edit change the qmax artifact, then re-seals the set as someone would with a tts-bench whose plan does
// not read the records: the ttotal artifact's qmax_sha256 recomputed and the plan rebuilt from both artifacts
// with its own planning options. It returns the plan's path.
func handMadeSet(t *testing.T, edit func(q *capacity.QMax)) string {
	t.Helper()
	src, dir := filepath.Join("..", "testdata", "plans", "valid"), t.TempDir()
	for _, f := range []string{capacity.PlanFile, capacity.QMaxFile, capacity.TTotalFile, "qmax.records.jsonl.gz"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	qPath, tPath, planPath := filepath.Join(dir, capacity.QMaxFile), filepath.Join(dir, capacity.TTotalFile), filepath.Join(dir, capacity.PlanFile)
	q, err := capacity.LoadQMax(qPath)
	if err != nil {
		t.Fatal(err)
	}
	edit(q)
	if err := capacity.WriteJSON(qPath, q); err != nil {
		t.Fatal(err)
	}
	tt, err := capacity.LoadTTotal(tPath)
	if err != nil {
		t.Fatal(err)
	}
	if tt.QMaxSHA256, err = capacity.FileDigest(qPath); err != nil {
		t.Fatal(err)
	}
	if err := capacity.WriteJSON(tPath, tt); err != nil {
		t.Fatal(err)
	}
	p, err := capacity.LoadPlan(planPath)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := capacity.LoadMeasurement(qPath, tPath)
	if err != nil {
		t.Fatal(err)
	}
	in := p.Inputs
	rebuilt, err := capacity.FromArtifacts(catalogModel(t, "kokoro-82m"), ms, capacity.Options{
		SurgeRatio: in.SurgeRatio, DetectionBufferS: in.DetectionBufferS, PeakRPS: in.PeakRPS, TroughRPS: in.TroughRPS,
		MinInstances: in.MinInstances, MaxInstances: in.MaxInstances, ScaleInMargin: in.ScaleInMargin, Traces: in.Traces,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !rebuilt.Feasible() {
		t.Fatalf("the hand-made plan must be feasible to test the gate: %s", rebuilt.Verdict)
	}
	if err := capacity.WriteJSON(planPath, rebuilt); err != nil {
		t.Fatal(err)
	}
	return planPath
}

// synthWithPlan synthesizes the kokoro-82m app with autoscaling asked for and the plan at planPath.
func synthWithPlan(t *testing.T, planPath string) *App {
	t.Helper()
	on := true
	cdk := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	return Build(cdk, AppConfig{
		Model: catalogModel(t, "kokoro-82m"), ContainerDir: containerDir, ContainerDigest: fixtureDigest,
		ModuleDir: moduleDir, PlanPath: planPath, AutoscalingOverride: &on,
	})
}

// A forged qmax through cdk synth: a fixture qmax with every step's achieved_rps ×10,
// records_file naming a file that does not exist, the ttotal's qmax_sha256 recomputed and the plan rebuilt
// from them. Synthesis creates no scalable target and says why, as an error (autoscaling was asked for). The
// same set re-sealed without the edit synthesizes the scaling: the refusal is the edit's.
func TestPlanGateRefusesAQMaxItsRecordsDoNotGive(t *testing.T) {
	t.Run("achieved_rps ×10, records missing", func(t *testing.T) {
		plan := handMadeSet(t, func(q *capacity.QMax) {
			for i := range q.Steps {
				q.Steps[i].AchievedRPS *= 10
			}
			q.RecordsFile = "qmax-run9.records.jsonl.gz"
		})
		app := synthWithPlan(t, plan)
		tpl := assertions.Template_FromStack(app.Endpoint.Stack, nil)
		assert(t, "no scalable target", func() {
			tpl.ResourceCountIs(jsii.String("AWS::ApplicationAutoScaling::ScalableTarget"), jsii.Number(0))
		})
		assert(t, "unbounded measurement queue", func() {
			tpl.HasResourceProperties(jsii.String("AWS::SageMaker::Model"), map[string]interface{}{
				"PrimaryContainer": assertions.Match_ObjectLike(&map[string]interface{}{
					"Environment": assertions.Match_ObjectLike(&map[string]interface{}{"QUEUE_MAX_DEPTH": "0"}),
				}),
			})
		})
		ann := assertions.Annotations_FromStack(app.Endpoint.Stack)
		msg := assertions.Match_StringLikeRegexp(jsii.String(".*does not follow from its raw records.*qmax-run9\\.records\\.jsonl\\.gz is missing.*"))
		if errs := mustJSON(ann.FindError(jsii.String("*"), msg)); errs == "[]" {
			t.Errorf("want an error annotation naming the missing records; warnings: %s", mustJSON(ann.FindWarning(jsii.String("*"), assertions.Match_AnyValue())))
		}
		if app.Endpoint.Scaling != nil {
			t.Error("scaling was built from a refused plan")
		}
	})
	t.Run("re-sealed without an edit", func(t *testing.T) {
		app := synthWithPlan(t, handMadeSet(t, func(*capacity.QMax) {}))
		tpl := assertions.Template_FromStack(app.Endpoint.Stack, nil)
		assert(t, "scalable target", func() {
			tpl.ResourceCountIs(jsii.String("AWS::ApplicationAutoScaling::ScalableTarget"), jsii.Number(1))
		})
	})
}
