package stacks

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/models"
)

// assert runs a CDK assertion. A failed assertion panics inside jsii; recovering here turns it into a test
// failure instead of killing the test binary.
func assert(t *testing.T, what string, fn func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	fn()
}

func catalogModel(t *testing.T, id string) models.Model {
	t.Helper()
	cat, err := models.Default()
	if err != nil {
		t.Fatalf("catalog: %v", err)
	}
	m, err := cat.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type synthesized struct {
	app  *App
	cdk  awscdk.App
	dir  string
	once sync.Once
}

var (
	appsMu sync.Mutex
	apps   = map[string]*synthesized{}
)

// containerDir is the real inference container directory the image asset stages.
const containerDir = "../container"

// moduleDir is the Go module root the model-cache Lambda is built from.
const moduleDir = ".."

// buildApp synthesizes the whole app for one model once per test binary and shares it between tests.
func buildApp(t *testing.T, modelID string) *synthesized {
	t.Helper()
	appsMu.Lock()
	s, ok := apps[modelID]
	if !ok {
		s = &synthesized{}
		apps[modelID] = s
	}
	appsMu.Unlock()
	s.once.Do(func() {
		s.dir, _ = os.MkdirTemp("", "cdkout-")
		s.cdk = awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(s.dir)})
		s.app = Build(s.cdk, AppConfig{Model: catalogModel(t, modelID), ContainerDir: containerDir, ModuleDir: moduleDir})
		s.cdk.Synth(nil)
	})
	if s.app == nil {
		t.Fatalf("synthesis of %s failed earlier", modelID)
	}
	return s
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, s := range apps {
		if s.dir != "" {
			os.RemoveAll(s.dir)
		}
	}
	jsii.Close()
	os.Exit(code)
}

func TestWeightsBucketIsSecured(t *testing.T) {
	// GIVEN the app for kokoro-82m WHEN synthesized THEN the weights bucket is encrypted, private, versioned,
	// retained, logs its access and refuses plain HTTP.
	s := buildApp(t, "kokoro-82m")
	tpl := assertions.Template_FromStack(s.app.Foundation.Stack, nil)
	assert(t, "weights bucket properties", func() {
		tpl.HasResource(jsii.String("AWS::S3::Bucket"), map[string]interface{}{
			"DeletionPolicy":      "Retain",
			"UpdateReplacePolicy": "Retain",
			"Properties": map[string]interface{}{
				"BucketEncryption": map[string]interface{}{"ServerSideEncryptionConfiguration": []interface{}{
					map[string]interface{}{"ServerSideEncryptionByDefault": map[string]interface{}{"SSEAlgorithm": "AES256"}},
				}},
				"PublicAccessBlockConfiguration": map[string]interface{}{
					"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
				},
				"VersioningConfiguration": map[string]interface{}{"Status": "Enabled"},
				"LoggingConfiguration":    assertions.Match_ObjectLike(&map[string]interface{}{"LogFilePrefix": "weights/"}),
			},
		})
	})
	assert(t, "two buckets: weights and access logs", func() { tpl.ResourceCountIs(jsii.String("AWS::S3::Bucket"), jsii.Number(2)) })
	assert(t, "TLS enforced", func() {
		tpl.HasResourceProperties(jsii.String("AWS::S3::BucketPolicy"), map[string]interface{}{
			"PolicyDocument": map[string]interface{}{"Statement": assertions.Match_ArrayWith(&[]interface{}{
				assertions.Match_ObjectLike(&map[string]interface{}{
					"Effect":    "Deny",
					"Action":    "s3:*",
					"Condition": map[string]interface{}{"Bool": map[string]interface{}{"aws:SecureTransport": "false"}},
				}),
			})},
		})
	})
}

