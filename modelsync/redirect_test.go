package modelsync_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/modelsync"
)

const redirToken = "hf_redirect_secret_789"

// authLog records the Authorization headers one server saw.
type authLog struct {
	mu   sync.Mutex
	seen []string
}

func (a *authLog) add(r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen = append(a.seen, r.Header.Get("Authorization"))
}

func (a *authLog) get() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

// redirectingHub serves a one-file repository whose resolve endpoint redirects to target (a URL prefix);
// hubAuth and targetAuth record what the two servers saw.
type redirectingHub struct {
	repo, rev         string
	content           []byte
	hub, target       *httptest.Server
	hubAuth, tgtAuth  authLog
	hubURL, targetURL string
}

func (h *redirectingHub) serveHub(w http.ResponseWriter, r *http.Request) {
	h.hubAuth.add(r)
	if r.Header.Get("Authorization") != "Bearer "+redirToken {
		w.Header().Set("X-Error-Code", "GatedRepo")
		http.Error(w, "gated", http.StatusUnauthorized)
		return
	}
	switch {
	case strings.HasPrefix(r.URL.Path, "/api/models/"+h.repo+"/tree/"):
		json.NewEncoder(w).Encode([]map[string]any{{"type": "file", "path": "config.json", "size": len(h.content), "oid": gitOID(h.content)}})
	case strings.HasPrefix(r.URL.Path, "/"+h.repo+"/resolve/"):
		http.Redirect(w, r, h.targetURL+"/blobs/config.json", http.StatusFound)
	default:
		http.NotFound(w, r)
	}
}

func (h *redirectingHub) serveTarget(w http.ResponseWriter, r *http.Request) {
	h.tgtAuth.add(r)
	w.Write(h.content)
}

// dialTest resolves every *.test name to 127.0.0.1 (the port stays the URL's), as a DNS entry would.
func dialTest(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(host, ".test") {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	return (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
}

// TestTheTokenStaysWithTheHubsOrigin tries three redirects: the Hub's resolve answer sends
// the client to another port on the same host, to plain http on the same host, and to a subdomain. Go's
// client keeps Authorization for all three; the token must reach the Hub's exact origin only.
func TestTheTokenStaysWithTheHubsOrigin(t *testing.T) {
	client := &http.Client{Transport: &http.Transport{
		DialContext:     dialTest,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the test servers' certificate does not name *.test
	}}
	for _, tc := range []struct {
		name            string
		hubTLS, tgtTLS  bool
		hubHost, tgtHos string
	}{
		{"another port on the same host", false, false, "127.0.0.1", "127.0.0.1"},
		{"http downgrade of an https endpoint", true, false, "127.0.0.1", "127.0.0.1"},
		{"a subdomain (cdn.hub.test)", true, true, "hub.test", "cdn.hub.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &redirectingHub{repo: "acme/gated", rev: strings.Repeat("cd", 20), content: []byte(`{"a":1}` + "\n")}
			start := func(f http.HandlerFunc, tlsOn bool, host string) (*httptest.Server, string) {
				s := httptest.NewUnstartedServer(f)
				scheme := "http"
				if tlsOn {
					s.StartTLS()
					scheme = "https"
				} else {
					s.Start()
				}
				t.Cleanup(s.Close)
				_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
				return s, fmt.Sprintf("%s://%s:%s", scheme, host, port)
			}
			h.target, h.targetURL = start(h.serveTarget, tc.tgtTLS, tc.tgtHos)
			h.hub, h.hubURL = start(h.serveHub, tc.hubTLS, tc.hubHost)

			src := modelsync.Source{Endpoint: h.hubURL, Repo: h.repo, Revision: h.rev, Patterns: []string{"config.json"},
				Token: redirToken, HTTPClient: client}
			res, err := modelsync.Sync(context.Background(), src, modelsync.Dir{Root: t.TempDir()}, testOptions(t))
			if err != nil || !res.Done {
				t.Fatalf("sync from %s redirecting to %s: %+v, %v", h.hubURL, h.targetURL, res, err)
			}
			if got := h.hubAuth.get(); len(got) < 2 || got[0] != "Bearer "+redirToken {
				t.Fatalf("the Hub (%s) saw Authorization %q: want the token on every request", h.hubURL, got)
			}
			tgt := h.tgtAuth.get()
			if len(tgt) == 0 {
				t.Fatal("the redirect target was never asked: the test does not test the redirect")
			}
			for _, a := range tgt {
				if a != "" {
					t.Errorf("the redirect target %s (not the Hub's origin %s) received Authorization %q", h.targetURL, h.hubURL, a)
				}
			}
		})
	}
}

// TestTheTokenNeverGoesOverPlainHTTPToANonLoopbackHost: a plain-http endpoint that is not loopback is
// refused before any request when a token is given; without a token it is allowed.
func TestTheTokenNeverGoesOverPlainHTTPToANonLoopbackHost(t *testing.T) {
	var asked authLog
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { asked.add(r); http.NotFound(w, r) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	client := &http.Client{Transport: &http.Transport{DialContext: dialTest}}
	src := modelsync.Source{Endpoint: "http://mirror.test:" + port, Repo: "acme/gated", Revision: strings.Repeat("cd", 20),
		Patterns: []string{"config.json"}, Token: redirToken, HTTPClient: client}
	_, err := modelsync.Sync(context.Background(), src, modelsync.Dir{Root: t.TempDir()}, testOptions(t))
	if !errors.Is(err, modelsync.ErrTokenOverHTTP) || !strings.Contains(err.Error(), "plain http") || !strings.Contains(err.Error(), "https://") || strings.Contains(err.Error(), redirToken) {
		t.Fatalf("err = %v: want a refusal naming plain http and the https fix", err)
	}
	if n := len(asked.get()); n != 0 {
		t.Fatalf("the server was asked %d times", n)
	}
	// Without a token a plain-http mirror is fine (here it answers 404).
	src.Token = ""
	if _, err := modelsync.Sync(context.Background(), src, modelsync.Dir{Root: t.TempDir()}, testOptions(t)); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("without a token: %v", err)
	}
}

// TestAnEndlessTreeListingStopsAtABound runs against an endless Hub: a tree API that keeps answering
// with a new "next" page. The sync stops with an error naming the bound, for each of the three bounds.
func TestAnEndlessTreeListingStopsAtABound(t *testing.T) {
	var pages int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		pages++
		n := pages
		mu.Unlock()
		var entries []map[string]any
		for i := range 50 {
			entries = append(entries, map[string]any{"type": "file", "path": fmt.Sprintf("p%d/f%d.bin", n, i), "size": 1, "oid": strings.Repeat("a", 40)})
		}
		w.Header().Set("Link", fmt.Sprintf(`<%s?recursive=1&cursor=%d>; rel="next"`, r.URL.Path, n))
		json.NewEncoder(w).Encode(entries)
	}))
	defer srv.Close()
	src := modelsync.Source{Endpoint: srv.URL, Repo: "acme/endless", Revision: strings.Repeat("ef", 20), Patterns: []string{"*"}}
	for _, tc := range []struct {
		name  string
		set   func(*modelsync.Options)
		bound string
	}{
		{"default bounds", func(*modelsync.Options) {}, fmt.Sprintf("%d pages, the bound on pages", modelsync.DefaultMaxTreePages)},
		{"pages", func(o *modelsync.Options) { o.MaxTreePages = 7 }, "7 pages, the bound on pages of one listing (Options.MaxTreePages)"},
		{"entries", func(o *modelsync.Options) { o.MaxTreeEntries = 120 }, "more than 120 entries by page 3, the bound on entries of one listing (Options.MaxTreeEntries)"},
		{"bytes", func(o *modelsync.Options) { o.MaxTreeBytes = 10_000 }, "more than 10000 bytes by page 3, the bound on bytes of one listing (Options.MaxTreeBytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			pages = 0
			mu.Unlock()
			opts := testOptions(t)
			opts.Logf = nil
			tc.set(&opts)
			start := time.Now()
			_, err := modelsync.Sync(context.Background(), src, modelsync.Dir{Root: t.TempDir()}, opts)
			if err == nil || !strings.Contains(err.Error(), tc.bound) {
				t.Fatalf("err = %v, want it to name %q", err, tc.bound)
			}
			t.Logf("stopped after %d pages in %s: %v", pages, time.Since(start).Round(time.Millisecond), err)
		})
	}
}

