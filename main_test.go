package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
