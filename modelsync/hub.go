package modelsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// maxTreePage bounds one page of the tree API's answer (a large repository lists a few MiB).
const maxTreePage = 64 << 20

// Bounds of a whole tree listing (every page together): a server that keeps answering with new "next" pages
// must not grow the sync without end (an endless listing reached 5.8 GB in 40 s). The Hub pages 1,000 entries at a time;
// the largest model repositories list a few tens of thousands of entries.
const (
	DefaultMaxTreePages   = 1000
	DefaultMaxTreeEntries = 200_000
	DefaultMaxTreeBytes   = 256 << 20
)

// hub talks to the Hugging Face Hub's tree and resolve endpoints.
type hub struct {
	src    Source
	base   *url.URL
	client *http.Client
	opts   Options
}

func newHub(src Source, opts Options) (*hub, error) {
	ep := src.Endpoint
	if ep == "" {
		ep = DefaultEndpoint
	}
	if err := checkEndpoint(ep); err != nil {
		return nil, fmt.Errorf("modelsync: %w", err)
	}
	base, _ := url.Parse(strings.TrimRight(ep, "/"))
	if src.Token != "" && base.Scheme == "http" && !isLoopback(base.Hostname()) {
		return nil, fmt.Errorf("modelsync: the endpoint %s is plain http and not loopback: %w; use the https:// endpoint (a plain-http mirror is allowed only on localhost, 127.0.0.1 or ::1)", base.Redacted(), ErrTokenOverHTTP)
	}
	c := src.HTTPClient
	if c == nil {
		c = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   30 * time.Second,
			ResponseHeaderTimeout: 60 * time.Second,
			IdleConnTimeout:       90 * time.Second,
			ForceAttemptHTTP2:     true,
		}}
	}
	if src.Token != "" {
		// The token is added by the transport, per request, and only to the Hub's exact origin. The request
		// the client is given carries no Authorization header, so a redirect (which copies the first
		// request's headers; Go keeps Authorization for another port, another scheme and any subdomain of
		// the same host) never carries the token anywhere else.
		cc := *c
		rt := cc.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		cc.Transport = &tokenTransport{base: rt, origin: originOf(base), token: src.Token}
		c = &cc
	}
	return &hub{src: src, base: base, client: c, opts: opts}, nil
}

// origin is a URL's scheme, host and port, as the browser same-origin rule compares them.
type origin struct{ scheme, host, port string }

func originOf(u *url.URL) origin {
	o := origin{scheme: strings.ToLower(u.Scheme), host: strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")), port: u.Port()}
	if o.port == "" {
		switch o.scheme {
		case "https":
			o.port = "443"
		case "http":
			o.port = "80"
		}
	}
	return o
}

// isLoopback reports whether host names this machine by itself: localhost or a loopback IP literal.
// A name that merely resolves to a loopback address does not count.
func isLoopback(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tokenTransport adds "Authorization: Bearer <token>" to requests for exactly the Hub's origin (scheme,
// host and port), and never over plain http unless that origin is loopback (newHub refuses the token for
// any other http endpoint). Every other request, notably a redirect to the Hub's CDN, another port, an
// http downgrade or a subdomain, goes without it, and without any Authorization header at all.
type tokenTransport struct {
	base   http.RoundTripper
	origin origin
	token  Token
}

// RoundTrip implements http.RoundTripper.
func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Del("Authorization")
	if o := originOf(req.URL); o == t.origin && (o.scheme == "https" || isLoopback(o.host)) {
		r.Header.Set("Authorization", "Bearer "+string(t.token))
	}
	return t.base.RoundTrip(r)
}

// ErrTokenOverHTTP says a token was given with a plain-http endpoint that is not loopback: a usage error.
var ErrTokenOverHTTP = errors.New("the Hugging Face token would cross the network unencrypted")

// checkEndpoint refuses an endpoint that is not an absolute http(s) URL.
func checkEndpoint(ep string) error {
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("endpoint %q is not an http(s) URL like https://huggingface.co", ep)
	}
	return nil
}

