package emulator_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	rttypes "github.com/aws/aws-sdk-go-v2/service/sagemakerruntime/types"

	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// wantLimit fails unless err is SageMaker's ResourceLimitExceeded.
func wantLimit(t *testing.T, what string, err error) {
	t.Helper()
	var rle *smtypes.ResourceLimitExceeded
	if !errors.As(err, &rle) || !strings.Contains(aws.ToString(rle.Message), "for endpoint usage") {
		t.Errorf("%s: %v, want ResourceLimitExceeded", what, err)
	}
}

// A per-instance-type quota caps what all endpoints together may ask for, answered as SageMaker answers:
// ResourceLimitExceeded, which the API reference lists for CreateEndpoint, UpdateEndpoint and
// UpdateEndpointWeightsAndCapacities: "You have exceeded an SageMaker resource limit. For example, you might
// have too many training jobs created." (HTTP 400). Nothing changes when it is refused, and a scaling activity
// that would exceed it fails instead of starting instances.
func TestInstanceQuota(t *testing.T) {
	dir := t.TempDir()
	r := startFleet(t, emulator.Options{StateDir: dir, ContainerBin: emulatortest.ContainerBinary(t), InstanceQuota: 2})
	c := r.Clients
	ctx := ctxFor(t, 2*time.Minute)
	const name = "speech-quota"
	emulatortest.Endpoint(t, r, name, emulatortest.Instances(1), emulatortest.InService())

	// UpdateEndpointWeightsAndCapacities with a million instances: refused, nothing changed, nothing started.
	_, err := c.SageMaker.UpdateEndpointWeightsAndCapacities(ctx, &sagemaker.UpdateEndpointWeightsAndCapacitiesInput{
		EndpointName: aws.String(name),
		DesiredWeightsAndCapacities: []smtypes.DesiredWeightAndCapacity{{VariantName: aws.String("AllTraffic"),
			DesiredInstanceCount: aws.Int32(1000000), DesiredWeight: aws.Float32(0.5)}},
	})
	wantLimit(t, "UpdateEndpointWeightsAndCapacities(1000000)", err)
	d := describe(ctx, t, c, name)
	v := d.ProductionVariants[0]
	if d.EndpointStatus != smtypes.EndpointStatusInService || aws.ToInt32(v.DesiredInstanceCount) != 1 || aws.ToFloat32(v.CurrentWeight) != 1 {
		t.Errorf("after the refused update: %s, desired %d, weight %g; want InService, 1, 1 unchanged", d.EndpointStatus, aws.ToInt32(v.DesiredInstanceCount), aws.ToFloat32(v.CurrentWeight))
	}
	var st emulator.State
	b, _ := os.ReadFile(filepath.Join(dir, "state.json"))
	if err := json.Unmarshal(b, &st); err != nil || st.Endpoints[name] == nil || st.Endpoints[name].Desired != 1 {
		t.Errorf("state.json after the refused update: %v, %+v; want desired 1", err, st.Endpoints[name])
	}

	// CreateEndpoint: a second endpoint of the same type needing 2 more (1 + 2 > 2) is refused.
	emulatortest.Config(t, r, "speech-quota-two", name, emulatortest.Instances(2))
	_, err = c.SageMaker.CreateEndpoint(ctx, &sagemaker.CreateEndpointInput{EndpointName: aws.String("speech-quota-2"), EndpointConfigName: aws.String("speech-quota-two")})
	wantLimit(t, "CreateEndpoint over the quota", err)
	if _, err := c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("speech-quota-2")}); err == nil {
		t.Errorf("the refused endpoint exists")
	}
	// UpdateEndpoint: a blue/green update to 2 instances runs beside the 1 it replaces (3 > 2): refused.
	_, err = c.SageMaker.UpdateEndpoint(ctx, &sagemaker.UpdateEndpointInput{EndpointName: aws.String(name), EndpointConfigName: aws.String("speech-quota-two")})
	wantLimit(t, "UpdateEndpoint over the quota", err)
	if d := describe(ctx, t, c, name); d.EndpointStatus != smtypes.EndpointStatusInService || d.PendingDeploymentSummary != nil {
		t.Errorf("after the refused UpdateEndpoint: %s, pending %v; want InService with nothing pending", d.EndpointStatus, d.PendingDeploymentSummary)
	}
	// Within the quota is accepted.
	if _, err := c.SageMaker.UpdateEndpointWeightsAndCapacities(ctx, &sagemaker.UpdateEndpointWeightsAndCapacitiesInput{
		EndpointName:                aws.String(name),
		DesiredWeightsAndCapacities: []smtypes.DesiredWeightAndCapacity{{VariantName: aws.String("AllTraffic"), DesiredInstanceCount: aws.Int32(2)}},
	}); err != nil {
		t.Fatalf("UpdateEndpointWeightsAndCapacities(2) within the quota: %v", err)
	}
	emulatortest.WaitInService(ctx, t, c.SageMaker, name)

	// The autoscaler: a scalable target whose minimum (5) is over the quota makes Application Auto Scaling set
	// the capacity; SageMaker refuses, and the activity is Failed with the reason, the endpoint unchanged.
	if _, err := c.AutoScaling.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{
		ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String(emulator.ResourceIDOf(name, "AllTraffic")),
		ScalableDimension: aastypes.ScalableDimensionSageMakerVariantDesiredInstanceCount,
		MinCapacity:       aws.Int32(5), MaxCapacity: aws.Int32(6),
	}); err != nil {
		t.Fatalf("RegisterScalableTarget: %v", err)
	}
	acts, err := c.AutoScaling.DescribeScalingActivities(ctx, &applicationautoscaling.DescribeScalingActivitiesInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker})
	if err != nil || len(acts.ScalingActivities) == 0 {
		t.Fatalf("DescribeScalingActivities: %v, %d activities", err, len(acts.ScalingActivities))
	}
	if a := acts.ScalingActivities[0]; a.StatusCode != aastypes.ScalingActivityStatusCodeFailed || !strings.Contains(aws.ToString(a.StatusMessage), "ResourceLimitExceeded") {
		t.Errorf("scaling activity over the quota: %s %q, want Failed with ResourceLimitExceeded", a.StatusCode, aws.ToString(a.StatusMessage))
	}
	if n := aws.ToInt32(describe(ctx, t, c, name).ProductionVariants[0].DesiredInstanceCount); n != 2 {
		t.Errorf("desired count after the failed activity = %d, want 2", n)
	}
}

