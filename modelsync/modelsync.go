// Package modelsync copies the pinned files of a Hugging Face model repository into a destination (an S3
// prefix or a local directory) and proves every byte: each file is streamed from the Hub's resolve endpoint,
// checked against the size and hash the Hub's tree API states for that revision (an LFS file's SHA-256, a
// small file's git blob id), and made visible only when it matches. manifest.json, in the format the
// inference container verifies at start, is written last and only when every file is verified.
//
// Sync is safe to run again: files the destination already holds verified are skipped, and a run cut short
// (a deadline, a failing server) leaves only whole, verified files behind, so the next run uploads what is
// missing. The package parses no flags and needs no AWS account; the CDK stack's Lambda and
// `speech-infra cache` both call Sync.
package modelsync

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"path"
	"sort"
	"strings"
	"time"
)

// DefaultEndpoint is the Hugging Face Hub.
const DefaultEndpoint = "https://huggingface.co"

// ManifestName is the manifest's name at the root of a synced model (the container's manifest.FileName).
const ManifestName = "manifest.json"

// Token is a Hugging Face access token. It formats as "[redacted]" so that a Source printed with %v or %+v,
// or in a log line, never shows it; only the HTTP requests to the Hub's own host carry it.
type Token string

// String implements fmt.Stringer without revealing the token.
func (t Token) String() string {
	if t == "" {
		return ""
	}
	return "[redacted]"
}

// GoString implements fmt.GoStringer without revealing the token.
func (t Token) GoString() string { return `"` + t.String() + `"` }

// Source names the files to sync: repository, pinned revision and the patterns that select files.
type Source struct {
	// Endpoint is the Hub (or a mirror speaking the same tree/resolve API); empty means DefaultEndpoint.
	Endpoint string
	// Repo is the model repository, owner/name.
	Repo string
	// Revision is the pinned commit (40 hex digits).
	Revision string
	// Patterns select the repository's files, each with path.Match semantics against the whole path
	// relative to the repository root: `*` matches within one path segment (never a `/`), `?` one
	// character, `[...]` a class; a pattern without metacharacters names one file. Every pattern must
	// select at least one file: a pattern that selects nothing is an error, never ignored.
	Patterns []string
	// Token is sent as "Authorization: Bearer" to the Hub for gated or private repositories. It is
	// optional: a public repository needs none, and then no Authorization header is sent. It goes only to
	// the exact origin (scheme, host, port) of Endpoint, and never over plain http unless that origin is
	// loopback (Sync refuses a token with any other http endpoint): a redirect to the Hub's CDN, another
	// port, an http downgrade or a subdomain does not carry it.
	Token Token
	// HTTPClient fetches from the Hub; nil means a client with connect and response-header timeouts.
	HTTPClient *http.Client
}

// Options tune a run.
type Options struct {
	// Deadline is when the run must have stopped (a Lambda's remaining time minus a margin). A run that
	// reaches it stops cleanly, leaving only whole verified files, and returns Result.Done false with no
	// error. The zero time means no deadline (the stall timeout and retry budget still bound every wait).
	Deadline time.Time
	// Logf receives progress lines (file, bytes, rate) and retries; nil discards them. No line carries the token.
	Logf func(format string, args ...any)
	// MaxAttempts bounds the attempts of one HTTP request (transient errors: connection errors, 429, 5xx);
	// 0 means DefaultMaxAttempts.
	MaxAttempts int
	// StallTimeout bounds the wait for the next bytes of a response; a stalled response is retried (resuming
	// with a Range request). 0 means DefaultStallTimeout.
	StallTimeout time.Duration
	// ProgressEvery is the interval between progress lines while a file streams; 0 means 10 s.
	ProgressEvery time.Duration
	// MaxTreePages, MaxTreeEntries and MaxTreeBytes bound one listing of the repository tree (all its
	// pages together); a listing past a bound is refused with an error naming it. 0 means
	// DefaultMaxTreePages, DefaultMaxTreeEntries, DefaultMaxTreeBytes.
	MaxTreePages, MaxTreeEntries int
	MaxTreeBytes                 int64
}