// escapePath escapes each segment of a slash-separated path for a URL.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// treeEntry is one entry of the tree API's JSON array.
type treeEntry struct {
	Type string `json:"type"`
	Path string `json:"path"`
	Size int64  `json:"size"`
	OID  string `json:"oid"`
	LFS  *struct {
		OID  string `json:"oid"`
		Size int64  `json:"size"`
	} `json:"lfs"`
}

// tree lists every file of the repository at the revision, following the Link rel="next" pages the Hub
// sends for large trees (the same scheme as GitHub's API).
func (h *hub) tree(ctx context.Context) ([]File, error) {
	next := h.base.String() + "/api/models/" + escapePath(h.src.Repo) + "/tree/" + url.PathEscape(h.src.Revision) + "?recursive=1"
	var files []File
	seen := map[string]bool{}
	var entriesSeen int
	var bytesSeen int64
	for page := 1; next != ""; page++ {
		if page > h.opts.MaxTreePages {
			return nil, fmt.Errorf("modelsync: list %s@%s: the tree API is still sending next pages after %d pages, the bound on pages of one listing (Options.MaxTreePages): refusing an endless listing; check --hf-endpoint", h.src.Repo, h.src.Revision, h.opts.MaxTreePages)
		}
		if seen[next] {
			return nil, fmt.Errorf("modelsync: list %s@%s: the tree API's next page %s repeats an earlier page: the server's pagination loops", h.src.Repo, h.src.Revision, next)
		}
		seen[next] = true
		resp, err := h.get(ctx, next, "", "list the files of "+h.src.Repo+"@"+h.src.Revision)
		if err != nil {
			return nil, err
		}
		var entries []treeEntry
		pageLimit := min(int64(maxTreePage), h.opts.MaxTreeBytes-bytesSeen)
		data, err := io.ReadAll(io.LimitReader(resp.Body, pageLimit+1))
		link := resp.Header.Get("Link")
		resp.Body.Close()
		if err == nil && int64(len(data)) > pageLimit {
			if pageLimit < maxTreePage {
				return nil, fmt.Errorf("modelsync: list %s@%s: the tree API's pages add up to more than %d bytes by page %d, the bound on bytes of one listing (Options.MaxTreeBytes): refusing an endless listing; check --hf-endpoint", h.src.Repo, h.src.Revision, h.opts.MaxTreeBytes, page)
			}
			err = fmt.Errorf("the page is larger than %d MiB", maxTreePage>>20)
		}
		bytesSeen += int64(len(data))
		if err == nil {
			err = json.Unmarshal(data, &entries)
		}
		if err != nil {
			return nil, fmt.Errorf("modelsync: list %s@%s: page %d of the tree API is not the expected JSON array: %w: is --hf-endpoint a Hugging Face Hub?", h.src.Repo, h.src.Revision, page, err)
		}
		entriesSeen += len(entries)
		if entriesSeen > h.opts.MaxTreeEntries {
			return nil, fmt.Errorf("modelsync: list %s@%s: the tree API listed more than %d entries by page %d, the bound on entries of one listing (Options.MaxTreeEntries): refusing an endless listing; check --hf-endpoint", h.src.Repo, h.src.Revision, h.opts.MaxTreeEntries, page)
		}
		for _, e := range entries {
			if e.Type != "file" {
				continue
			}
			f, err := fileOf(e)
			if err != nil {
				return nil, fmt.Errorf("modelsync: list %s@%s: %w", h.src.Repo, h.src.Revision, err)
			}
			files = append(files, f)
		}
		next, err = h.nextPage(link)
		if err != nil {
			return nil, fmt.Errorf("modelsync: list %s@%s: %w", h.src.Repo, h.src.Revision, err)
		}
	}
	return files, nil
}

