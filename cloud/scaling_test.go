package cloud_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/emulator"
)

// ApplyScaling renders the spec of the valid fixture plan through the SDK on the emulator; ScalingDiff then
// finds nothing, names a value changed behind its back, and RemoveScaling removes the target and all four
// alarms. The endpoint needs no running instance for this (the emulator has no container binary here).
func TestApplyDiffRemoveScaling(t *testing.T) {
	dir := t.TempDir()
	emu, err := emulator.Open(emulator.Options{StateDir: dir, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- emu.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cfg := cloud.LocalConfig(emu.URL(), cloud.LocalCredentials(emu.Credentials()))
	sm, aas, cw := sagemaker.NewFromConfig(cfg), applicationautoscaling.NewFromConfig(cfg), cloudwatch.NewFromConfig(cfg)
	const name = "speech-kokoro-82m"
	if _, err := sm.CreateModel(ctx, &sagemaker.CreateModelInput{ModelName: aws.String(name), PrimaryContainer: &smtypes.ContainerDefinition{Image: aws.String("x")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sm.CreateEndpointConfig(ctx, &sagemaker.CreateEndpointConfigInput{EndpointConfigName: aws.String(name), ProductionVariants: []smtypes.ProductionVariant{{
		VariantName: aws.String("AllTraffic"), ModelName: aws.String(name), InitialInstanceCount: aws.Int32(1), InstanceType: "local",
	}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sm.CreateEndpoint(ctx, &sagemaker.CreateEndpointInput{EndpointName: aws.String(name), EndpointConfigName: aws.String(name)}); err != nil {
		t.Fatal(err)
	}

	plan, err := capacity.LoadPlan(filepath.Join("..", "testdata", "plans", "valid", capacity.PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	spec := capacity.ScalingSpecFor(name, "AllTraffic", plan)
	if diffs, err := cloud.ScalingDiff(ctx, aas, cw, spec); err != nil || len(diffs) == 0 || !strings.Contains(diffs[0], "no scalable target") {
		t.Fatalf("ScalingDiff before ApplyScaling = %v, %v; want no scalable target", diffs, err)
	}
	if err := cloud.ApplyScaling(ctx, aas, cw, spec); err != nil {
		t.Fatalf("ApplyScaling: %v", err)
	}
	if diffs, err := cloud.ScalingDiff(ctx, aas, cw, spec); err != nil || len(diffs) != 0 {
		t.Fatalf("ScalingDiff after ApplyScaling = %v, %v; want none", diffs, err)
	}
	out, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: capacity.AlarmNames(name)})
	if err != nil || len(out.MetricAlarms) != 4 {
		t.Fatalf("DescribeAlarms = %d alarms, %v; want 4", len(out.MetricAlarms), err)
	}

	// Someone edits the latency alarm's threshold: the diff names it; applying again restores it.
	changed := spec
	changed.Alarms = append([]capacity.AlarmSpec(nil), spec.Alarms...)
	changed.Alarms[2].Threshold *= 2
	if err := cloud.ApplyScaling(ctx, aas, cw, changed); err != nil {
		t.Fatal(err)
	}
	diffs, err := cloud.ScalingDiff(ctx, aas, cw, spec)
	if err != nil || len(diffs) != 1 || !strings.Contains(diffs[0], spec.Alarms[2].Name+" threshold") {
		t.Fatalf("ScalingDiff after the edit = %v, %v; want the latency threshold only", diffs, err)
	}

	removed, err := cloud.RemoveScaling(ctx, aas, cw, name, "AllTraffic")
	if err != nil || !removed {
		t.Fatalf("RemoveScaling = %v, %v; want removed", removed, err)
	}
	out, err = cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNamePrefix: aws.String(name)})
	if err != nil || len(out.MetricAlarms) != 0 {
		t.Errorf("after RemoveScaling %d alarms remain (%v)", len(out.MetricAlarms), err)
	}
	if removed, err := cloud.RemoveScaling(ctx, aas, cw, name, "AllTraffic"); err != nil || removed {
		t.Errorf("RemoveScaling again = %v, %v; want nothing removed", removed, err)
	}
}
