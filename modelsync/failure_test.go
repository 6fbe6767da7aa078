package modelsync_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/speech-infra/speech-infra/modelsync"
)

func TestSyncRefusesACorruptedByte(t *testing.T) {
	for _, p := range []string{"onnx/model.onnx", "voices/af.bin", "config.json"} {
		t.Run(p, func(t *testing.T) {
			// GIVEN a Hub that serves p with one byte flipped, and an older object already at p's key
			h := newFakeHub(t)
			h.corrupt[p] = true
			c := newS3(t)
			prefix := modelsync.ObjectPrefix("tiny", h.rev)
			if _, err := c.Client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(prefix + p), Body: strings.NewReader("stale")}); err != nil {
				t.Fatal(err)
			}
			dst := &modelsync.S3{Client: c, Bucket: bucket, Prefix: prefix, PartSize: modelsync.MinPartSize}

			// WHEN the sync runs
			res, err := modelsync.Sync(context.Background(), h.source(), dst, testOptions(t))

			// THEN it fails naming the file, expected and got; nothing is left at the key; no manifest
			var mm *modelsync.MismatchError
			if !errors.As(err, &mm) || mm.Path != p {
				t.Fatalf("err = %v, want a MismatchError for %s", err, p)
			}
			what := "sha256"
			if p == "config.json" {
				what = "git blob id"
			}
			if mm.What != what || mm.Want == mm.Got || !strings.Contains(err.Error(), mm.Want) || !strings.Contains(err.Error(), mm.Got) {
				t.Errorf("err = %v: want %s with expected and got values", err, what)
			}
			if res.Done {
				t.Error("Done after a mismatch")
			}
			if _, _, ok := getObject(t, c, prefix+p); ok {
				t.Errorf("an object is left at %s", p)
			}
			if _, _, ok := getObject(t, c, prefix+modelsync.ManifestName); ok {
				t.Error("manifest.json written after a mismatch")
			}
			if p == "onnx/model.onnx" && (c.aborted != 1 || c.complete != 0) {
				t.Errorf("multipart: %d aborted, %d completed: want the upload aborted", c.aborted, c.complete)
			}
		})
	}
}

func TestSyncDirRefusesACorruptedByte(t *testing.T) {
	h := newFakeHub(t)
	h.corrupt["onnx/model.onnx"] = true
	dir := t.TempDir()
	_, err := modelsync.Sync(context.Background(), h.source(), modelsync.Dir{Root: dir}, testOptions(t))
	var mm *modelsync.MismatchError
	if !errors.As(err, &mm) || mm.Path != "onnx/model.onnx" {
		t.Fatalf("err = %v", err)
	}
	for _, p := range []string{"onnx/model.onnx", "onnx/.model.onnx.modelsync-partial", modelsync.ManifestName} {
		if _, err := os.Stat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("%s left behind (%v)", p, err)
		}
	}
}

func TestSyncResumesAfterAFailingServer(t *testing.T) {
	// GIVEN a Hub whose voices/bf.bin fails with 500 every time
	h := newFakeHub(t)
	h.failAll["voices/bf.bin"] = true
	c := newS3(t)
	prefix := modelsync.ObjectPrefix("tiny", h.rev)
	dst := &modelsync.S3{Client: c, Bucket: bucket, Prefix: prefix, PartSize: modelsync.MinPartSize}
	opts := testOptions(t)
	opts.MaxAttempts = 2

	// WHEN the sync runs, it fails naming the file, after its retries, with no manifest
	_, err := modelsync.Sync(context.Background(), h.source(), dst, opts)
	if err == nil || !strings.Contains(err.Error(), "voices/bf.bin") || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "2 attempts") {
		t.Fatalf("err = %v", err)
	}
	if h.fetched("voices/bf.bin") != 2 {
		t.Errorf("voices/bf.bin fetched %d times, want 2 (MaxAttempts)", h.fetched("voices/bf.bin"))
	}
	if _, _, ok := getObject(t, c, prefix+modelsync.ManifestName); ok {
		t.Fatal("manifest.json written by a failed run")
	}

	// WHEN the server recovers and the sync runs again
	h.mu.Lock()
	h.failAll = map[string]bool{}
	h.mu.Unlock()
	h.resetFetches()
	res, err := modelsync.Sync(context.Background(), h.source(), dst, opts)

	// THEN only the missing file is fetched and uploaded
	if err != nil || !res.Done || !reflect.DeepEqual(res.Uploaded, []string{"voices/bf.bin"}) {
		t.Fatalf("rerun: %+v, %v: want only voices/bf.bin uploaded", res, err)
	}
	for _, p := range selected {
		if want := map[bool]int{true: 1, false: 0}[p == "voices/bf.bin"]; h.fetched(p) != want {
			t.Errorf("rerun fetched %s %d times, want %d", p, h.fetched(p), want)
		}
	}
	if mb, _, _ := getObject(t, c, prefix+modelsync.ManifestName); string(mb) != string(wantManifest(h)) {
		t.Errorf("manifest after resume:\n%s", mb)
	}
}