// Defaults of Options.
const (
	DefaultMaxAttempts  = 6
	DefaultStallTimeout = 60 * time.Second
)

// Result says what a run did.
type Result struct {
	// Done is true when every selected file is verified at the destination and manifest.json is written.
	// False (with a nil error) means the deadline came first: run again to resume.
	Done bool
	// Uploaded are the paths fetched and written by this run, Skipped those the destination already held verified.
	Uploaded, Skipped []string
	// Bytes counts the bytes fetched by this run.
	Bytes int64
	// Manifest is what was written when Done.
	Manifest *Manifest
}

// File is one selected file of the repository tree with what the Hub states about it.
type File struct {
	// Path is relative to the repository root (and to the destination).
	Path string
	// Size is the file's size in bytes.
	Size int64
	// SHA256 is the expected hex SHA-256 of the content: the LFS object id for LFS files, empty for a
	// small (non-LFS) file, whose content is checked against GitOID instead and whose SHA-256 is computed.
	SHA256 string
	// GitOID is the git blob id (SHA-1 of "blob <size>\x00" and the content) of a non-LFS file.
	GitOID string
}

// LFS reports whether the Hub states the file's SHA-256.
func (f File) LFS() bool { return f.SHA256 != "" }

// Destination holds synced files. Sync verifies content; a Destination only stores it and must make a file
// visible only after verify accepted it.
type Destination interface {
	// Lookup reports whether the destination already holds f verified, and then its hex SHA-256.
	Lookup(ctx context.Context, f File) (sha256 string, ok bool, err error)
	// Put streams body (f's content as fetched) into f.Path. After body returns io.EOF it calls verify,
	// which returns the content's hex SHA-256 or an error; only when verify succeeds may the file become
	// visible. On any error nothing is left at f.Path: not the new content, and not an older copy that
	// Lookup rejected.
	Put(ctx context.Context, f File, body io.Reader, verify func() (string, error)) error
	// PutManifest writes manifest.json (whole, or not at all).
	PutManifest(ctx context.Context, data []byte) error
	// String names the destination for logs and errors.
	String() string
}

// MismatchError is a file whose fetched bytes differ from what the Hub's tree states. Nothing was written for it.
type MismatchError struct {
	// Path is the file, What the property that differs ("size", "sha256" or "git blob id").
	Path, What string
	// Want is what the tree states, Got what was fetched.
	Want, Got string
}

// Error implements error.
func (e *MismatchError) Error() string {
	return fmt.Sprintf("%s: %s is %s, the Hugging Face tree says %s: the download is corrupt or the server serves other bytes than the pinned revision; nothing was kept for this file: run again, and if it persists check the --hf-endpoint mirror or the network path", e.Path, e.What, e.Got, e.Want)
}

