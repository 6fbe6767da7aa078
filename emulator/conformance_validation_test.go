package emulator_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	"github.com/aws/smithy-go"

	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// awsJSONCall posts body to the emulator as the awsJson1_1 operation target (e.g. "SageMaker.DescribeEndpoint")
// and returns the HTTP status, the error type and the message.
func awsJSONCall(t *testing.T, r *emulatortest.Emulator, target, service, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.URL+"/", strings.NewReader(body))
	req.Header.Set("X-Amz-Target", target)
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("Authorization", sigV4Header(r.Key.AccessKeyID, service))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var shape struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}
	json.NewDecoder(resp.Body).Decode(&shape)
	return resp.StatusCode, shape.Type, shape.Message
}

// TestDuplicateRequestKeyRefused: a control-plane request that names a member twice is refused before anything
// changes, naming the key, rather than accepted with the last value silently winning.
func TestDuplicateRequestKeyRefused(t *testing.T) {
	r := emulatortest.Start(t)
	emulatortest.Endpoint(t, r, "speech-dup")
	status, code, msg := awsJSONCall(t, r, "SageMaker.UpdateEndpointWeightsAndCapacities", "sagemaker",
		`{"EndpointName":"speech-dup","DesiredWeightsAndCapacities":[{"VariantName":"AllTraffic","DesiredInstanceCount":1,"DesiredInstanceCount":1000}]}`)
	if status != 400 || code != "SerializationException" || !strings.Contains(msg, "DesiredWeightsAndCapacities[0].DesiredInstanceCount") {
		t.Errorf("duplicate DesiredInstanceCount: %d %s %q, want 400 SerializationException naming the key", status, code, msg)
	}
	// The re-run of the pass: a spelling that differs only in case was accepted and applied (encoding/json
	// reads it into the same field, the last winning), at the top level too.
	for name, body := range map[string]string{
		"member":    `{"EndpointName":"speech-dup","DesiredWeightsAndCapacities":[{"VariantName":"AllTraffic","DesiredInstanceCount":2,"desiredinstancecount":1}]}`,
		"top level": `{"EndpointName":"speech-dup","desiredWeightsAndCapacities":[],"DesiredWeightsAndCapacities":[{"VariantName":"AllTraffic","DesiredInstanceCount":2}]}`,
	} {
		status, code, msg := awsJSONCall(t, r, "SageMaker.UpdateEndpointWeightsAndCapacities", "sagemaker", body)
		if status != 400 || code != "SerializationException" || !strings.Contains(msg, "only in case") {
			t.Errorf("%s in another case: %d %s %q, want 400 SerializationException naming it", name, status, code, msg)
		}
	}
}