// policyStatements returns the statements of the execution role's policy from the synthesized template.
func policyStatements(t *testing.T, s *synthesized) []map[string]any {
	t.Helper()
	tpl := assertions.Template_FromStack(s.app.Foundation.Stack, nil)
	policies := tpl.FindResources(jsii.String("AWS::IAM::Policy"), nil)
	if len(*policies) != 1 {
		t.Fatalf("want exactly one IAM policy, got %d", len(*policies))
	}
	var out []map[string]any
	for _, p := range *policies {
		raw, _ := json.Marshal(p)
		var res struct {
			Properties struct {
				PolicyDocument struct{ Statement []map[string]any }
			}
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		out = res.Properties.PolicyDocument.Statement
	}
	return out
}

func TestExecutionRoleIsLeastPrivilege(t *testing.T) {
	// GIVEN the synthesized foundation WHEN reading the execution role's policy THEN S3 reads are limited to
	// the models/ prefix, and Resource "*" appears only for the two actions AWS cannot scope.
	s := buildApp(t, "kokoro-82m")
	stmts := policyStatements(t, s)
	bySid := map[string]map[string]any{}
	for _, st := range stmts {
		bySid[fmt.Sprint(st["Sid"])] = st
		if st["Resource"] == "*" {
			switch fmt.Sprint(st["Action"]) {
			case "ecr:GetAuthorizationToken", "cloudwatch:PutMetricData":
			default:
				t.Errorf("statement %v grants %v on Resource *", st["Sid"], st["Action"])
			}
		}
		if strings.Contains(fmt.Sprint(st["Action"]), "*") {
			t.Errorf("statement %v uses a wildcard action %v", st["Sid"], st["Action"])
		}
	}
	read, ok := bySid["ReadModelWeights"]
	if !ok {
		t.Fatalf("no ReadModelWeights statement in %v", stmts)
	}
	if got := mustJSON(read["Resource"]); !strings.Contains(got, `"/models/*"`) || !strings.Contains(got, "WeightsBucket") {
		t.Errorf("ReadModelWeights resource = %s, want the weights bucket's models/* objects", got)
	}
	if read["Action"] != "s3:GetObject" {
		t.Errorf("ReadModelWeights action = %v, want s3:GetObject only", read["Action"])
	}
	list := bySid["ListModelWeights"]
	if got := mustJSON(list["Condition"]); !strings.Contains(got, `"s3:prefix":["models/*"]`) {
		t.Errorf("ListModelWeights condition = %s", got)
	}
	if got := mustJSON(bySid["PutEndpointMetrics"]["Condition"]); !strings.Contains(got, "cloudwatch:namespace") {
		t.Errorf("PutMetricData is not limited by namespace: %s", got)
	}
	if got := mustJSON(bySid["WriteEndpointLogs"]["Resource"]); !strings.Contains(got, "/aws/sagemaker/Endpoints/speech-*") {
		t.Errorf("logs resource = %s", got)
	}
	for _, st := range stmts {
		if strings.Contains(fmt.Sprint(st["Action"]), "s3:Put") || strings.Contains(fmt.Sprint(st["Action"]), "s3:Delete") {
			t.Errorf("execution role may write the bucket: %v", st)
		}
	}
	tpl := assertions.Template_FromStack(s.app.Foundation.Stack, nil)
	assert(t, "role trusts SageMaker only", func() {
		tpl.HasResourceProperties(jsii.String("AWS::IAM::Role"), map[string]interface{}{
			"AssumeRolePolicyDocument": map[string]interface{}{"Statement": []interface{}{map[string]interface{}{
				"Action": "sts:AssumeRole", "Effect": "Allow",
				"Principal": map[string]interface{}{"Service": "sagemaker.amazonaws.com"},
			}}},
		})
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestEndpointFromCatalog(t *testing.T) {
	for _, id := range []string{"kokoro-82m", "espeak-ng"} {
		t.Run(id, func(t *testing.T) {
			// GIVEN the catalog entry WHEN the app is synthesized THEN model, endpoint config and endpoint carry its values.
			m := catalogModel(t, id)
			s := buildApp(t, id)
			tpl := assertions.Template_FromStack(s.app.Endpoint.Stack, nil)
			assert(t, "endpoint name", func() {
				tpl.HasResourceProperties(jsii.String("AWS::SageMaker::Endpoint"), map[string]interface{}{"EndpointName": "speech-" + id})
			})
			assert(t, "endpoint config variant", func() {
				tpl.HasResourceProperties(jsii.String("AWS::SageMaker::EndpointConfig"), map[string]interface{}{
					"ProductionVariants": []interface{}{assertions.Match_ObjectLike(&map[string]interface{}{
						"VariantName":          "AllTraffic",
						"InstanceType":         m.InstanceType,
						"InitialInstanceCount": m.InitialInstanceCount,
						"InitialVariantWeight": 1,
						"ContainerStartupHealthCheckTimeoutInSeconds": m.Container.StartupHealthCheckTimeoutS,
						"ModelDataDownloadTimeoutInSeconds":           m.Container.ModelDownloadTimeoutS,
						"RoutingConfig":                               map[string]interface{}{"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
					})},
				})
			})
			// The deadline scheduler's first-audio target comes from the catalog's SLO (a third of it).
			env := map[string]interface{}{"ENGINE": m.Engine, "QUEUE_MAX_DEPTH": "0", "MODEL_ID": id,
				"FIRST_AUDIO_TARGET_MS": fmt.Sprint(m.SLO.TTFABMs / 3)}
			if m.Source != nil {
				env["MODEL_DIR"] = "/opt/ml/model"
			}
			assert(t, "container environment in measurement configuration", func() {
				tpl.HasResourceProperties(jsii.String("AWS::SageMaker::Model"), map[string]interface{}{
					"PrimaryContainer": assertions.Match_ObjectLike(&map[string]interface{}{"Environment": env}),
				})
			})
			if m.Source != nil {
				assert(t, "uncompressed S3 prefix model data source", func() {
					tpl.HasResourceProperties(jsii.String("AWS::SageMaker::Model"), map[string]interface{}{
						"PrimaryContainer": assertions.Match_ObjectLike(&map[string]interface{}{
							"ModelDataSource": map[string]interface{}{"S3DataSource": map[string]interface{}{
								"S3DataType": "S3Prefix", "CompressionType": "None",
								"S3Uri": assertions.Match_AnyValue(),
							}},
						}),
					})
				})
				s3uri := mustJSON(tpl.ToJSON())
				if !strings.Contains(s3uri, "/models/kokoro-82m/1939ad2a8e416c0acfeecc08a694d14ef25f2231/") {
					t.Errorf("template lacks the pinned weights prefix")
				}
				// ml.g5.xlarge has NVMe instance storage: no KMS key may be attached.
				assert(t, "no KMS key on instance-storage types", func() { tpl.ResourceCountIs(jsii.String("AWS::KMS::Key"), jsii.Number(0)) })
			} else {
				assert(t, "no model data for weightless engines", func() {
					tpl.HasResourceProperties(jsii.String("AWS::SageMaker::Model"), map[string]interface{}{
						"PrimaryContainer": assertions.Match_ObjectLike(&map[string]interface{}{"ModelDataSource": assertions.Match_Absent()}),
					})
				})
				assert(t, "rotated KMS key on the ML storage volume", func() {
					tpl.HasResourceProperties(jsii.String("AWS::KMS::Key"), map[string]interface{}{"EnableKeyRotation": true})
					tpl.HasResourceProperties(jsii.String("AWS::SageMaker::EndpointConfig"), map[string]interface{}{"KmsKeyId": assertions.Match_AnyValue()})
				})
			}
			assert(t, "no scaling resources before a plan", func() {
				tpl.ResourceCountIs(jsii.String("AWS::ApplicationAutoScaling::ScalableTarget"), jsii.Number(0))
				tpl.ResourceCountIs(jsii.String("AWS::ApplicationAutoScaling::ScalingPolicy"), jsii.Number(0))
			})
			assert(t, "outputs", func() {
				tpl.HasOutput(jsii.String("VariantName"), map[string]interface{}{"Value": "AllTraffic"})
				tpl.HasOutput(jsii.String("EndpointName"), map[string]interface{}{"Value": assertions.Match_AnyValue()})
			})
			if got := *s.app.Endpoint.Stack.StackName(); got != "SpeechEndpointStack-"+id {
				t.Errorf("stack name = %s", got)
			}
		})
	}
}

func TestStackNamesDoNotCollide(t *testing.T) {
	// GIVEN two models WHEN both are synthesized THEN their per-model stacks, endpoints and templates differ and
	// both share the one foundation stack name.
	a, b := buildApp(t, "kokoro-82m"), buildApp(t, "espeak-ng")
	if *a.app.Endpoint.StackName() == *b.app.Endpoint.StackName() {
		t.Errorf("endpoint stack names collide: %s", *a.app.Endpoint.StackName())
	}
	if *a.app.Foundation.StackName() != FoundationStackName || *b.app.Foundation.StackName() != FoundationStackName {
		t.Errorf("foundation stack names: %s, %s", *a.app.Foundation.StackName(), *b.app.Foundation.StackName())
	}
	// kokoro-82m has weights and so a cache stack; espeak-ng has none.
	for s, want := range map[*synthesized]int{a: 3, b: 2} {
		files, _ := filepath.Glob(filepath.Join(s.dir, "*.template.json"))
		if len(files) != want {
			t.Errorf("%s: want %d templates, got %v", s.dir, want, files)
		}
	}
}

func TestNoUnsuppressedNagErrors(t *testing.T) {
	for _, id := range []string{"kokoro-82m", "espeak-ng"} {
		s := buildApp(t, id)
		checked := []awscdk.Stack{s.app.Foundation.Stack, s.app.Endpoint.Stack}
		if s.app.ModelCache != nil {
			checked = append(checked, s.app.ModelCache.Stack)
		}
		for _, st := range checked {
			// GIVEN the AwsSolutions pack on the app WHEN synthesized THEN no error or warning annotation remains.
			ann := assertions.Annotations_FromStack(st)
			nag := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))
			if got := mustJSON(ann.FindError(jsii.String("*"), nag)); got != "[]" {
				t.Errorf("%s %s: unsuppressed cdk-nag errors: %s", id, *st.StackName(), got)
			}
			if got := mustJSON(ann.FindWarning(jsii.String("*"), nag)); got != "[]" {
				t.Errorf("%s %s: unsuppressed cdk-nag warnings: %s", id, *st.StackName(), got)
			}
		}
	}
	// The checks really run: the foundation's report names rules found compliant.
	report, err := os.ReadFile(filepath.Join(buildApp(t, "kokoro-82m").dir, "AwsSolutions--SpeechFoundationStack-NagReport.csv"))
	if err != nil || !strings.Contains(string(report), `"AwsSolutions-S10"`) {
		t.Errorf("cdk-nag report missing or without S10: %v", err)
	}
	// ... and over the cache stack, where the Lambda rules are found compliant.
	report, err = os.ReadFile(filepath.Join(buildApp(t, "kokoro-82m").dir, "AwsSolutions--SpeechModelCacheStack-kokoro-82m-NagReport.csv"))
	if err != nil || !strings.Contains(string(report), `"AwsSolutions-L1"`) {
		t.Errorf("cdk-nag report of the cache stack missing or without L1: %v", err)
	}
}

func TestHasInstanceStorage(t *testing.T) {
	cases := map[string]bool{
		"ml.g5.xlarge": true, "ml.g4dn.xlarge": true, "ml.c5d.large": true, "ml.m5d.xlarge": true, "ml.p4d.24xlarge": true,
		"ml.c5.large": false, "ml.m5.xlarge": false, "ml.g4.xlarge": false, "local": false, "ml.inf1.xlarge": false, "ml.inf2.xlarge": false,
	}
	for it, want := range cases {
		if got := HasInstanceStorage(it); got != want {
			t.Errorf("HasInstanceStorage(%q) = %v, want %v", it, got, want)
		}
	}
}

// fixtureDigest is the container digest the plan fixtures under testdata/plans were measured against
// (testdata/plans/README.md).
const fixtureDigest = "sha256:6ac968ec7e59a12ad96ac4fa210aa2319f20ab8b604192f8dbb3ca20d71ca4a1"

// gateApp synthesizes the kokoro-82m app with the given plan and autoscaling override.
func gateApp(t *testing.T, planDir string, override *bool) *App {
	t.Helper()
	cdk := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	plan := filepath.Join("..", "testdata", "plans", planDir, "plan.json")
	if planDir == "" {
		plan = filepath.Join(t.TempDir(), "absent", "plan.json")
	}
	return Build(cdk, AppConfig{
		Model:               catalogModel(t, "kokoro-82m"),
		ContainerDir:        containerDir,
		ContainerDigest:     fixtureDigest,
		ModuleDir:           moduleDir,
		PlanPath:            plan,
		AutoscalingOverride: override,
	})
}

func TestPlanGateRefuses(t *testing.T) {
	on, off := true, false
	cases := []struct {
		name     string
		planDir  string
		override *bool
		explicit bool
		reason   string
	}{
		{"no plan", "", nil, false, "no plan at"},
		{"no plan, autoscaling asked for", "", &on, true, "run tts-bench qmax, tts-bench ttotal and tts-bench plan"},
		{"autoscaling off", "valid", &off, false, "autoscaling is off for kokoro-82m"},
		{"dry run", "dry-run", &on, true, "dry-run"},
		{"infeasible", "infeasible", nil, false, "is infeasible"},
		{"what-if", "what-if", &on, true, "what-if plan (measured: false)"},
		{"tampered artifact", "tampered", nil, false, "changed after planning"},
		{"fingerprint mismatch", "fingerprint-mismatch", &on, true, "container digest"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// GIVEN a plan the gate must refuse WHEN the app is synthesized THEN the endpoint stands alone in
			// measurement configuration and an annotation names the reason, as an error when asked for explicitly.
			app := gateApp(t, tc.planDir, tc.override)
			st := app.Endpoint.Stack
			tpl := assertions.Template_FromStack(st, nil)
			for _, typ := range []string{"AWS::ApplicationAutoScaling::ScalableTarget", "AWS::ApplicationAutoScaling::ScalingPolicy", "AWS::CloudWatch::Alarm", "AWS::CloudWatch::Dashboard"} {
				assert(t, "no "+typ, func() { tpl.ResourceCountIs(jsii.String(typ), jsii.Number(0)) })
			}
			assert(t, "unbounded measurement queue", func() {
				tpl.HasResourceProperties(jsii.String("AWS::SageMaker::Model"), map[string]interface{}{
					"PrimaryContainer": assertions.Match_ObjectLike(&map[string]interface{}{
						"Environment": assertions.Match_ObjectLike(&map[string]interface{}{"QUEUE_MAX_DEPTH": "0"}),
					}),
				})
			})
			ann := assertions.Annotations_FromStack(st)
			msg := assertions.Match_StringLikeRegexp(jsii.String(".*" + regexpQuote(tc.reason) + ".*"))
			errs, warns := mustJSON(ann.FindError(jsii.String("*"), msg)), mustJSON(ann.FindWarning(jsii.String("*"), msg))
			if tc.explicit && errs == "[]" {
				t.Errorf("want an error annotation containing %q; warnings: %s", tc.reason, warns)
			}
			if !tc.explicit && (warns == "[]" || errs != "[]") {
				t.Errorf("want only a warning containing %q; errors %s, warnings %s", tc.reason, errs, warns)
			}
			if app.Endpoint.Scaling != nil {
				t.Errorf("scaling plan set: %+v", app.Endpoint.Scaling)
			}
		})
	}
}

func regexpQuote(s string) string {
	r := strings.NewReplacer("(", `\(`, ")", `\)`, ".", `\.`, ":", `:`)
	return r.Replace(s)
}

func TestPlanGateAcceptsValidPlan(t *testing.T) {
	// GIVEN the valid measured feasible fixture plan WHEN synthesized with autoscaling asked for THEN the
	// scalable target, both policies, the alarms and the dashboard carry the plan's exact numbers, rounded to
	// three decimals: the target is the instance model's metric at the scale-out rate 11.472 rps (the safe rate
	// 14.340, the 95% lower bound of 14.97, the completion rate of the highest step that met the SLO, ÷ 1.25),
	// 32.426 (between 8.86 rps → 18 × 1.3546 and 12.38 → 26 × 1.3546 of the fixture's rate staircase: each step's
	// 10th-percentile 10-s peak × the CloudWatch ÷ client ratio), the scale-in threshold its metric at the
	// scale-in rate 4.589 rps (11.472 × 1/2 less the default 20% margin), 12.926 (below the first step, 5.29 rps →
	// 14.901, through the origin), over 35 × 10 s (at least T_plan 340.8 s).
	on := true
	app := gateApp(t, "valid", &on)
	st := app.Endpoint.Stack
	tpl := assertions.Template_FromStack(st, nil)
	assert(t, "scalable target", func() {
		tpl.HasResourceProperties(jsii.String("AWS::ApplicationAutoScaling::ScalableTarget"), map[string]interface{}{
			"ServiceNamespace":  "sagemaker",
			"ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
			"ResourceId":        "endpoint/speech-kokoro-82m/variant/AllTraffic",
			"MinCapacity":       1,
			"MaxCapacity":       7,
		})
	})
	assert(t, "target tracking scale-out", func() {
		tpl.HasResourceProperties(jsii.String("AWS::ApplicationAutoScaling::ScalingPolicy"), map[string]interface{}{
			"PolicyType": "TargetTrackingScaling",
			"TargetTrackingScalingPolicyConfiguration": map[string]interface{}{
				"TargetValue":                   32.426,
				"PredefinedMetricSpecification": map[string]interface{}{"PredefinedMetricType": "SageMakerVariantConcurrentRequestsPerModelHighResolution"},
				"DisableScaleIn":                true,
				"ScaleOutCooldown":              30,
			},
		})
	})
	assert(t, "step scale-in", func() {
		tpl.HasResourceProperties(jsii.String("AWS::ApplicationAutoScaling::ScalingPolicy"), map[string]interface{}{
			"PolicyType": "StepScaling",
			"StepScalingPolicyConfiguration": map[string]interface{}{
				"AdjustmentType":        "ChangeInCapacity",
				"Cooldown":              1023,
				"MetricAggregationType": "Maximum",
				"StepAdjustments":       []interface{}{map[string]interface{}{"MetricIntervalUpperBound": 0, "ScalingAdjustment": -1}},
			},
		})
	})
	assert(t, "two policies, four alarms, one dashboard", func() {
		tpl.ResourceCountIs(jsii.String("AWS::ApplicationAutoScaling::ScalingPolicy"), jsii.Number(2))
		tpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(4))
		tpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Dashboard"), jsii.Number(1))
	})
	dims := []interface{}{
		map[string]interface{}{"Name": "EndpointName", "Value": "speech-kokoro-82m"},
		map[string]interface{}{"Name": "VariantName", "Value": "AllTraffic"},
	}
	assert(t, "scale-in alarm below the metric at the scale-in rate triggers the step policy", func() {
		tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]interface{}{
			"MetricName": "ConcurrentRequestsPerModel", "Namespace": "AWS/SageMaker", "Dimensions": dims,
			"Statistic": "Maximum", "Threshold": 12.926, "ComparisonOperator": "LessThanThreshold",
			"Period": 10, "EvaluationPeriods": 35, "DatapointsToAlarm": 35,
			"AlarmActions": []interface{}{map[string]interface{}{"Ref": assertions.Match_StringLikeRegexp(jsii.String("ScaleInPolicy.*"))}},
		})
	})
	assert(t, "queue saturation alarm", func() {
		tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]interface{}{
			"MetricName": "Invocation5XXErrors", "Dimensions": dims, "Threshold": 0, "ComparisonOperator": "GreaterThanThreshold",
		})
	})
	assert(t, "latency alarm at the SLO (microseconds)", func() {
		tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]interface{}{
			"MetricName": "ModelLatency", "Dimensions": dims, "ExtendedStatistic": "p95", "Threshold": 3000000,
		})
	})
	// T_plan 340.8 s + 30 s cooldown → ceil(370.8/60)+1 = 8 one-minute periods above the target.
	assert(t, "fleet-at-maximum alarm", func() {
		tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]interface{}{
			"MetricName": "ConcurrentRequestsPerModel", "Dimensions": dims, "Statistic": "Average",
			"Threshold": 32.426, "EvaluationPeriods": 8, "ComparisonOperator": "GreaterThanThreshold",
		})
	})
	assert(t, "queue shield from the plan", func() {
		tpl.HasResourceProperties(jsii.String("AWS::SageMaker::Model"), map[string]interface{}{
			"PrimaryContainer": assertions.Match_ObjectLike(&map[string]interface{}{
				"Environment": assertions.Match_ObjectLike(&map[string]interface{}{"QUEUE_MAX_DEPTH": "50"}),
			}),
		})
	})
	planDigest, err := capacity.FileDigest(filepath.Join("..", "testdata", "plans", "valid", "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	assert(t, "output names the accepted plan", func() {
		tpl.HasOutput(jsii.String("ScalingPlan"), map[string]interface{}{
			"Value": "target 32.426, fleet 1-7, queue depth 50, plan " + planDigest,
		})
	})
	ann := assertions.Annotations_FromStack(st)
	if got := mustJSON(ann.FindError(jsii.String("*"), assertions.Match_AnyValue())); got != "[]" {
		t.Errorf("errors on an accepted plan: %s", got)
	}
	if got := mustJSON(ann.FindWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String(".*measurement configuration.*")))); got != "[]" {
		t.Errorf("gate warning on an accepted plan: %s", got)
	}
}