// fileOf checks one tree entry and turns it into a File.
func fileOf(e treeEntry) (File, error) {
	if i := strings.IndexFunc(e.Path, isControl); i >= 0 {
		return File{}, fmt.Errorf("the tree lists the path %q, which holds the control character %U: refusing a name that would be printed raw to a terminal or log", e.Path, []rune(e.Path[i:])[0])
	}
	if !utf8.ValidString(e.Path) {
		return File{}, fmt.Errorf("the tree lists the path %q, which is not valid UTF-8", e.Path)
	}
	if !fs.ValidPath(e.Path) || e.Path == "." || strings.Contains(e.Path, "\\") {
		return File{}, fmt.Errorf("the tree lists the path %q, which is not a plain relative path: refusing a tree that could write outside the model prefix", e.Path)
	}
	if e.Size < 0 {
		return File{}, fmt.Errorf("%s: the tree states a negative size %d", e.Path, e.Size)
	}
	if e.LFS != nil {
		if !isHex(e.LFS.OID, 64) {
			return File{}, fmt.Errorf("%s: the tree's lfs.oid %q is not a SHA-256", e.Path, e.LFS.OID)
		}
		if e.LFS.Size != e.Size {
			return File{}, fmt.Errorf("%s: the tree states size %d and lfs.size %d", e.Path, e.Size, e.LFS.Size)
		}
		return File{Path: e.Path, Size: e.Size, SHA256: strings.ToLower(e.LFS.OID)}, nil
	}
	if !isHex(e.OID, 40) {
		return File{}, fmt.Errorf("%s: the tree's oid %q is not a git blob id (40 hex digits)", e.Path, e.OID)
	}
	return File{Path: e.Path, Size: e.Size, GitOID: strings.ToLower(e.OID)}, nil
}

