package cloud_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/cloud/cloudtest"
)

// withEnvironment makes the SageMaker double answer the endpoint config and model the endpoint runs, with env
// as the model's container environment.
func withEnvironment(t *testing.T, d *deployed, cl cloud.DriftClients, env map[string]string) {
	t.Helper()
	if d.endpoint != nil {
		d.endpoint.EndpointConfigName = aws.String(worldEndpoint + "-cfg1")
	}
	sm := cl.SageMaker.(*cloudtest.SageMaker)
	sm.DescribeEndpointConfigFn = func(_ context.Context, in *sagemaker.DescribeEndpointConfigInput, _ ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointConfigOutput, error) {
		if aws.ToString(in.EndpointConfigName) != worldEndpoint+"-cfg1" {
			return nil, notFound("endpoint config " + aws.ToString(in.EndpointConfigName))
		}
		return &sagemaker.DescribeEndpointConfigOutput{EndpointConfigName: in.EndpointConfigName,
			ProductionVariants: []smtypes.ProductionVariant{{VariantName: aws.String(worldVariant), ModelName: aws.String(worldEndpoint + "-model1")}}}, nil
	}
	sm.DescribeModelFn = func(_ context.Context, in *sagemaker.DescribeModelInput, _ ...func(*sagemaker.Options)) (*sagemaker.DescribeModelOutput, error) {
		if aws.ToString(in.ModelName) != worldEndpoint+"-model1" {
			return nil, notFound("model " + aws.ToString(in.ModelName))
		}
		return &sagemaker.DescribeModelOutput{ModelName: in.ModelName, PrimaryContainer: &smtypes.ContainerDefinition{Environment: env}}, nil
	}
}

