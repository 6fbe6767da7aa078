package stacks

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/capacity/plantest"
)

// A plan measured on another instance type: a plan measured on ml.g6.xlarge (the valid fixture's set, as
// tts-bench compare keeps it for that type, planned with the catalog entry as tts-bench plan --from-compare
// does). With -c instance_type=ml.g6.xlarge (AppConfig.InstanceType) the gate accepts it and the endpoint
// config deploys ml.g6.xlarge with the scaling constructs; without it the catalog's ml.g5.xlarge is deployed,
// and the gate refuses the plan naming both types and -c instance_type.
func TestEndpointDeploysTheInstanceTypeAsked(t *testing.T) {
	m := catalogModel(t, "kokoro-82m")
	if m.InstanceType == "ml.g6.xlarge" {
		t.Fatalf("the test needs a catalog type other than ml.g6.xlarge, got %s", m.InstanceType)
	}
	dir := t.TempDir()
	valid := filepath.Join("..", "testdata", "plans", "valid")
	plantest.WriteTypeSet(t, valid, dir, "ml.g6.xlarge")
	fixture, err := capacity.LoadPlan(filepath.Join(valid, capacity.PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := capacity.LoadMeasurement(filepath.Join(dir, capacity.QMaxFile), filepath.Join(dir, capacity.TTotalFile))
	if err != nil {
		t.Fatal(err)
	}
	in := fixture.Inputs
	p, err := capacity.FromArtifacts(m, ms, capacity.Options{
		SurgeRatio: in.SurgeRatio, DetectionBufferS: in.DetectionBufferS, PeakRPS: in.PeakRPS, TroughRPS: in.TroughRPS,
		MinInstances: in.MinInstances, MaxInstances: in.MaxInstances, ScaleInMargin: in.ScaleInMargin, Traces: in.Traces,
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Fingerprint.InstanceType != "ml.g6.xlarge" || !p.Feasible() {
		t.Fatalf("the ml.g6.xlarge plan: type %s, verdict %s", p.Fingerprint.InstanceType, p.Verdict)
	}
	planPath := filepath.Join(dir, capacity.PlanFile)
	if err := capacity.WriteJSON(planPath, p); err != nil {
		t.Fatal(err)
	}
	on := true
	synth := func(instanceType string) *App {
		cdk := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
		return Build(cdk, AppConfig{
			Model: m, InstanceType: instanceType, ContainerDir: containerDir, ContainerDigest: fixtureDigest,
			ModuleDir: moduleDir, PlanPath: planPath, AutoscalingOverride: &on,
		})
	}

	t.Run("-c instance_type=ml.g6.xlarge", func(t *testing.T) {
		app := synth("ml.g6.xlarge")
		if app.Endpoint.Scaling == nil {
			t.Fatalf("the gate refused the plan for the type deployed: %s", mustJSON(assertions.Annotations_FromStack(app.Endpoint.Stack).FindError(jsii.String("*"), assertions.Match_AnyValue())))
		}
		tpl := assertions.Template_FromStack(app.Endpoint.Stack, nil)
		assert(t, "the variant runs ml.g6.xlarge", func() {
			tpl.HasResourceProperties(jsii.String("AWS::SageMaker::EndpointConfig"), map[string]interface{}{
				"ProductionVariants": []interface{}{assertions.Match_ObjectLike(&map[string]interface{}{
					"VariantName": "AllTraffic", "InstanceType": "ml.g6.xlarge",
				})},
			})
		})
		assert(t, "scaling from the plan", func() {
			tpl.ResourceCountIs(jsii.String("AWS::ApplicationAutoScaling::ScalableTarget"), jsii.Number(1))
			tpl.ResourceCountIs(jsii.String("AWS::ApplicationAutoScaling::ScalingPolicy"), jsii.Number(2))
			tpl.HasResourceProperties(jsii.String("AWS::ApplicationAutoScaling::ScalableTarget"), map[string]interface{}{
				"MinCapacity": p.Derived.MinInstances, "MaxCapacity": p.Derived.MaxInstances,
			})
		})
		// ml.g6.xlarge has NVMe instance storage: SageMaker rejects a KMS key on its endpoint config.
		assert(t, "no KMS key on an instance-storage type", func() { tpl.ResourceCountIs(jsii.String("AWS::KMS::Key"), jsii.Number(0)) })
		if d := *app.Endpoint.Stack.TemplateOptions().Description(); !strings.Contains(d, "kokoro-82m on ml.g6.xlarge") {
			t.Errorf("stack description %q does not name the type deployed", d)
		}
	})

	t.Run("the catalog's type", func(t *testing.T) {
		app := synth("")
		if app.Endpoint.Scaling != nil {
			t.Fatal("scaling built from a plan measured on another type")
		}
		tpl := assertions.Template_FromStack(app.Endpoint.Stack, nil)
		assert(t, "the variant runs the catalog's type", func() {
			tpl.HasResourceProperties(jsii.String("AWS::SageMaker::EndpointConfig"), map[string]interface{}{
				"ProductionVariants": []interface{}{assertions.Match_ObjectLike(&map[string]interface{}{"InstanceType": m.InstanceType})},
			})
		})
		assert(t, "no scalable target", func() {
			tpl.ResourceCountIs(jsii.String("AWS::ApplicationAutoScaling::ScalableTarget"), jsii.Number(0))
		})
		ann := assertions.Annotations_FromStack(app.Endpoint.Stack)
		msg := assertions.Match_StringLikeRegexp(jsii.String(".*measured for instance type ml\\.g6\\.xlarge but the deployment has " +
			strings.ReplaceAll(m.InstanceType, ".", "\\.") + ".*-c instance_type=ml\\.g6\\.xlarge.*"))
		if errs := mustJSON(ann.FindError(jsii.String("*"), msg)); errs == "[]" {
			t.Errorf("want an error naming both types and -c instance_type; errors: %s", mustJSON(ann.FindError(jsii.String("*"), assertions.Match_AnyValue())))
		}
	})
}