// Sync copies the files src selects into dst and writes manifest.json last. See the package documentation.
func Sync(ctx context.Context, src Source, dst Destination, opts Options) (Result, error) {
	var res Result
	if err := src.validate(); err != nil {
		return res, err
	}
	if dst == nil {
		return res, errors.New("modelsync: no destination: give an S3 or a directory destination")
	}
	opts = opts.withDefaults()
	runCtx := ctx
	if !opts.Deadline.IsZero() {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithDeadline(ctx, opts.Deadline)
		defer cancel()
	}
	// stopped says whether err only means the run's own deadline came: then the run ends cleanly, not failed.
	stopped := func(err error) bool {
		return ctx.Err() == nil && runCtx.Err() != nil && errors.Is(err, context.DeadlineExceeded)
	}
	h, err := newHub(src, opts)
	if err != nil {
		return res, err
	}
	tree, err := h.tree(runCtx)
	if err != nil {
		if stopped(err) {
			opts.Logf("deadline reached while listing %s@%s: stopping, run again to resume", src.Repo, src.Revision)
			return res, nil
		}
		return res, err
	}
	files, err := Select(tree, src.Patterns)
	if err != nil {
		return res, fmt.Errorf("modelsync: %s@%s: %w", src.Repo, src.Revision, err)
	}
	var total int64
	for _, f := range files {
		total += f.Size
	}
	opts.Logf("%s@%s: %d files, %s, into %s", src.Repo, src.Revision, len(files), mib(total), dst)
	man := &Manifest{Repo: src.Repo, Revision: src.Revision}
	for _, f := range files {
		if runCtx.Err() != nil {
			if stopped(runCtx.Err()) {
				opts.Logf("deadline reached before %s: stopping with %d of %d files done, run again to resume", f.Path, len(man.Files), len(files))
				return res, nil
			}
			return res, runCtx.Err()
		}
		sum, ok, err := dst.Lookup(runCtx, f)
		if err != nil {
			if stopped(err) {
				return res, nil
			}
			return res, fmt.Errorf("modelsync: check %s at %s: %w", f.Path, dst, err)
		}
		if ok {
			opts.Logf("%s: already present and verified (sha256 %s), skipped", f.Path, sum)
			res.Skipped = append(res.Skipped, f.Path)
			man.Files = append(man.Files, Entry{Path: f.Path, Size: f.Size, SHA256: sum})
			continue
		}
		sum, n, err := transfer(runCtx, h, f, dst, opts)
		res.Bytes += n
		if err != nil {
			if stopped(err) {
				opts.Logf("deadline reached during %s: its partial upload was discarded; stopping with %d of %d files done, run again to resume", f.Path, len(man.Files), len(files))
				return res, nil
			}
			return res, fmt.Errorf("modelsync: %s@%s: %w", src.Repo, src.Revision, err)
		}
		res.Uploaded = append(res.Uploaded, f.Path)
		man.Files = append(man.Files, Entry{Path: f.Path, Size: f.Size, SHA256: sum})
	}
	data, err := man.Encode()
	if err != nil {
		return res, err
	}
	if err := dst.PutManifest(runCtx, data); err != nil {
		if stopped(err) {
			return res, nil
		}
		return res, fmt.Errorf("modelsync: write %s to %s: %w", ManifestName, dst, err)
	}
	opts.Logf("%s@%s: %d files verified (%d fetched, %d already present), %s written", src.Repo, src.Revision, len(man.Files), len(res.Uploaded), len(res.Skipped), ManifestName)
	res.Done = true
	res.Manifest = man
	return res, nil
}

// transfer streams one file from the Hub into dst, verifying it on the way, and returns its SHA-256 and
// the bytes fetched.
func transfer(ctx context.Context, h *hub, f File, dst Destination, opts Options) (string, int64, error) {
	start := time.Now()
	opts.Logf("%s: fetching %s", f.Path, mib(f.Size))
	body, err := h.open(ctx, f)
	if err != nil {
		return "", 0, err
	}
	defer body.Close()
	v := newVerifier(f)
	prog := &progress{r: io.TeeReader(body, v), f: f, start: start, every: opts.ProgressEvery, logf: opts.Logf}
	// Reading one byte past the stated size is enough to know the server sends too much, and bounds it.
	lim := io.LimitReader(prog, f.Size+1)
	if err := dst.Put(ctx, f, lim, v.verify); err != nil {
		return "", prog.n, err
	}
	sum := v.sha256Hex()
	el := time.Since(start)
	opts.Logf("%s: verified, %s in %s (%s/s), sha256 %s", f.Path, mib(f.Size), el.Round(time.Millisecond), mib(int64(float64(f.Size)/max(el.Seconds(), 1e-3))), sum)
	return sum, prog.n, nil
}

// verifier hashes what streams through it and checks it against a File.
type verifier struct {
	f   File
	n   int64
	sha hash.Hash
	git hash.Hash
}

func newVerifier(f File) *verifier {
	v := &verifier{f: f, sha: sha256.New()}
	if !f.LFS() {
		v.git = sha1.New()
		fmt.Fprintf(v.git, "blob %d\x00", f.Size)
	}
	return v
}

// Write implements io.Writer.
func (v *verifier) Write(p []byte) (int, error) {
	v.n += int64(len(p))
	v.sha.Write(p)
	if v.git != nil {
		v.git.Write(p)
	}
	return len(p), nil
}