// TestConformanceServiceModelValidation: every implemented operation checks its input
// against the service model's constraints (botocore's JSON models, generated into servicemodel_gen.go by `go
// generate ./emulator`) before anything else, and answers a violation with the service's validation error and
// the model's wording: "1 validation error detected: Value '...' at '...' failed to satisfy constraint:
// Member must ...". Each case is an input outside the model (found by a conformance probe), with the constraint it
// breaks, quoted from the model.
func TestConformanceServiceModelValidation(t *testing.T) {
	r := emulatortest.Start(t)
	c := r.Clients
	ctx := ctxFor(t, 60*time.Second)
	const name = "speech-validate"
	emulatortest.Endpoint(t, r, name)
	res := emulator.ResourceIDOf(name, "AllTraffic")
	if _, err := c.AutoScaling.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{
		ServiceNamespace: smNS, ResourceId: aws.String(res), ScalableDimension: smDim, MinCapacity: aws.Int32(1), MaxCapacity: aws.Int32(2),
	}); err != nil {
		t.Fatalf("RegisterScalableTarget: %v", err)
	}
	ttPolicy := func(policyName string, outCooldown int32) error {
		_, err := c.AutoScaling.PutScalingPolicy(ctx, &applicationautoscaling.PutScalingPolicyInput{
			PolicyName: aws.String(policyName), ServiceNamespace: smNS, ResourceId: aws.String(res), ScalableDimension: smDim,
			PolicyType: aastypes.PolicyTypeTargetTrackingScaling, TargetTrackingScalingPolicyConfiguration: &aastypes.TargetTrackingScalingPolicyConfiguration{
				TargetValue: aws.Float64(5), ScaleOutCooldown: aws.Int32(outCooldown),
				PredefinedMetricSpecification: &aastypes.PredefinedMetricSpecification{PredefinedMetricType: aastypes.MetricTypeSageMakerVariantConcurrentRequestsPerModelHighResolution}},
		})
		return err
	}
	for _, tc := range []struct {
		name string
		call func() error
		// code is the service's validation error; constraint what the message must say.
		code, constraint string
	}{
		// ProductionVariant.InstanceType: ProductionVariantInstanceType, an enum of ml.* types.
		{"InstanceType ml.bogus.xlarge", func() error {
			_, err := c.SageMaker.CreateEndpointConfig(ctx, &sagemaker.CreateEndpointConfigInput{EndpointConfigName: aws.String("speech-bogus"),
				ProductionVariants: []smtypes.ProductionVariant{{VariantName: aws.String("AllTraffic"), ModelName: aws.String(name),
					InitialInstanceCount: aws.Int32(1), InstanceType: "ml.bogus.xlarge"}}})
			return err
		}, "ValidationException", "at 'productionVariants.1.member.instanceType' failed to satisfy constraint: Member must satisfy enum value set: [ml.t2.medium"},
		// DesiredWeightAndCapacity.DesiredWeight: VariantWeight, "min":0.
		{"DesiredWeight -1", func() error {
			_, err := c.SageMaker.UpdateEndpointWeightsAndCapacities(ctx, &sagemaker.UpdateEndpointWeightsAndCapacitiesInput{EndpointName: aws.String(name),
				DesiredWeightsAndCapacities: []smtypes.DesiredWeightAndCapacity{{VariantName: aws.String("AllTraffic"), DesiredWeight: aws.Float32(-1)}}})
			return err
		}, "ValidationException", "Value '-1' at 'desiredWeightsAndCapacities.1.member.desiredWeight' failed to satisfy constraint: Member must have value greater than or equal to 0"},
		// ListEndpoints SortBy: EndpointSortKey, enum Name, CreationTime, Status.
		{"ListEndpoints SortBy Bogus", func() error {
			_, err := c.SageMaker.ListEndpoints(ctx, &sagemaker.ListEndpointsInput{SortBy: "Bogus"})
			return err
		}, "ValidationException", "Value 'Bogus' at 'sortBy' failed to satisfy constraint: Member must satisfy enum value set: [Name, CreationTime, Status]"},
		// ListEndpoints MaxResults: MaxResults, "min":1, "max":100.
		{"ListEndpoints MaxResults 101", func() error {
			_, err := c.SageMaker.ListEndpoints(ctx, &sagemaker.ListEndpointsInput{MaxResults: aws.Int32(101)})
			return err
		}, "ValidationException", "Value '101' at 'maxResults' failed to satisfy constraint: Member must have value less than or equal to 100"},
		// DescribeEndpoint EndpointName: EndpointName, "max":63, "pattern":"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}" (botocore 1.43; the API reference shows it with a leading ^); the
		// probe got "Could not find endpoint" for a name that breaks it.
		{"EndpointName breaking the pattern", func() error {
			_, err := c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("bad_name!")})
			return err
		}, "ValidationException", "Value 'bad_name!' at 'endpointName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}"},
		// PutScalingPolicy PolicyName: PolicyName, "max":256, "min":1, "pattern":"\p{Print}+".
		{"PolicyName of 257 characters", func() error { return ttPolicy(strings.Repeat("p", 257), 60) },
			"ValidationException", "at 'policyName' failed to satisfy constraint: Member must have length less than or equal to 256"},
		// ScaleOutCooldown: the model's Cooldown is an integer without a range; the emulator refuses a negative one
		// in the model's wording (AWS documents no minimum: the constraint is the emulator's).
		{"ScaleOutCooldown -1", func() error { return ttPolicy("negative-cooldown", -1) },
			"ValidationException", "Value '-1' at 'targetTrackingScalingPolicyConfiguration.scaleOutCooldown' failed to satisfy constraint: Member must have value greater than or equal to 0"},
		// InvokeEndpoint CustomAttributes: CustomAttributesHeader, "max":1024, "pattern":"\p{ASCII}*".
		{"CustomAttributes of 1025 characters", func() error {
			_, err := c.Runtime.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{EndpointName: aws.String(name), Body: []byte(`{"text":"hi"}`),
				ContentType: aws.String("application/json"), CustomAttributes: aws.String(strings.Repeat("a", 1025))})
			return err
		}, "ValidationError", "at 'customAttributes' failed to satisfy constraint: Member must have length less than or equal to 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != tc.code || !strings.Contains(ae.ErrorMessage(), tc.constraint) || !strings.HasPrefix(ae.ErrorMessage(), "1 validation error detected: ") {
				t.Fatalf("got %v; want %s saying %q", err, tc.code, tc.constraint)
			}
		})
	}

	// The local instance type stays accepted: an emulator extension of the enum (emulator.LocalInstanceType).
	t.Run("InstanceType local is the emulator's extension", func(t *testing.T) {
		if _, err := c.SageMaker.DescribeEndpointConfig(ctx, &sagemaker.DescribeEndpointConfigInput{EndpointConfigName: aws.String(name)}); err != nil {
			t.Fatalf("the endpoint config with InstanceType %q: %v", emulator.LocalInstanceType, err)
		}
	})
}

