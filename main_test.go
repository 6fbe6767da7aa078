package main

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// copyCatalog copies the real catalog into a temporary directory so a test can break one file.
func copyCatalog(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files, _ := filepath.Glob("models/*.json")
	if len(files) == 0 {
		t.Fatal("no catalog files in models/")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestConfigFromContext(t *testing.T) {
	defer jsii.Close()
	broken := copyCatalog(t)
	path := filepath.Join(broken, "kokoro-82m.json")
	data, _ := os.ReadFile(path)
	data = []byte(strings.Replace(string(data), `"max_instances": 9`, `"max_instances": 0`, 1))
	data = []byte(strings.Replace(string(data), `"1939ad2a8e416c0acfeecc08a694d14ef25f2231"`, `"main"`, 1))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		context map[string]interface{}
		wants   []string
	}{
		{"default model", nil, nil},
		{"espeak", map[string]interface{}{"model": "espeak-ng"}, nil},
		{"unknown model", map[string]interface{}{"model": "whisper"}, []string{`unknown model "whisper"`, "-c model=<id>"}},
		{"broken catalog names file and field", map[string]interface{}{"catalog": broken},
			[]string{"kokoro-82m.json: scaling.max_instances", "kokoro-82m.json: source.revision"}},
		{"missing container dir", map[string]interface{}{"containerDir": t.TempDir()}, []string{"no Dockerfile"}},
		{"instance type", map[string]interface{}{"instance_type": "ml.g6.xlarge"}, nil},
		{"unknown instance type", map[string]interface{}{"instance_type": "ml.g9.huge"},
			[]string{`"ml.g9.huge" is not a SageMaker endpoint instance type`, "-c instance_type=<type>", "catalog's ml.g5.xlarge"}},
		{"the emulator's type on AWS", map[string]interface{}{"instance_type": "local"}, []string{`"local" is not a SageMaker endpoint instance type`, "-c instance_type"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// GIVEN context values WHEN the app's config is resolved THEN it loads or fails naming the fix.
			app := awscdk.NewApp(&awscdk.AppProps{Context: &tc.context, Outdir: jsii.String(t.TempDir())})
			cfg, err := configFromContext(app)
			if len(tc.wants) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if want, _ := tc.context["model"].(string); want != "" && cfg.Model.ID != want {
					t.Errorf("model = %s, want %s", cfg.Model.ID, want)
				}
				// -c instance_type reaches the app's configuration; without it the catalog's type is deployed.
				if want, _ := tc.context["instance_type"].(string); cfg.InstanceType != want {
					t.Errorf("instance type = %q, want %q", cfg.InstanceType, want)
				}
				return
			}
			if err == nil {
				t.Fatalf("want error with %q", tc.wants)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// repoCommand runs name with args from the repository root, bounded by a timeout, and returns the combined
// output and the exit code.
func repoCommand(t *testing.T, timeout time.Duration, name string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %s did not finish within %s:\n%s", name, strings.Join(args, " "), timeout, out)
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// copyTree copies the regular files below src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// editJSON rewrites the JSON file at path through edit, as a user with an editor would.
func editJSON(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	edit(v)
	if data, err = json.MarshalIndent(v, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSynthRefusesAMeasuredPlanWithoutItsArtifacts runs the real CDK synthesis (npx cdk synth, which runs
// this app) on two forged plans: a what-if plan dressed as measured, naming invented artifacts, and
// the valid fixture with a throughput edited and its artifacts deleted. Both must fail synthesis with the
// missing artifact named; the untouched valid fixture must still synthesize a scalable target.
func TestSynthRefusesAMeasuredPlanWithoutItsArtifacts(t *testing.T) {
	tmp := t.TempDir()
	// A private copy of the container source: the fixtures are "measured" against its digest, and other work
	// in the checkout must not change that digest between fixture generation and synthesis.
	containerCopy := filepath.Join(tmp, "container")
	copyTree(t, "container", containerCopy)
	if out, code := repoCommand(t, 5*time.Minute, "go", "run", "./capacity/internal/fixturegen", "-out", filepath.Join(tmp, "fx"), "-container-dir", containerCopy); code != 0 {
		t.Fatalf("fixturegen: exit %d\n%s", code, out)
	}
	ttsBench := filepath.Join(tmp, "tts-bench")
	if out, code := repoCommand(t, 5*time.Minute, "go", "build", "-o", ttsBench, "./cmd/tts-bench"); code != 0 {
		t.Fatalf("go build tts-bench: exit %d\n%s", code, out)
	}
	validPlan := filepath.Join(tmp, "fx", "valid", "plan.json")
	var valid map[string]any
	data, err := os.ReadFile(validPlan)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &valid); err != nil {
		t.Fatal(err)
	}
	validDigest := valid["fingerprint"].(map[string]any)["container_digest"].(string)

	// A what-if plan written with --output, edited to measured: true with the valid
	// fixture's container digest, invented artifact names and digests, and measurement_validity pass.
	whatIf := filepath.Join(tmp, "what-if", "plan.json")
	if out, code := repoCommand(t, time.Minute, ttsBench, "plan", "--what-if", "q_max=40,t_total_s=280,throughput_rps=13.6",
		"--peak-rps", "80", "--trough-rps", "10", "--output", whatIf); code != 0 {
		t.Fatalf("tts-bench plan --what-if: exit %d\n%s", code, out)
	}
	editJSON(t, whatIf, func(p map[string]any) {
		p["measured"] = true
		p["fingerprint"].(map[string]any)["container_digest"] = validDigest
		in := p["inputs"].(map[string]any)
		in["qmax_file"], in["qmax_sha256"] = "qmax-live.json", "sha256:"+strings.Repeat("ab", 32)
		in["ttotal_file"], in["ttotal_sha256"] = "ttotal-live.json", "sha256:"+strings.Repeat("cd", 32)
		f := p["findings"].([]any)[0].(map[string]any)
		f["status"], f["detail"] = "pass", "measured live"
		delete(f, "recommendation")
	})

	// The smaller form: the valid fixture with inputs.throughput[0].rps changed and both artifacts deleted.
	small := filepath.Join(tmp, "small")
	copyTree(t, filepath.Join(tmp, "fx", "valid"), small)
	editJSON(t, filepath.Join(small, "plan.json"), func(p map[string]any) {
		pt := p["inputs"].(map[string]any)["throughput"].([]any)[0].(map[string]any)
		pt["rps"] = pt["rps"].(float64) * 3
	})
	for _, f := range []string{"qmax.json", "ttotal.json"} {
		if err := os.Remove(filepath.Join(small, f)); err != nil {
			t.Fatal(err)
		}
	}

	// The valid fixture with its scale-out target edited above anything the metric reaches (the queue
	// shield holds at most 50 in flight): as written, the fleet never scales out. The gate re-runs the envelope
	// and names the worst minute.
	edited := filepath.Join(tmp, "edited")
	copyTree(t, filepath.Join(tmp, "fx", "valid"), edited)
	editJSON(t, filepath.Join(edited, "plan.json"), func(p map[string]any) {
		p["derived"].(map[string]any)["target_value"] = 60.0
	})

	for _, tc := range []struct {
		name, plan string
		accept     bool
		wants      []string
	}{
		{"scale-out target edited to violate", filepath.Join(edited, "plan.json"), false, []string{
			"derived.target_value is 60", "as written, does not hold the SLO on its envelope", "worst minute",
		}},
		{"valid fixture", validPlan, true, nil},
		{"what-if plan dressed as measured", whatIf, false, []string{
			"qmax artifact " + filepath.Join(tmp, "what-if", "qmax-live.json") + " is missing",
			"ttotal artifact " + filepath.Join(tmp, "what-if", "ttotal-live.json") + " is missing",
		}},
		{"edited throughput, artifacts deleted", filepath.Join(small, "plan.json"), false, []string{
			"qmax artifact " + filepath.Join(small, "qmax.json") + " is missing",
			"ttotal artifact " + filepath.Join(small, "ttotal.json") + " is missing",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// GIVEN the plan WHEN npx cdk synth runs with autoscaling asked for THEN a plan without its artifacts
			// fails synthesis naming them, and the valid fixture synthesizes a scalable target.
			outDir := filepath.Join(t.TempDir(), "cdk.out")
			out, code := repoCommand(t, 10*time.Minute, "npx", "cdk", "synth", "-q", "-c", "model=kokoro-82m", "-c", "autoscaling=true",
				"-c", "plan="+tc.plan, "-c", "containerDir="+containerCopy, "-o", outDir)
			if tc.accept {
				if code != 0 {
					t.Fatalf("synthesis failed (exit %d):\n%s", code, out)
				}
				tpl, err := os.ReadFile(filepath.Join(outDir, "SpeechEndpointStack-kokoro-82m.template.json"))
				if err != nil || !strings.Contains(string(tpl), `"AWS::ApplicationAutoScaling::ScalableTarget"`) {
					t.Fatalf("no scalable target from the valid plan (%v)", err)
				}
				return
			}
			if code == 0 {
				t.Fatalf("synthesis succeeded on a plan without its artifacts:\n%s", out)
			}
			for _, w := range tc.wants {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
