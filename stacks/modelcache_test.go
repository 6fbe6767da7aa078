package stacks

import (
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3assets"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// statementsOf returns every IAM policy statement of a template, keyed by the policy's logical id.
func statementsOf(t *testing.T, tpl assertions.Template) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	for id, p := range *tpl.FindResources(jsii.String("AWS::IAM::Policy"), nil) {
		var res struct {
			Properties struct {
				PolicyDocument struct{ Statement []map[string]any }
			}
		}
		raw, _ := json.Marshal(p)
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		out[id] = res.Properties.PolicyDocument.Statement
	}
	return out
}

func stackNames(stacks *[]awscdk.Stack) []string {
	var names []string
	for _, s := range *stacks {
		names = append(names, *s.StackName())
	}
	return names
}

func TestModelCacheStack(t *testing.T) {
	// GIVEN the catalog's kokoro-82m WHEN the app is synthesized THEN a cache stack sits between foundation and
	// endpoint, its custom resource carries repo, revision, files and the endpoint's prefix, its Lambda is a
	// real linux/arm64 Go binary on provided.al2023, and its role may write only under models/kokoro-82m/.
	m := catalogModel(t, "kokoro-82m")
	s := buildApp(t, "kokoro-82m")
	cache := s.app.ModelCache
	if cache == nil {
		t.Fatal("no model cache stack for kokoro-82m")
	}
	if got := *cache.StackName(); got != "SpeechModelCacheStack-kokoro-82m" {
		t.Errorf("stack name = %s", got)
	}
	tpl := assertions.Template_FromStack(cache.Stack, nil)

	assert(t, "custom resource properties", func() {
		tpl.HasResourceProperties(jsii.String("Custom::SpeechModelCache"), map[string]interface{}{
			"ModelId":     "kokoro-82m",
			"Repo":        "onnx-community/Kokoro-82M-v1.0-ONNX",
			"Revision":    "1939ad2a8e416c0acfeecc08a694d14ef25f2231",
			"Files":       []interface{}{"onnx/model.onnx", "tokenizer.json", "config.json", "voices/*.bin"},
			"Prefix":      "models/kokoro-82m/1939ad2a8e416c0acfeecc08a694d14ef25f2231/",
			"HubEndpoint": "https://huggingface.co",
			"Bucket":      map[string]interface{}{"Fn::ImportValue": assertions.Match_StringLikeRegexp(jsii.String("SpeechFoundationStack:.*WeightsBucket.*"))},
		})
	})
	if m.WeightsPrefix() != "models/kokoro-82m/1939ad2a8e416c0acfeecc08a694d14ef25f2231/" {
		t.Errorf("WeightsPrefix = %s: the endpoint and the cache must use the same prefix", m.WeightsPrefix())
	}
	assert(t, "objects stay on delete", func() {
		tpl.HasResource(jsii.String("Custom::SpeechModelCache"), map[string]interface{}{"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"})
	})
	assert(t, "Go Lambda on provided.al2023, arm64", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]interface{}{
			"Runtime": "provided.al2023", "Architectures": []interface{}{"arm64"}, "Handler": "bootstrap", "Timeout": 900,
			"Role": map[string]interface{}{"Fn::GetAtt": []interface{}{assertions.Match_StringLikeRegexp(jsii.String("SyncRole.*")), "Arn"}},
		})
	})
	// The provider resumes every 30 s for the catalog's model_download_timeout_s (at least one full
	// invocation): the waiter's retry count is the total timeout over the interval.
	total := ModelCacheTotalTimeout(m)
	attempts := int(math.Ceil(total.Seconds() / ModelCacheQueryInterval.Seconds()))
	def := mustJSON(tpl.FindResources(jsii.String("AWS::StepFunctions::StateMachine"), nil))
	if want := fmt.Sprintf(`\"IntervalSeconds\":30,\"MaxAttempts\":%d`, attempts); !strings.Contains(def, want) {
		t.Errorf("waiter state machine lacks %s: %s", want, def)
	}
	if total < time.Duration(m.Container.ModelDownloadTimeoutS)*time.Second || total > time.Hour {
		t.Errorf("total timeout %s outside [model_download_timeout_s, 1h]", total)
	}

	// The bundled asset is the real binary go build wrote, for the Lambda's architecture.
	bins, _ := filepath.Glob(filepath.Join(s.dir, "asset.*", "bootstrap"))
	if len(bins) != 1 {
		t.Fatalf("want one bundled bootstrap in %s, got %v", s.dir, bins)
	}
	f, err := elf.Open(bins[0])
	if err != nil {
		t.Fatalf("bundled bootstrap is not an ELF binary: %v", err)
	}
	if f.Machine != elf.EM_AARCH64 || f.Class != elf.ELFCLASS64 {
		t.Errorf("bootstrap is %v %v, want 64-bit aarch64", f.Machine, f.Class)
	}
	f.Close()

	policies := statementsOf(t, tpl)
	var syncStmts []map[string]any
	for id, stmts := range policies {
		for _, st := range stmts {
			action := mustJSON(st["Action"])
			if strings.Contains(action, `"s3:*"`) || strings.Contains(action, `"*"`) {
				t.Errorf("%s: wildcard action %s", id, action)
			}
			if st["Resource"] == "*" {
				// Only the waiter's log delivery, which AWS cannot scope (suppression in modelcache.go).
				if !strings.HasPrefix(id, "SyncProviderwaiterstatemachineRole") || !strings.Contains(action, "logs:CreateLogDelivery") || strings.Contains(action, "s3:") {
					t.Errorf("%s: Resource * for %s", id, action)
				}
			}
		}
		if strings.HasPrefix(id, "SyncRole") {
			syncStmts = stmts
		}
	}
	bySid := map[string]map[string]any{}
	for _, st := range syncStmts {
		bySid[fmt.Sprint(st["Sid"])] = st
	}
	write, ok := bySid["WriteModelFiles"]
	if !ok {
		t.Fatalf("no WriteModelFiles statement in the sync role's policy: %v", syncStmts)
	}
	if got := mustJSON(write["Resource"]); !strings.Contains(got, `"/models/kokoro-82m/*"`) || !strings.Contains(got, "WeightsBucket") {
		t.Errorf("WriteModelFiles resource = %s, want the weights bucket's models/kokoro-82m/* objects only", got)
	}
	actions, _ := write["Action"].([]any)
	sorted := strings.Fields(strings.Trim(fmt.Sprint(actions), "[]"))
	sort.Strings(sorted)
	if got := strings.Join(sorted, " "); got != "s3:AbortMultipartUpload s3:DeleteObject s3:GetObject s3:PutObject" {
		t.Errorf("WriteModelFiles actions = %s", got)
	}
	if got := mustJSON(bySid["ListModelFiles"]["Condition"]); got != `{"StringLike":{"s3:prefix":["models/kokoro-82m/*"]}}` {
		t.Errorf("ListModelFiles condition = %s", got)
	}
	if got := mustJSON(bySid["WriteSyncLogs"]["Resource"]); !strings.Contains(got, "SyncLogs") {
		t.Errorf("WriteSyncLogs resource = %s, want the function's own log group", got)
	}
	if len(bySid) != 3 {
		t.Errorf("sync role statements = %v, want WriteModelFiles, ListModelFiles, WriteSyncLogs (no token secret in the catalog)", mustJSON(syncStmts))
	}
	assert(t, "no managed policies on any role", func() {
		tpl.AllResourcesProperties(jsii.String("AWS::IAM::Role"), map[string]interface{}{"ManagedPolicyArns": assertions.Match_Absent()})
	})

	// Dependencies: foundation → cache → endpoint.
	if got := stackNames(s.app.Endpoint.Dependencies()); !contains(got, "SpeechModelCacheStack-kokoro-82m") || !contains(got, FoundationStackName) {
		t.Errorf("endpoint stack depends on %v, want the cache and the foundation stack", got)
	}
	if got := stackNames(cache.Dependencies()); !contains(got, FoundationStackName) || contains(got, "SpeechEndpointStack-kokoro-82m") {
		t.Errorf("cache stack depends on %v, want the foundation only", got)
	}
	manifest, err := os.ReadFile(filepath.Join(s.dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var asm struct {
		Artifacts map[string]struct{ Dependencies []string }
	}
	if err := json.Unmarshal(manifest, &asm); err != nil {
		t.Fatal(err)
	}
	if deps := asm.Artifacts["SpeechEndpointStack-kokoro-82m"].Dependencies; !contains(deps, "SpeechModelCacheStack-kokoro-82m") {
		t.Errorf("cloud assembly: the endpoint stack's dependencies %v lack the cache stack, so cdk deploy could start the endpoint first", deps)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestNoModelCacheForWeightlessModel(t *testing.T) {
	// GIVEN espeak-ng (no weights) WHEN synthesized THEN there is no cache stack and the endpoint depends on
	// the foundation only.
	s := buildApp(t, "espeak-ng")
	if s.app.ModelCache != nil {
		t.Errorf("cache stack %s for a model without weights", *s.app.ModelCache.StackName())
	}
	if _, err := os.Stat(filepath.Join(s.dir, "SpeechModelCacheStack-espeak-ng.template.json")); err == nil {
		t.Errorf("a cache template was written for espeak-ng")
	}
	if got := stackNames(s.app.Endpoint.Dependencies()); len(got) != 1 || got[0] != FoundationStackName {
		t.Errorf("espeak-ng endpoint depends on %v", got)
	}
}

func TestModelCacheTokenSecret(t *testing.T) {
	// GIVEN a model whose repository is gated WHEN its cache stack names a token secret THEN the resource
	// carries the secret's ARN and the role may read that one secret, nothing more, and cdk-nag stays clean.
	cdk := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	foundation := NewFoundationStack(cdk, FoundationStackName, nil)
	// The secret comes from the catalog entry (source.token_secret), as main.go's app passes it.
	gated := catalogModel(t, "kokoro-82m")
	gated.Source.TokenSecret = "speech-infra/hf-token"
	cache := NewModelCacheStack(cdk, "SpeechModelCacheStack-kokoro-82m", &ModelCacheStackProps{
		Model: gated, WeightsBucket: foundation.WeightsBucket, ModuleDir: moduleDir,
		HubEndpoint: "https://hf-mirror.example.com",
	})
	awscdk.Aspects_Of(cdk).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	cdk.Synth(nil)
	tpl := assertions.Template_FromStack(cache.Stack, nil)
	assert(t, "resource carries the secret and the mirror", func() {
		tpl.HasResourceProperties(jsii.String("Custom::SpeechModelCache"), map[string]interface{}{
			"TokenSecret": "speech-infra/hf-token", "HubEndpoint": "https://hf-mirror.example.com",
		})
	})
	var found bool
	for id, stmts := range statementsOf(t, tpl) {
		for _, st := range stmts {
			if !strings.Contains(mustJSON(st["Action"]), "secretsmanager") {
				continue
			}
			found = true
			if !strings.HasPrefix(id, "SyncRole") || st["Action"] != "secretsmanager:GetSecretValue" || mustJSON(st["Resource"]) != `{"Fn::Sub":"arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:speech-infra/hf-token-??????"}` {
				t.Errorf("%s: secret statement %s", id, mustJSON(st))
			}
		}
	}
	if !found {
		t.Error("the sync role may not read the token secret")
	}
	ann := assertions.Annotations_FromStack(cache.Stack)
	nag := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))
	if got := mustJSON(ann.FindError(jsii.String("*"), nag)); got != "[]" {
		t.Errorf("unsuppressed cdk-nag errors: %s", got)
	}
	if got := mustJSON(ann.FindWarning(jsii.String("*"), nag)); got != "[]" {
		t.Errorf("unsuppressed cdk-nag warnings: %s", got)
	}
}

func TestGoBuildFailureFailsSynthesis(t *testing.T) {
	// GIVEN a Lambda package that does not compile WHEN its asset is bundled THEN synthesis fails with the
	// compiler's message and the fix; CDK never falls back to Docker.
	mod := t.TempDir()
	write := func(name, content string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(mod, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/broken\n\ngo 1.22\n")
	write("fn/main.go", "package main\n\nfunc main() { undefinedCall() }\n")

	var msg string
	func() {
		defer func() {
			if r := recover(); r != nil {
				msg = fmt.Sprint(r)
			}
		}()
		cdk := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
		st := awscdk.NewStack(cdk, jsii.String("Broken"), nil)
		awslambda.NewFunction(st, jsii.String("Fn"), &awslambda.FunctionProps{
			Runtime: awslambda.Runtime_PROVIDED_AL2023(), Architecture: awslambda.Architecture_ARM_64(), Handler: jsii.String("bootstrap"),
			Code: awslambda.Code_FromAsset(jsii.String(mod), &awss3assets.AssetOptions{
				AssetHashType: awscdk.AssetHashType_OUTPUT,
				Bundling: &awscdk.BundlingOptions{
					Image: awscdk.DockerImage_FromRegistry(jsii.String("speech-infra/no-docker-bundling")),
					Local: &GoBuild{ModuleDir: mod, Package: "./fn"},
				},
			}),
		})
		cdk.Synth(nil)
	}()
	for _, want := range []string{"undefinedCall", "go build", "fix the error above", "Docker bundling is not used"} {
		if !strings.Contains(msg, want) {
			t.Errorf("synthesis error %q lacks %q", msg, want)
		}
	}
}

func TestGoBuildErrors(t *testing.T) {
	// GIVEN a directory without go.mod WHEN building THEN the error says where to synthesize from.
	err := (&GoBuild{ModuleDir: t.TempDir(), Package: ModelCacheLambdaPackage}).Build(context.Background(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "no go.mod") || !strings.Contains(err.Error(), "repository root") {
		t.Errorf("error = %v", err)
	}
	// GIVEN the real Lambda package WHEN building THEN bootstrap is a static linux/arm64 executable.
	out := t.TempDir()
	if err := (&GoBuild{ModuleDir: moduleDir, Package: ModelCacheLambdaPackage}).Build(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(filepath.Join(out, "bootstrap"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 {
		t.Errorf("machine %v", f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("bootstrap is dynamically linked (PT_INTERP): CGO_ENABLED=0 was not applied")
		}
	}
}

func TestModelCacheTotalTimeout(t *testing.T) {
	m := catalogModel(t, "kokoro-82m")
	for secs, want := range map[int]time.Duration{
		60:    MinModelCacheTotalTimeout, // shorter than one resumed invocation
		1800:  30 * time.Minute,
		36000: time.Hour, // the provider's limit
	} {
		m.Container.ModelDownloadTimeoutS = secs
		if got := ModelCacheTotalTimeout(m); got != want {
			t.Errorf("model_download_timeout_s %d: total timeout %s, want %s", secs, got, want)
		}
	}
}
