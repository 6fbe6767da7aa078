package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/models"
)

// TestCatalogFlagReplacesTheBuiltInCatalog: an edited copy of models/ given with --catalog
// (or SPEECH_CATALOG) is the catalog the command uses, without a rebuild, and the command says so on stderr; a
// directory that is not one, or holds an invalid file, is refused (exit 2) naming the directory and the file.
func TestCatalogFlagReplacesTheBuiltInCatalog(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"kokoro-82m.json", "espeak-ng.json", "kokoro-82m-twin.json"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "models", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "kokoro-82m.json" {
			// The SLO 3000 ms becomes 2500 ms.
			if !strings.Contains(string(data), `"ttfab_ms": 3000`) {
				t.Fatalf("%s has no \"ttfab_ms\": 3000 to edit", f)
			}
			data = []byte(strings.Replace(string(data), `"ttfab_ms": 3000`, `"ttfab_ms": 2500`, 1))
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"plan", "--what-if", "q_max=40,t_total_s=280,throughput_rps=13.6", "--peak-rps", "80", "--trough-rps", "10", "--format", "json"}
	stdout, stderr, code := runCLI(t, append(args, "--catalog", dir)...)
	if code != 0 || !strings.Contains(stdout, `"slo_ttfab_ms": 2500`) || !strings.Contains(stderr, "using the catalog files in "+dir) {
		t.Fatalf("--catalog: exit %d, want 0, the edited SLO 2500 in the plan and the catalog named on stderr\nstdout:\n%.2000s\nstderr:\n%s", code, stdout, stderr)
	}
	if models.Dir() != "" {
		t.Fatalf("the catalog directory %q outlived the command", models.Dir())
	}
	// Without it, the built-in catalog (3000 ms), and nothing said.
	stdout, stderr, code = runCLI(t, args...)
	if code != 0 || !strings.Contains(stdout, `"slo_ttfab_ms": 3000`) || strings.Contains(stderr, "using the catalog") {
		t.Fatalf("built in: exit %d\nstdout:\n%.2000s\nstderr:\n%s", code, stdout, stderr)
	}
	// SPEECH_CATALOG does what --catalog does.
	t.Setenv(models.CatalogEnv, dir)
	if stdout, _, code = runCLI(t, args...); code != 0 || !strings.Contains(stdout, `"slo_ttfab_ms": 2500`) {
		t.Fatalf("%s: exit %d, want the edited SLO\n%.2000s", models.CatalogEnv, code, stdout)
	}
	t.Setenv(models.CatalogEnv, "")
	// Not a directory; an invalid file.
	_, stderr, code = runCLI(t, append(args, "--catalog", filepath.Join(dir, "nope"))...)
	if code != 2 || !strings.Contains(stderr, "not a readable directory") {
		t.Fatalf("a missing directory: exit %d\n%s", code, stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "espeak-ng.json"), []byte(`{"id": "espeak-ng", "typo_field": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runCLI(t, append(args, "--catalog", dir)...)
	if code != 2 || !strings.Contains(stderr, "espeak-ng.json") || !strings.Contains(stderr, dir) {
		t.Fatalf("an invalid catalog file: exit %d, want a refusal naming the file and the directory\n%s", code, stderr)
	}
}
