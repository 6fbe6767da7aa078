package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestQMaxHTTPRefusesAContainerThatDoesNotAnswer: a wrong --url or a container that is down or unhealthy is
// refused by a GET /ping before the first step (exit 1, nothing written, no request sent), instead of a step
// of connection errors in a tight loop.
func TestQMaxHTTPRefusesAContainerThatDoesNotAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()

	var invocations atomic.Int64
	unhealthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ping" {
			http.Error(w, `{"error":"engine_stuck"}`, http.StatusServiceUnavailable)
			return
		}
		invocations.Add(1)
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer unhealthy.Close()

	for _, c := range []struct{ name, url, want string }{
		{"nothing listens", closed, "nothing answers GET " + closed + "/ping"},
		{"unhealthy", unhealthy.URL, "answered 503 Service Unavailable (" + `{"error":"engine_stuck"}` + "), not 200"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "qmax.json")
			_, stderr, code := runCLI(t, "qmax", "--model", "espeak-ng", "--transport", "http", "--url", c.url,
				"--ladder", "1", "--settle", "0s", "--hold", "2s", "--measure-window", "1s", "--container-dir", containerDir, "--output", out)
			if code != 1 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "correct --url") {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 naming %q and the fix", code, stderr, c.want)
			}
			entries, err := os.ReadDir(filepath.Dir(out))
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 0 {
				t.Fatalf("refused run left files: %v", entries)
			}
		})
	}
	if n := invocations.Load(); n != 0 {
		t.Fatalf("%d invocations sent to an unhealthy container", n)
	}
}