// The state read at start is validated: an entry the emulator cannot run from is refused with the file and
// the entry named, never a panic; a count over the quota is lowered with the reason shown.
func TestStateValidation(t *testing.T) {
	dir := t.TempDir()
	// A real state file, written by the emulator itself.
	r := startFleet(t, emulator.Options{StateDir: dir})
	c := r.Clients
	ctx := ctxFor(t, time.Minute)
	if _, err := c.SageMaker.CreateModel(ctx, &sagemaker.CreateModelInput{ModelName: aws.String("m"),
		PrimaryContainer: &smtypes.ContainerDefinition{Image: aws.String("local/speech-container")}}); err != nil {
		t.Fatal(err)
	}
	emulatortest.Config(t, r, "cfg", "m", emulatortest.Instances(1))
	if _, err := c.SageMaker.CreateEndpoint(ctx, &sagemaker.CreateEndpointInput{EndpointName: aws.String("ep"), EndpointConfigName: aws.String("cfg")}); err != nil {
		t.Fatal(err)
	}
	r.Stop()
	path := filepath.Join(dir, "state.json")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	endpoint := func(m map[string]any) map[string]any { return m["endpoints"].(map[string]any)["ep"].(map[string]any) }
	for _, tc := range []struct {
		what, want string
		state      []byte
	}{
		{"null endpoint", `endpoints["ep"] is null`, edit(func(m map[string]any) { m["endpoints"].(map[string]any)["ep"] = nil })},
		{"negative desired", `endpoints["ep"].desired is -1`, edit(func(m map[string]any) { endpoint(m)["desired"] = -1 })},
		{"null model", `models["m"] is null`, edit(func(m map[string]any) { m["models"].(map[string]any)["m"] = nil })},
		{"null config", `endpoint_configs["cfg"] is null`, edit(func(m map[string]any) { m["endpoint_configs"].(map[string]any)["cfg"] = nil })},
		{"config without variants", `endpoint_configs["cfg"] has 0 variants`, edit(func(m map[string]any) {
			m["endpoint_configs"].(map[string]any)["cfg"].(map[string]any)["variants"] = []any{}
		})},
		{"unknown status", `endpoints["ep"].status is "Sleeping"`, edit(func(m map[string]any) { endpoint(m)["status"] = "Sleeping" })},
		{"null policy", `policies["k"] is null`, edit(func(m map[string]any) { m["policies"] = map[string]any{"k": nil} })},
		{"null activity", `activities[0] is null`, edit(func(m map[string]any) { m["activities"] = []any{nil} })},
	} {
		if err := os.WriteFile(path, tc.state, 0o644); err != nil {
			t.Fatal(err)
		}
		emu, err := emulator.Open(emulator.Options{StateDir: dir, Addr: "127.0.0.1:0"})
		if err == nil {
			emu.CloseUnrun()
			t.Errorf("%s: the emulator opened the state", tc.what)
			continue
		}
		if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want the file %s and %q named", tc.what, err, path, tc.want)
		}
	}

	// A million desired instances (which would start an endless crash loop): repaired to the quota (the reason is
	// logged and set as FailureReason; without a container binary the failed start then replaces that reason).
	if err := os.WriteFile(path, edit(func(m map[string]any) {
		endpoint(m)["desired"] = 1000000
		endpoint(m)["status"] = emulator.StatusInService
	}), 0o644); err != nil {
		t.Fatal(err)
	}
	r = startFleet(t, emulator.Options{StateDir: dir, InstanceQuota: 3})
	c = r.Clients
	eventually(t, hangBound, "the count to be lowered to the quota", func() bool {
		d, err := c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("ep")})
		return err == nil && aws.ToInt32(d.ProductionVariants[0].DesiredInstanceCount) == 3
	})
}