// isControl reports a C0 or C1 control character or DEL (NUL, ESC, newline, ...).
func isControl(r rune) bool { return unicode.IsControl(r) }

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range strings.ToLower(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// nextPage returns the URL of the Link header's rel="next", or "" on the last page. A next page on another
// host is refused: the token must never go anywhere but the Hub.
func (h *hub) nextPage(link string) (string, error) {
	for _, part := range strings.Split(link, ",") {
		part = strings.TrimSpace(part)
		lt, gt := strings.Index(part, "<"), strings.Index(part, ">")
		if lt != 0 || gt < 0 {
			continue
		}
		isNext := false
		for _, p := range strings.Split(part[gt+1:], ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(k, "rel") && strings.Trim(v, `"`) == "next" {
				isNext = true
			}
		}
		if !isNext {
			continue
		}
		u, err := h.base.Parse(part[1:gt])
		if err != nil {
			return "", fmt.Errorf("the tree API's next-page link %q does not parse: %w", part[1:gt], err)
		}
		if u.Scheme != h.base.Scheme || u.Host != h.base.Host {
			return "", fmt.Errorf("the tree API's next page %s is on another host than %s: refused, the token is only sent to the Hub", u.Redacted(), h.base.Host)
		}
		return u.String(), nil
	}
	return "", nil
}

// open returns f's content from the resolve endpoint. A connection that breaks or stalls mid-way is
// resumed with a Range request (within the retry budget), so one bad connection does not restart a large file.
func (h *hub) open(ctx context.Context, f File) (io.ReadCloser, error) {
	u := h.base.String() + "/" + escapePath(h.src.Repo) + "/resolve/" + url.PathEscape(h.src.Revision) + "/" + escapePath(f.Path)
	r := &resumingBody{ctx: ctx, h: h, url: u, what: "fetch " + f.Path}
	if err := r.connect(0); err != nil {
		return nil, err
	}
	return r, nil
}

// resumingBody reads a resolve response and reconnects from the current offset after a transient failure.
type resumingBody struct {
	ctx      context.Context
	h        *hub
	url      string
	what     string
	off      int64
	body     io.ReadCloser
	cancel   context.CancelFunc
	watch    *time.Timer
	failures int
	mu       sync.Mutex
	stalled  bool
}

// connect (re)opens the response at offset off.
func (r *resumingBody) connect(off int64) error {
	r.closeBody()
	rng := ""
	if off > 0 {
		rng = fmt.Sprintf("bytes=%d-", off)
	}
	reqCtx, cancel := context.WithCancel(r.ctx)
	resp, err := r.h.get(reqCtx, r.url, rng, r.what)
	if err != nil {
		cancel()
		return err
	}
	body := resp.Body
	switch {
	case off > 0 && resp.StatusCode == http.StatusPartialContent:
		start, ok := contentRangeStart(resp.Header.Get("Content-Range"))
		if !ok || start != off {
			resp.Body.Close()
			cancel()
			return fmt.Errorf("modelsync: %s: resumed at byte %d, the server answered Content-Range %q", r.what, off, resp.Header.Get("Content-Range"))
		}
	case off > 0:
		// The server ignored the Range header: skip what was already read.
		if _, err := io.CopyN(io.Discard, body, off); err != nil {
			resp.Body.Close()
			cancel()
			return fmt.Errorf("modelsync: %s: resuming at byte %d: %w", r.what, off, err)
		}
	}
	r.body, r.cancel = body, cancel
	r.mu.Lock()
	r.stalled = false
	r.mu.Unlock()
	// The watchdog cancels the request when no byte arrives within the stall timeout.
	r.watch = time.AfterFunc(r.h.opts.StallTimeout, func() {
		r.mu.Lock()
		r.stalled = true
		r.mu.Unlock()
		cancel()
	})
	return nil
}

func contentRangeStart(cr string) (int64, bool) {
	rest, ok := strings.CutPrefix(cr, "bytes ")
	if !ok {
		return 0, false
	}
	s, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// Read implements io.Reader.
func (r *resumingBody) Read(p []byte) (int, error) {
	for {
		n, err := r.body.Read(p)
		r.watch.Reset(r.h.opts.StallTimeout)
		r.off += int64(n)
		if err == nil || err == io.EOF || n > 0 {
			if err != nil && err != io.EOF && n > 0 {
				// Deliver the bytes now; the next Read meets the error again (or the resumed body).
				return n, nil
			}
			return n, err
		}
		if r.ctx.Err() != nil {
			return 0, r.ctx.Err()
		}
		r.mu.Lock()
		stalled := r.stalled
		r.mu.Unlock()
		r.failures++
		if r.failures >= r.h.opts.MaxAttempts {
			return 0, fmt.Errorf("modelsync: %s: the connection failed %d times, last at byte %d: %w", r.what, r.failures, r.off, err)
		}
		why := err.Error()
		if stalled {
			why = fmt.Sprintf("no data for %s", r.h.opts.StallTimeout)
		}
		r.h.opts.Logf("%s: connection failed at byte %d (%s): resuming (attempt %d of %d)", r.what, r.off, why, r.failures+1, r.h.opts.MaxAttempts)
		if err := sleep(r.ctx, backoff(r.failures, 0)); err != nil {
			return 0, err
		}
		if err := r.connect(r.off); err != nil {
			return 0, err
		}
	}
}

func (r *resumingBody) closeBody() {
	if r.watch != nil {
		r.watch.Stop()
	}
	if r.body != nil {
		r.body.Close()
		r.body = nil
	}
	if r.cancel != nil {
		r.cancel()
	}
}

// Close implements io.Closer.
func (r *resumingBody) Close() error {
	r.closeBody()
	return nil
}

// HTTPError is an answer of the Hub that ends a run.
type HTTPError struct {
	// What the request was for, URL it went to.
	What, URL string
	// Status is the HTTP status code; Code the Hub's X-Error-Code (RepoNotFound, RevisionNotFound,
	// EntryNotFound, GatedRepo), if any.
	Status int
	Code   string
	// Message is the start of the Hub's answer.
	Message string
	// Token says whether the request carried a token.
	Token bool
}

// Error implements error.
func (e *HTTPError) Error() string {
	var fix string
	switch {
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden || e.Code == "GatedRepo":
		if e.Token {
			fix = "the token was refused or has no access to this repository: accept the model's terms on huggingface.co with the token's account, or use a token with read access"
		} else {
			fix = "the repository is gated or private: give a Hugging Face token with read access (speech-infra cache --token-env NAME; the catalog's source.token_secret for the stack)"
		}
	case e.Status == http.StatusNotFound && e.Code == "RevisionNotFound":
		fix = "the pinned revision does not exist in the repository: check source.revision in the catalog"
	case e.Status == http.StatusNotFound && e.Code == "EntryNotFound":
		fix = "the file is not in the pinned revision: check source.files and source.revision"
	case e.Status == http.StatusNotFound:
		fix = "the repository, revision or file does not exist (a private repository without a token also answers 404): check source.repo and source.revision, or give a token"
	default:
		fix = "the Hub refused the request: check --hf-endpoint, or retry later"
	}
	code := ""
	if e.Code != "" {
		code = " " + e.Code
		if strings.IndexFunc(e.Code, isControl) >= 0 || !utf8.ValidString(e.Code) {
			code = " " + strconv.Quote(e.Code)
		}
	}
	msg := ""
	if e.Message != "" {
		msg = fmt.Sprintf(" (%q)", e.Message)
	}
	return fmt.Sprintf("modelsync: %s: GET %s answered %d %s%s%s: %s", e.What, e.URL, e.Status, http.StatusText(e.Status), code, msg, fix)
}

// get sends one GET, retrying transient failures (connection errors, 429, 5xx) with exponential backoff
// and jitter (honouring Retry-After) up to MaxAttempts, within ctx. It returns a 2xx response.
func (h *hub) get(ctx context.Context, u, rng, what string) (*http.Response, error) {
	var last error
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, fmt.Errorf("modelsync: %s: %w", what, err)
		}
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		req.Header.Set("User-Agent", "speech-infra-modelsync/1")
		resp, err := h.client.Do(req)
		var retryAfter time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, fmt.Errorf("modelsync: %s: %w", what, ctx.Err())
			}
			last = err
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			return resp, nil
		default:
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
			resp.Body.Close()
			he := &HTTPError{What: what, URL: u, Status: resp.StatusCode, Code: resp.Header.Get("X-Error-Code"),
				Message: strings.TrimSpace(string(msg)), Token: h.src.Token != ""}
			if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500 {
				return nil, he
			}
			last = he
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
				retryAfter = time.Duration(s) * time.Second
			}
		}
		if attempt >= h.opts.MaxAttempts {
			var he *HTTPError
			if errors.As(last, &he) {
				return nil, fmt.Errorf("modelsync: %s: gave up after %d attempts: %w", what, attempt, last)
			}
			return nil, fmt.Errorf("modelsync: %s: gave up after %d attempts: %w: check the network (proxy, DNS) and the Hub endpoint (--hf-endpoint)", what, attempt, last)
		}
		d := backoff(attempt, retryAfter)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
			return nil, fmt.Errorf("modelsync: %s: %w (the next retry would pass the deadline; last error: %v)", what, context.DeadlineExceeded, last)
		}
		h.opts.Logf("%s: %v: retrying in %s (attempt %d of %d)", what, shortErr(last), d.Round(time.Millisecond), attempt+1, h.opts.MaxAttempts)
		if err := sleep(ctx, d); err != nil {
			return nil, fmt.Errorf("modelsync: %s: %w", what, err)
		}
	}
}

// shortErr is an error for a retry log line.
func shortErr(err error) string {
	var he *HTTPError
	if errors.As(err, &he) {
		return fmt.Sprintf("%d %s", he.Status, http.StatusText(he.Status))
	}
	return err.Error()
}

// backoff is the wait before attempt+1: 250 ms doubling up to 20 s, with jitter, or retryAfter (up to 60 s).
func backoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, 60*time.Second)
	}
	d := 250 * time.Millisecond << min(attempt-1, 7)
	d = min(d, 20*time.Second)
	return d/2 + rand.N(d/2+1)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
