package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/models"
)

// synth runs the deploy command the CLI builds with the real CDK CLI of the repository, as `cdk synth` into
// a temporary directory, and returns the stacks of the cloud assembly, CDK's output and the directory.
func synth(t *testing.T, cmd cdkCommand) ([]string, string, string, error) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(cmd.Dir, cmd.Path)); err != nil {
		t.Fatalf("%v: run `npm ci` (make deps) in the repository root first", err)
	}
	out := t.TempDir()
	cmd.Args = append([]string{"synth", "-q", "-o", out}, cmd.Args[1:]...)
	cmd.Env = append(cmd.Env, "CDK_DISABLE_VERSION_CHECK=1", "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20")
	// A bound only against a hang: the CDK CLI runs the app with `go run`, which compiles the CDK's Go
	// bindings when the build cache lacks them, minutes on a loaded two-core machine.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var log bytes.Buffer
	err := execRunner{}.Stream(ctx, cmd, nil, &log, &log)
	if err != nil {
		return nil, log.String(), out, err
	}
	b, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Artifacts map[string]struct {
			Type string `json:"type"`
		} `json:"artifacts"`
	}
	if err := json.Unmarshal(b, &manifest); err != nil {
		t.Fatal(err)
	}
	var stacks []string
	for name, a := range manifest.Artifacts {
		if a.Type == "aws:cloudformation:stack" {
			stacks = append(stacks, name)
		}
	}
	sort.Strings(stacks)
	return stacks, log.String(), out, nil
}

// The command deploy builds, run with synth by the real CDK CLI: the stack names exist in the app (CDK
// refuses an unknown one), -c model selects the model's stacks (the cache only for a model with weights),
// -c plan and -c autoscaling reach the app's gate, and -c instance_type the endpoint config (espeak-ng's
// catalog type is ml.c5.large, with a KMS key on its storage volume; ml.g6.xlarge has instance storage and none).
func TestDeployCommandSynthesizes(t *testing.T) {
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	target := cdkTarget{appDir: filepath.Join("..", "..")}
	missing := filepath.Join(t.TempDir(), "no-plan.json")
	for _, tc := range []struct {
		model, instanceType string
		want                []string
	}{
		{"espeak-ng", "ml.g6.xlarge", []string{"SpeechEndpointStack-espeak-ng", "SpeechFoundationStack"}},
		{"kokoro-82m", "", []string{"SpeechEndpointStack-kokoro-82m", "SpeechFoundationStack", "SpeechModelCacheStack-kokoro-82m"}},
	} {
		m, err := cat.Get(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		stacks, log, out, err := synth(t, deployCommandFor(target, m, missing, tc.instanceType, nil, false))
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.model, err, log)
		}
		if strings.Join(stacks, " ") != strings.Join(tc.want, " ") || strings.Join(modelStacks(m), " ") == "" {
			t.Errorf("%s: synthesized %v, want %v", tc.model, stacks, tc.want)
		}
		if !strings.Contains(log, "no plan at "+missing) {
			t.Errorf("%s: the gate did not read -c plan=%s:\n%s", tc.model, missing, log)
		}
		tpl, err := os.ReadFile(filepath.Join(out, endpointStack(tc.model)+".template.json"))
		if err != nil {
			t.Fatal(err)
		}
		var endpoint struct {
			Resources map[string]struct {
				Type       string
				Properties struct {
					ProductionVariants []struct{ InstanceType string }
				}
			}
		}
		if err := json.Unmarshal(tpl, &endpoint); err != nil {
			t.Fatal(err)
		}
		want, kms := tc.instanceType, false
		if want == "" {
			want = m.InstanceType
		}
		var got []string
		for _, r := range endpoint.Resources {
			kms = kms || r.Type == "AWS::KMS::Key"
			for _, v := range r.Properties.ProductionVariants {
				got = append(got, v.InstanceType)
			}
		}
		if strings.Join(got, " ") != want || kms {
			t.Errorf("%s with -c instance_type=%q: variants run %v, KMS key %v; want %s and no key", tc.model, tc.instanceType, got, kms, want)
		}
	}
	m, err := cat.Get("espeak-ng")
	if err != nil {
		t.Fatal(err)
	}
	on := true
	_, log, _, err := synth(t, deployCommandFor(target, m, missing, "", &on, false))
	if err == nil || !strings.Contains(log, "no plan at "+missing) {
		t.Errorf("-c autoscaling=true without a plan synthesized (err %v):\n%s", err, log)
	}
}
