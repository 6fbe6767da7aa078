package modelsync_test

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeHub is a real HTTP server that serves a small model repository in the Hugging Face Hub's tree and
// resolve format: /api/models/<repo>/tree/<rev>?recursive=1 (paged with Link rel="next"), and
// /<repo>/resolve/<rev>/<path>, which redirects LFS files to a second server (the "CDN") on another host
// name, as the Hub does. Faults are set per path.
type fakeHub struct {
	t        *testing.T
	repo     string
	rev      string
	files    map[string][]byte
	lfs      map[string]bool
	pageSize int
	token    string // when set, requests without "Bearer <token>" get 401

	mu        sync.Mutex
	corrupt   map[string]bool // serve the file with one byte flipped
	fail      map[string]int  // answer 503 this many more times
	failAll   map[string]bool // answer 500 always
	cutAfter  map[string]int  // close the connection after this many body bytes, once
	delay     map[string]time.Duration
	fetches   map[string]int // resolve requests per path
	ranges    []string       // Range headers seen
	cdnAuth   []string       // Authorization headers the CDN saw
	hubAuth   []string       // Authorization headers the hub saw
	treePaths []string       // extra tree entries (e.g. a hostile path)

	hub, cdn *httptest.Server
}

func newFakeHub(t *testing.T) *fakeHub {
	t.Helper()
	big := make([]byte, 11<<20+12345) // more than two 5 MiB parts
	for i := range big {
		big[i] = byte(i*7 + i>>13)
	}
	h := &fakeHub{
		t: t, repo: "acme/tiny-tts", rev: strings.Repeat("ab", 20), pageSize: 3,
		files: map[string][]byte{
			"onnx/model.onnx":   big,
			"config.json":       []byte(`{"sample_rate": 24000}` + "\n"),
			"tokenizer.json":    []byte(`{"vocab": {"a": 1, "b": 2}}` + "\n"),
			"voices/af.bin":     bytes.Repeat([]byte{1, 2, 3, 4}, 2500),
			"voices/bf.bin":     bytes.Repeat([]byte{9, 8, 7}, 3001),
			"README.md":         []byte("# tiny\n"),
			"onnx/model_q.onnx": []byte("not selected"),
		},
		lfs:     map[string]bool{"onnx/model.onnx": true, "voices/af.bin": true, "voices/bf.bin": true, "onnx/model_q.onnx": true},
		corrupt: map[string]bool{}, fail: map[string]int{}, failAll: map[string]bool{}, cutAfter: map[string]int{},
		delay: map[string]time.Duration{}, fetches: map[string]int{},
	}
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	h.hub = httptest.NewServer(http.HandlerFunc(h.serveHub))
	t.Cleanup(func() { h.hub.Close(); h.cdn.Close() })
	return h
}

// patterns select every file but README.md and model_q.onnx.
var patterns = []string{"onnx/model.onnx", "tokenizer.json", "config.json", "voices/*.bin"}

func (h *fakeHub) endpoint() string { return h.hub.URL }

func sha256Hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func gitOID(b []byte) string {
	g := sha1.New()
	fmt.Fprintf(g, "blob %d\x00", len(b))
	g.Write(b)
	return hex.EncodeToString(g.Sum(nil))
}

func (h *fakeHub) serveHub(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.hubAuth = append(h.hubAuth, r.Header.Get("Authorization"))
	h.mu.Unlock()
	if h.token != "" && r.Header.Get("Authorization") != "Bearer "+h.token {
		w.Header().Set("X-Error-Code", "GatedRepo")
		http.Error(w, `{"error":"Access to model acme/tiny-tts is restricted."}`, http.StatusUnauthorized)
		return
	}
	treePrefix := "/api/models/" + h.repo + "/tree/"
	resolvePrefix := "/" + h.repo + "/resolve/" + h.rev + "/"
	switch {
	case strings.HasPrefix(r.URL.Path, treePrefix):
		if strings.TrimPrefix(r.URL.Path, treePrefix) != h.rev {
			w.Header().Set("X-Error-Code", "RevisionNotFound")
			http.Error(w, `{"error":"Invalid rev id"}`, http.StatusNotFound)
			return
		}
		if r.URL.Query().Get("recursive") != "1" {
			http.Error(w, "the sync must ask for a recursive tree", http.StatusBadRequest)
			return
		}
		h.serveTree(w, r)
	case strings.HasPrefix(r.URL.Path, resolvePrefix):
		p := strings.TrimPrefix(r.URL.Path, resolvePrefix)
		if _, ok := h.files[p]; !ok {
			w.Header().Set("X-Error-Code", "EntryNotFound")
			http.Error(w, "Entry not found", http.StatusNotFound)
			return
		}
		if h.lfs[p] {
			// The Hub redirects LFS files to its CDN, on another host: 127.0.0.1 -> localhost here.
			cdn := strings.Replace(h.cdn.URL, "127.0.0.1", "localhost", 1)
			http.Redirect(w, r, cdn+"/blobs/"+p+"?signed=1", http.StatusFound)
			return
		}
		h.serveFile(w, r, p)
	default:
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
	}
}

