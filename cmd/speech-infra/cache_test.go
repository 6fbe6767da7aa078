package main

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/models"
	"github.com/speech-infra/speech-infra/modelsync"
)

// kokoroHub is a real HTTP server serving kokoro-82m's catalog repository and revision in the Hugging Face
// tree/resolve format, with small stand-ins for the weights (LFS entries) and the JSON files (git blobs).
func kokoroHub(t *testing.T, corrupt string) (*httptest.Server, map[string][]byte) {
	t.Helper()
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := cat.Get("kokoro-82m")
	files := map[string][]byte{
		"onnx/model.onnx":     bytes.Repeat([]byte("weights!"), 40_000),
		"onnx/model_q4.onnx":  []byte("not selected"),
		"tokenizer.json":      []byte(`{"model":{"vocab":{"a":1}}}`),
		"config.json":         []byte(`{"n_token":178}`),
		"voices/af_heart.bin": bytes.Repeat([]byte{1, 2}, 3000),
		"voices/am_adam.bin":  bytes.Repeat([]byte{3, 4}, 3000),
	}
	lfs := func(p string) bool { return strings.HasSuffix(p, ".onnx") || strings.HasSuffix(p, ".bin") }
	treePath := "/api/models/" + m.Source.Repo + "/tree/" + m.Source.Revision
	resolve := "/" + m.Source.Repo + "/resolve/" + m.Source.Revision + "/"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == treePath:
			var entries []map[string]any
			for p, b := range files {
				s := sha256.Sum256(b)
				g := sha1.New()
				fmt.Fprintf(g, "blob %d\x00", len(b))
				g.Write(b)
				e := map[string]any{"type": "file", "path": p, "size": len(b), "oid": hex.EncodeToString(g.Sum(nil))}
				if lfs(p) {
					e["lfs"] = map[string]any{"oid": hex.EncodeToString(s[:]), "size": len(b), "pointerSize": 132}
				}
				entries = append(entries, e)
			}
			json.NewEncoder(w).Encode(entries)
		case strings.HasPrefix(r.URL.Path, resolve):
			p := strings.TrimPrefix(r.URL.Path, resolve)
			b, ok := files[p]
			if !ok {
				http.NotFound(w, r)
				return
			}
			if p == corrupt {
				b = bytes.Clone(b)
				b[len(b)-1] ^= 0x80
			}
			w.Write(b)
		default:
			w.Header().Set("X-Error-Code", "RepoNotFound")
			http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, files
}

func runCache(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"speech-infra", "cache"}, args...), &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

func TestCacheFillsAVerifiedModelDir(t *testing.T) {
	srv, files := kokoroHub(t, "")
	dir := filepath.Join(t.TempDir(), "kokoro")

	out, logs, err := runCache(t, "kokoro-82m", "--to", dir, "--hf-endpoint", srv.URL)
	if err != nil {
		t.Fatalf("cache: %v\n%s", err, logs)
	}
	if !strings.Contains(out, "cached kokoro-82m (onnx-community/Kokoro-82M-v1.0-ONNX@1939ad2a8e416c0acfeecc08a694d14ef25f2231): 5 files") ||
		!strings.Contains(out, "(5 fetched, 0 already present)") || !strings.Contains(out, "--model-dir "+dir) {
		t.Errorf("stdout = %q", out)
	}
	if !strings.Contains(logs, "onnx/model.onnx: verified") {
		t.Errorf("no progress on stderr: %q", logs)
	}
	man, err := modelsync.VerifyDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(man.Files) != 5 {
		t.Errorf("manifest lists %d files", len(man.Files))
	}
	for _, e := range man.Files {
		if b, _ := os.ReadFile(filepath.Join(dir, e.Path)); !bytes.Equal(b, files[e.Path]) {
			t.Errorf("%s differs from the Hub's", e.Path)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "onnx", "model_q4.onnx")); !os.IsNotExist(err) {
		t.Error("an unselected file was cached")
	}

	// Again: nothing fetched.
	out, _, err = runCache(t, "kokoro-82m", "--to", dir, "--hf-endpoint", srv.URL)
	if err != nil || !strings.Contains(out, "(0 fetched, 5 already present)") {
		t.Fatalf("second run: %v, %q", err, out)
	}
}

func TestCacheRefusesACorruptFile(t *testing.T) {
	srv, _ := kokoroHub(t, "voices/am_adam.bin")
	dir := t.TempDir()
	_, _, err := runCache(t, "kokoro-82m", "--to", dir, "--hf-endpoint", srv.URL)
	if exitcode.Code(err) != exitcode.CodeCheckFailed || err == nil || !strings.Contains(err.Error(), "voices/am_adam.bin: sha256 is") {
		t.Fatalf("err = %v (exit %d), want exit 1 naming voices/am_adam.bin", err, exitcode.Code(err))
	}
	for _, p := range []string{"voices/am_adam.bin", modelsync.ManifestName} {
		if _, err := os.Stat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("%s exists after the refusal", p)
		}
	}
}

func TestCacheErrors(t *testing.T) {
	srv, _ := kokoroHub(t, "")
	t.Setenv("SPEECH_INFRA_TEST_EMPTY_TOKEN", "")
	t.Setenv("SPEECH_INFRA_TEST_TOKEN", "hf_secret_not_to_be_sent")
	cases := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"espeak-ng has no weights", []string{"espeak-ng", "--to", t.TempDir()}, exitcode.CodeUsage,
			[]string{"espeak-ng has no weights to cache", `engine "espeak"`}},
		{"every usage problem at once", []string{"kokoro-82m", "--hf-endpoint", "ftp://mirror", "--token-env", "SPEECH_INFRA_TEST_EMPTY_TOKEN"}, exitcode.CodeUsage,
			[]string{"--to is required", `--hf-endpoint "ftp://mirror"`, "--token-env SPEECH_INFRA_TEST_EMPTY_TOKEN: the variable is unset or empty"}},
		{"a token instead of a variable name", []string{"kokoro-82m", "--to", t.TempDir(), "--token-env", "hf_abc-123"}, exitcode.CodeUsage,
			[]string{"is not an environment variable name"}},
		{"unknown model", []string{"kokoro-83m", "--to", t.TempDir()}, exitcode.CodeUsage, []string{`unknown model "kokoro-83m"`}},
		{"a token over plain http to a host that is not loopback", []string{"kokoro-82m", "--to", t.TempDir(), "--hf-endpoint", "http://hub.example.test", "--token-env", "SPEECH_INFRA_TEST_TOKEN"}, exitcode.CodeUsage,
			[]string{"--hf-endpoint", "plain http", "https://"}},
		{"no such repository on the mirror", []string{"kokoro-82m", "--to", t.TempDir(), "--hf-endpoint", srv.URL + "/elsewhere"}, exitcode.CodeCheckFailed,
			[]string{"404", "RepoNotFound", "check source.repo"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runCache(t, tc.args...)
			if exitcode.Code(err) != tc.code {
				t.Errorf("exit %d (%v), want %d", exitcode.Code(err), err, tc.code)
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want %q", err, w)
				}
			}
		})
	}
}