func TestSyncStopsCleanlyAtTheDeadlineAndResumes(t *testing.T) {
	// GIVEN a Hub that holds tokenizer.json until its request is given up (two minutes bound a hang), and a
	// deadline 10 s away: config.json and the 11-MiB model, fetched before it from memory, are done long
	// before the deadline however loaded the machine, which then falls in tokenizer.json's wait
	h := newFakeHub(t)
	h.delay["tokenizer.json"] = 2 * time.Minute
	c := newS3(t)
	prefix := modelsync.ObjectPrefix("tiny", h.rev)
	dst := &modelsync.S3{Client: c, Bucket: bucket, Prefix: prefix, PartSize: modelsync.MinPartSize}
	opts := testOptions(t)
	opts.Deadline = time.Now().Add(10 * time.Second)

	// WHEN the sync runs, it stops without an error and says it is not done
	res, err := modelsync.Sync(context.Background(), h.source(), dst, opts)
	if err != nil || res.Done {
		t.Fatalf("first run: %+v, %v: want Done false and no error", res, err)
	}
	if !reflect.DeepEqual(res.Uploaded, []string{"config.json", "onnx/model.onnx"}) {
		t.Fatalf("first run uploaded %v", res.Uploaded)
	}
	for _, k := range []string{"tokenizer.json", modelsync.ManifestName} {
		if _, _, ok := getObject(t, c, prefix+k); ok {
			t.Errorf("%s exists after the deadline", k)
		}
	}

	// WHEN it runs again without the delay
	h.mu.Lock()
	h.delay = map[string]time.Duration{}
	h.mu.Unlock()
	h.resetFetches()
	res, err = modelsync.Sync(context.Background(), h.source(), dst, testOptions(t))

	// THEN it uploads only what is missing
	if err != nil || !res.Done || !reflect.DeepEqual(res.Uploaded, []string{"tokenizer.json", "voices/af.bin", "voices/bf.bin"}) ||
		!reflect.DeepEqual(res.Skipped, []string{"config.json", "onnx/model.onnx"}) {
		t.Fatalf("second run: %+v, %v", res, err)
	}
	if h.fetched("onnx/model.onnx") != 0 {
		t.Error("the large file was fetched again")
	}
}

func TestSyncRetriesTransientErrorsAndResumesABrokenConnection(t *testing.T) {
	// GIVEN a Hub that answers 503 twice for config.json and drops the connection after 3 MiB of the large file
	h := newFakeHub(t)
	h.fail["config.json"] = 2
	h.cutAfter["onnx/model.onnx"] = 3 << 20
	dir := t.TempDir()
	var logs []string
	opts := testOptions(t)
	opts.Logf = func(f string, a ...any) { logs = append(logs, fmtLine(f, a...)); t.Logf(f, a...) }

	res, err := modelsync.Sync(context.Background(), h.source(), modelsync.Dir{Root: dir}, opts)

	// THEN the run succeeds, the large file resumed with a Range request at the byte it broke
	if err != nil || !res.Done {
		t.Fatalf("Sync: %+v, %v", res, err)
	}
	if h.fetched("config.json") != 3 {
		t.Errorf("config.json fetched %d times, want 3", h.fetched("config.json"))
	}
	// (A reset connection loses what was still in flight, so the resume point is at most the cut.)
	var at int
	if len(h.ranges) != 1 || !strings.HasPrefix(h.ranges[0], "onnx/model.onnx bytes=") {
		t.Fatalf("range requests = %v, want one for onnx/model.onnx", h.ranges)
	}
	if _, err := fmt.Sscanf(strings.TrimPrefix(h.ranges[0], "onnx/model.onnx bytes="), "%d-", &at); err != nil || at <= 0 || at > 3<<20 {
		t.Errorf("resumed at %q, want a byte in (0, %d]", h.ranges[0], 3<<20)
	}
	if h.fetched("onnx/model.onnx") != 2 {
		t.Errorf("onnx/model.onnx fetched %d times, want 2 (the cut one and the resume)", h.fetched("onnx/model.onnx"))
	}
	if _, err := modelsync.VerifyDir(dir); err != nil {
		t.Fatal(err)
	}
	if !containsLine(logs, "retrying") || !containsLine(logs, "resuming") {
		t.Errorf("no retry/resume progress lines in %v", logs)
	}
}