func (v *verifier) sha256Hex() string { return hex.EncodeToString(v.sha.Sum(nil)) }

// verify checks size and hash of everything written so far.
func (v *verifier) verify() (string, error) {
	if v.n != v.f.Size {
		got := fmt.Sprintf("%d bytes", v.n)
		if v.n > v.f.Size {
			got = fmt.Sprintf("more than %d bytes", v.f.Size)
		}
		return "", &MismatchError{Path: v.f.Path, What: "size", Want: fmt.Sprintf("%d bytes", v.f.Size), Got: got}
	}
	sum := v.sha256Hex()
	if v.f.LFS() {
		if !strings.EqualFold(sum, v.f.SHA256) {
			return "", &MismatchError{Path: v.f.Path, What: "sha256", Want: strings.ToLower(v.f.SHA256), Got: sum}
		}
		return sum, nil
	}
	if got := hex.EncodeToString(v.git.Sum(nil)); !strings.EqualFold(got, v.f.GitOID) {
		return "", &MismatchError{Path: v.f.Path, What: "git blob id", Want: strings.ToLower(v.f.GitOID), Got: got}
	}
	return sum, nil
}

// progress counts bytes and logs the rate now and then.
type progress struct {
	r     io.Reader
	f     File
	n     int64
	start time.Time
	last  time.Time
	every time.Duration
	logf  func(string, ...any)
}

func (p *progress) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	now := time.Now()
	if p.last.IsZero() {
		p.last = p.start
	}
	if now.Sub(p.last) >= p.every {
		p.last = now
		el := now.Sub(p.start).Seconds()
		p.logf("%s: %s of %s (%s/s)", p.f.Path, mib(p.n), mib(p.f.Size), mib(int64(float64(p.n)/max(el, 1e-3))))
	}
	return n, err
}

// Select keeps the tree's files that patterns select, sorted by path. Every pattern must select at least
// one file, and every selected path must be a plain relative path that is not the manifest's.
func Select(tree []File, patterns []string) ([]File, error) {
	if len(patterns) == 0 {
		return nil, errors.New("no file patterns: list the files (source.files in the catalog) to sync")
	}
	picked := map[string]File{}
	var problems []string
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			problems = append(problems, fmt.Sprintf("pattern %q is malformed (%v): use path.Match syntax, e.g. voices/*.bin", p, err))
			continue
		}
		hits := 0
		for _, f := range tree {
			if ok, _ := path.Match(p, f.Path); ok {
				hits++
				picked[f.Path] = f
			}
		}
		if hits == 0 {
			problems = append(problems, fmt.Sprintf("pattern %q selects no file of the repository tree: fix source.files (a `*` does not cross `/`) or the pinned revision", p))
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	files := make([]File, 0, len(picked))
	for _, f := range picked {
		if f.Path == ManifestName {
			return nil, fmt.Errorf("the repository's own %s is selected: it would collide with the manifest this sync writes; narrow source.files", ManifestName)
		}
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

func (s Source) validate() error {
	var problems []string
	if s.Repo == "" || strings.Count(s.Repo, "/") != 1 || strings.ContainsAny(s.Repo, "?#%\\ ") || strings.Contains(s.Repo, "..") {
		problems = append(problems, fmt.Sprintf("repo %q is not a Hugging Face repository: use owner/name", s.Repo))
	}
	if len(s.Revision) != 40 || strings.Trim(s.Revision, "0123456789abcdef") != "" {
		problems = append(problems, fmt.Sprintf("revision %q is not a pinned commit: use the full 40-hex-character commit id", s.Revision))
	}
	if len(problems) > 0 {
		return fmt.Errorf("modelsync: %s", strings.Join(problems, "; "))
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 10 * time.Second
	}
	if o.MaxTreePages <= 0 {
		o.MaxTreePages = DefaultMaxTreePages
	}
	if o.MaxTreeEntries <= 0 {
		o.MaxTreeEntries = DefaultMaxTreeEntries
	}
	if o.MaxTreeBytes <= 0 {
		o.MaxTreeBytes = DefaultMaxTreeBytes
	}
	return o
}

// mib formats a byte count for logs.
func mib(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