func (h *fakeHub) serveCDN(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.cdnAuth = append(h.cdnAuth, r.Header.Get("Authorization"))
	h.mu.Unlock()
	h.serveFile(w, r, strings.TrimPrefix(r.URL.Path, "/blobs/"))
}

func (h *fakeHub) serveTree(w http.ResponseWriter, r *http.Request) {
	type lfs struct {
		OID         string `json:"oid"`
		Size        int    `json:"size"`
		PointerSize int    `json:"pointerSize"`
	}
	type entry struct {
		Type string `json:"type"`
		OID  string `json:"oid"`
		Size int    `json:"size"`
		Path string `json:"path"`
		LFS  *lfs   `json:"lfs,omitempty"`
	}
	var all []entry
	for _, d := range []string{"onnx", "voices"} {
		all = append(all, entry{Type: "directory", OID: strings.Repeat("0", 40), Path: d})
	}
	paths := make([]string, 0, len(h.files))
	for p := range h.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		b := h.files[p]
		e := entry{Type: "file", OID: gitOID(b), Size: len(b), Path: p}
		if h.lfs[p] {
			// A git LFS pointer's blob id, not the content's: the sync must use lfs.oid.
			e.OID = gitOID([]byte("version https://git-lfs.github.com/spec/v1\noid sha256:" + sha256Hex(b)))
			e.LFS = &lfs{OID: sha256Hex(b), Size: len(b), PointerSize: 134}
		}
		all = append(all, e)
	}
	for _, p := range h.treePaths {
		all = append(all, entry{Type: "file", OID: gitOID(nil), Size: 0, Path: p})
	}
	start, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	end := min(start+h.pageSize, len(all))
	if end < len(all) {
		w.Header().Set("Link", fmt.Sprintf(`<%s%s?recursive=1&cursor=%d>; rel="next"`, h.hub.URL, r.URL.Path, end))
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(all[start:end])
}

func (h *fakeHub) serveFile(w http.ResponseWriter, r *http.Request, p string) {
	h.mu.Lock()
	h.fetches[p]++
	if rg := r.Header.Get("Range"); rg != "" {
		h.ranges = append(h.ranges, p+" "+rg)
	}
	failAll, fail, corrupt, cut, delay := h.failAll[p], h.fail[p], h.corrupt[p], h.cutAfter[p], h.delay[p]
	if fail > 0 {
		h.fail[p]--
	}
	delete(h.cutAfter, p)
	h.mu.Unlock()
	if failAll {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	if fail > 0 {
		w.Header().Set("Retry-After", "0")
		http.Error(w, "slow down", http.StatusServiceUnavailable)
		return
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	b := h.files[p]
	if corrupt {
		b = bytes.Clone(b)
		b[len(b)/2] ^= 0x01
	}
	if cut > 0 && r.Header.Get("Range") == "" {
		// Promise the whole file, send part of it, and drop the connection.
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		w.Write(b[:cut])
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		}
		return
	}
	http.ServeContent(w, r, p, time.Time{}, bytes.NewReader(b))
}

func (h *fakeHub) fetched(p string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fetches[p]
}

func (h *fakeHub) resetFetches() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fetches = map[string]int{}
}

func fmtLine(f string, a ...any) string { return fmt.Sprintf(f, a...) }

func containsLine(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}