// A payload over SageMaker's limit is refused with ValidationError (HTTP 400), not cut and forwarded. The
// limit is the service model's: both InvokeEndpoint's and InvokeEndpointWithResponseStream's Body are a
// BodyBlob of at most 6291456 bytes (botocore data sagemaker-runtime/2017-05-13/service-2.json, which the AWS
// CLI ships; the API reference lists ValidationError as "Inspect your request and try again.", HTTP 400).
func TestPayloadLimit(t *testing.T) {
	r := startFleet(t, emulator.Options{StateDir: t.TempDir(), ContainerBin: emulatortest.ContainerBinary(t)})
	c := r.Clients
	ctx := ctxFor(t, 2*time.Minute)
	const name = "speech-payload"
	emulatortest.Endpoint(t, r, name, emulatortest.Instances(1), emulatortest.InService())

	over := make([]byte, emulator.MaxPayload+1)
	var ve *rttypes.ValidationError
	_, err := c.Runtime.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{EndpointName: aws.String(name), ContentType: aws.String("application/json"), Body: over})
	if !errors.As(err, &ve) || !strings.Contains(aws.ToString(ve.Message), "6291456") {
		t.Errorf("InvokeEndpoint with %d bytes: %v, want ValidationError naming the limit", len(over), err)
	}
	_, err = c.Runtime.InvokeEndpointWithResponseStream(ctx, &sagemakerruntime.InvokeEndpointWithResponseStreamInput{EndpointName: aws.String(name), ContentType: aws.String("application/json"), Body: over})
	if !errors.As(err, &ve) || !strings.Contains(aws.ToString(ve.Message), "6291456") {
		t.Errorf("InvokeEndpointWithResponseStream with %d bytes: %v, want ValidationError naming the limit", len(over), err)
	}
	// At the limit the payload is the container's to judge (it answers with its own error, as a ModelError).
	_, err = c.Runtime.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{EndpointName: aws.String(name), ContentType: aws.String("application/json"), Body: over[:emulator.MaxPayload]})
	if errors.As(err, &ve) {
		t.Errorf("InvokeEndpoint with exactly %d bytes: %v, want it forwarded", emulator.MaxPayload, err)
	}
	// The endpoint still serves.
	if _, err := invokeText(ctx, c, name, "still here"); err != nil {
		t.Errorf("invoke after the refused payloads: %v", err)
	}
}