// lockedBuffer is an io.Writer the emulator's log goes to while a test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestConformanceRefusalNamesNoPath: a request without the emulator's access key gets AWS's common errors,
// MissingAuthenticationToken and InvalidClientTokenId (HTTP 403), whose answer tells how to get the key (the
// commands) and says nothing about this host's paths: not the state directory, not the credentials file. The
// emulator's own log names the credentials file.
func TestConformanceRefusalNamesNoPath(t *testing.T) {
	log := &lockedBuffer{}
	r := emulatortest.Start(t, func(o *emulator.Options) { o.Log = log })
	anon := emulatortest.NewClients(r.URL, r.Key)
	cfg := cloud.LocalConfig(r.URL, r.Key)
	cfg.Credentials = aws.AnonymousCredentials{}
	anon.SageMaker = sagemaker.NewFromConfig(cfg)
	anon.Runtime = sagemakerruntime.NewFromConfig(cfg)
	anon.AutoScaling = applicationautoscaling.NewFromConfig(cfg)
	anon.CloudWatch = cloudwatch.NewFromConfig(cfg)
	anon.Logs = cloudwatchlogs.NewFromConfig(cfg)
	other := emulatortest.NewClients(r.URL, cloud.LocalCredentials{AccessKeyID: emulator.AccessKeyPrefix + emulator.RandomToken(16), SecretAccessKey: r.Key.SecretAccessKey})
	credentials := filepath.Join(r.StateDir, emulator.CredentialsFile)
	for _, tc := range []struct {
		name    string
		clients emulatortest.Clients
		code    string
	}{{"without credentials", anon, "MissingAuthenticationToken"}, {"with another key", other, "InvalidClientTokenId"}} {
		for op, err := range sdkCalls(t, tc.clients) {
			code, status := errCode(err)
			_, msg := apiError(err)
			switch {
			case code != tc.code || status != http.StatusForbidden:
				t.Errorf("%s %s: %v (code %q, HTTP %d); want %s 403", op, tc.name, err, code, status, tc.code)
			case strings.Contains(msg, r.StateDir) || strings.Contains(msg, emulator.CredentialsFile):
				t.Errorf("%s %s: the answer %q names a local path (%s)", op, tc.name, msg, credentials)
			case !strings.Contains(msg, "speech-infra local status") || !strings.Contains(msg, "speech-infra deploy <model> --local"):
				t.Errorf("%s %s: the answer %q does not say how to get the key", op, tc.name, msg)
			}
		}
	}
	if !strings.Contains(log.String(), credentials) {
		t.Errorf("the emulator's log does not name its credentials file %s:\n%s", credentials, log.String())
	}
}