// A deploy killed mid-way can leave QUEUE_MAX_DEPTH=0 with the scalable target, policies and alarms in place.
// Drift compares the container's environment with the plan's and flags scaling without a shield.
func TestDriftComparesTheContainerEnvironment(t *testing.T) {
	plan, err := capacity.LoadPlan(fixturePlan("valid"))
	if err != nil {
		t.Fatal(err)
	}
	depth := plan.Derived.QueueMaxDepth
	wantPlan := cloud.ContainerExpectation{QueueMaxDepth: depth, FirstAudioTargetMs: 333}
	shielded := map[string]string{"QUEUE_MAX_DEPTH": itoa(depth), "FIRST_AUDIO_TARGET_MS": "333", "ENGINE": "espeak-ng"}
	with := func(env map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range env {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "-" {
				delete(out, kv[i])
			} else {
				out[kv[i]] = kv[i+1]
			}
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		plan    bool
		scaling bool
		env     map[string]string
		want    string // the error findings' codes, space-separated
		detail  string
	}{
		{"plan deployed with its shield", true, true, shielded, "", ""},
		{"plan deployed, SCHEDULER=deadline spelled out", true, true, with(shielded, "SCHEDULER", "deadline"), "", ""},
		{"plan's scaling over QUEUE_MAX_DEPTH=0", true, true, with(shielded, "QUEUE_MAX_DEPTH", "0"), "shield_missing environment_mismatch", `QUEUE_MAX_DEPTH="0", the plan deploys "` + itoa(depth) + `"`},
		{"plan's scaling over an unset QUEUE_MAX_DEPTH", true, true, with(shielded, "QUEUE_MAX_DEPTH", "-"), "shield_missing environment_mismatch", "QUEUE_MAX_DEPTH=unset"},
		{"plan's scaling over a garbled QUEUE_MAX_DEPTH", true, true, with(shielded, "QUEUE_MAX_DEPTH", "16x"), "shield_missing environment_mismatch", `QUEUE_MAX_DEPTH="16x"`},
		{"another shield depth", true, true, with(shielded, "QUEUE_MAX_DEPTH", "1000"), "environment_mismatch", `QUEUE_MAX_DEPTH="1000"`},
		{"another first-audio target", true, true, with(shielded, "FIRST_AUDIO_TARGET_MS", "5000"), "environment_mismatch", `FIRST_AUDIO_TARGET_MS="5000", the plan deploys "333"`},
		{"another scheduler", true, true, with(shielded, "SCHEDULER", "fifo"), "environment_mismatch", `SCHEDULER="fifo", the plan deploys "deadline"`},
		{"no plan, measurement configuration", false, false, with(shielded, "QUEUE_MAX_DEPTH", "0"), "", ""},
		{"no plan, a shield left", false, false, shielded, "environment_mismatch", `the measurement configuration deploys "0"`},
		{"no plan, another scheduler (a warning)", false, false, with(shielded, "QUEUE_MAX_DEPTH", "0", "SCHEDULER", "fifo", "FIRST_AUDIO_TARGET_MS", "-"), "", `SCHEDULER="fifo", the measurement configuration deploys "deadline": a measurement now measures another configuration`},
		{"no plan, a target left without a shield", false, true, with(shielded, "QUEUE_MAX_DEPTH", "0"), "shield_missing target_orphaned policy_orphaned policy_orphaned", "without a queue shield"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, d := planned(t)
			if !tc.scaling {
				d.target, d.policies, d.alarms = nil, nil, nil
			}
			cl := d.clients()
			withEnvironment(t, d, cl, tc.env)
			o := cloud.DriftOptions{Model: "espeak-ng", Endpoint: worldEndpoint, Variant: worldVariant, JournalDir: t.TempDir(), CatalogInstances: int32(spec.MinInstances)}
			want := wantPlan
			if tc.plan {
				o.Spec, o.PlanSource = &spec, "plan.json"
			} else {
				want.QueueMaxDepth = 0
				d.endpoint = endpointIn(smtypes.EndpointStatusInService, int32(spec.MinInstances))
				d.endpoint.EndpointConfigName = aws.String(worldEndpoint + "-cfg1")
			}
			o.Container = &want
			rep, err := cloud.Drift(context.Background(), cl, o)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range rep.Findings {
				if f.Severity == cloud.SeverityError {
					got = append(got, f.Code)
				}
			}
			if strings.Join(got, " ") != tc.want {
				t.Fatalf("error findings %q, want %q: %+v", got, tc.want, rep.Findings)
			}
			if tc.detail != "" {
				found := false
				for _, f := range rep.Findings {
					found = found || strings.Contains(f.Detail, tc.detail) && f.Remediation != ""
				}
				if !found {
					t.Errorf("no finding says %q with a remediation: %+v", tc.detail, rep.Findings)
				}
			}
			// Without a container expectation nothing about the environment is read (qmax and ttotal's check).
			o.Container = nil
			rep, err = cloud.Drift(context.Background(), cl, o)
			if err != nil || hasCode(rep, cloud.FindingShieldMissing) || hasCode(rep, cloud.FindingEnvironmentMismatch) {
				t.Fatalf("without Container: %v %+v", err, rep.Findings)
			}

			// Validate checks the same.
			checks, err := cloud.ValidateContainer(context.Background(), cl.SageMaker, worldEndpoint, worldVariant, want, tc.scaling)
			if err != nil {
				t.Fatal(err)
			}
			if fails := cloud.Failed(checks); (fails == 0) != (tc.want == "" && !strings.Contains(tc.name, "warning")) {
				t.Fatalf("validate: %d failed checks for %q: %+v", fails, tc.want, checks)
			}
			if strings.Contains(tc.want, "shield_missing") && !hasFailed(checks, "queue shield under scaling") {
				t.Errorf("validate has no failed shield check: %+v", checks)
			}
		})
	}
}

func hasFailed(checks []cloud.Check, name string) bool {
	for _, c := range checks {
		if c.Name == name && !c.Pass {
			return true
		}
	}
	return false
}

func itoa(n int) string { return strconv.Itoa(n) }

func hasCode(r cloud.DriftReport, code string) bool {
	for _, f := range r.Findings {
		if f.Code == code {
			return true
		}
	}
	return false
}