// TestControlCharactersInHubNamesAreRefused: a NUL (or any control character) in a tree path used to be
// accepted and printed raw to the terminal.
func TestControlCharactersInHubNamesAreRefused(t *testing.T) {
	for _, p := range []string{"config\x00.json", "a\x1b[31mred.json", "new\nline.json", "del\x7f.json", "c1\u0085.json"} {
		h := newFakeHub(t)
		h.treePaths = []string{p}
		var logs []string
		opts := testOptions(t)
		opts.Logf = func(f string, a ...any) { logs = append(logs, fmtLine(f, a...)) }
		_, err := modelsync.Sync(context.Background(), h.source(), modelsync.Dir{Root: t.TempDir()}, opts)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", p)) {
			t.Fatalf("path %q: err = %v, want a refusal quoting it", p, err)
		}
		for _, l := range append(logs, err.Error()) {
			if strings.Contains(l, p) {
				t.Errorf("path %q printed raw: %q", p, l)
			}
		}
	}
}

// A manifest's names come from the Hub too: VerifyDir refuses a control character in one, quoted.
func TestVerifyDirRefusesControlCharacters(t *testing.T) {
	dir := t.TempDir()
	man := `{"repo":"acme/x","revision":"` + strings.Repeat("ab", 20) + `","files":[{"path":"a\u0000b.json","size":1,"sha256":"` + strings.Repeat("0", 64) + `"}]}`
	if err := os.WriteFile(filepath.Join(dir, modelsync.ManifestName), []byte(man), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := modelsync.VerifyDir(dir)
	if err == nil || !strings.Contains(err.Error(), `"a\x00b.json"`) || strings.Contains(err.Error(), "a\x00b") {
		t.Fatalf("err = %v", err)
	}
}