func TestSyncHTTPErrorsAreClear(t *testing.T) {
	h := newFakeHub(t)
	dir := t.TempDir()
	cases := []struct {
		name string
		src  func() modelsync.Source
		want []string
	}{
		{"unknown repo", func() modelsync.Source { s := h.source(); s.Repo = "acme/nope"; return s },
			[]string{"404", "RepoNotFound", "acme/nope", "check source.repo"}},
		{"unknown revision", func() modelsync.Source { s := h.source(); s.Revision = strings.Repeat("cd", 20); return s },
			[]string{"404", "RevisionNotFound", "check source.revision"}},
		{"pattern selects nothing", func() modelsync.Source { s := h.source(); s.Patterns = append(s.Patterns, "voices/*.pt"); return s },
			[]string{`"voices/*.pt" selects no file`}},
		{"bad pattern", func() modelsync.Source { s := h.source(); s.Patterns = []string{"voices/[.bin"}; return s },
			[]string{"malformed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := modelsync.Sync(context.Background(), tc.src(), modelsync.Dir{Root: dir}, testOptions(t))
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to contain %q", err, w)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, modelsync.ManifestName)); !os.IsNotExist(err) {
		t.Error("a failed run wrote manifest.json")
	}
}

func TestSyncGatedRepoNeedsTheTokenAndNeverLeaksIt(t *testing.T) {
	h := newFakeHub(t)
	h.token = "hf_secret_token_123"
	var logs []string
	opts := testOptions(t)
	opts.Logf = func(f string, a ...any) { logs = append(logs, fmtLine(f, a...)) }

	// Without a token: 401 with the fix.
	_, err := modelsync.Sync(context.Background(), h.source(), modelsync.Dir{Root: t.TempDir()}, opts)
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "gated or private") {
		t.Fatalf("without token: %v", err)
	}
	// A wrong token: 401 saying the token was refused, and never the token itself.
	src := h.source()
	src.Token = "hf_wrong_token_456"
	_, err = modelsync.Sync(context.Background(), src, modelsync.Dir{Root: t.TempDir()}, opts)
	if err == nil || !strings.Contains(err.Error(), "token was refused") || strings.Contains(err.Error(), "hf_wrong") {
		t.Fatalf("wrong token: %v", err)
	}
	// The right token: the sync works; the Hub saw it, the CDN (another host) never did; no log line has it.
	src.Token = modelsync.Token(h.token)
	dir := t.TempDir()
	res, err := modelsync.Sync(context.Background(), src, modelsync.Dir{Root: dir}, opts)
	if err != nil || !res.Done {
		t.Fatalf("with token: %+v, %v", res, err)
	}
	if len(h.cdnAuth) == 0 {
		t.Fatal("the CDN was never asked: the test does not test redirects")
	}
	for _, a := range h.cdnAuth {
		if a != "" {
			t.Errorf("the CDN received Authorization %q", a)
		}
	}
	for _, l := range append(logs, fmtLine("%v %+v %#v", src, src, src)) {
		if strings.Contains(l, "hf_secret") || strings.Contains(l, "hf_wrong") {
			t.Errorf("the token leaked: %s", l)
		}
	}
}

func TestSyncRefusesAHostileTree(t *testing.T) {
	h := newFakeHub(t)
	h.treePaths = []string{"../../etc/passwd"}
	dir := t.TempDir()
	_, err := modelsync.Sync(context.Background(), h.source(), modelsync.Dir{Root: filepath.Join(dir, "m")}, testOptions(t))
	if err == nil || !strings.Contains(err.Error(), "not a plain relative path") {
		t.Fatalf("err = %v", err)
	}
	// A repository file named manifest.json must not replace the manifest.
	h2 := newFakeHub(t)
	h2.files["manifest.json"] = []byte(`{"files":[]}`)
	src := h2.source()
	src.Patterns = append(src.Patterns, "*.json")
	_, err = modelsync.Sync(context.Background(), src, modelsync.Dir{Root: t.TempDir()}, testOptions(t))
	if err == nil || !strings.Contains(err.Error(), "collide") {
		t.Fatalf("manifest.json in the repo: %v", err)
	}
}
